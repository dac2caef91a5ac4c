"""EBM-NLP 2.00 (Nye et al., ACL 2018; github.com/bepnye/EBM-NLP).

Layout::

    ebm_nlp_2_00/documents/<PMID>.tokens          one token per line (or space-separated)
    ebm_nlp_2_00/annotations/individual/<phase>/<element>/<split>/[crowd|gold/]<PMID>.<WID>.ann

An ``.ann`` file holds one integer label per token (whitespace-separated). ``<phase>``
is ``phase_1`` / ``starting_spans`` (binary: 1 = inside a span of the element) or
``phase_2`` / ``hierarchical_labels`` (the element's detailed labels, below). The
worker id ``WID`` (middle part of the file name, ``.`` or ``_`` separated) is kept as
the zero-padded string it is: the annotator is ``ebmnlp:<WID>``. Files under a folder
named ``gold`` are the medical experts' (role ``"expert"``); the others take ``role``.
Aggregated annotations (``annotations/aggregated``) are not read.

``path`` is the ``ebm_nlp_2_00`` folder, its parent, or any folder below
``annotations/individual`` (a phase or element folder selects it), or a ``.zip`` or ``.tar(.gz)`` of
one of these (unpacked with the safe-archive rules of :mod:`crowdqa.ingest._io`). The phase is the
one in ``path``, else ``phase_1``. ``category`` picks the element (``participants``,
``interventions``, ``outcomes``; ``P``/``I``/``O`` and the PICO-data names work too);
by default the only element present. Texts are the tokens joined by single spaces.

Class names (IO scheme): phase 1 ``O`` and the element (``Participants``,
``Intervention``, ``Outcome``, the PICO-data names); phase 2 ``O`` and the
hierarchical labels of the EBM-NLP README.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path

import numpy as np

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import reader_log
from crowdqa.ingest._io import Tree, folder_files, is_archive, read_text
from crowdqa.ingest.build import corpus_from_token_labels, corpus_order
from crowdqa.ingest.errors import DocumentTooLongError, IngestError, ProblemLog
from crowdqa.ingest.limits import DocumentLimits

__all__ = ["read_ebm_nlp", "PHASE2_LABELS", "ELEMENT_NAMES"]

_PHASES = {"phase_1": 1, "starting_spans": 1, "phase_2": 2, "hierarchical_labels": 2}
_ELEMENTS = ("participants", "interventions", "outcomes")
_ALIASES = {"p": "participants", "i": "interventions", "o": "outcomes", "participant": "participants",
            "intervention": "interventions", "outcome": "outcomes"}

#: Phase-1 class name of each element (the PICO-data category names, so both sources agree).
ELEMENT_NAMES = {"participants": "Participants", "interventions": "Intervention", "outcomes": "Outcome"}

#: Phase-2 labels 1..k of each element (label 0 is "no label"), from the EBM-NLP README.
PHASE2_LABELS = {
    "participants": ("Age", "Sex", "Sample-size", "Condition"),
    "interventions": ("Surgical", "Physical", "Pharmacological", "Educational", "Psychological", "Other", "Control"),
    "outcomes": ("Physical", "Pain", "Mortality", "Adverse-effects", "Mental", "Other"),
}


def _locate(path: Path) -> tuple[Path, Path, int]:
    """Return (documents folder, annotation search root, phase)."""
    path = path.resolve()
    for base in (path, path / "ebm_nlp_2_00"):
        if (base / "documents").is_dir() and (base / "annotations").is_dir():
            ind = base / "annotations" / "individual"
            return base / "documents", ind, 0
    # Inside annotations/individual/...: walk up to the corpus root.
    for anc in (path, *path.parents):
        if anc.name == "annotations" and (anc.parent / "documents").is_dir():
            rel = path.relative_to(anc / "individual") if path.is_relative_to(anc / "individual") else None
            if rel is None:
                break
            phase = next((_PHASES[p] for p in rel.parts if p in _PHASES), 0)
            return anc.parent / "documents", path, phase
    raise IngestError(
        "not an EBM-NLP 2.00 folder: expected documents/ and annotations/individual/ below it", source=str(path)
    )


def read_ebm_nlp(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                 category: str | None = None, phase: int | None = None) -> Corpus:
    """Read the individual annotations of one EBM-NLP element.

    Parameters
    ----------
    path : str or PathLike
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
        ``role`` is that of annotators outside ``gold`` folders.
    category : str, optional
        The PICO element (Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`)); default the only one found.
    phase : {1, 2}, optional
        Default: the phase named in ``path``, else 1.

    Returns
    -------
    Corpus
    """
    problems = reader_log(role, problems)
    if is_archive(path):
        return _read_archive(Path(path), role=role, problems=problems, category=category, phase=phase)
    docs_dir, root, path_phase = _locate(Path(path))
    phase = phase or path_phase or 1
    if phase not in (1, 2):
        raise IngestError(f"phase must be 1 or 2, found {phase!r}")
    files = sorted(parts for parts in folder_files(root) if parts[-1].endswith(".ann"))  # (sorted as rglob's paths)
    # Keep the files of the chosen phase (a path above the phase folders holds both).
    files = [rel for rel in files if _PHASES.get(next((p for p in rel if p in _PHASES), ""),
                                                 path_phase or phase) == phase]
    above = root.relative_to(docs_dir.parent).parts  # root's own place in the corpus folder
    by_element: dict[str, list[tuple[str, ...]]] = {}
    for rel in files:
        parts = [p.lower() for p in (*above, *rel)]
        element = next((p for p in parts if p in _ELEMENTS), None)
        if element is not None and "aggregated" not in parts:
            by_element.setdefault(element, []).append(rel)
    if not by_element:
        raise IngestError(f"no phase {phase} .ann files found", source=str(root))
    if category is None:
        if len(by_element) > 1:
            raise IngestError(
                f"annotations for {', '.join(sorted(by_element))}: choose one with category=NAME", source=str(root)
            )
        element = next(iter(by_element))
    else:
        element = _ALIASES.get(category.lower(), category.lower())
        if element not in by_element:
            raise IngestError(
                f"no phase {phase} annotations for category {category!r}; found {', '.join(sorted(by_element))}",
                source=str(root),
            )
    names = (ELEMENT_NAMES[element],) if phase == 1 else PHASE2_LABELS[element]
    class_names = ("O", *names)

    # (file, its name, under a gold/ folder) of every .ann file; gold/ is looked for from root's own name down.
    anns = [(os.path.join(root, *rel), rel[-1], "gold" in (root.name, *rel)) for rel in by_element[element]]
    fast = _read_arrays(anns, docs_dir=docs_dir, class_names=class_names, role=role, limits=problems.limits)
    if fast is not None:
        return fast

    documents: dict[str, list[str]] = {}
    labels: list[tuple[str, str, list[str]]] = []
    sources: list[tuple[str, int | None]] = []
    roles: dict[str, str] = {}
    for src, name, gold in anns:
        stem = name[: -len(".ann")]
        sep = "." if "." in stem else "_"
        pmid, _, wid = stem.partition(sep)
        if not pmid or not wid or wid.upper() == "AGGREGATED":
            problems.report("file name must be <PMID>.<WORKER>.ann", source=src)
            continue
        if pmid not in documents:
            tok_file = docs_dir / f"{pmid}.tokens"
            if not tok_file.is_file():
                problems.report(f"no tokens file {tok_file.name} for document {pmid!r}", source=src)
                continue
            problems.limits.check_bytes(tok_file.stat().st_size, doc_id=pmid, source=str(tok_file))
            documents[pmid] = read_text(tok_file).split()
        text = read_text(src)
        raw = text.split()
        if not all(v.isdigit() for v in raw):
            at = next(i for i, v in enumerate(raw) if not v.isdigit())
            problems.report(f"labels must be integers 0..{len(names)}, found {raw[at]!r}", source=src,
                            line=_line_of(text, at))
            continue
        values = [int(v) for v in raw]
        if values and max(values) > len(names):
            at = next(i for i, v in enumerate(values) if v > len(names))
            problems.report(f"label {values[at]} out of range 0..{len(names)} for {element} phase {phase}",
                            source=src, line=_line_of(text, at))
            continue
        worker = f"ebmnlp:{wid}"
        this_role = "expert" if gold else role
        if role == "expert" and not gold:
            raise IngestError(_EXPERT_ROLE, source=src)
        if roles.setdefault(worker, this_role) != this_role:
            problems.report(f"annotator {worker!r} appears as both crowd and expert", source=src)
            continue
        labels.append((pmid, worker, [class_names[v] for v in values]))
        sources.append((src, None))
    return corpus_from_token_labels(
        documents=documents, labels=labels, roles=roles, class_names=class_names, problems=problems, sources=sources
    )


_EXPERT_ROLE = ("ebm-nlp takes its roles from its folders (gold/ = experts, the others = crowd); role 'expert' "
                "would make the crowd workers experts: leave role out (or upload only a gold/ folder)")


#: Byte classes of an ``.ann`` file on the fast path: 1 for a digit, 0 for the ASCII whitespace ``str.split``
#: splits on, 2 for anything else (which leaves the file to the row loop).
_ANN_BYTES = np.full(256, 2, dtype=np.uint8)
_ANN_BYTES[48:58] = 1
_ANN_BYTES[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = 0


def _line_of(text: str, index: int) -> int:
    """The 1-based line of ``text`` holding its ``index``-th whitespace-separated value (an ``.ann`` file has one
    label a line), for an error message."""
    seen, n = 0, 0
    for n, line in enumerate(text.splitlines(), 1):
        seen += len(line.split())
        if seen > index:
            return n
    return n


def _read_arrays(anns: list[tuple[str, str, bool]], *, docs_dir: Path, class_names: tuple[str, ...], role: str,
                 limits: DocumentLimits | None = None) -> Corpus | None:
    """Every ``.ann`` file parsed at once as one byte array, or None to let the file loop read them.

    Applies when every file name is ``<PMID>.<WORKER>.ann``, every document has its tokens file,
    every label is one digit within the schema, every file has one label per token, and no
    annotator is both crowd and expert or labels a document twice: what the file loop reads
    without a problem. Anything else returns None, so the file loop reports it with its file,
    and the corpus is the loop's (documents and annotators in order of first appearance, in
    the (token, annotator) order of :func:`crowdqa.ingest.build.corpus_from_token_labels`).

    Parameters
    ----------
    anns : list of (str, str, bool)
        Each ``.ann`` file's path, name and whether it lies under a ``gold`` folder, in reading order.
    docs_dir : Path
    class_names : tuple of str
    role : str
    """
    doc_index: dict[str, int] = {}
    worker_index: dict[str, int] = {}
    roles: list[str] = []
    pair_doc = np.empty(len(anns), dtype=np.int64)
    pair_worker = np.empty(len(anns), dtype=np.int64)
    chunks: list[bytes] = []
    for k, (src, name, gold) in enumerate(anns):
        stem = name[: -len(".ann")]
        pmid, _, wid = stem.partition("." if "." in stem else "_")
        if not pmid or not wid or wid.upper() == "AGGREGATED" or (role == "expert" and not gold):
            return None
        this_role = "expert" if gold else role
        w = worker_index.setdefault(f"ebmnlp:{wid}", len(worker_index))
        if w == len(roles):
            roles.append(this_role)
        elif roles[w] != this_role:
            return None
        pair_doc[k] = doc_index.setdefault(pmid, len(doc_index))
        pair_worker[k] = w
        try:
            with open(src, "rb") as fh:
                chunks.append(fh.read())
        except OSError:
            return None
    if np.unique(pair_doc * max(len(worker_index), 1) + pair_worker).size != len(anns):
        return None  # an annotator labels a document twice
    # Documents: the tokens files, in order of first appearance.
    token_lists = []
    limits = limits or DocumentLimits()
    for pmid in doc_index:
        tok_file = os.path.join(docs_dir, f"{pmid}.tokens")
        try:
            limits.check_bytes(os.path.getsize(tok_file), doc_id=pmid, source=tok_file)
            token_lists.append(read_text(tok_file).split())
        except OSError:
            return None
        except DocumentTooLongError:
            raise
        except IngestError:
            return None
        limits.check_tokens(len(token_lists[-1]), doc_id=pmid, source=tok_file)
    doc_lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    n_tokens = int(doc_lengths.sum())
    lengths = np.fromiter(map(len, itertools.chain.from_iterable(token_lists)), dtype=np.int64, count=n_tokens)
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])
    ahead = np.concatenate([[0], np.cumsum(lengths + 1)])  # each token's start if all were one text
    token_start = ahead[:-1] - np.repeat(ahead[doc_start[:-1]], doc_lengths)
    texts = tuple(" ".join(toks) for toks in token_lists)
    del token_lists
    # Labels: every file's bytes end to end (a newline between files); a label is a digit between whitespace.
    body = np.frombuffer(b"\n".join(chunks), dtype=np.uint8)
    file_start = np.concatenate([[0], np.cumsum(np.fromiter(map(len, chunks), np.int64, len(chunks)) + 1)])
    del chunks
    kind = _ANN_BYTES[body]
    if np.any(kind == 2):
        return None  # a BOM, a minus sign, a letter, a byte beyond ASCII: the file loop reads or reports it
    digit = np.flatnonzero(kind)
    del kind
    if digit.size > 1 and np.any(np.diff(digit) == 1):
        return None  # a number of two digits ("10", "01")
    label = (body[digit] - 48).astype(np.int16)
    if label.size and int(label.max()) >= len(class_names):
        return None
    per_file = np.diff(np.searchsorted(digit, file_start))
    if not np.array_equal(per_file, doc_lengths[pair_doc]):
        return None  # a file with more or fewer labels than its document's tokens
    obs_base = np.concatenate([[0], np.cumsum(per_file)])
    obs_pair = np.repeat(np.arange(len(anns), dtype=np.int32), per_file)
    token, worker, label = corpus_order(label, pair_doc=pair_doc, pair_worker=pair_worker, doc_lengths=doc_lengths,
                                        obs_base=obs_base, obs_pair=obs_pair)
    return Corpus(token=token, worker=worker, label=label, doc_lengths=doc_lengths, token_start=token_start,
                  token_end=token_start + lengths, doc_ids=tuple(doc_index), texts=texts,
                  worker_ids=tuple(worker_index), worker_roles=tuple(roles), class_names=class_names)


def _read_archive(path: Path, *, role: str, problems: ProblemLog, category: str | None, phase: int | None
                  ) -> Corpus:
    """Read a zip or tar upload (path-safe, size-bounded) from a folder on disk.

    A tar is read from the copy :class:`~crowdqa.ingest._io.Tree` unpacked; a zip's members are written
    to a temporary folder first. Messages name the archive (``upload.zip/<member>``), never
    the folder.
    """
    with Tree(path) as tree, tempfile.TemporaryDirectory(prefix="crowdqa-ebmnlp-") as tmp:
        folder = tree.folder
        if folder is None:  # a zip: members are read in memory, so write them out
            folder = Path(tmp)
            for name in tree.names:
                dest = folder / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(tree.read_bytes(name))
        # A single top-level folder is where the layout starts (the usual way folders are archived).
        tops = {Path(n).parts[0] for n in tree.names}
        root = folder / next(iter(tops)) if len(tops) == 1 and (folder / next(iter(tops))).is_dir() else folder
        before = len(problems.problems)
        try:
            corpus = read_ebm_nlp(root, role=role, problems=problems, category=category, phase=phase)
        except IngestError as exc:
            raise IngestError(exc.detail, source=exc.source.replace(str(folder), str(path)), line=exc.line) from None
        problems.problems[before:] = [
            type(pr)(pr.source.replace(str(folder), str(path)), pr.line, pr.message)
            for pr in problems.problems[before:]
        ]
        return corpus
