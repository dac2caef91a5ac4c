"""The simple fallback: one row per span, as CSV (``spans-csv``) or JSON Lines (``spans-jsonl``).

Columns (CSV header row, or JSON keys): ``doc_id, annotator, start, end, label``, and
optionally ``text`` (the document text, repeated on its rows; must agree) and
``role`` (``crowd`` / ``expert``, per annotator; default the ``role`` option). A row
whose ``start``, ``end`` and ``label`` are all empty (CSV) or null/absent (JSON) says
"this annotator labelled this document and found nothing". Without a ``text``
column, texts come from ``docs/<doc_id>.txt``. Annotator names are kept as written.
``category`` keeps one label. Rows are numbered by their line in the file.

With a ``docs`` folder, a file without ``text`` and ``role`` columns is first read by Arrow and
built from arrays (:func:`crowdqa.ingest.build.corpus_from_span_arrays`), every row at once; any row the
row loop would report or read specially sends the whole file to the row loop instead, so both
give the same corpus and the same messages.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._bytes import unique_sorted
from crowdqa.ingest._common import DocsFolder, SpanCollector, as_offset, csv_rows, json_lines, reader_log
from crowdqa.ingest._io import read_text
from crowdqa.ingest.build import Span, UnusualSpans, corpus_from_span_arrays
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.formats import ROLES, choice_message

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
    for line, values in csv_rows(reader, width=len(header), source=src, problems=problems):
        row = dict(zip(header, values, strict=True))
        for k in ("start", "end", "label"):
            if row[k].strip() == "":
                row[k] = None
        yield line, row


def _jsonl_rows(content: str, src: str, problems: ProblemLog) -> Iterator[tuple[int, dict]]:
    for lineno, row in json_lines(content, source=src, problems=problems):
        if not isinstance(row, dict):
            problems.report("expected a JSON object", source=src, line=lineno)
            continue
        missing = [c for c in ("doc_id", "annotator") if c not in row]
        if missing == ["annotator"] and all(row.get(k) is None for k in ("start", "end", "label")):
            yield lineno, row  # a document nobody labelled: its text alone (what pre-annotation labels)
            continue
        if missing:
            problems.report(f"missing keys {missing}", source=src, line=lineno)
            continue
        yield lineno, row


def _read(path, rows_of, *, role, problems, docs, category, scheme) -> Corpus:
    problems = reader_log(role, problems)
    if docs is not None:
        columnar = (_columnar_csv if rows_of is _csv_rows else _columnar_jsonl)(path)
        if columnar is not None:
            corpus = _columnar_corpus(columnar, role=role, docs=docs, category=category, scheme=scheme,
                                      problems=problems)
            if corpus is not None:
                return corpus
    src = str(Path(path))
    texts = DocsFolder(docs, limits=problems.limits) if docs is not None else None
    found = SpanCollector(role=role, problems=problems, category=category)
    documents, roles = found.documents, found.roles
    for line, row in rows_of(read_text(path), src, problems):
        doc_id, annotator = row.get("doc_id"), row.get("annotator")
        unlabelled = "annotator" not in row  # a JSON line of a document alone (_jsonl_rows lets no other through)
        if not isinstance(doc_id, str | int) or not unlabelled and (not isinstance(annotator, str | int)
                                                                    or str(annotator) == ""):
            problems.report("doc_id and annotator must be non-empty strings", source=src, line=line)
            continue
        doc_id, annotator = str(doc_id), str(annotator)
        r = row.get("role") or role
        if r not in ROLES:
            problems.report(choice_message("role", r, ROLES), source=src, line=line)
            continue
        if not unlabelled and roles.get(annotator, r) != r:
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
        spans = () if empty else [Span(doc_id, annotator, s, e, label, source=src, line=line)]
        found.add(doc_id, text, [] if unlabelled else [annotator], spans, role=r, source=src, line=line)
    return found.corpus(scheme=scheme)


def read_spans_csv(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                   docs: str | os.PathLike | None = None, category: str | None = None, scheme: str = "auto") -> Corpus:
    """Read a spans CSV (header ``doc_id,annotator,start,end,label[,text][,role]``).

    Parameters
    ----------
    path : str or PathLike
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
        ``role`` is that of annotators without a ``role`` column value.
    docs, category, scheme
        Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`); ``docs`` holds the texts when there
        is no ``text`` column.

    Returns
    -------
    Corpus
    """
    return _read(path, _csv_rows, role=role, problems=problems, docs=docs, category=category, scheme=scheme)


def read_spans_jsonl(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                     docs: str | os.PathLike | None = None, category: str | None = None,
                     scheme: str = "auto") -> Corpus:
    """Read spans JSON Lines (keys as :func:`read_spans_csv`'s columns; its parameters and result). A line with
    ``doc_id`` and ``text`` but no ``annotator`` (and no span) is a document nobody labelled: its text is read, no
    assignment (pre-annotation's documents; an upload of such lines alone holds no labels and is refused)."""
    return _read(path, _jsonl_rows, role=role, problems=problems, docs=docs, category=category, scheme=scheme)


# ----------------------------------------------------------------------------- the columnar fast path
# Files with a docs folder, without ``text`` and ``role`` columns, and without a single row the loop above
# would report or read specially are read by Arrow (:mod:`crowdqa.ingest._columnar`) and built by
# :func:`crowdqa.ingest.build.corpus_from_span_arrays`, all rows at once; anything unusual returns None and the
# row loop reads the file again, so messages naming a file and line and ``on_error="skip"`` come from one
# place, and both paths give the same corpus.


def _columnar_csv(path) -> dict | None:
    """The five columns of a clean spans CSV as Arrow string arrays, or None."""
    from crowdqa.ingest._columnar import read_csv_columns

    try:
        with open(path, "rb") as fh:
            first = fh.readline()
        names = [h.strip() for h in next(csv.reader([first.decode("utf-8")]))]
    except (OSError, UnicodeDecodeError, csv.Error, StopIteration):
        return None
    if first.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or len(set(names)) != len(names):
        return None
    if "text" in names or "role" in names or any(c not in names for c in _REQUIRED):
        return None
    table = read_csv_columns(path, delimiter=",", n_columns=len(names), columns=[names.index(c) for c in _REQUIRED])
    return None if table is None else {c: table[names.index(c)] for c in _REQUIRED}


def _columnar_jsonl(path) -> dict | None:
    """The five keys of clean spans JSON Lines as Arrow arrays (offsets as integers, an empty row's as nulls)."""
    import pyarrow as pa

    from crowdqa.ingest._columnar import read_json_columns

    try:
        with open(path, "rb") as fh:
            if fh.read(3).startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                return None
    except OSError:
        return None
    cols = read_json_columns(path, keys=[*_REQUIRED, "text", "role"])
    if cols is None or cols["text"].null_count != len(cols["text"]) or cols["role"].null_count != len(cols["role"]):
        return None
    if not all(pa.types.is_string(cols[c].type) and cols[c].null_count == 0 for c in ("doc_id", "annotator")):
        return None
    if not all(pa.types.is_integer(cols[c].type) or pa.types.is_null(cols[c].type) for c in ("start", "end")):
        return None
    if not (pa.types.is_string(cols["label"].type) or pa.types.is_null(cols["label"].type)):
        return None
    return {c: cols[c] for c in _REQUIRED}


def _columnar_corpus(cols: dict, *, role: str, docs, category: str | None, scheme: str,
                     problems: ProblemLog | None = None) -> Corpus | None:
    """The corpus of clean span rows (see above), or None for the row loop."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from crowdqa.ingest._columnar import clean_strings, factorize, int_values, present, raw_ints

    n = len(cols["doc_id"])
    if n == 0:
        return None
    doc, doc_names = factorize(cols["doc_id"])
    worker, worker_names = factorize(cols["annotator"])
    if not (clean_strings(doc_names) and clean_strings(worker_names)):
        return None
    csv_fields = pa.types.is_string(cols["start"].type)  # CSV: empty fields; JSON: nulls or absent keys
    start, end, label = cols["start"], cols["end"], cols["label"]
    if csv_fields:
        # Offsets are digits (an empty field reads as 0 here and is never used).
        digits = r"^[0-9]{1,15}$|^$"
        if not (pc.all(pc.match_substring_regex(start, digits)).as_py()
                and pc.all(pc.match_substring_regex(end, digits)).as_py()):
            return None
        given = [int_values(pc.utf8_length(a)) > 0 for a in (start, end, label)]
        start, end = (pc.cast(pc.replace_substring_regex(a, "^$", "0"), pa.int64()) for a in (start, end))
    else:
        given = [present(a) for a in (start, end, label)]
    # A row without start, end and label says "labelled, found nothing"; a row with some of them is an error.
    span = given[0] & given[1] & given[2]
    if np.any((given[0] | given[1] | given[2]) & ~span):
        return None
    rows = np.flatnonzero(span)
    s_off, e_off = raw_ints(start)[rows], raw_ints(end)[rows]
    if pa.types.is_null(label.type):
        lab, names = np.zeros(rows.size, dtype=np.int64), []
    else:
        encoded = pc.dictionary_encode(label)  # (JSON: null labels of empty rows get no code; never used)
        lab, names = raw_ints(encoded.indices)[rows], encoded.dictionary.to_pylist()
    used = unique_sorted(lab).tolist()
    if any(not names[k].strip() or names[k] == "O" for k in used):
        return None  # a blank label, or "O"
    # Texts, checked like the row loop's: every document's file, every span inside its text.
    problems = problems or ProblemLog("fail")
    folder = DocsFolder(docs, limits=problems.limits)
    texts = [folder.get(d) for d in doc_names.to_pylist()]
    if any(t is None for t in texts):
        return None
    length = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    if np.any(s_off < 0) or np.any(s_off >= e_off) or np.any(e_off > length[doc[rows]]):
        return None
    types = sorted({names[k] for k in used if category is None or names[k] == category})
    type_of = np.array([types.index(x) + 1 if x in types else 0 for x in names] or [0], dtype=np.int64)[lab]
    keep = type_of > 0
    # (document, annotator) assignments in first-seen order.
    n_workers = len(worker_names)
    uniq, first, inverse = np.unique(doc * n_workers + worker, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    try:
        return corpus_from_span_arrays(
            doc_ids=tuple(doc_names.to_pylist()), texts=tuple(texts), worker_ids=tuple(worker_names.to_pylist()),
            worker_roles=tuple(role for _ in range(n_workers)), pair_doc=uniq[order] // n_workers,
            pair_worker=uniq[order] % n_workers, span_pair=rank[inverse][rows][keep], span_start=s_off[keep],
            span_end=e_off[keep], span_type=type_of[keep], types=types, scheme=scheme, problems=problems,
        )
    except UnusualSpans:
        return None
