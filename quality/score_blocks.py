"""The report's score blocks: precision, recall and F1 with their intervals, accuracies, span levels.

A score block (the report model's ``Score``) holds ``tp, fp, fn``, precision, recall and F1, Clopper-Pearson
intervals [1]_ for precision and recall and a document-level bootstrap interval for F1 (``null`` under
``min_boot_docs`` documents, where resampling documents says nothing). :func:`score_block` builds one from
per-document counts; :func:`worker_blocks` builds every worker's at once, from per-(worker, document) counts,
with one bootstrap pass for all workers (:func:`crowdqa.quality.intervals.grouped_bootstrap_f1_bounds`).
Blocks are plain JSON data in the models' shape (:mod:`crowdqa.quality.report_schema`).

References
----------
.. [1] C. J. Clopper, E. S. Pearson (1934). The use of confidence or fiducial limits illustrated in the case
   of the binomial. Biometrika 26(4), 404-413. doi:10.2307/2331986
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.quality.intervals import clopper_pearson_bounds, grouped_bootstrap_f1_bounds
from crowdqa.quality.metrics import grouped_counts, prf_from_counts
from crowdqa.quality.report_schema import record, records
from crowdqa.quality.span_metrics import LEGACY_SPAN_KEYS, instance_counts, overlap_counts, per_type_counts

__all__ = ["LEVEL", "SPAN_LEVELS", "finite_or_none", "interval_or_none", "score_block", "token_doc_counts",
           "doc_counts", "span_levels", "headline_level", "span_blocks", "label_score", "per_label_score",
           "accuracy_blocks", "accuracy_block", "id_rank", "worker_blocks", "add_worker_accuracy"]

#: The confidence level of every interval of a report.
LEVEL = 0.95

#: The span levels of a report, each with its NLP Sandbox instance mode (None: the overlap match). The seed
#: named them otherwise (``LEGACY_SPAN_KEYS``, still read in stored reports by :func:`span_levels`):
#: ``span_strict`` ignored the type, ``span_relaxed`` too, and ``span_type`` is conlleval's figure.
SPAN_LEVELS = (("span_location", "strict"), ("span_location_relaxed", "relaxed"),
               ("span_location_and_type", "type"), ("span_overlap", None))


def finite_or_none(x: float | None) -> float | None:
    """``x`` as a float, or None when it is None or not finite (JSON has no NaN)."""
    return float(x) if x is not None and np.isfinite(x) else None


def interval_or_none(low: float, high: float) -> list[float] | None:
    """``[low, high]``, or None when either bound is not finite."""
    return [float(low), float(high)] if np.isfinite(low) and np.isfinite(high) else None


def score_block(
    doc_counts: NDArray, *, n_boot: int, rng: np.random.Generator | int | list[int], min_boot_docs: int = 3,
    tokens: int | None = None,
) -> dict | None:
    """One report score block (``Score``) from per-document counts.

    Parameters
    ----------
    doc_counts : ndarray of shape (n_docs, 3)
        ``tp, fp, fn`` of each compared document.
    n_boot : int
    rng : numpy Generator, int seed or seed sequence
    min_boot_docs : int, default=3
    tokens : int, optional
        Number of compared tokens, reported as is (None for span scores).

    Returns
    -------
    dict or None
        ``None`` when no document is compared; ``accuracy`` is None (a caller fills it in).
    """
    doc_counts = np.asarray(doc_counts, dtype=np.int64).reshape(-1, 3)
    if doc_counts.shape[0] == 0:
        return None
    tp, fp, fn = (int(v) for v in doc_counts.sum(axis=0))
    p, r, f = prf_from_counts(tp, fp, fn)
    (p_lo, r_lo), (p_hi, r_hi) = clopper_pearson_bounds([tp, tp], [tp + fp, tp + fn], level=LEVEL)
    f_ci = None
    if doc_counts.shape[0] >= min_boot_docs and n_boot > 0:
        (low,), (high,) = grouped_bootstrap_f1_bounds(doc_counts, np.zeros(doc_counts.shape[0], dtype=np.int64),
                                                      n_groups=1, n_boot=n_boot, level=LEVEL, rng=rng)
        f_ci = interval_or_none(low, high)
    return record("Score", {
        "precision": finite_or_none(p), "recall": finite_or_none(r), "f1": finite_or_none(f),
        "tp": tp, "fp": fp, "fn": fn, "precision_ci": interval_or_none(p_lo, p_hi),
        "recall_ci": interval_or_none(r_lo, r_hi), "f1_ci": f_ci, "documents": int(doc_counts.shape[0]),
        "tokens": None if tokens is None else int(tokens),
    })


def token_doc_counts(pred: NDArray, ref: NDArray, valid: NDArray, corpus: Corpus) -> tuple[NDArray, int]:
    """Per-document binary counts (only documents with a compared token) and the number of compared tokens."""
    counts = doc_counts(pred[valid] > 0, ref[valid] > 0, corpus.token_doc[valid], corpus.n_docs)
    return counts, int(np.count_nonzero(valid))


def doc_counts(pred_pos: NDArray, ref_pos: NDArray, doc: NDArray, n_docs: int) -> NDArray[np.int64]:
    """Binary tp/fp/fn of the documents with a compared token (document order), from compared tokens."""
    counts = grouped_counts(pred_pos, ref_pos, doc, n_groups=n_docs)
    return counts[np.bincount(doc, minlength=n_docs) > 0]


def span_levels(agg: dict | None) -> dict[str, dict | None]:
    """The span score blocks of a report's ``aggregate_vs_expert`` by their names (:data:`SPAN_LEVELS`),
    reading the seed's keys (``span_strict``, ``span_relaxed``, ``span_type``) of a report stored before."""
    agg = agg or {}
    old = {new: agg[key] for key, new in LEGACY_SPAN_KEYS.items() if key in agg}
    return {key: agg.get(key, old.get(key)) for key, _ in SPAN_LEVELS if key in agg or key in old}


def headline_level(report: dict) -> str:
    """The score a span report leads with: its ``aggregate_vs_expert.headline``, or for a report stored before
    there was one, conlleval's (``span_location_and_type``) on BIO labels and ``token`` on inside/outside ones."""
    agg = report.get("aggregate_vs_expert") or {}
    if agg.get("headline"):
        return str(agg["headline"])
    return "span_location_and_type" if any(str(k).startswith("B-") for k in report.get("labels") or ()) else "token"


def label_score(tp: int, fp: int, fn: int) -> dict[str, Any]:
    """A ``LabelScore``: precision, recall and F1 of the counts, with the counts."""
    p, r, f = prf_from_counts(tp, fp, fn)
    return record("LabelScore", {"precision": finite_or_none(p), "recall": finite_or_none(r),
                                 "f1": finite_or_none(f), "tp": int(tp), "fp": int(fp), "fn": int(fn)})


def per_label_score(per_label: dict, label: int) -> dict[str, Any]:
    """The ``LabelScore`` of class ``label`` in :func:`crowdqa.quality.metrics.per_label_prf`'s arrays."""
    return record("LabelScore", {key: finite_or_none(per_label[key][label]) for key in ("precision", "recall", "f1")}
                  | {key: int(per_label[key][label]) for key in ("tp", "fp", "fn")})


def span_blocks(
    corpus: Corpus, pred: NDArray, ref: NDArray, docs: NDArray[np.bool_], *, n_boot: int, seeds: list[list[int]],
    min_boot_docs: int,
) -> tuple[dict[str, dict | None], dict[str, dict]]:
    """The :data:`SPAN_LEVELS` blocks (each bootstrapped with its entry of ``seeds``) and the per-type scores
    (``span_per_type``) of ``pred`` against ``ref`` on the documents in ``docs``."""
    if not np.any(docs):
        return {key: None for key, _ in SPAN_LEVELS}, {}
    pred_spans, ref_spans = decode_spans(pred, corpus), decode_spans(ref, corpus)
    pred_spans, ref_spans = pred_spans.select(docs[pred_spans.doc]), ref_spans.select(docs[ref_spans.doc])
    levels = {}
    for (key, mode), level_seed in zip(SPAN_LEVELS, seeds, strict=True):
        if mode is None:
            counts = overlap_counts(ref_spans, pred_spans, n_docs=corpus.n_docs)[docs]
        else:
            counts = instance_counts(ref_spans, pred_spans, mode=mode, n_docs=corpus.n_docs)[docs]
        levels[key] = score_block(counts, n_boot=n_boot, rng=np.random.default_rng(level_seed),
                                  min_boot_docs=min_boot_docs)
    by_type = per_type_counts(ref_spans, pred_spans, n_types=len(corpus.entity_types) + 1)
    per_type = {name: label_score(*(int(v) for v in by_type[t])) for t, name in enumerate(corpus.entity_types, 1)}
    return levels, per_type


def accuracy_blocks(correct: NDArray, compared: NDArray) -> list[dict]:
    """``Accuracy`` blocks: the share of compared tokens (items) labelled as the reference, with its
    Clopper-Pearson interval, elementwise (all intervals at once)."""
    correct, compared = np.asarray(correct), np.asarray(compared)
    low, high = clopper_pearson_bounds(correct, compared, level=LEVEL)
    has_ci = np.isfinite(low) & np.isfinite(high)
    return records("Accuracy", {
        "value": [c / n if n else None for c, n in zip(correct.tolist(), compared.tolist(), strict=True)],
        "correct": correct.tolist(), "compared": compared.tolist(),
        "ci": [[a, b] if ok else None for a, b, ok in zip(low.tolist(), high.tolist(), has_ci.tolist(), strict=True)],
    })


def accuracy_block(correct: int, compared: int) -> dict:
    """:func:`accuracy_blocks` of one count."""
    return accuracy_blocks(np.array([int(correct)]), np.array([int(compared)]))[0]


def add_worker_accuracy(blocks: list[dict | None], correct: NDArray, compared: NDArray) -> None:
    """Put each worker's accuracy (``correct`` of ``compared`` labels) in its block."""
    if all(block is None for block in blocks):
        return
    for block, acc in zip(blocks, accuracy_blocks(correct, compared), strict=True):
        if block is not None:
            block["accuracy"] = acc


def id_rank(ids: tuple[str, ...]) -> NDArray[np.int64]:
    """Each annotator's rank among the annotator ids: a numbering that does not follow the upload's order."""
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(np.asarray(ids, dtype=str), kind="stable")] = np.arange(len(ids))
    return rank


def worker_blocks(
    counts: NDArray | None, pair_worker: NDArray, n_tokens: NDArray | None, *, ranks: NDArray, n_boot: int,
    seed: list[int], min_boot_docs: int,
) -> list[dict | None]:
    """Score blocks for all workers from per-(worker, document) counts (rows in any order).

    ``counts`` None (categorical answers, scored by accuracy only): ``CategoricalScore`` blocks of
    ``documents`` and ``tokens``. ``n_tokens`` None (span scores): blocks without ``tokens``. The bootstrap
    (one stream, seeded by ``seed``) numbers the workers by ``ranks`` (:func:`id_rank`), so a worker's
    interval does not depend on the order of the upload's rows. Workers without a pair get None.
    """
    n_workers = ranks.shape[0]
    n_docs = np.bincount(pair_worker, minlength=n_workers)
    if counts is None:
        return [None if n_docs[w] == 0 else record("CategoricalScore", {"documents": int(n_docs[w]),
                                                                         "tokens": int(n_tokens[w])})
                for w in range(n_workers)]
    totals = np.stack([np.bincount(pair_worker, weights=counts[:, j], minlength=n_workers) for j in range(3)],
                      axis=1).astype(np.int64)
    tp, fp, fn = totals.T
    p, r, f = prf_from_counts(tp, fp, fn)
    p_lo, p_hi = clopper_pearson_bounds(tp, tp + fp, level=LEVEL)
    r_lo, r_hi = clopper_pearson_bounds(tp, tp + fn, level=LEVEL)
    boot = (n_docs >= min_boot_docs) & (n_boot > 0)
    f_lo, f_hi = np.full(n_workers, np.nan), np.full(n_workers, np.nan)
    if np.any(boot):
        rows = boot[pair_worker]
        f_lo, f_hi = grouped_bootstrap_f1_bounds(counts[rows], ranks[pair_worker[rows]], n_groups=n_workers,
                                                 n_boot=n_boot, level=LEVEL, rng=np.random.default_rng(seed))
        f_lo, f_hi = f_lo[ranks], f_hi[ranks]
    blocks: list[dict | None] = []
    for w in range(n_workers):
        if n_docs[w] == 0:
            blocks.append(None)
            continue
        blocks.append(record("Score", {
            "precision": finite_or_none(p[w]), "recall": finite_or_none(r[w]), "f1": finite_or_none(f[w]),
            "tp": int(tp[w]), "fp": int(fp[w]), "fn": int(fn[w]),
            "precision_ci": interval_or_none(p_lo[w], p_hi[w]), "recall_ci": interval_or_none(r_lo[w], r_hi[w]),
            "f1_ci": interval_or_none(f_lo[w], f_hi[w]) if boot[w] else None, "documents": int(n_docs[w]),
            "tokens": None if n_tokens is None else int(n_tokens[w]),
        }))
    return blocks
