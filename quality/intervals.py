"""Uncertainty of a score: Clopper-Pearson intervals and a document-level bootstrap for F1.

Precision ``tp / (tp + fp)`` and recall ``tp / (tp + fn)`` are binomial proportions,
so each gets the exact Clopper-Pearson interval [1]_ from the beta distribution.
F1 is not a proportion of independent trials, and tokens within a document are not
independent, so its interval comes from resampling *documents* with replacement
and recomputing F1 from the summed per-document counts [2]_ (percentile method).

Two implementations of that one bootstrap: :func:`bootstrap_f1_bounds` draws document
indices (one group; its cost is ``n_boot x n_docs``), and
:func:`grouped_bootstrap_f1_bounds` bootstraps many groups (every worker of a report)
in one pass at a cost of ``n_boot`` times the number of *distinct* count rows per group,
by drawing how often each distinct row is picked from a multinomial. The two have the
same distribution of resampled sums (see the Notes there); their random streams differ.

References
----------
.. [1] C. J. Clopper, E. S. Pearson (1934). The use of confidence or fiducial limits
   illustrated in the case of the binomial. Biometrika 26(4), 404-413. doi:10.2307/2331986
.. [2] B. Efron, R. J. Tibshirani (1993). An Introduction to the Bootstrap. Chapman & Hall.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.quality._beta_quantile import beta_lower_quantile

__all__ = [
    "Interval", "clopper_pearson", "clopper_pearson_bounds", "bootstrap_f1", "bootstrap_f1_bounds",
    "grouped_bootstrap_f1_bounds", "chunk_ranges",
]


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
        ``nan`` where ``n == 0``. Equals statsmodels' ``proportion_confint(method="beta")``
        (to about 1e-13 relative; 1e-11 at ``n`` = 1e8).

    Notes
    -----
    The beta quantiles come from :func:`crowdqa.quality._beta_quantile.beta_lower_quantile` (numpy only;
    its docstring has the measurement that keeps it: importing ``scipy.special`` about doubles the CPU time of
    ``crowdqa aggregate`` with majority vote). Counts that are not whole numbers go to ``scipy.special.betaincinv``.
    """
    _check_level(level)
    k, n = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64))
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("counts must satisfy 0 <= k <= n, found k outside [0, n]")
    a = (1.0 - level) / 2.0
    # low solves I_low(k, n - k + 1) = a; high solves 1 - I_high(k + 1, n - k) = a, i.e. 1 - high is the
    # lower a-quantile of Beta(n - k, k + 1). Both lower quantiles in one call (shape parameters >= 1).
    lo_in, hi_in = (k > 0) & (k <= n), (k < n)
    shape_a = np.concatenate([k[lo_in], (n - k)[hi_in]])
    shape_b = np.concatenate([(n - k + 1)[lo_in], (k + 1)[hi_in]])
    if shape_a.size and (shape_a.min() < 1.0 or shape_b.min() < 1.0):  # counts that are not whole numbers
        from scipy.special import betainccinv, betaincinv

        with np.errstate(invalid="ignore", divide="ignore"):
            low, high = betaincinv(k, n - k + 1, a), betainccinv(k + 1, n - k, a)
    else:
        q = beta_lower_quantile(shape_a, shape_b, a)
        low, high = np.zeros(k.shape), np.ones(k.shape)
        low[lo_in] = q[:np.count_nonzero(lo_in)]
        high[hi_in] = 1.0 - q[np.count_nonzero(lo_in):]
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
    undefined (no positive at all) are left out of the percentiles. Documents are
    indexed in the order given (as the test vectors' example expects); reports use
    :func:`grouped_bootstrap_f1_bounds`, whose draws do not depend on that order.
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


def grouped_bootstrap_f1_bounds(
    counts: NDArray,
    group: NDArray,
    *,
    n_groups: int,
    n_boot: int = 1000,
    level: float = 0.95,
    rng: np.random.Generator | int | None = 0,
    max_cells: int = 1 << 22,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Percentile bootstrap bounds of micro F1 for every group of documents, in one pass.

    Each group (e.g. one worker's documents) is resampled on its own, as
    :func:`bootstrap_f1_bounds` resamples one: ``n_boot`` resamples of its ``n``
    documents drawn with replacement, F1 recomputed from the summed counts, resamples
    with undefined F1 left out, percentile bounds taken.

    Parameters
    ----------
    counts : ndarray of shape (n_docs, 3)
        ``tp, fp, fn`` of each (group, document) row; non-negative integers.
    group : ndarray of shape (n_docs,)
        Group index of each row, in ``[0, n_groups)``.
    n_groups : int
    n_boot : int, default=1000
    level : float, default=0.95
    rng : numpy Generator or int seed, default=0
        One stream for all groups.
    max_cells : int, default=4_194_304
        Largest number of random draws held at once (memory bound).

    Returns
    -------
    low, high : ndarray of shape (n_groups,)
        ``nan`` for a group without rows or whose F1 is undefined in every resample.

    Notes
    -----
    F1 :math:`= 2\,TP / (2\,TP + FP + FN)` depends on a resample only through the sums
    of ``tp`` and ``e = fp + fn`` over its documents, so documents with equal
    :math:`(tp, e)` are interchangeable. If a group's ``n`` documents hold ``J`` distinct
    rows :math:`r_j` with multiplicities :math:`m_j`, the number of times a resample of
    ``n`` uniform draws picks row ``j`` is
    :math:`(N_1, .., N_J) \sim \mathrm{Multinomial}(n; m_1/n, .., m_J/n)`, and
    :math:`\sum_j N_j r_j` has exactly the distribution of the sum of ``n`` documents drawn
    with replacement. Each group is drawn the cheaper way (``J - 1`` binomial draws per
    resample cost about as much as ``5 (J - 1)`` uniform indices): by multinomial counts
    (categorical items have at most three distinct rows: a hit, an error, neither) or
    by drawing document indices, all groups of one kind at once in chunks of
    ``max_cells`` draws. Percentiles follow numpy's default (linear) rule over the
    resamples where F1 is defined.

    The draws depend on the rows only through each group's multiset of ``(tp, err)`` rows
    and the group numbers: distinct rows are taken in sorted order, and documents drawn by
    index are first sorted by ``(tp, err)``. So the bounds for a seed do not depend on the
    order of the rows; a caller whose group numbers follow the input (a report's worker
    indices) numbers the groups in a canonical order (e.g. by worker id) for the same.
    """
    counts, group = _check_grouped(counts, group, n_groups=n_groups, n_boot=n_boot, level=level)
    rng = np.random.default_rng(rng)
    low = np.full(n_groups, np.nan)
    high = np.full(n_groups, np.nan)
    if counts.shape[0] == 0:
        return low, high
    counts = counts.astype(np.int64)
    tp, err, group = counts[:, 0], counts[:, 1] + counts[:, 2], group.astype(np.int64)
    n_docs = np.bincount(group, minlength=n_groups)
    u_group, u_tp, u_err, mult = _distinct_rows(group, tp, err)
    n_rows = np.bincount(u_group, minlength=n_groups)  # J of each group
    q = (100 * (1.0 - level) / 2.0, 100 * (1.0 + level) / 2.0)
    by_count = (n_docs > 0) & (5 * (n_rows - 1) < n_docs)
    by_index = (n_docs > 0) & ~by_count
    for g, (s_tp, s_err) in _multinomial_sums(u_group, u_tp, u_err, mult, n_rows, np.flatnonzero(by_count),
                                              n_boot=n_boot, rng=rng, max_cells=max_cells):
        low[g], high[g] = _nan_percentiles(_f1(s_tp, s_err), q)
    for g, (s_tp, s_err) in _index_sums(group, tp, err, n_docs, np.flatnonzero(by_index),
                                        n_boot=n_boot, rng=rng, max_cells=max_cells):
        low[g], high[g] = _nan_percentiles(_f1(s_tp, s_err), q)
    return low, high


def _check_grouped(counts: NDArray, group: NDArray, *, n_groups: int, n_boot: int, level: float
                   ) -> tuple[NDArray, NDArray]:
    """The arguments of :func:`grouped_bootstrap_f1_bounds` as arrays, or a ValueError naming the wrong one."""
    _check_level(level)
    counts = np.asarray(counts)
    group = np.asarray(group)
    if counts.ndim != 2 or counts.shape[1] != 3:
        raise ValueError(f"counts must have shape (n_docs, 3), found {counts.shape}")
    if group.shape != (counts.shape[0],):
        raise ValueError(f"group must have shape ({counts.shape[0]},), found {group.shape}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, found {n_boot}")
    if counts.size and (np.any(counts < 0) or not np.all(np.mod(counts, 1) == 0)):
        raise ValueError("counts must be non-negative integers")
    if group.size and (group.min() < 0 or group.max() >= n_groups):
        raise ValueError(f"group must be in [0, {n_groups}), found {int(group.min())}..{int(group.max())}")
    return counts, group


def _f1(tp: NDArray, err: NDArray) -> NDArray[np.float64]:
    """``2 tp / (2 tp + err)``, ``nan`` where the denominator is 0."""
    den = 2 * tp + err
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 2 * tp / den, np.nan)


def _distinct_rows(group: NDArray, tp: NDArray, err: NDArray) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """The distinct ``(group, tp, err)`` rows sorted by group, and how often each occurs."""
    s_tp, s_err = int(tp.max()) + 1, int(err.max()) + 1
    if float(group.max() + 1) * s_tp * s_err < 2.0**62:
        uniq, mult = np.unique((group * s_tp + tp) * s_err + err, return_counts=True)
        return uniq // (s_tp * s_err), (uniq // s_err) % s_tp, uniq % s_err, mult
    uniq, mult = np.unique(np.column_stack([group, tp, err]), axis=0, return_counts=True)
    return uniq[:, 0], uniq[:, 1], uniq[:, 2], mult


def chunk_ranges(sizes: NDArray, budget: int) -> Iterator[tuple[int, int]]:
    """Consecutive index ranges ``[a, b)`` of ``sizes`` whose sums stay within ``budget`` (at least one each)."""
    ends = np.cumsum(sizes)
    a = 0
    while a < sizes.shape[0]:
        b = max(a + 1, int(np.searchsorted(ends, (ends[a - 1] if a else 0) + budget, side="right")))
        yield a, b
        a = b


def _multinomial_sums(u_group, u_tp, u_err, mult, n_rows, groups, *, n_boot, rng, max_cells):
    """Resampled ``(tp, err)`` sums of ``groups`` by multinomial counts of their distinct rows.

    Yields ``(groups_chunk, (tp_sums, err_sums))`` with sums of shape (n_boot, len(groups_chunk)).
    Groups are bucketed by their number of distinct rows ``J`` (rounded up to a power of two
    past 4), and padding columns (probability 0) come first, so numpy's sequential
    binomials give them nothing and the last real row takes the remainder.
    """
    first = np.concatenate([[0], np.cumsum(n_rows)[:-1]])
    n = np.bincount(u_group, weights=mult, minlength=n_rows.shape[0]).astype(np.int64)
    j_all = n_rows[groups]
    width = np.where(j_all <= 4, j_all, 1 << np.ceil(np.log2(np.maximum(j_all, 1))).astype(np.int64))
    for j in np.unique(width).tolist():
        bucket = groups[width == j]
        for a, b in chunk_ranges(np.full(bucket.shape[0], n_boot * j), max_cells):
            g = bucket[a:b]
            pad = j - n_rows[g]
            col = np.arange(j)[None, :] - pad[:, None]  # index among the group's rows; < 0 is padding
            real = col >= 0
            at = first[g][:, None] + np.maximum(col, 0)
            p = np.where(real, mult[at] / n[g][:, None], 0.0)
            draws = rng.multinomial(n[g], p, size=(n_boot, g.shape[0]))  # (n_boot, len(g), j)
            yield g, (np.einsum("bgj,gj->bg", draws, np.where(real, u_tp[at], 0)),
                      np.einsum("bgj,gj->bg", draws, np.where(real, u_err[at], 0)))


def _index_sums(group, tp, err, n_docs, groups, *, n_boot, rng, max_cells):
    """Resampled ``(tp, err)`` sums of ``groups`` by drawing document indices (as :func:`bootstrap_f1_bounds`).

    Yields ``(groups_chunk, (tp_sums, err_sums))`` with sums of shape (n_boot, len(groups_chunk)).
    """
    if groups.size == 0:
        return
    mine = np.zeros(n_docs.shape[0], dtype=bool)
    mine[groups] = True
    rows = np.flatnonzero(mine[group])  # only these groups' rows are sorted
    # By group, then by (tp, err): a canonical order of each group's documents, so the draws do not depend
    # on the order the rows came in (documents with equal counts are interchangeable).
    order = rows[np.lexsort((err[rows], tp[rows], group[rows]))]
    sizes = np.where(mine, n_docs, 0)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    tp, err = tp[order], err[order]
    # tp and err in one integer, tp * base + err, when no group's sums can overflow it: one gather and one
    # sum per resample instead of two.
    base = int(err.max()) * int(n_docs.max()) + 1
    packed = float(tp.max()) * float(n_docs.max()) * base < 2.0**62
    both = tp * base + err if packed else None
    for a, b in chunk_ranges(n_boot * n_docs[groups], max_cells):
        g = groups[a:b]
        size = n_docs[g]
        # One slot per drawn document of a resample: a draw below the group's size, after its first row.
        high, offset = np.repeat(size, size), np.repeat(start[g], size)
        at = np.concatenate([[0], np.cumsum(size)[:-1]])
        sums = np.empty((2 - packed, n_boot, g.shape[0]), dtype=np.int64)
        # A few resamples at a time (the draws follow one another in the generator: the same numbers as all
        # at once), so the indices and the gathered counts stay small and in cache.
        step = max(1, _DRAWS_AT_ONCE // high.shape[0])
        for r in range(0, n_boot, step):
            idx = rng.integers(0, high, size=(min(step, n_boot - r), high.shape[0])) + offset
            for j, values in enumerate((both,) if packed else (tp, err)):
                sums[j, r:r + step] = np.add.reduceat(values[idx], at, axis=1)
        yield g, ((sums[0] // base, sums[0] % base) if packed else (sums[0], sums[1]))


#: Document indices :func:`_index_sums` draws at once (whole resamples, at least one).
_DRAWS_AT_ONCE = 1 << 18


def _nan_percentiles(values: NDArray, qs: tuple[float, ...]) -> tuple[NDArray[np.float64], ...]:
    """Percentiles along axis 0 over the non-nan entries of each column (numpy's "linear" rule).

    Columns without a non-nan entry give ``nan``. Equals ``np.nanpercentile(values, q, axis=0)`` (the oracle
    of ``test_nan_percentiles_match_numpy``) without its per-column Python loop: on (1000, 3000) values with 1%
    nan, 0.18-0.25 s against numpy's 0.61 s (issue 32, numpy 2.4.6, 2 runs each).
    """
    v = np.sort(values, axis=0)  # nan sorts last
    n = np.count_nonzero(~np.isnan(v), axis=0)
    cols = np.arange(v.shape[1])
    out = []
    for q in qs:
        h = (np.maximum(n, 1) - 1) * (q / 100.0)
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
        t = h - lo
        a, b = v[lo, cols], v[hi, cols]
        # numpy's _lerp: a + t (b - a), computed from the nearer end for t >= 0.5.
        r = np.where(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t)
        out.append(np.where(n > 0, r, np.nan))
    return tuple(out)
