"""Uncertainty of a score: Clopper-Pearson intervals and a document-level bootstrap for F1.

Precision ``tp / (tp + fp)`` and recall ``tp / (tp + fn)`` are binomial proportions,
so each gets the exact Clopper-Pearson interval [1]_ from the beta distribution.
F1 is not a proportion of independent trials, and tokens within a document are not
independent, so its interval comes from resampling *documents* with replacement
and recomputing F1 from the summed per-document counts [2]_ (percentile method).

References
----------
.. [1] C. J. Clopper, E. S. Pearson (1934). The use of confidence or fiducial limits
   illustrated in the case of the binomial. Biometrika 26(4), 404-413. doi:10.2307/2331986
.. [2] B. Efron, R. J. Tibshirani (1993). An Introduction to the Bootstrap. Chapman & Hall.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import beta

__all__ = ["Interval", "clopper_pearson", "clopper_pearson_bounds", "bootstrap_f1", "bootstrap_f1_bounds"]


@dataclass(frozen=True)
class Interval:
    """A confidence interval.

    Attributes
    ----------
    low, high : float
        ``nan`` when the interval is undefined (no trials, no documents).
    level : float
        Confidence level, e.g. 0.95.
    method : str
        ``"clopper-pearson"`` or ``"bootstrap-percentile"``.
    """

    low: float
    high: float
    level: float
    method: str

    def as_list(self) -> list[float] | None:
        """``[low, high]``, or ``None`` when undefined (JSON ``null``)."""
        if not (np.isfinite(self.low) and np.isfinite(self.high)):
            return None
        return [float(self.low), float(self.high)]

    def contains(self, x: float) -> bool:
        """Whether ``low <= x <= high`` (with a relative tolerance of 1e-12)."""
        tol = 1e-12 * max(1.0, abs(x))
        return bool(self.low - tol <= x <= self.high + tol)


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), found {level}")


def clopper_pearson_bounds(
    k: NDArray | int, n: NDArray | int, *, level: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Clopper-Pearson bounds for ``k`` successes in ``n`` trials, elementwise.

    Parameters
    ----------
    k, n : array-like of int, one shape
        ``0 <= k <= n``.
    level : float, default=0.95

    Returns
    -------
    low, high : ndarray of that shape
        ``low = Beta(alpha/2; k, n - k + 1)`` quantile (0 when ``k == 0``),
        ``high = Beta(1 - alpha/2; k + 1, n - k)`` quantile (1 when ``k == n``);
        ``nan`` where ``n == 0``. Equals statsmodels' ``proportion_confint(method="beta")``.
    """
    _check_level(level)
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("counts must satisfy 0 <= k <= n, found k outside [0, n]")
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        # Shape parameters of 0 give nan; those cases are set by the limits below.
        low = beta.ppf(a, k, n - k + 1)
        high = beta.isf(a, k + 1, n - k)
    low = np.where(k == 0, 0.0, low)
    high = np.where(k == n, 1.0, high)
    empty = n == 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def clopper_pearson(k: int, n: int, *, level: float = 0.95) -> Interval:
    """Exact binomial interval for the proportion ``k / n``.

    Examples
    --------
    >>> iv = clopper_pearson(8, 10)
    >>> round(iv.low, 6), round(iv.high, 6)
    (0.443905, 0.974789)
    """
    low, high = clopper_pearson_bounds(k, n, level=level)
    return Interval(float(low), float(high), level, "clopper-pearson")


def bootstrap_f1_bounds(
    counts: NDArray, *, n_boot: int = 1000, level: float = 0.95, rng: np.random.Generator | int | None = 0
) -> tuple[float, float]:
    """Percentile bootstrap bounds of micro F1 over resampled documents.

    Parameters
    ----------
    counts : ndarray of shape (n_docs, 3)
        Per-document ``tp, fp, fn``.
    n_boot : int, default=1000
    level : float, default=0.95
    rng : numpy Generator or int seed, default=0

    Returns
    -------
    low, high : float
        ``nan`` when there are no documents or F1 is undefined in every resample.

    Notes
    -----
    All resamples are drawn at once, ``rng.integers(0, n_docs, size=(n_boot, n_docs))``,
    and their counts summed with one fancy-index and one sum; resamples whose F1 is
    undefined (no positive at all) are left out of the percentiles.
    """
    _check_level(level)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[1] != 3:
        raise ValueError(f"counts must have shape (n_docs, 3), found {counts.shape}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, found {n_boot}")
    n_docs = counts.shape[0]
    if n_docs == 0:
        return float("nan"), float("nan")
    rng = np.random.default_rng(rng)
    idx = rng.integers(0, n_docs, size=(n_boot, n_docs))
    sums = counts[idx].sum(axis=1)  # (n_boot, 3)
    den = 2 * sums[:, 0] + sums[:, 1] + sums[:, 2]
    ok = den > 0
    if not np.any(ok):
        return float("nan"), float("nan")
    f1 = 2 * sums[ok, 0] / den[ok]
    a = (1.0 - level) / 2.0
    low, high = np.percentile(f1, [100 * a, 100 * (1 - a)])
    return float(low), float(high)


def bootstrap_f1(
    counts: NDArray, *, n_boot: int = 1000, level: float = 0.95, rng: np.random.Generator | int | None = 0
) -> Interval:
    """Document-level percentile bootstrap interval of F1; see :func:`bootstrap_f1_bounds`."""
    low, high = bootstrap_f1_bounds(counts, n_boot=n_boot, level=level, rng=rng)
    return Interval(low, high, level, "bootstrap-percentile")
