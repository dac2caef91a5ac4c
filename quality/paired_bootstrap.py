"""Scores of several methods on the same document resamples: the paired bootstrap behind ``crowdqa compare``.

Every method is scored on the same resamples of documents [1]_: each resample's document weights ``W``
(``n_boot x n_docs``, how often each document was drawn) multiply every method's per-document counts at once
(``W @ counts``), so the difference between two methods is a paired difference, resample by resample, and its
percentile interval (:func:`percentile_bounds`) leaves out the resamples where a score is undefined.

References
----------
.. [1] B. Efron, R. J. Tibshirani (1993). An Introduction to the Bootstrap, ch. 16 (paired comparisons).
   Chapman & Hall.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["SCORES", "f1_from_sums", "paired_bootstrap", "percentile_bounds"]


def f1_from_sums(sums: NDArray) -> NDArray[np.float64]:
    """F1 from summed ``(tp, fp, fn)`` in the last axis; nan where undefined."""
    den = 2 * sums[..., 0] + sums[..., 1] + sums[..., 2]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * sums[..., 0] / den, np.nan)


def _accuracy(sums: NDArray) -> NDArray[np.float64]:
    """Accuracy from summed ``(correct, compared)`` in the last axis; nan where nothing was compared."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sums[..., 1] > 0, sums[..., 0] / np.maximum(sums[..., 1], 1), np.nan)


SCORES = {"f1": f1_from_sums, "accuracy": _accuracy}


def percentile_bounds(x: NDArray, level: float) -> tuple[NDArray, NDArray]:
    """Percentile bounds of every column of ``x`` over its finite rows (nan for a column without any)."""
    a = 100 * (1 - level) / 2
    out = np.full((2, x.shape[1]), np.nan)
    ok = np.isfinite(x)
    for j in np.flatnonzero(ok.any(axis=0)):  # one column per method: a handful
        out[:, j] = np.percentile(x[ok[:, j], j], [a, 100 - a])
    return out[0], out[1]


def paired_bootstrap(
    counts: NDArray, *, score: str, n_boot: int = 1000, rng: np.random.Generator | int | None = 0,
    max_cells: int = 1 << 22,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Each method's score on every document resample, the same resamples for all methods.

    Parameters
    ----------
    counts : ndarray of shape (n_methods, n_docs, n_stats)
        Per-document counts of each method: ``(tp, fp, fn)`` for ``score="f1"``, ``(correct, compared)`` for
        ``"accuracy"``.
    score : {"f1", "accuracy"}
    n_boot : int, default=1000
    rng : numpy Generator or int seed
    max_cells : int
        Largest number of document draws held at once.

    Returns
    -------
    point : ndarray of shape (n_methods,)
        The score on all documents.
    boot : ndarray of shape (n_boot, n_methods)
        The score on each resample (nan where undefined). Resample ``b`` draws ``n_docs`` documents with
        ``rng.integers(0, n_docs, n_docs)``, in order, so a loop over resamples with the same seed draws the same.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 3:
        raise ValueError(f"counts must have shape (n_methods, n_docs, n_stats), found {counts.shape}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, found {n_boot}")
    fn = SCORES[score]
    n_methods, n_docs, n_stats = counts.shape
    point = fn(counts.sum(axis=1))
    boot = np.full((n_boot, n_methods), np.nan)
    if n_docs == 0:
        return point, boot
    rng = np.random.default_rng(rng)
    flat = counts.transpose(1, 0, 2).reshape(n_docs, n_methods * n_stats)
    step = max(1, max_cells // n_docs)
    for lo in range(0, n_boot, step):
        b = min(step, n_boot - lo)
        idx = rng.integers(0, n_docs, size=(b, n_docs))
        weights = np.bincount((idx + (np.arange(b) * n_docs)[:, None]).ravel(), minlength=b * n_docs)
        sums = (weights.reshape(b, n_docs).astype(np.float64) @ flat).reshape(b, n_methods, n_stats)
        boot[lo:lo + b] = fn(sums)
    return point, boot
