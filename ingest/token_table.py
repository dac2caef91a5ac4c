"""Token tables: one row per token and annotator (``tokens-csv``, ``tokens-jsonl``), the ``tags`` scheme.

Columns (a CSV/TSV header row, or JSON keys): ``doc_id, token_index, token, annotator, label``, and
optionally ``role`` (``crowd`` / ``expert``, per annotator; default the ``role`` option)::

    doc_id,token_index,token,annotator,label
    t1,0,I,w1,PRON
    t1,1,ran,w1,VERB
    t1,0,I,w2,PRON

Rules
-----
* Every label is one class of a tag set (:attr:`crowdqa.aggregation.corpus.Corpus.tags`): there are no spans,
  and the classes are the labels seen, in natural order (numbers by value, then strings).
* An annotator labels any subset of a document's tokens: a token without a row of that annotator is missing
  for it, never ``O``. A row whose label is ``?`` (or empty) gives the token without labelling it, so a
  document can hold tokens nobody labelled.
* A document's tokens are ``0 .. n - 1``: every index of that range appears on some row (of any annotator),
  and every row of one token gives the same ``token`` text. The document text is its tokens joined by single
  spaces, as for CoNLL.
* Documents and annotators are numbered in order of first appearance. One annotator labels a token once.
* The delimiter of a CSV file is a tab if its header row has one, else a comma. Rows are numbered by their
  line in the file; under ``on_error="skip"`` a bad row is left out and counted.

A clean file is first read by Arrow (:mod:`crowdqa.ingest._columnar`) and built from arrays, every row at once;
any row the row loop would report sends the whole file to the row loop instead, so both give the same corpus
and the same messages.
"""

from __future__ import annotations

import codecs
import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import json_lines, reader_log
from crowdqa.ingest._io import read_text
from crowdqa.ingest.categorical import natural_key
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.formats import ROLES, choice_message

__all__ = ["read_tokens_csv", "read_tokens_jsonl", "write_token_table", "AGGREGATE_ANNOTATOR", "TOKEN_COLUMNS",
           "UNLABELLED"]

#: The columns every token table has, in the order the writer writes them.
TOKEN_COLUMNS = ("doc_id", "token_index", "token", "annotator", "label")
#: The label of a row that gives a token without labelling it (as CoNLL's ``?``).
UNLABELLED = "?"
#: Annotator id of the aggregate in a written token table.
AGGREGATE_ANNOTATOR = "aggregate"


@dataclass
class _Rows:
    """Token-table rows as codes: what the row loop and the Arrow path both hand to :func:`_build`."""

    doc: NDArray[np.int64]  # (n_rows,) document code, in order of first appearance
    position: NDArray[np.int64]  # (n_rows,) token_index
    word: NDArray[np.int64]  # (n_rows,) code of the token text
    worker: NDArray[np.int64]  # (n_rows,) annotator code, in order of first appearance
    label: NDArray[np.int64]  # (n_rows,) label code; -1: unlabelled ("?")
    line: NDArray[np.int64]  # (n_rows,) line of each row in the file
    doc_ids: list[str]
    words: list[str]
    worker_ids: list[str]
    worker_roles: list[str]
    labels: list[str]


# ---------------------------------------------------------------------------- row loop
def _csv_records(content: str, src: str, problems: ProblemLog):
    first = content.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(content, newline=""), delimiter="\t" if "\t" in first else ",")
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise IngestError(f"empty file: expected a header row {', '.join(TOKEN_COLUMNS)}", source=src) from None
    missing = [c for c in TOKEN_COLUMNS if c not in header]
    if missing:
        raise IngestError(f"missing columns {missing}; found {header}", source=src, line=1)
    line = 2
    for values in reader:
        start, line = line, reader.line_num + 1
        if not values or all(not v.strip() for v in values):
            continue
        if len(values) != len(header):
            problems.report(f"expected {len(header)} fields, found {len(values)}", source=src, line=start)
            continue
        yield start, dict(zip(header, values, strict=True))


def _jsonl_records(content: str, src: str, problems: ProblemLog):
    for lineno, row in json_lines(content, source=src, problems=problems):
        if not isinstance(row, dict):
            problems.report("expected a JSON object", source=src, line=lineno)
            continue
        yield lineno, row


def _row_loop(records, *, src: str, role: str, problems: ProblemLog) -> _Rows:
    """Every row checked on its own (file and line in each message), as codes."""
    docs: dict[str, int] = {}
    words: dict[str, int] = {}
    workers: dict[str, int] = {}
    labels: dict[str, int] = {}
    roles: list[str] = []
    out: list[tuple[int, int, int, int, int, int]] = []
    for line, row in records:
        missing = [c for c in TOKEN_COLUMNS if c not in row]
        if missing:
            problems.report(f"missing keys {missing}", source=src, line=line)
            continue
        doc_id, annotator, token = row["doc_id"], row["annotator"], row["token"]
        if not all(isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip()
                   for v in (doc_id, annotator)):
            problems.report("doc_id and annotator must be non-empty strings", source=src, line=line)
            continue
        if not isinstance(token, str) or not token.strip() or any(c.isspace() for c in token.strip()):
            problems.report(f"token must be a non-empty string without spaces, found {token!r}", source=src, line=line)
            continue
        index = row["token_index"]
        try:  # an integer, or a string of one (CSV); never a float or a boolean
            position = int(index) if isinstance(index, int | str) and not isinstance(index, bool) else -1
        except ValueError:
            position = -1
        if position < 0:
            problems.report(f"token_index must be an integer >= 0, found {index!r}", source=src, line=line)
            continue
        label = row["label"]
        label = UNLABELLED if label is None else label
        if not isinstance(label, str | int) or isinstance(label, bool):
            problems.report(f"label must be a string, found {label!r}", source=src, line=line)
            continue
        label = str(label).strip()
        r = row.get("role") or role
        if r not in ROLES:
            problems.report(choice_message("role", r, ROLES), source=src, line=line)
            continue
        annotator = str(annotator).strip()
        w = workers.setdefault(annotator, len(workers))
        if w == len(roles):
            roles.append(r)
        elif roles[w] != r:
            problems.report(f"annotator {annotator!r} has roles {roles[w]!r} and {r!r}", source=src, line=line)
            continue
        lab = -1 if label in ("", UNLABELLED) else labels.setdefault(label, len(labels))
        out.append((docs.setdefault(str(doc_id).strip(), len(docs)), position,
                    words.setdefault(token.strip(), len(words)), w, lab, line))
    a = np.array(out, dtype=np.int64).reshape(-1, 6)
    return _Rows(*a.T, list(docs), list(words), list(workers), roles, list(labels))


# ---------------------------------------------------------------------------- Arrow path
def _arrow_rows(path: Path, *, jsonl: bool, role: str) -> _Rows | None:
    """The rows of a clean file read by Arrow, or None for the row loop (no ``role`` column, no blank or padded
    field, integer token indices)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from crowdqa.ingest._columnar import clean_strings, factorize, int_values, read_csv_columns, read_json_columns

    try:
        with open(path, "rb") as fh:
            first = fh.readline()
    except OSError:
        return None
    if first.startswith((codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    if jsonl:
        cols = read_json_columns(path, keys=[*TOKEN_COLUMNS, "role"])
        if cols is None or cols["role"].null_count != len(cols["role"]):
            return None
        if not pa.types.is_integer(cols["token_index"].type):
            return None
        lines = None
    else:
        try:
            header = first.decode("utf-8")
            delimiter = "\t" if "\t" in header else ","
            names = [h.strip() for h in next(csv.reader([header], delimiter=delimiter))]
        except (UnicodeDecodeError, csv.Error, StopIteration):
            return None
        if len(set(names)) != len(names) or "role" in names or any(c not in names for c in TOKEN_COLUMNS):
            return None
        table = read_csv_columns(path, delimiter=delimiter, n_columns=len(names),
                                 columns=[names.index(c) for c in TOKEN_COLUMNS])
        if table is None:
            return None
        cols = {c: table[names.index(c)] for c in TOKEN_COLUMNS}
        try:  # digits only (a sign, a space or a point is left to the row loop), cast in one pass
            cols["token_index"] = pc.cast(cols["token_index"], pa.uint64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        lines = True
    if len(cols["doc_id"]) == 0 or cols["token_index"].null_count:
        return None
    if not all(pa.types.is_string(cols[c].type) and cols[c].null_count == 0 for c in ("doc_id", "token", "annotator",
                                                                                      "label")):
        return None
    # Each column's distinct values are checked, not its rows: a file has far fewer of them.
    doc, doc_ids = factorize(cols["doc_id"])
    word, words = factorize(cols["token"])
    worker, worker_ids = factorize(cols["annotator"])
    label, label_names = factorize(cols["label"])
    if not all(clean_strings(d) for d in (doc_ids, words, worker_ids, label_names)):
        return None
    if pc.any(pc.match_substring_regex(words, r"\s")).as_py() or pc.min(cols["token_index"]).as_py() < 0:
        return None
    names = label_names.to_pylist()
    code = np.arange(len(names), dtype=np.int64)
    if UNLABELLED in names:  # "?" rows give a token without labelling it
        gone = names.index(UNLABELLED)
        code = np.where(code > gone, code - 1, np.where(code == gone, -1, code))
        names.remove(UNLABELLED)
    n = len(doc)
    # A CSV row is on line row + 2 while no field spans lines and no line is blank (checked where a line is named).
    line = np.arange(2, n + 2, dtype=np.int64) if lines else np.arange(1, n + 1, dtype=np.int64)
    return _Rows(doc, int_values(cols["token_index"]), word, worker, code[label], line, doc_ids.to_pylist(),
                 words.to_pylist(), worker_ids.to_pylist(), [role] * len(worker_ids), names)


# ---------------------------------------------------------------------------- build
def _build(rows: _Rows, *, src: str, problems: ProblemLog, strict: bool) -> Corpus | None:
    """The corpus of the rows (see the module rules). With ``strict`` (the Arrow path) any problem gives None, so
    the row loop reads the file again and names the line."""
    def bad(message: str, row: int) -> None:
        if strict:
            raise _Fallback
        problems.report(message, source=src, line=int(rows.line[row]))

    try:
        keep = np.ones(rows.doc.size, dtype=bool)
        n_docs = len(rows.doc_ids)
        # Tokens: (document, position) pairs; each gives one word on every row.
        width = int(rows.position.max()) + 1 if rows.position.size else 1
        n_w = max(len(rows.worker_ids), 1)
        if width * max(n_docs, 1) * n_w >= 2**62:  # a gap no file could fill, and keys past int64
            r = int(np.argmax(rows.position))
            bad(f"token_index {int(rows.position[r])} of document {rows.doc_ids[int(rows.doc[r])]!r} leaves "
                f"tokens on no row: a document's token_index runs 0 .. n - 1", r)
            raise IngestError("token indices too large", source=src)  # (under skip: nothing can be built)
        key = rows.doc * width + rows.position
        pair = key * n_w + rows.worker
        order = np.argsort(pair, kind="stable")  # by token, then annotator; rows of a pair in file order
        sorted_key = key[order]
        first_of = np.r_[True, sorted_key[1:] != sorted_key[:-1]] if order.size else np.zeros(0, bool)
        group = np.cumsum(first_of) - 1
        earliest = np.minimum.reduceat(order, np.flatnonzero(first_of)) if order.size else order  # of each token
        owner = earliest[group]
        differs = rows.word[order] != rows.word[owner]
        for r in np.sort(order[differs]).tolist():
            w_first = rows.words[int(rows.word[owner[np.flatnonzero(order == r)[0]]])]
            bad(f"token {int(rows.position[r])} of document {rows.doc_ids[int(rows.doc[r])]!r} is "
                f"{rows.words[int(rows.word[r])]!r} here and {w_first!r} on an earlier row", r)
            keep[r] = False
        # One label per (token, annotator): later rows of a pair are duplicates.
        sorted_pair = pair[order]
        dup = np.flatnonzero(np.r_[False, sorted_pair[1:] == sorted_pair[:-1]])
        for r in np.sort(order[dup]).tolist():
            if keep[r]:
                bad(f"annotator {rows.worker_ids[int(rows.worker[r])]!r} labels token {int(rows.position[r])} of "
                    f"document {rows.doc_ids[int(rows.doc[r])]!r} twice", r)
                keep[r] = False
        # Each document's tokens run 0 .. n - 1.
        lengths = np.zeros(n_docs, dtype=np.int64)
        np.maximum.at(lengths, rows.doc[keep], rows.position[keep] + 1)
        tokens = _distinct(sorted_key, keep[order])
        counted = np.bincount(tokens // width, minlength=n_docs)
        for d in np.flatnonzero(counted != lengths).tolist():
            there = np.zeros(int(lengths[d]), dtype=bool)
            there[tokens[tokens // width == d] % width] = True
            gap = int(np.flatnonzero(~there)[0])
            row = int(np.flatnonzero(keep & (rows.doc == d))[0])
            bad(f"token {gap} of document {rows.doc_ids[d]!r} is on no row: a document's token_index runs 0 .. n - 1 "
                f"(give a token nobody labelled a row with label '{UNLABELLED}')", row)
            keep &= rows.doc != d
            lengths[d] = 0
    except _Fallback:
        return None
    doc_start = np.r_[0, np.cumsum(lengths)]
    # The word of every token, from its first kept row.
    if keep.all():
        first_row = earliest  # the earliest row of each token
    else:
        tokens = _distinct(sorted_key, keep[order])
        first_row = np.full(tokens.size, rows.doc.size, dtype=np.int64)
        kept = np.flatnonzero(keep)
        np.minimum.at(first_row, np.searchsorted(tokens, key[kept]), kept)
    tok_word = rows.word[first_row]
    word_len = np.fromiter(map(len, rows.words), dtype=np.int64, count=len(rows.words))[tok_word]
    start = np.cumsum(word_len + 1) - word_len - 1
    start -= np.repeat(start[doc_start[:-1][lengths > 0]], lengths[lengths > 0])
    words = [rows.words[i] for i in tok_word.tolist()]
    texts = [" ".join(words[a:b]) for a, b in zip(doc_start[:-1].tolist(), doc_start[1:].tolist(), strict=True)]
    labelled = keep & (rows.label >= 0)
    if not np.any(labelled):
        raise IngestError(f"no labels found: every row is unlabelled ('{UNLABELLED}') or was skipped", source=src)
    token = doc_start[rows.doc[labelled]] + rows.position[labelled]
    order = sorted(range(len(rows.labels)), key=lambda i: natural_key(rows.labels[i]))
    rank = np.empty(len(rows.labels), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return Corpus.from_arrays(
        token=token, worker=rows.worker[labelled], label=rank[rows.label[labelled]],
        doc_lengths=lengths, token_start=start, token_end=start + word_len,
        doc_ids=rows.doc_ids, texts=texts, worker_ids=rows.worker_ids, worker_roles=rows.worker_roles,
        class_names=[rows.labels[i] for i in order], tags=True)


def _distinct(sorted_values: NDArray[np.int64], keep: NDArray[np.bool_]) -> NDArray[np.int64]:
    """The distinct values of a sorted array where ``keep`` is set (``np.unique`` without its sort)."""
    values = sorted_values[keep]
    return values[np.r_[True, values[1:] != values[:-1]]] if values.size else values


class _Fallback(Exception):
    """The Arrow path met a row the row loop must report."""


def _read(path: str | os.PathLike, *, jsonl: bool, role: str, problems: ProblemLog | None) -> Corpus:
    problems = reader_log(role, problems)
    src = str(Path(path))
    fast = _arrow_rows(Path(path), jsonl=jsonl, role=role)
    if fast is not None:
        corpus = _build(fast, src=src, problems=problems, strict=True)
        if corpus is not None:
            return corpus
    records = (_jsonl_records if jsonl else _csv_records)(read_text(path), src, problems)
    rows = _row_loop(records, src=src, role=role, problems=problems)
    if rows.doc.size == 0:
        raise IngestError("no token rows found", source=src)
    return _build(rows, src=src, problems=problems, strict=False)


def read_tokens_csv(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None) -> Corpus:
    """Read a token table as CSV or TSV (see the module rules).

    Parameters
    ----------
    path : str or PathLike
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).

    Returns
    -------
    Corpus
        Under the ``tags`` scheme.
    """
    return _read(path, jsonl=False, role=role, problems=problems)


def read_tokens_jsonl(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None) -> Corpus:
    """Read a token table as JSON Lines, one object per row with the keys of the columns (see the module rules).

    Returns
    -------
    Corpus
        Under the ``tags`` scheme.
    """
    return _read(path, jsonl=True, role=role, problems=problems)


def write_token_table(labels: NDArray, corpus: Corpus, path: str | os.PathLike, *, jsonl: bool = False,
                      annotator: str = AGGREGATE_ANNOTATOR) -> None:
    """Write one label per token as a token table, every token a row of ``annotator``.

    Cells are written as they are, without the spreadsheet escape of ``categorical-csv``
    (:func:`crowdqa.ingest.writers.csv_escape`): tokens such as ``-`` or ``'s`` read back exactly.

    Parameters
    ----------
    labels : ndarray of shape (n_tokens,)
        Class indices; ``MISSING`` (-1) is written as ``?`` (the token, unlabelled).
    corpus : Corpus
    path : str or PathLike
    jsonl : bool, default=False
        JSON Lines instead of CSV.
    annotator : str, default="aggregate"
    """
    lab = np.asarray(labels, dtype=np.int64)
    names = [*corpus.class_names, UNLABELLED]  # index MISSING (-1), the last: unlabelled
    position = np.arange(corpus.n_tokens) - corpus.doc_start[:-1][corpus.token_doc]
    words = [corpus.texts[d][a:b] for d, a, b in zip(corpus.token_doc.tolist(), corpus.token_start.tolist(),
                                                      corpus.token_end.tolist(), strict=True)]
    with open(path, "w", encoding="utf-8", newline="" if not jsonl else "\n") as fh:
        if jsonl:
            import json

            for d, p, w, k in zip(corpus.token_doc.tolist(), position.tolist(), words, lab.tolist(), strict=True):
                fh.write(json.dumps({"doc_id": corpus.doc_ids[d], "token_index": p, "token": w,
                                     "annotator": annotator, "label": names[k]}, ensure_ascii=False) + "\n")
            return
        out = csv.writer(fh)
        out.writerow(TOKEN_COLUMNS)
        out.writerows((corpus.doc_ids[d], p, w, annotator, names[k])
                      for d, p, w, k in zip(corpus.token_doc.tolist(), position.tolist(), words, lab.tolist(),
                                            strict=True))

