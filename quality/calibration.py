"""How well confidence scores are calibrated: reliability bins, expected calibration error, Brier score.

A score is calibrated when, of the items scored ``p``, a share ``p`` is right. These functions take one score and
one right/wrong outcome per item (a token, a categorical item or a span) and the document of each item, so that
intervals resample documents (items of one document are not independent).

Definitions
-----------
* Bins: ``n_bins`` equal-width bins of the score, ``[0, 1/n_bins), ..., [1 - 1/n_bins, 1]`` (a score of 1 falls
  in the last).
* Expected calibration error (Naeini, Cooper & Hauskrecht 2015; Guo et al. 2017):
  :math:`\\mathrm{ECE} = \\sum_b \\frac{n_b}{N} \\lvert \\bar y_b - \\bar p_b \\rvert
  = \\frac{1}{N} \\sum_b \\lvert \\sum_{i \\in b} (y_i - p_i) \\rvert`.
* Brier score (Brier 1950): :math:`\\frac{1}{N} \\sum_i (p_i - y_i)^2`.
* The low-score error ratio: the share of wrong items among the lowest-scored tenth (``ceil(N / 10)`` items,
  ties at the cut broken by item order) divided by the share of wrong items overall; 2 means the lowest tenth
  holds twice the overall share of errors. ``nan`` when nothing is wrong.
* Intervals: percentile bootstrap over documents (``n_boot`` resamples of the documents with replacement, each
  item weighted by how often its document was drawn).

References
----------
.. [1] M. P. Naeini, G. F. Cooper, M. Hauskrecht (2015). Obtaining well calibrated probabilities using Bayesian
   binning. AAAI 29(1). doi:10.1609/aaai.v29i1.9602
.. [2] C. Guo, G. Pleiss, Y. Sun, K. Q. Weinberger (2017). On calibration of modern neural networks. ICML,
   PMLR 70:1321-1330.
.. [3] G. W. Brier (1950). Verification of forecasts expressed in terms of probability. Monthly Weather Review
   78(1), 1-3. doi:10.1175/1520-0493(1950)078<0001:VOFEIT>2.0.CO;2
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.quality.intervals import Interval

__all__ = ["CalibrationSummary", "brier_score", "calibration_summary", "expected_calibration_error",
           "low_score_error_ratio", "reliability_bins"]


def _check(score: NDArray, correct: NDArray) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    score = np.asarray(score, dtype=np.float64)
    correct = np.asarray(correct)
    if score.ndim != 1 or correct.shape != score.shape:
        raise ValueError(f"score and correct must be 1-d of one length, found shapes {score.shape} and "
                         f"{correct.shape}")
    bad = ~((score >= 0) & (score <= 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"scores must be in [0, 1], found {score[i]} at item {i}")
    return score, correct.astype(np.float64)


def _bin_of(score: NDArray[np.float64], n_bins: int) -> NDArray[np.int64]:
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, found {n_bins}")
    return np.minimum((score * n_bins).astype(np.int64), n_bins - 1)


def reliability_bins(score: NDArray, correct: NDArray, *, n_bins: int = 10
                     ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Count, mean score and share right of each equal-width score bin (the reliability diagram's points).

    Parameters
    ----------
    score : ndarray of shape (n_items,)
        Confidence of each item, in [0, 1].
    correct : ndarray of shape (n_items,), bool
        Whether each item is right.
    n_bins : int, default=10

    Returns
    -------
    count : ndarray of shape (n_bins,)
    mean_score, accuracy : ndarray of shape (n_bins,)
        ``nan`` in an empty bin.

    Examples
    --------
    >>> n, p, a = reliability_bins(np.array([.05, .95, .92, 1.0]), np.array([0, 1, 0, 1]), n_bins=2)
    >>> n.tolist(), p.round(3).tolist(), a.round(3).tolist()
    ([1, 3], [0.05, 0.957], [0.0, 0.667])
    """
    score, correct = _check(score, correct)
    b = _bin_of(score, n_bins)
    count = np.bincount(b, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(b, weights=score, minlength=n_bins) / count
        acc = np.bincount(b, weights=correct, minlength=n_bins) / count
    return count, mean, acc


def expected_calibration_error(score: NDArray, correct: NDArray, *, n_bins: int = 10) -> float:
    """ECE over ``n_bins`` equal-width bins (module docstring); ``nan`` for no items.

    Examples
    --------
    >>> round(expected_calibration_error(np.array([.05, .95, .92, 1.0]), np.array([0, 1, 0, 1]), n_bins=2), 4)
    0.23
    """
    score, correct = _check(score, correct)
    if score.size == 0:
        return float("nan")
    b = _bin_of(score, n_bins)
    gap = np.bincount(b, weights=correct - score, minlength=n_bins)
    return float(np.abs(gap).sum() / score.size)


def brier_score(score: NDArray, correct: NDArray) -> float:
    """Mean squared difference between score and outcome; ``nan`` for no items.

    Examples
    --------
    >>> brier_score(np.array([.5, 1.0]), np.array([1, 1]))
    0.125
    """
    score, correct = _check(score, correct)
    return float(np.mean((score - correct) ** 2)) if score.size else float("nan")


def low_score_error_ratio(score: NDArray, correct: NDArray, *, share: float = 0.1) -> float:
    """Share of wrong items among the lowest-scored ``share`` of the items over the share wrong overall.

    Examples
    --------
    >>> low_score_error_ratio(np.array([.1, .9, .8, .95, .99, .97, .9, .91, .92, .93]),
    ...                       np.array([0, 1, 0, 1, 1, 1, 1, 1, 1, 1]))
    5.0
    """
    score, correct = _check(score, correct)
    wrong = 1.0 - correct
    if score.size == 0 or wrong.sum() == 0:
        return float("nan")
    low = np.argsort(score, kind="stable")[: math.ceil(share * score.size)]
    return float(wrong[low].mean() / wrong.mean())


@dataclass(frozen=True)
class CalibrationSummary:
    """Calibration of one set of scores against outcomes, with document-bootstrap intervals.

    Attributes
    ----------
    n_items : int
    accuracy, mean_score : float
    ece, brier : float
    ece_interval, brier_interval : Interval
    low_score_error_ratio : float
    count, bin_mean_score, bin_accuracy : list
        The reliability diagram's bins (:func:`reliability_bins`; ``None`` for an empty bin).
    """

    n_items: int
    accuracy: float
    mean_score: float
    ece: float
    ece_interval: Interval
    brier: float
    brier_interval: Interval
    low_score_error_ratio: float
    count: list[int]
    bin_mean_score: list[float | None]
    bin_accuracy: list[float | None]

    def as_data(self) -> dict:
        """Plain JSON data (intervals as ``[low, high]``, ``nan`` as None)."""
        def num(x: float) -> float | None:
            return None if x is None or not math.isfinite(x) else round(float(x), 6)

        return {"n_items": self.n_items, "accuracy": num(self.accuracy), "mean_score": num(self.mean_score),
                "ece": num(self.ece), "ece_interval": [num(self.ece_interval.low), num(self.ece_interval.high)],
                "brier": num(self.brier),
                "brier_interval": [num(self.brier_interval.low), num(self.brier_interval.high)],
                "low_score_error_ratio": num(self.low_score_error_ratio),
                "bins": {"count": self.count, "mean_score": [num(x) for x in self.bin_mean_score],
                         "accuracy": [num(x) for x in self.bin_accuracy]}}


def calibration_summary(score: NDArray, correct: NDArray, group: NDArray, *, n_bins: int = 10, n_boot: int = 1000,
                        level: float = 0.95, rng: np.random.Generator | int | None = 0,
                        max_cells: int = 1 << 22) -> CalibrationSummary:
    """ECE and Brier score of ``score`` against ``correct`` with percentile bootstrap intervals over documents.

    Parameters
    ----------
    score : ndarray of shape (n_items,)
    correct : ndarray of shape (n_items,), bool
    group : ndarray of shape (n_items,)
        Document of each item (any integers); documents are what the bootstrap resamples.
    n_bins, n_boot, level : int, int, float
    rng : numpy Generator or int seed, default=0
    max_cells : int, default=2**22
        Resamples are drawn in chunks of at most this many (resample, document) cells.

    Returns
    -------
    CalibrationSummary
    """
    score, correct = _check(score, correct)
    group = np.asarray(group)
    if group.shape != score.shape:
        raise ValueError(f"group must have shape {score.shape}, found {group.shape}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), found {level}")
    count, mean, acc = reliability_bins(score, correct, n_bins=n_bins)
    nan = Interval(float("nan"), float("nan"), level, "bootstrap-percentile")
    if score.size == 0:
        return CalibrationSummary(0, math.nan, math.nan, math.nan, nan, math.nan, nan, math.nan, count.tolist(),
                                  [None] * n_bins, [None] * n_bins)
    _, doc = np.unique(group, return_inverse=True)
    n_docs = int(doc.max()) + 1
    b = _bin_of(score, n_bins)
    cell = doc * n_bins + b
    # Per document and bin: items, the sum of (outcome - score); per document: items and squared errors.
    items = np.bincount(cell, minlength=n_docs * n_bins).reshape(n_docs, n_bins)
    gap = np.bincount(cell, weights=correct - score, minlength=n_docs * n_bins).reshape(n_docs, n_bins)
    sq = np.bincount(doc, weights=(score - correct) ** 2, minlength=n_docs)
    gen = np.random.default_rng(rng)
    per_chunk = max(1, max_cells // n_docs)
    eces, briers = [], []
    for lo in range(0, n_boot, per_chunk):
        draws = gen.multinomial(n_docs, np.full(n_docs, 1.0 / n_docs), size=min(per_chunk, n_boot - lo))
        n = draws @ items.sum(axis=1)
        ok = n > 0
        eces.append(np.abs(draws @ gap).sum(axis=1)[ok] / n[ok])
        briers.append((draws @ sq)[ok] / n[ok])
    q = (100 * (1 - level) / 2, 100 * (1 + level) / 2)

    def interval(values: list[NDArray]) -> Interval:
        v = np.concatenate(values)
        low, high = np.percentile(v, q) if v.size else (math.nan, math.nan)
        return Interval(float(low), float(high), level, "bootstrap-percentile")

    def opt(x: float) -> float | None:
        return None if not math.isfinite(x) else float(x)

    return CalibrationSummary(
        n_items=int(score.size), accuracy=float(correct.mean()), mean_score=float(score.mean()),
        ece=expected_calibration_error(score, correct, n_bins=n_bins), ece_interval=interval(eces),
        brier=brier_score(score, correct), brier_interval=interval(briers),
        low_score_error_ratio=low_score_error_ratio(score, correct), count=count.tolist(),
        bin_mean_score=[opt(x) for x in mean], bin_accuracy=[opt(x) for x in acc])
