"""PICO-data JSON Lines (Nguyen et al., ACL 2017; github.com/yinfeiy/PICO-data).

One document per line: ``{"docid": "...", "<Category>": {"<annotator>": [[start,
end], ...]}}``, character offsets into the abstract ``<docid>.txt`` (end exclusive).
Each annotator key present under the category is an assignment, even with no spans
(its tokens are all ``O``); a document where the category object is empty has no
annotator. The label of every span is the category name (``Participants``,
``Intervention``, ``Outcome``).

``category`` picks the element; by default the only category of the file (a file with
several, such as ``PICO-annos-allprof.json``, needs ``category``). Texts come from
``docs``; by default from a ``docs`` folder found beside the file or in one of its
three parent folders (the PICO-data layout is ``docs/`` and
``annotations/<split>/<file>.json``). Annotators are ``pico:<id>``. ``path`` may also be
a folder: every ``*.json`` / ``*.jsonl`` file in it (not in subfolders) is read, in name
order, and documents may not repeat.
"""

from __future__ import annotations

import os
from pathlib import Path

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import DocsFolder, SpanCollector, as_offset, json_lines, reader_log
from crowdqa.ingest._io import read_text
from crowdqa.ingest.build import Span
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_pico_jsonl"]


def _find_docs(path: Path) -> Path | None:
    here = path if path.is_dir() else path.parent
    for folder in (here, *list(here.parents)[:3]):
        if (folder / "docs").is_dir():
            return folder / "docs"
    return None


def read_pico_jsonl(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                    docs: str | os.PathLike | None = None, category: str | None = None) -> Corpus:
    """Read PICO-data JSON Lines.

    Parameters
    ----------
    path : str or PathLike
        A ``.json`` / ``.jsonl`` file, or a folder of them.
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
    docs, category
        Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`): ``docs`` is found beside the file by
        default; ``category`` is
        ``Participants``, ``Intervention`` or ``Outcome`` (case-insensitive; ``P``, ``I``, ``O`` too),
        by default the file's only category.

    Returns
    -------
    Corpus
        IO scheme with the one class ``category``.
    """
    problems = reader_log(role, problems)
    path = Path(path)
    files = (
        sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())
        if path.is_dir()
        else [path]
    )
    if not files:
        raise IngestError("no .json or .jsonl files in folder", source=str(path))
    docs_dir = Path(docs) if docs is not None else _find_docs(path)
    if docs_dir is None:
        raise IngestError(
            "PICO JSON Lines carry no texts: give the folder of <docid>.txt with docs=DIR", source=str(path)
        )
    texts = DocsFolder(docs_dir, limits=problems.limits)

    records: list[tuple[str, int, dict]] = []
    categories: dict[str, None] = {}
    for f in files:
        src = str(f)
        for lineno, rec in json_lines(read_text(f), source=src, problems=problems):
            if not isinstance(rec, dict) or "docid" not in rec:
                problems.report("expected a JSON object with a 'docid' key", source=src, line=lineno)
                continue
            records.append((src, lineno, rec))
            for k, v in rec.items():
                if k != "docid" and isinstance(v, dict):
                    categories.setdefault(k, None)

    name = _resolve_category(category, list(categories), str(path))
    found = SpanCollector(role=role, problems=problems)
    first_line: dict[str, str] = {}
    for src, lineno, rec in records:
        doc_id = str(rec["docid"])
        if doc_id in first_line:
            problems.report(
                f"document {doc_id!r} appears twice (first at {first_line[doc_id]})", source=src, line=lineno
            )
            continue
        by_annotator = rec.get(name, {})
        if not isinstance(by_annotator, dict):
            problems.report(f"{name!r} must map annotators to span lists", source=src, line=lineno)
            continue
        text = texts.get(doc_id)
        if text is None:
            problems.report(f"no text for document {doc_id!r} in {docs_dir}", source=src, line=lineno)
            continue
        doc_spans, doc_assign, bad = [], [], None
        for annotator, pairs in by_annotator.items():
            worker = f"pico:{annotator}"
            doc_assign.append(worker)
            if not isinstance(pairs, list):
                bad = f"spans of {annotator!r} must be a list of [start, end]"
                break
            for pair in pairs:
                if not (isinstance(pair, list) and len(pair) == 2):
                    bad = f"span of {annotator!r} must be [start, end], found {pair!r}"
                    break
                try:
                    s, e = as_offset(pair[0]), as_offset(pair[1])
                except ValueError as exc:
                    bad = f"span of {annotator!r}: {exc}"
                    break
                doc_spans.append(Span(doc_id, worker, s, e, name, source=src, line=lineno))
            if bad:
                break
        if bad:
            problems.report(bad, source=src, line=lineno)
            continue
        first_line[doc_id] = f"{src}:{lineno}"
        found.add(doc_id, text, doc_assign, doc_spans, source=src, line=lineno)
    return found.corpus(scheme="io", types=[name])


_ALIASES = {"p": "participants", "i": "intervention", "o": "outcome", "interventions": "intervention",
            "outcomes": "outcome", "participant": "participants"}


def _resolve_category(category: str | None, found: list[str], src: str) -> str:
    if category is None:
        if len(found) == 1:
            return found[0]
        if not found:
            raise IngestError("no category found (expected keys such as 'Participants')", source=src)
        raise IngestError(f"file has categories {', '.join(found)}: choose one with category=NAME", source=src)
    want = _ALIASES.get(category.lower(), category.lower())
    for name in found:
        if name.lower() == want:
            return name
    if not found:
        return category
    raise IngestError(f"category {category!r} not in file; found {', '.join(found)}", source=src)
