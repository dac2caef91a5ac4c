"""The simple fallback: one row per span, as CSV (``spans-csv``) or JSON Lines (``spans-jsonl``).

Columns (CSV header row, or JSON keys): ``doc_id, annotator, start, end, label``, and
optionally ``text`` (the document text, repeated on its rows; must agree) and
``role`` (``crowd`` / ``expert``, per annotator; default the ``role`` option). A row
whose ``start``, ``end`` and ``label`` are all empty (CSV) or null/absent (JSON) says
"this annotator labelled this document and found nothing". Without a ``text``
column, texts come from ``docs/<doc_id>.txt``. Annotator names are kept as written.
``category`` keeps one label. Rows are numbered by their line in the file.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

from aggregation.corpus import Corpus
from ingest._common import DocsFolder, as_offset, check_role
from ingest._io import read_text
from ingest.build import Span, corpus_from_spans
from ingest.errors import IngestError, ProblemLog

__all__ = ["read_spans_csv", "read_spans_jsonl"]

_REQUIRED = ("doc_id", "annotator", "start", "end", "label")


def _csv_rows(content: str, src: str, problems: ProblemLog) -> Iterator[tuple[int, dict]]:
    reader = csv.reader(io.StringIO(content, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise IngestError("empty file: expected a header row", source=src) from None
    missing = [c for c in _REQUIRED if c not in header]
    if missing:
        raise IngestError(f"missing columns {missing}; found {header}", source=src, line=1)
    start = 2
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.report(f"malformed CSV row: {exc}", source=src, line=start)
            start = reader.line_num + 1
            continue
        line, start = start, reader.line_num + 1
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            problems.report(f"row has {len(values)} fields, the header has {len(header)}", source=src, line=line)
            continue
        row = dict(zip(header, values, strict=True))
        for k in ("start", "end", "label"):
            if row[k].strip() == "":
                row[k] = None
        yield line, row


def _jsonl_rows(content: str, src: str, problems: ProblemLog) -> Iterator[tuple[int, dict]]:
    for lineno, raw in enumerate(content.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError as exc:
            problems.report(f"not a JSON object: {exc}", source=src, line=lineno)
            continue
        if not isinstance(row, dict):
            problems.report("expected a JSON object", source=src, line=lineno)
            continue
        missing = [c for c in ("doc_id", "annotator") if c not in row]
        if missing:
            problems.report(f"missing keys {missing}", source=src, line=lineno)
            continue
        yield lineno, row


def _read(path, rows_of, *, role, problems, docs, category, scheme) -> Corpus:
    check_role(role)
    problems = problems or ProblemLog("fail")
    src = str(Path(path))
    texts = DocsFolder(docs) if docs is not None else None
    documents: dict[str, str] = {}
    assignments: list[tuple[str, str]] = []
    spans: list[Span] = []
    roles: dict[str, str] = {}
    for line, row in rows_of(read_text(path), src, problems):
        doc_id, annotator = row.get("doc_id"), row.get("annotator")
        if not isinstance(doc_id, str | int) or not isinstance(annotator, str | int) or str(annotator) == "":
            problems.report("doc_id and annotator must be non-empty strings", source=src, line=line)
            continue
        doc_id, annotator = str(doc_id), str(annotator)
        r = row.get("role") or role
        if r not in ("crowd", "expert"):
            problems.report(f"role must be 'crowd' or 'expert', found {r!r}", source=src, line=line)
            continue
        if roles.get(annotator, r) != r:
            problems.report(f"annotator {annotator!r} has roles {roles[annotator]!r} and {r!r}", source=src, line=line)
            continue
        text = row.get("text")
        if text not in (None, ""):
            if not isinstance(text, str):
                problems.report("text must be a string", source=src, line=line)
                continue
        elif doc_id in documents:
            text = documents[doc_id]
        elif texts is not None:
            text = texts.get(doc_id)
            if text is None:
                problems.report(f"no text for document {doc_id!r} in {texts.folder}", source=src, line=line)
                continue
        else:
            problems.report(f"no text for document {doc_id!r}: add a text column or give docs=DIR",
                            source=src, line=line)
            continue
        if doc_id in documents and documents[doc_id] != text:
            problems.report(f"document {doc_id!r} has a different text than on an earlier row", source=src, line=line)
            continue
        start, end, label = row.get("start"), row.get("end"), row.get("label")
        empty = start is None and end is None and label is None
        if not empty:
            try:
                s, e = as_offset(start), as_offset(end)
            except ValueError as exc:
                problems.report(str(exc), source=src, line=line)
                continue
            if not isinstance(label, str) or not label:
                problems.report(f"label must be a non-empty string, found {label!r}", source=src, line=line)
                continue
        documents.setdefault(doc_id, text)
        roles[annotator] = r
        assignments.append((doc_id, annotator))
        if not empty and (category is None or label == category):
            spans.append(Span(doc_id, annotator, s, e, label, source=src, line=line))
    return corpus_from_spans(
        documents=documents, assignments=assignments, spans=spans, roles=roles, scheme=scheme, problems=problems
    )


def read_spans_csv(
    path: str | os.PathLike,
    *,
    role: str = "crowd",
    problems: ProblemLog | None = None,
    docs: str | os.PathLike | None = None,
    category: str | None = None,
    scheme: str = "auto",
) -> Corpus:
    """Read a spans CSV (header ``doc_id,annotator,start,end,label[,text][,role]``).

    Parameters
    ----------
    path : str or PathLike
    role : {"crowd", "expert"}, default="crowd"
        Role of annotators without a ``role`` column value.
    problems : ProblemLog, optional
    docs : str or PathLike, optional
        Folder of ``<doc_id>.txt`` when there is no ``text`` column.
    category : str, optional
    scheme : {"auto", "io", "bio"}

    Returns
    -------
    Corpus
    """
    return _read(path, _csv_rows, role=role, problems=problems, docs=docs, category=category, scheme=scheme)


def read_spans_jsonl(
    path: str | os.PathLike,
    *,
    role: str = "crowd",
    problems: ProblemLog | None = None,
    docs: str | os.PathLike | None = None,
    category: str | None = None,
    scheme: str = "auto",
) -> Corpus:
    """Read spans JSON Lines (keys as :func:`read_spans_csv`'s columns).

    Parameters
    ----------
    path : str or PathLike
    role : {"crowd", "expert"}, default="crowd"
    problems : ProblemLog, optional
    docs : str or PathLike, optional
    category : str, optional
    scheme : {"auto", "io", "bio"}

    Returns
    -------
    Corpus
    """
    return _read(path, _jsonl_rows, role=role, problems=problems, docs=docs, category=category, scheme=scheme)
