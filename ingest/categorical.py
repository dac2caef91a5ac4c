"""Read classic categorical crowd data: ``item, annotator, label[, gold]`` rows.

Each item becomes a one-token document (document id = text = item id, the token
covers the whole text), so the sequence aggregators and the metrics treat a
categorical answer as a one-token label.
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

import numpy as np

from aggregation.corpus import Corpus
from ingest._io import decode_text
from ingest.errors import IngestError, ProblemLog


def natural_key(label: str) -> tuple:
    """Sort key: numbers by value first (``"2"`` before ``"10"``), then other labels as strings."""
    try:
        value = float(label)
    except ValueError:
        return (1, 0.0, label)
    return (0, value, label) if math.isfinite(value) else (1, 0.0, label)


__all__ = ["natural_key", "read_categorical", "GOLD_ANNOTATOR"]

#: Annotator id given to the gold column (role ``"expert"``).
GOLD_ANNOTATOR = "gold"


def _open_rows(path: Path):
    """Yield ``(line_number, row)`` from a CSV or TSV file, the delimiter sniffed from the header line."""
    try:
        data = path.read_bytes()
    except OSError as err:
        raise IngestError(f"cannot open file: {err.strerror}", source=str(path)) from None
    # The decoding rule of every reader (UTF-8 with or without a BOM, UTF-16 with a BOM).
    with io.StringIO(decode_text(data, source=str(path)), newline="") as fh:
        del data
        header = fh.readline()
        if not header.strip():
            raise IngestError("empty file; expected a header row 'item, annotator, label[, gold]'", source=str(path))
        delimiter = "\t" if "\t" in header else ","
        try:
            n_header = len(next(csv.reader([header], delimiter=delimiter)))
        except csv.Error as err:
            raise IngestError(f"unreadable header row: {err}", source=str(path), line=1) from None
        yield 1, n_header
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            for row in reader:
                yield reader.line_num + 1, row
        except csv.Error as err:
            raise IngestError(f"unreadable row: {err}", source=str(path), line=reader.line_num + 1) from None


def read_categorical(
    path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None
) -> Corpus:
    """Read an ``item, annotator, label`` CSV or TSV with a header row; optional 4th column = gold.

    Columns are taken by position; the header names are not interpreted. The
    delimiter is a tab if the header line has one, else a comma.

    Parameters
    ----------
    path : str or path-like
    role : {"crowd", "expert"}, default="crowd"
        Role of the annotators of the label column.
    problems : ProblemLog, optional
        Where bad rows go; default: raise :class:`IngestError` at the first
        (``"<file>:<line>: <what>"``).

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
        For an unreadable file, a row with fewer than 3 or more than the header's
        columns, an empty field, a duplicate (item, annotator) row, or conflicting
        gold values for one item.
    """
    if role not in ("crowd", "expert"):
        raise IngestError(f"role must be 'crowd' or 'expert', found {role!r}")
    problems = problems or ProblemLog("fail")
    source = str(path)
    rows = _open_rows(Path(path))
    _, n_header = next(rows)
    if n_header not in (3, 4):
        raise IngestError(
            f"expected 3 or 4 columns (item, annotator, label[, gold]), found {n_header} in the header",
            source=source, line=1,
        )

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
        if not 3 <= len(row) <= n_header:
            problems.report(f"expected {n_header} columns, found {len(row)}", source=source, line=line)
            continue
        item, annotator, label = (f.strip() for f in row[:3])
        empty = next((n for n, v in zip(("item", "annotator", "label"), (item, annotator, label), strict=True)
                      if not v), None)
        if empty:
            problems.report(f"empty {empty} field", source=source, line=line)
            continue
        if annotator == GOLD_ANNOTATOR and n_header == 4:
            problems.report(f"annotator id {GOLD_ANNOTATOR!r} is reserved for the gold column", source=source,
                            line=line)
            continue
        i = items.get(item, len(items))
        w = workers.get(annotator, len(workers))
        if (i, w) in seen:
            problems.report(f"duplicate row: annotator {annotator!r} labelled item {item!r} twice", source=source,
                            line=line)
            continue
        g = row[3].strip() if len(row) == 4 else ""
        if g and gold.get(i, g) != g:
            problems.report(f"item {item!r} has gold {gold[i]!r} and {g!r}", source=source, line=line)
            continue
        items.setdefault(item, i)
        workers.setdefault(annotator, w)
        seen.add((i, w))
        if g:
            gold[i] = g
            labels.setdefault(g, len(labels))
        obs_item.append(i)
        obs_worker.append(w)
        obs_label.append(labels.setdefault(label, len(labels)))

    if not obs_item:
        raise IngestError("no annotation rows after the header", source=source)

    # Class order: natural order of the answers, independent of the row order.
    class_names = tuple(sorted(labels, key=natural_key))
    remap = np.empty(len(labels), dtype=np.int64)
    for name, k in labels.items():
        remap[k] = class_names.index(name)

    token = np.asarray(obs_item, dtype=np.int64)
    worker = np.asarray(obs_worker, dtype=np.int64)
    label = remap[np.asarray(obs_label, dtype=np.int64)]
    worker_ids = list(workers)
    worker_roles = [role] * len(worker_ids)
    if gold:
        g_item = np.fromiter(gold.keys(), dtype=np.int64, count=len(gold))
        g_label = remap[np.fromiter((labels[v] for v in gold.values()), dtype=np.int64, count=len(gold))]
        token = np.concatenate([token, g_item])
        worker = np.concatenate([worker, np.full(len(gold), len(worker_ids))])
        label = np.concatenate([label, g_label])
        worker_ids.append(GOLD_ANNOTATOR)
        worker_roles.append("expert")

    item_ids = tuple(items)
    n_items = len(item_ids)
    return Corpus.from_arrays(
        token=token,
        worker=worker,
        label=label,
        doc_lengths=np.ones(n_items, dtype=np.int64),
        token_start=np.zeros(n_items, dtype=np.int64),
        token_end=np.fromiter((len(s) for s in item_ids), dtype=np.int64, count=n_items),
        doc_ids=item_ids,
        texts=item_ids,
        worker_ids=worker_ids,
        worker_roles=worker_roles,
        class_names=class_names,
    )
