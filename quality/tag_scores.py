"""Scores of tag labels (the ``tags`` scheme): per-tag precision, recall and F1, their micro and macro averages.

Every token carries one tag of a tag set, so every class is scored (there is no outside class), one against the
rest: for tag ``c``, ``tp`` are tokens both sides tag ``c``, ``fp`` tokens only the aggregate tags ``c``, ``fn``
tokens only the reference does. The micro average pools the counts of every tag; with one tag per token on both
sides its precision, recall and F1 all equal the token accuracy. The macro average is the mean over the tags
that occur on either side of the compared tokens (a tag neither side uses has no F1).

Intervals resample documents (sentences), not tokens: tags within a sentence are not independent, so a token
bootstrap would understate the spread. Per tag and micro: :func:`crowdqa.quality.score_blocks.score_block`
(Clopper-Pearson for precision and recall, a document bootstrap for F1). Macro: the percentile interval of the
macro F1 over ``n_boot`` document resamples, each resample's tag counts the multinomial-weighted sum of the
documents' counts (Efron & Tibshirani 1993, ch. 13).

References
----------
.. [1] B. Efron, R. J. Tibshirani (1993). An Introduction to the Bootstrap. Chapman & Hall.
   doi:10.1201/9780429246593
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from crowdqa.quality.metrics import prf_from_counts
from crowdqa.quality.report_schema import record
from crowdqa.quality.score_blocks import LEVEL, finite_or_none, interval_or_none, score_block

__all__ = ["tag_doc_counts", "tag_blocks", "macro_f1_bounds"]

#: Bootstrap replicates drawn at once by :func:`macro_f1_bounds` (bounds its memory).
_BOOT_CHUNK = 64


def tag_doc_counts(pred: NDArray, ref: NDArray, *, doc: NDArray, n_docs: int, n_classes: int) -> NDArray[np.int64]:
    """``tp, fp, fn`` of every tag in every document, one ``bincount`` each.

    Parameters
    ----------
    pred, ref : ndarray of shape (n_compared,)
        Class of each compared token, by the aggregate and by the reference.
    doc : ndarray of shape (n_compared,)
        Document of each compared token.
    n_docs, n_classes : int

    Returns
    -------
    ndarray of shape (n_docs, n_classes, 3)
    """
    pred, ref, doc = (np.asarray(a, dtype=np.int64) for a in (pred, ref, doc))
    size = n_docs * n_classes
    hit = pred == ref
    tp = np.bincount(doc[hit] * n_classes + ref[hit], minlength=size)
    fp = np.bincount(doc[~hit] * n_classes + pred[~hit], minlength=size)
    fn = np.bincount(doc[~hit] * n_classes + ref[~hit], minlength=size)
    return np.stack([tp, fp, fn], axis=1).reshape(n_docs, n_classes, 3)


def macro_f1_bounds(counts: NDArray, *, n_boot: int, rng: np.random.Generator, level: float = LEVEL
                    ) -> tuple[float, float]:
    """Percentile interval of the macro F1 under a document bootstrap.

    Parameters
    ----------
    counts : ndarray of shape (n_docs, n_classes, 3)
        From :func:`tag_doc_counts`.
    n_boot : int
    rng : numpy.random.Generator
    level : float

    Returns
    -------
    (low, high) : tuple of float
        NaN when no replicate has a tag (never for a non-empty comparison).
    """
    n_docs, n_classes, _ = counts.shape
    flat = counts.reshape(n_docs, n_classes * 3).astype(np.float64)
    values = []
    for a in range(0, n_boot, _BOOT_CHUNK):
        weights = rng.multinomial(n_docs, np.full(n_docs, 1.0 / n_docs), size=min(_BOOT_CHUNK, n_boot - a))
        sums = (weights @ flat).reshape(-1, n_classes, 3)
        values.append(_macro_f1(sums))
    f1 = np.concatenate(values)
    f1 = f1[np.isfinite(f1)]
    if not f1.size:
        return float("nan"), float("nan")
    alpha = (1.0 - level) / 2
    low, high = np.quantile(f1, [alpha, 1.0 - alpha])
    return float(low), float(high)


def _macro_f1(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Macro F1 of each row of ``sums`` (n_rows, n_classes, 3): the mean F1 over the tags used on either side."""
    tp, fp, fn = sums[..., 0], sums[..., 1], sums[..., 2]
    used = (tp + fp + fn) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(used, 2 * tp / (2 * tp + fp + fn), 0.0)
        return f1.sum(axis=-1) / used.sum(axis=-1)


def tag_blocks(pred: NDArray, ref: NDArray, *, doc: NDArray, n_docs: int, class_names: tuple[str, ...],
               n_boot: int, seed: list[int], min_boot_docs: int) -> dict:
    """The tag scores of the aggregate against the reference on the compared tokens.

    Returns
    -------
    dict
        ``per_tag`` (tag -> ``Score``), ``micro`` (``Score``) and ``macro`` (``MacroScore``), the fields
        :class:`~crowdqa.quality.report_model.TagAggregateScores` adds to the categorical scores.
    """
    k = len(class_names)
    counts = tag_doc_counts(pred, ref, doc=doc, n_docs=n_docs, n_classes=k)
    counts = counts[counts.sum(axis=(1, 2)) > 0]  # the documents compared
    n_tokens = int(np.asarray(pred).shape[0])
    per_tag = {name: score_block(counts[:, c], n_boot=n_boot, rng=np.random.default_rng([*seed, c]),
                                 min_boot_docs=min_boot_docs, tokens=int(counts[:, c, [0, 2]].sum()))
               for c, name in enumerate(class_names)}
    micro = score_block(counts.sum(axis=1), n_boot=n_boot, rng=np.random.default_rng([*seed, k]),
                        min_boot_docs=min_boot_docs, tokens=n_tokens)
    totals = counts.sum(axis=0).astype(np.float64)
    used = totals.sum(axis=1) > 0
    p, r, f = prf_from_counts(totals[:, 0], totals[:, 1], totals[:, 2])
    ci = None
    if counts.shape[0] >= min_boot_docs and n_boot > 0:
        ci = interval_or_none(*macro_f1_bounds(counts, n_boot=n_boot, rng=np.random.default_rng([*seed, k + 1])))
    macro = record("MacroScore", {
        "precision": finite_or_none(float(np.nanmean(np.where(used, p, np.nan)))) if used.any() else None,
        "recall": finite_or_none(float(np.nanmean(np.where(used, r, np.nan)))) if used.any() else None,
        "f1": finite_or_none(float(_macro_f1(totals[None])[0])) if used.any() else None,
        "f1_ci": ci, "tags": int(used.sum()), "documents": int(counts.shape[0]),
    })
    return {"per_tag": per_tag, "micro": micro, "macro": macro}
