"""Read classic categorical crowd data: ``item, annotator, label[, gold]`` rows.

Each item becomes a one-token document (document id = text = item id, the token
covers the whole text), so the sequence aggregators and the metrics treat a
categorical answer as a one-token label.

Repeated answers
----------------
Real dumps hold an annotator's answer to one item more than once (Get-Another-Label's AdultContent2 has
2,918 such (item, annotator) pairs, HITspam 3,248). The upload option ``repeats`` says what they mean
(:func:`repeated_answers`, the same rule on both of the reader's paths):

* identical repeats (the same label every time) are one answer, counted once, whatever the option;
* differing repeats keep the first answer in file order (``"first"``, the default: the answer given
  before the annotator saw the item again), the last (``"last"``: a correction), none (``"drop"``: the
  annotator's answer to that item is unknown), or stop the file at the first repeated row (``"refuse"``,
  what the reader did before the option, naming the line).

The parse summary says how many pairs were repeated and what was done with them (a note), and the
rows left out are counted among the dropped rows.
"""

from __future__ import annotations

import codecs
import csv
import io
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._bytes import unique_sorted
from crowdqa.ingest._common import reader_log
from crowdqa.ingest._io import decode_text
from crowdqa.ingest.errors import IngestError, ProblemLog


def natural_key(label: str) -> tuple:
    """Sort key: numbers by value first (``"2"`` before ``"10"``), then other labels as strings."""
    try:
        value = float(label)
    except ValueError:
        return (1, 0.0, label)
    return (0, value, label) if math.isfinite(value) else (1, 0.0, label)


__all__ = ["natural_key", "read_categorical", "GOLD_ANNOTATOR", "REPEATS", "RepeatedAnswers", "repeated_answers"]

#: The rules for an annotator's differing answers to one item (the ``repeats`` upload option).
REPEATS = ("first", "last", "drop", "refuse")


@dataclass(frozen=True)
class RepeatedAnswers:
    """What :func:`repeated_answers` found and kept.

    Attributes
    ----------
    keep : ndarray of shape (n_kept,)
        Indices of the rows kept, in file order.
    pairs : int
        (item, annotator) pairs with more than one row.
    identical : int
        Of those, pairs whose rows all give the same label (kept once).
    differing : int
        Pairs whose rows give different labels (decided by the rule).
    rows_left_out : int
        Rows not kept.
    """

    keep: NDArray[np.int64]
    pairs: int
    identical: int
    differing: int
    rows_left_out: int

    def note(self, rule: str) -> str:
        """The parse summary's line: how many pairs were repeated and what the rule did with them."""
        done = {"first": "kept the first answer", "last": "kept the last answer",
                "drop": "left out (no answer of that annotator on the item)", "refuse": "refused"}[rule]
        return (f"{self.pairs} (item, annotator) pairs are answered more than once ({self.rows_left_out} rows "
                f"left out): {self.identical} with the same answer each time, counted once; {self.differing} with "
                f"differing answers, {done} (repeats={rule}; first, last, drop or refuse)")


def repeated_answers(item: NDArray, worker: NDArray, label: NDArray, *, rule: str) -> RepeatedAnswers:
    """Resolve repeated (item, annotator) rows by ``rule`` (see the module notes), all rows at once.

    Parameters
    ----------
    item, worker, label : ndarray of shape (n_rows,)
        Integer codes of each row, in file order.
    rule : {"first", "last", "drop", "refuse"}
        For differing repeats; ``"refuse"`` keeps every row (the caller refuses the file).

    Returns
    -------
    RepeatedAnswers
    """
    if rule not in REPEATS:
        raise ValueError(f"repeats must be one of {', '.join(REPEATS)}, found {rule!r}")
    n = item.shape[0]
    n_workers = int(worker.max()) + 1 if n else 1
    key = item.astype(np.int64) * n_workers + worker
    order = np.argsort(key, kind="stable")  # a pair's rows together, in file order
    k = key[order]
    start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if n else np.zeros(0, dtype=np.int64)
    size = np.diff(np.r_[start, n])
    repeated = size > 1
    if not np.any(repeated) or rule == "refuse":
        return RepeatedAnswers(np.arange(n, dtype=np.int64), int(np.count_nonzero(repeated)), 0, 0, 0)
    lab = label[order].astype(np.int64)
    same = np.minimum.reduceat(lab, start) == np.maximum.reduceat(lab, start)
    # An identical repeat keeps its first row; a differing one the rule's.
    pick = start + np.where(same | (rule != "last"), 0, size - 1)
    pick = pick[same | (rule != "drop")]
    keep = np.sort(order[pick])
    return RepeatedAnswers(keep.astype(np.int64), int(np.count_nonzero(repeated)),
                           int(np.count_nonzero(repeated & same)), int(np.count_nonzero(repeated & ~same)),
                           int(n - keep.shape[0]))

#: Annotator id given to the gold column (role ``"expert"``).
GOLD_ANNOTATOR = "gold"


def _parse_header(header: str, source: str) -> tuple[list[str], str]:
    """The column names of a header line, and the delimiter: a tab if the line has one, else a comma."""
    if not header.strip():
        raise IngestError("empty file; expected a header row 'item, annotator, label[, gold]'", source=source)
    delimiter = "\t" if "\t" in header else ","
    try:
        names = [f.strip() for f in next(csv.reader([header], delimiter=delimiter))]
    except csv.Error as err:
        raise IngestError(f"unreadable header row: {err}", source=source, line=1) from None
    return names, delimiter


def _open_rows(path: Path):
    """Yield ``(line_number, row)`` from a CSV or TSV file, the delimiter sniffed from the header line."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise IngestError(f"cannot open file: {err.strerror}", source=str(path)) from None
    # The decoding rule of every reader (UTF-8 with or without a BOM, UTF-16 with a BOM).
    with io.StringIO(decode_text(data, source=str(path)), newline="") as fh:
        del data
        names, delimiter = _parse_header(fh.readline(), str(path))
        yield 1, names
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            for row in reader:
                yield reader.line_num + 1, row
        except csv.Error as err:
            raise IngestError(f"unreadable row: {err}", source=str(path), line=reader.line_num + 1) from None


#: Header names recognised for each column (compared lowercase, without ``!``, ``_``, ``-`` and spaces):
#: crowd-kit's ``task, worker, label``, Snow et al.'s ``!amt_worker_ids, orig_id, response, gold``, and the like.
_HEADER_NAMES: dict[str, tuple[str, ...]] = {
    "item": ("item", "itemid", "task", "taskid", "question", "questionid", "origid", "object", "objectid",
             "example", "exampleid", "image", "imageid", "unit", "unitid", "docid", "document"),
    "annotator": ("annotator", "annotatorid", "worker", "workerid", "amtworkerids", "performer", "user", "userid",
                  "rater", "raterid", "labeler", "labeller", "coder", "judge", "assessor"),
    "label": ("label", "response", "answer", "annotation", "rating", "judgment", "judgement", "choice"),
    "gold": ("gold", "goldlabel", "goldstandard", "truelabel", "truth", "groundtruth", "gt", "golden",
             "expertlabel", "correctlabel"),
}


def _normal(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch not in "!_- ")


def _chosen_column(names: list[str], choice: str, option: str, source: str) -> int:
    """The index of a column chosen by header name (exact, then case-insensitive) or 1-based number."""
    if choice in names:
        return names.index(choice)
    lowered = [n.lower() for n in names]
    if choice.lower() in lowered:
        return lowered.index(choice.lower())
    if choice.isdigit() and 1 <= int(choice) <= len(names):
        return int(choice) - 1
    raise IngestError(f"{option} {choice!r} is not a column of the header ({', '.join(names)})", source=source, line=1)


def _columns(names: list[str], chosen: dict[str, str | None], source: str) -> dict[str, int | None]:
    """Column index of ``item``, ``annotator``, ``label`` and ``gold`` (None when absent).

    Options win; the other columns are recognised by their header names; a header that
    names none of them is read by position: ``item, annotator, label[, gold]``. A
    two-column file with an item column and no annotator column holds reference labels.
    """
    options = {"item": "id_column", "annotator": "annotator_column", "label": "answer_column",
               "gold": "gold_column"}
    cols: dict[str, int | None] = {
        key: _chosen_column(names, chosen[key], options[key], source) if chosen.get(key) else None for key in options
    }
    normal = [_normal(n) for n in names]
    for key, known in _HEADER_NAMES.items():
        if cols[key] is None:
            cols[key] = next((i for i, n in enumerate(normal) if n in known and i not in cols.values()), None)
    recognised = {k: v for k, v in cols.items() if v is not None}
    if not recognised:
        if len(names) in (3, 4):
            return {"item": 0, "annotator": 1, "label": 2, "gold": 3 if len(names) == 4 else None}
    if len(names) == 4 and cols["gold"] is None and (cols["item"], cols["annotator"], cols["label"]) == (0, 1, 2):
        cols["gold"] = 3  # the positional layout with an unrecognised name for its gold column
    if len(set(recognised.values())) != len(recognised):
        raise IngestError("two of the item, annotator, label and gold columns are the same column", source=source,
                          line=1)
    # Two columns without an annotator (``task, true_label`` or ``item, label``): reference labels only.
    reference_only = len(names) == 2 and cols["annotator"] is None
    if reference_only and cols["gold"] is None:
        cols["gold"], cols["label"] = cols["label"], None
    complete = (cols["gold"] is not None) if reference_only else None not in (cols["annotator"], cols["label"])
    if cols["item"] is None or not complete:
        raise IngestError(
            f"cannot tell the item, annotator and label columns from the header ({', '.join(names)}); "
            "name them with id_column, annotator_column, answer_column and gold_column", source=source, line=1)
    return cols


def read_categorical(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
                     id_column: str | None = None, annotator_column: str | None = None,
                     answer_column: str | None = None, gold_column: str | None = None,
                     repeats: str = "first") -> Corpus:
    """Read categorical answers, one row per (item, annotator) answer, from a CSV or TSV with a header row.

    Columns are found by the options, else by their header names (``task, worker, label``
    as crowd-kit writes them; ``!amt_worker_ids, orig_id, response, gold`` as in Snow et
    al. 2008; see :data:`_HEADER_NAMES`; other columns are ignored), else by position:
    ``item, annotator, label[, gold]``. A two-column file of items and labels (``task,
    true_label`` or ``item, label``) holds reference labels only (the ``"gold"`` annotator). The delimiter is a
    tab if the header line has one, else a comma.

    Parameters
    ----------
    path : str or path-like
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
        ``role`` is that of the annotators of the label column.
    id_column, annotator_column, answer_column, gold_column
        Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`): the item, annotator, label and gold
        columns, by header name or 1-based number.
    repeats : {"first", "last", "drop", "refuse"}, default="first"
        An annotator's repeated answers to one item (module notes, :func:`repeated_answers`).

    Returns
    -------
    Corpus
        One one-token document per item, in order of first appearance. The gold
        column becomes an annotator ``"gold"`` with role ``"expert"`` (one label per
        item that has a gold value). Classes are the answers in natural order
        (numbers by value, then other labels alphabetically: ``"2"`` before ``"10"``),
        independent of row order; there is no outside class. Annotator ids are kept as
        given (strings).

    Raises
    ------
    IngestError
        For an unreadable file, a header whose columns cannot be told apart, a row
        without the chosen columns or with more fields than the header, an empty field,
        a duplicate (item, annotator) row under ``repeats="refuse"``, or conflicting gold values for one item.
    """
    problems = reader_log(role, problems)
    source = str(path)
    chosen = {"item": id_column, "annotator": annotator_column, "label": answer_column, "gold": gold_column}
    if repeats not in REPEATS:
        raise IngestError(f"repeats must be one of {', '.join(REPEATS)}, found {repeats!r}", source=source)
    fast = _read_columnar(Path(path), chosen, role=role, problems=problems, repeats=repeats)
    if fast is not None:
        return fast
    rows = _open_rows(Path(path))
    _, names = next(rows)
    cols = _columns(names, chosen, source)
    _note_positional(names, chosen, cols, problems)
    corpus = _read_rows(rows, cols, n_header=len(names), role=role, source=source, problems=problems,
                        repeats=repeats)
    _note_gold(corpus, names, cols, problems)
    return corpus


def _read_rows(rows: Iterator[tuple[int, list[str]]], cols: dict[str, int | None], *, n_header: int, role: str,
               source: str, problems: ProblemLog, repeats: str = "first") -> Corpus:
    """The row loop: every answer row checked (bad ones reported, with their line), then the corpus."""
    i_item, i_ann, i_label, i_gold = cols["item"], cols["annotator"], cols["label"], cols["gold"]
    need = 1 + max(i for i in (i_item, i_ann, i_label) if i is not None)
    if i_ann is None:  # reference labels only: the gold field is required
        need = max(need, i_gold + 1)

    items: dict[str, int] = {}
    workers: dict[str, int] = {}
    labels: dict[str, int] = {}
    gold: dict[int, str] = {}
    seen: set[tuple[int, int]] = set()
    obs_item: list[int] = []
    obs_worker: list[int] = []
    obs_label: list[int] = []
    for line, row in rows:
        if not row or all(not f.strip() for f in row):
            continue  # blank line
        if not need <= len(row) <= n_header:
            problems.report(f"expected {n_header} columns, found {len(row)}", source=source, line=line)
            continue
        item = row[i_item].strip()
        g = row[i_gold].strip() if i_gold is not None and i_gold < len(row) else ""
        if i_ann is None:
            fields = (("item", item), ("gold", g))
        else:
            annotator, label = row[i_ann].strip(), row[i_label].strip()
            fields = (("item", item), ("annotator", annotator), ("label", label))
        empty = next((n for n, v in fields if not v), None)
        if empty:
            problems.report(f"empty {empty} field", source=source, line=line)
            continue
        if i_ann is not None and annotator == GOLD_ANNOTATOR and i_gold is not None:
            problems.report(f"annotator id {GOLD_ANNOTATOR!r} is reserved for the gold column", source=source,
                            line=line)
            continue
        i = items.get(item, len(items))
        if i_ann is not None:
            w = workers.get(annotator, len(workers))
            if repeats == "refuse" and (i, w) in seen:
                problems.report(f"duplicate row: annotator {annotator!r} labelled item {item!r} twice",
                                source=source, line=line)
                continue
        if g and gold.get(i, g) != g:
            problems.report(f"item {item!r} has gold {gold[i]!r} and {g!r}", source=source, line=line)
            continue
        items.setdefault(item, i)
        if g:
            gold[i] = g
            labels.setdefault(g, len(labels))
        if i_ann is not None:
            workers.setdefault(annotator, w)
            seen.add((i, w))
            obs_item.append(i)
            obs_worker.append(w)
            obs_label.append(labels.setdefault(label, len(labels)))

    if not obs_item and not gold:
        raise IngestError("no annotation rows after the header", source=source)

    gold_item = np.fromiter(gold.keys(), dtype=np.int64, count=len(gold))
    gold_label = np.fromiter((labels[v] for v in gold.values()), dtype=np.int64, count=len(gold))
    answers = _resolve_repeats(np.asarray(obs_item, dtype=np.int64), np.asarray(obs_worker, dtype=np.int64),
                               np.asarray(obs_label, dtype=np.int64), repeats=repeats, problems=problems)
    return _corpus(*answers, gold_item, gold_label, item_ids=list(items),
                   worker_ids=list(workers), label_names=list(labels), role=role)


def _resolve_repeats(item: NDArray, worker: NDArray, label: NDArray, *, repeats: str,
                     problems: ProblemLog | None) -> tuple[NDArray, NDArray, NDArray]:
    """The answer rows with repeated (item, annotator) pairs resolved by ``repeats`` (:func:`repeated_answers`),
    said in ``problems``'s notes and dropped counts."""
    found = repeated_answers(item, worker, label, rule=repeats)
    if found.pairs and problems is not None and repeats != "refuse":
        problems.note(found.note(repeats))
        if found.rows_left_out:
            problems.dropped["repeated (item, annotator)"] = (
                problems.dropped.get("repeated (item, annotator)", 0) + found.rows_left_out)
    if found.rows_left_out == 0:
        return item, worker, label
    return item[found.keep], worker[found.keep], label[found.keep]


def _corpus(
    item: NDArray, worker: NDArray, label: NDArray, gold_item: NDArray, gold_label: NDArray, *,
    item_ids: list[str], worker_ids: list[str], label_names: list[str], role: str,
) -> Corpus:
    """The corpus of answers ``(item, worker, label)`` and gold labels ``(gold_item, gold_label)``.

    Labels index ``label_names`` (any order); classes are put in natural order here. The
    gold labels become the annotator :data:`GOLD_ANNOTATOR` (role ``"expert"``). Raises
    ValueError (from the corpus checks) for a duplicate (item, annotator).
    """
    # Class order: natural order of the answers, independent of the row order.
    class_names = tuple(sorted(label_names, key=natural_key))
    position = {name: k for k, name in enumerate(class_names)}
    remap = np.array([position[name] for name in label_names], dtype=np.int32)
    token, worker, label = item, worker, remap[label]
    worker_ids = list(worker_ids)
    worker_roles = [role] * len(worker_ids)
    if gold_item.size:
        token = np.concatenate([token, gold_item])
        worker = np.concatenate([worker, np.full(gold_item.size, len(worker_ids))])
        label = np.concatenate([label, remap[gold_label]])
        worker_ids.append(GOLD_ANNOTATOR)
        worker_roles.append("expert")
    n_items = len(item_ids)
    item_ids = tuple(item_ids)
    n_w = len(worker_ids)
    if token.size and float(n_items) * n_w * 2**16 < 2.0**62:
        # Corpus order, (item, annotator), by one sort of packed keys (labels < 2**15) instead of an argsort;
        # the key is built and unpacked in place, and the annotators and labels leave it in the corpus's types.
        packed = token.astype(np.int64)
        del token
        packed *= n_w
        packed += worker
        del worker
        packed <<= 16
        packed |= label
        del label
        packed.sort()
        label = (packed & 0xFFFF).astype(np.int16)
        packed >>= 16
        worker = (packed % n_w).astype(np.int32)
        packed //= n_w
        token = packed
        del packed
    item_lengths = np.fromiter(map(len, item_ids), dtype=np.int64, count=n_items)
    # One-token documents: the item id is the text and its token.
    return Corpus.from_arrays(token=token, worker=worker, label=label, doc_lengths=np.ones(n_items, dtype=np.int64),
                              token_start=np.zeros(n_items, dtype=np.int64), token_end=item_lengths, doc_ids=item_ids,
                              texts=item_ids, worker_ids=worker_ids, worker_roles=worker_roles,
                              class_names=class_names)


def _note_positional(names: list[str], chosen: dict, cols: dict, problems: ProblemLog) -> None:
    """Say in the summary when no header name said which column is which (issue 13: read by position)."""
    known = {n for names_ in _HEADER_NAMES.values() for n in names_}
    if not any(chosen.values()) and not any(_normal(n) in known for n in names):
        read_as = [f"{what} = {names[i]!r}" for what, i in cols.items() if i is not None]
        problems.note(f"no column header names the item, annotator or label: read by position ({', '.join(read_as)}); "
                      "name the columns with id_column, annotator_column, answer_column if that is wrong")


def _note_gold(corpus: Corpus, names: list[str], cols: dict, problems: ProblemLog) -> None:
    """Say in the summary when a gold column beside the answers has no value on some items (only those are
    scored against it), or on none (no expert label was read: the report has nothing to score against)."""
    if cols["gold"] is None or cols["annotator"] is None:
        return  # no gold column, or a file of reference labels (its gold field is required on every row)
    column = names[cols["gold"]] if cols["gold"] < len(names) else str(cols["gold"] + 1)
    if GOLD_ANNOTATOR not in corpus.worker_ids:
        problems.note(f"the gold column {column!r} is empty on every row: no expert label was read from it")
        return
    n_gold = int(np.count_nonzero(corpus.worker == corpus.worker_ids.index(GOLD_ANNOTATOR)))
    if n_gold < corpus.n_docs:
        problems.note(f"the gold column {column!r} has a value on {n_gold} of {corpus.n_docs} items: only those "
                      "are scored against the experts")


#: Bytes per block of Arrow's parser (blocks are parsed in parallel).
_BLOCK_BYTES = 1 << 24
#: Largest file read by the byte path. It saves importing pyarrow and pyarrow.compute and took fewer CPU-s than
#: Arrow's path on the issue-14 files (string ids, 1 item in 3 rows) up to 240 MB, more at 715 MB: its whole-file
#: temporaries, a fresh mapping each, then cost as much system time as user time (benchmarks.readers).
_BYTE_PATH_LIMIT = 256 << 20


def _read_columnar(path: Path, chosen: dict[str, str | None], *, role: str,
                   problems: ProblemLog | None = None, repeats: str = "first") -> Corpus | None:
    """The whole file read at once, or None to let the row loop read it.

    A plain file (no quote, no ``\r``, no control byte, every row as wide as the header, fields
    of at most :data:`~crowdqa.ingest._bytes.MAX_FIELD_BYTES` bytes, up to :data:`_BYTE_PATH_LIMIT`
    bytes) is read as one byte array
    (:func:`_byte_columns`), without importing a parser; other files by Arrow's CSV reader
    (:mod:`crowdqa.ingest._columnar`).
    Either gives up on anything the row loop would report or treat specially: a row of another
    width, an empty or space-padded field, a duplicate (item, annotator), conflicting gold
    values, the reserved annotator id, UTF-16 text; it then returns None, so the same file gives
    the same corpus (and the same messages) either way.
    """
    source = str(path)
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
    except OSError:
        return None
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    try:
        names, delimiter = _parse_header(decode_text(first, source=source), source)
        cols = _columns(names, chosen, source)
    except IngestError:
        return None
    used = [i for i in (cols["item"], cols["annotator"], cols["label"], cols["gold"]) if i is not None]
    columns = _byte_columns(path, delimiter=delimiter, n_columns=len(names), columns=used)
    if columns is None:
        columns = _arrow_columns(path, delimiter=delimiter, n_columns=len(names), columns=used)
    if columns is None:
        return None
    corpus = _from_codes(columns, cols, role=role, repeats=repeats, problems=problems)
    if corpus is not None and problems is not None:
        _note_positional(names, chosen, cols, problems)
        _note_gold(corpus, names, cols, problems)
    return corpus


#: Codes and distinct values of each column read, by column index.
_Columns = dict[int, tuple[NDArray[np.int64], list[str]]]


def _byte_columns(path: Path, *, delimiter: str, n_columns: int, columns: list[int]) -> _Columns | None:
    """The columns of a plain file, read as one byte array (:mod:`crowdqa.ingest._bytes`), or None."""
    from crowdqa.ingest._bytes import field_bounds, field_codes, line_bounds, other_controls, padded, read_padded

    try:
        if path.stat().st_size > _BYTE_PATH_LIMIT:
            return None
        data = read_padded(path)
    except OSError:
        return None
    header_end = data.find(b"\n")
    if header_end < 0 or b'"' in data or b"\r" in data:
        return None  # quoting and line-ending rules: Arrow's parser
    body, size = padded(data, header_end + 1)  # (a BOM is in the header line)
    del data
    if other_controls(body, size, below=32, allowed=(10, 9)):
        return None  # a control byte (the row loop's csv module treats some specially)
    # Positions as int32 (the file is under 2 GiB), each array dropped when it is no longer needed: the peak is
    # the bytes, the field bounds, one column's temporaries and the codes made so far.
    starts, ends = line_bounds(body, size, dtype=np.int32)
    full = ends > starts  # empty lines are skipped, as by the row loop
    if not full.all():
        starts, ends = starts[full], ends[full]
    del full
    bounds = field_bounds(body, size, starts, ends, delimiter=ord(delimiter), n_fields=n_columns)
    del starts, ends
    if bounds is None or bounds.shape[0] == 0:
        return None
    out = {}
    for i in columns:
        start = bounds[:, i] + 1
        encoded = field_codes(body, start, bounds[:, i + 1] - start, first_seen=True)
        if encoded is None:
            return None
        out[i] = encoded
    return out


def _arrow_columns(path: Path, *, delimiter: str, n_columns: int, columns: list[int]) -> _Columns | None:
    """The columns read by Arrow's CSV parser and encoded by Arrow's hashing (:mod:`crowdqa.ingest._columnar`)."""
    from crowdqa.ingest._columnar import factorize, read_csv_columns

    table = read_csv_columns(path, delimiter=delimiter, n_columns=n_columns, columns=columns,
                             block_size=_BLOCK_BYTES)
    if table is None:
        return None
    out = {}
    for i in columns:
        codes, values = factorize(table[i])
        out[i] = codes, values.to_pylist()
    return out


def _from_codes(columns: _Columns, cols: dict[str, int | None], *, role: str, repeats: str = "first",
                problems: ProblemLog | None = None) -> Corpus | None:
    """The corpus of encoded columns (values in order of first appearance), or None where the row loop would
    report something. Distinct values are checked, not every cell: far fewer strings than rows."""
    i_item, i_ann, i_label, i_gold = cols["item"], cols["annotator"], cols["label"], cols["gold"]
    item, item_ids = columns[i_item]
    if item.size == 0 or not _clean(item_ids):
        return None
    label_names: list[str] = []
    worker = label = np.zeros(0, dtype=np.int64)
    worker_names: list[str] = []
    if i_ann is not None:
        (worker, worker_names), (label, label_names) = columns[i_ann], columns[i_label]
        if not (_clean(worker_names) and _clean(label_names)):
            return None
        label_names = list(label_names)
        if i_gold is not None and GOLD_ANNOTATOR in worker_names:
            return None
    gold_item = gold_label = np.zeros(0, dtype=np.int64)
    if i_gold is not None:
        g_code, g_list = columns[i_gold]
        given = g_list if i_ann is None else [g for g in g_list if g]  # answer rows: a blank gold cell is no gold
        if given and not _clean(given):
            return None
        # One label list for answers and gold values.
        index = {name: k for k, name in enumerate(label_names)}
        for name in given:
            if name not in index:
                index[name] = len(label_names)
                label_names.append(name)
        g_label = np.array([index.get(name, -1) for name in g_list], dtype=np.int64)[g_code]
        has = g_label >= 0
        n_lab = max(len(label_names), 1)
        pairs = unique_sorted(item[has].astype(np.int64) * n_lab + g_label[has])  # (int32 codes: past 2**31)
        gold_item = pairs // n_lab
        if np.any(gold_item[1:] == gold_item[:-1]):  # an item with two gold values (pairs are sorted)
            return None
        gold_label = pairs % n_lab
    answered = item if i_ann is not None else np.zeros(0, dtype=np.int64)
    if i_ann is not None and item.size:
        found = repeated_answers(answered, worker, label, rule=repeats)
        if found.pairs and repeats == "refuse":
            return None  # the row loop names the first repeated row's line
        # Noted in a log of its own, handed on only once the corpus is made (else the row loop notes it again).
        log = ProblemLog("fail")
        answered, worker, label = _resolve_repeats(answered, worker, label, repeats=repeats, problems=log)
    try:
        corpus = _corpus(answered, worker, label, gold_item, gold_label, item_ids=list(item_ids),
                         worker_ids=worker_names, label_names=label_names, role=role)
    except ValueError:  # a duplicate (item, annotator): the row loop names its line
        return None
    if i_ann is not None and item.size and problems is not None:
        problems.notes.extend(log.notes)
        for reason, n in log.dropped.items():
            problems.dropped[reason] = problems.dropped.get(reason, 0) + n
    return corpus


def _clean(values: list[str]) -> bool:
    """Every value non-empty and without spaces at its ends (what the row loop's ``strip`` keeps).

    Checked by C-level maps over the list, not a Python loop over it.
    """
    return all(values) and list(map(str.strip, values)) == list(values)
