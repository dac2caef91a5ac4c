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

import os
import tempfile
from pathlib import Path

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import reader_log
from crowdqa.ingest._io import Tree, is_archive, read_text
from crowdqa.ingest.build import corpus_from_token_labels
from crowdqa.ingest.errors import IngestError, ProblemLog

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
    files = sorted(root.rglob("*.ann"))
    # Keep the files of the chosen phase (a path above the phase folders holds both).
    files = [f for f in files if _PHASES.get(next((p for p in f.relative_to(root).parts if p in _PHASES), ""),
                                             path_phase or phase) == phase]
    by_element: dict[str, list[Path]] = {}
    for f in files:
        parts = [p.lower() for p in f.relative_to(docs_dir.parent).parts]
        element = next((p for p in parts if p in _ELEMENTS), None)
        if element is not None and "aggregated" not in parts:
            by_element.setdefault(element, []).append(f)
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

    documents: dict[str, list[str]] = {}
    labels: list[tuple[str, str, list[str]]] = []
    sources: list[tuple[str, int | None]] = []
    roles: dict[str, str] = {}
    for f in by_element[element]:
        src = str(f)
        stem = f.name[: -len(".ann")]
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
            documents[pmid] = read_text(tok_file).split()
        raw = read_text(f).split()
        if not all(v.isdigit() for v in raw):
            bad = next(v for v in raw if not v.isdigit())
            problems.report(f"labels must be integers 0..{len(names)}, found {bad!r}", source=src)
            continue
        values = [int(v) for v in raw]
        if values and max(values) > len(names):
            problems.report(f"label {max(values)} out of range 0..{len(names)} for {element} phase {phase}", source=src)
            continue
        worker = f"ebmnlp:{wid}"
        gold = "gold" in f.relative_to(root.parent).parts
        this_role = "expert" if gold else role
        if role == "expert" and not gold:
            raise IngestError(
                "ebm-nlp takes its roles from its folders (gold/ = experts, the others = crowd); role 'expert' "
                "would make the crowd workers experts: leave role out (or upload only a gold/ folder)",
                source=str(f))
        if roles.setdefault(worker, this_role) != this_role:
            problems.report(f"annotator {worker!r} appears as both crowd and expert", source=src)
            continue
        labels.append((pmid, worker, [class_names[v] for v in values]))
        sources.append((src, None))
    return corpus_from_token_labels(
        documents=documents, labels=labels, roles=roles, class_names=class_names, problems=problems, sources=sources
    )


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
