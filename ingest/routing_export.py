"""Write the documents routed to the experts: a task CSV for Mechanical Turk or Upwork, and upload formats.

The task CSV has one row per routed document, best first, with the columns
:data:`ROUTING_COLUMNS`: ``doc_id``, ``text`` (the document text; token-only formats join
tokens with one space), ``link`` (when a link template is given), ``rank``, ``reason``, then
``score`` and ``tokens``. Column names are plain identifiers, so a Mechanical Turk HIT layout
can use them as ``${doc_id}`` / ``${text}`` and a Label Studio or doccano import can name
``doc_id`` as the id column, whose export then reads back as an expert upload
(``--format label-studio --id-column doc_id``). Every text cell is escaped against CSV
(formula) injection (:func:`crowdqa.ingest.writers.csv_escape`); UTF-8, CRLF rows as the
``csv`` module writes them (what the requester site accepts).

:func:`select_documents` cuts a corpus down to the routed documents (in the routing order),
so that :func:`crowdqa.ingest.writers.write_labels` writes them in any output format.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.ingest.writers import csv_escape, write_labels

__all__ = ["ROUTING_COLUMNS", "TASK_FORMATS", "routing_columns", "write_routing_csv", "write_routing_tasks",
           "document_tokens", "select_documents"]

#: Formats :func:`write_routing_tasks` writes.
TASK_FORMATS = ("label-studio", "doccano", "spans-jsonl")

#: Columns of the task CSV, in order (``link`` only with a link template).
ROUTING_COLUMNS = ("doc_id", "text", "link", "rank", "reason", "score", "tokens")


def routing_columns(*, link: bool) -> tuple[str, ...]:
    """The task CSV's columns, with or without ``link``."""
    return tuple(c for c in ROUTING_COLUMNS if link or c != "link")


def write_routing_csv(rows: Sequence[dict[str, Any]], path: str | os.PathLike, *, link: bool = False) -> None:
    """Write the task CSV.

    Parameters
    ----------
    rows : sequence of dict
        One per routed document, with the keys of :func:`routing_columns`.
    path : str or PathLike
    link : bool, default=False
        Whether to write the ``link`` column.
    """
    columns = routing_columns(link=link)
    with open(Path(path), "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for row in rows:
            w.writerow([csv_escape(v) if isinstance(v := row[c], str) else v for c in columns])


def document_tokens(corpus: Corpus, docs: NDArray | Sequence[int]) -> NDArray[np.int64]:
    """Token indices of documents ``docs``, concatenated in that order.

    Parameters
    ----------
    corpus : Corpus
    docs : array-like of int, shape (n_selected,)

    Returns
    -------
    ndarray of shape (sum of their lengths,)
    """
    docs = np.asarray(docs, dtype=np.int64)
    start, lengths = corpus.doc_start[docs], corpus.doc_lengths[docs]
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return np.repeat(start - offsets[:-1], lengths) + np.arange(int(offsets[-1]), dtype=np.int64)


def select_documents(corpus: Corpus, docs: NDArray | Sequence[int]) -> Corpus:
    """The corpus restricted to documents ``docs``, in that order, with every annotator's labels on them.

    Parameters
    ----------
    corpus : Corpus
    docs : array-like of int, shape (n_selected,)
        Distinct document indices.

    Returns
    -------
    Corpus
        Same annotators and classes; tokens renumbered.
    """
    docs = np.asarray(docs, dtype=np.int64)
    if docs.size and (docs.min() < 0 or docs.max() >= corpus.n_docs):
        raise IndexError(f"document indices must be in [0, {corpus.n_docs})")
    if np.unique(docs).size != docs.size:
        raise ValueError("document indices must be distinct")
    lengths = corpus.doc_lengths[docs]
    old = document_tokens(corpus, docs)  # old token index of every new token, in the new order
    new_of_old = np.full(corpus.n_tokens, -1, dtype=np.int64)
    new_of_old[old] = np.arange(old.size)
    keep = new_of_old[corpus.token] >= 0
    return Corpus.from_arrays(
        token=new_of_old[corpus.token[keep]], worker=corpus.worker[keep], label=corpus.label[keep],
        doc_lengths=lengths, token_start=corpus.token_start[old], token_end=corpus.token_end[old],
        doc_ids=[corpus.doc_ids[d] for d in docs], texts=[corpus.texts[d] for d in docs],
        worker_ids=corpus.worker_ids, worker_roles=corpus.worker_roles, class_names=corpus.class_names,
        tags=corpus.tags,
    )


def write_routing_tasks(rows: Sequence[dict[str, Any]], corpus: Corpus, labels: NDArray, path: str | os.PathLike, *,
                        format: str) -> None:
    """Write the routed documents as annotation tasks (see the module notes).

    Parameters
    ----------
    rows : sequence of dict
        The routed documents, best first: ``index`` (document index in ``corpus``), ``doc_id``,
        ``rank``, ``reason``.
    corpus : Corpus
    labels : ndarray of shape (n_tokens,)
        The aggregate, written as the draft.
    path : str or PathLike
    format : {"label-studio", "doccano", "spans-jsonl"}
    """
    if format not in TASK_FORMATS:
        raise ValueError(f"format must be one of {', '.join(TASK_FORMATS)}, found {format!r}")
    docs = np.asarray([r["index"] for r in rows], dtype=np.int64)
    sub = select_documents(corpus, docs)
    draft = np.asarray(labels)[document_tokens(corpus, docs)]
    if format == "spans-jsonl":
        write_labels(draft, sub, path, format="spans-jsonl")
        return
    with open(Path(path), "w", encoding="utf-8", newline="\n") as fh:
        if format == "doccano":
            for r, text in zip(rows, sub.texts, strict=True):
                fh.write(json.dumps({"doc_id": r["doc_id"], "text": text, "rank": r["rank"], "reason": r["reason"],
                                     "label": []}, ensure_ascii=False) + "\n")
            return
        spans = [[] for _ in rows]
        if sub.has_outside:
            found = decode_spans(np.where(draft < 0, 0, draft), sub)
            for d, a, b, t in zip(found.doc.tolist(), found.start.tolist(), found.end.tolist(), found.type.tolist(),
                                  strict=True):
                label = sub.entity_types[t - 1]
                spans[d].append({"from_name": "label", "to_name": "text", "type": "labels",
                                 "value": {"start": a, "end": b, "text": sub.texts[d][a:b], "labels": [label]}})
        tasks = [{"data": {"doc_id": r["doc_id"], "text": text, "rank": r["rank"], "reason": r["reason"]},
                  "predictions": [{"model_version": "crowdqa aggregate", "result": found}]}
                 for r, text, found in zip(rows, sub.texts, spans, strict=True)]
        json.dump(tasks, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
