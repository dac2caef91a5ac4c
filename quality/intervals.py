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

import math
import sys
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Interval", "clopper_pearson", "clopper_pearson_bounds", "bootstrap_f1", "bootstrap_f1_bounds",
    "grouped_bootstrap_f1_bounds",
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
    The beta quantiles come from :func:`_beta_lower_quantile` (numpy only): importing
    ``scipy.special`` costs half a second of CPU, more than every interval of a report.
    Counts that are not whole numbers go to ``scipy.special.betaincinv``.
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
        q = _beta_lower_quantile(shape_a, shape_b, a)
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


def _chunks(sizes: NDArray, budget: int):
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
        for a, b in _chunks(np.full(bucket.shape[0], n_boot * j), max_cells):
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
    for a, b in _chunks(n_boot * n_docs[groups], max_cells):
        g = groups[a:b]
        size = n_docs[g]
        # One slot per drawn document of a resample: a draw below the group's size, after its first row.
        high, offset = np.repeat(size, size), np.repeat(start[g], size)
        at = np.concatenate([[0], np.cumsum(size)[:-1]])
        sums = np.empty((2 - packed, n_boot, g.shape[0]), dtype=np.int64)
        # A few resamples at a time (the draws follow one another in the generator: the same numbers as all
        # at once), so the indices and the gathered counts stay small and in cache.
        step = max(1, _WINDOW * 4 // high.shape[0])
        for r in range(0, n_boot, step):
            idx = _uniform_below(rng, high, min(step, n_boot - r), offset=offset)
            for j, values in enumerate((both,) if packed else (tp, err)):
                sums[j, r:r + step] = np.add.reduceat(values[idx], at, axis=1)
        yield g, ((sums[0] // base, sums[0] % base) if packed else (sums[0], sums[1]))


#: Draws of :func:`_uniform_below` computed at once (a rejection computes the rest of its window again), and
#: its largest bound (past it, rejections are no longer rare: ``rng.integers`` draws).
_WINDOW, _MAX_BOUND = 1 << 16, 1 << 16


def _uniform_below(rng: np.random.Generator, high: NDArray, n_rows: int, *, offset: NDArray | None = None
                   ) -> NDArray[np.int64]:
    """``rng.integers(0, high, size=(n_rows, high.size))`` (plus ``offset``, of the shape of ``high``): the same
    numbers, and the generator left where that call leaves it, in a fraction of its time.

    numpy draws an array of bounds in a loop over the elements (about four times the time of one bound for all).
    For a bound ``h`` from 2 to 2**32 it takes the next 32-bit half of a PCG64 output (the low half first, the
    high half kept in the generator for the next draw) and applies Lemire's multiply-and-reject: ``m = u * h``,
    drawn again while ``m mod 2**32 < (2**32 - h) mod h``, the value ``m >> 32``. Here the halves come from
    ``random_raw`` and the products are taken a window at a time (small arrays: no fresh memory per call); a
    rejection (probability below ``h / 2**32``) is drawn again on its own and the rest of its window, shifted,
    is computed again. Any other generator, a big-endian machine, or a bound of 1 or past ``_MAX_BOUND`` takes
    ``rng.integers``.

    This is what numpy's C ``random_bounded_uint64`` does for each element (Lemire's method, the Generator's
    own; numpy 2.4 installed here). Should a numpy draw otherwise, these stay uniform draws below each bound
    (Lemire's method is exact) and keep this algorithm's numbers, but are no longer ``integers()``'s (whose new
    numbers only the fallbacks above would take): ``test_uniform_below_is_numpys_integers`` fails then.
    """
    high = np.asarray(high, dtype=np.int64)
    bg = rng.bit_generator
    if (type(bg) is not np.random.PCG64 or sys.byteorder != "little" or high.size == 0 or n_rows < 1
            or high.min() < 2 or high.max() > _MAX_BOUND):
        draws = rng.integers(0, high, size=(n_rows, high.shape[0]))
        return draws if offset is None else draws + offset
    n_cols, n = high.shape[0], n_rows * high.shape[0]
    # The bounds and offsets of any window: element i's are those of column i % n_cols.
    bounds = np.tile(high.astype(np.uint64), _WINDOW // n_cols + 2)
    offsets = None if offset is None else np.tile(np.asarray(offset, dtype=np.int64), _WINDOW // n_cols + 2)
    state = bg.state
    pool = np.array([state["uinteger"]] if state["has_uint32"] else [], dtype=np.uint32)  # halves not yet used
    out = np.empty(n, dtype=np.int64)
    e = 0
    while e < n:
        w = min(_WINDOW, n - e)
        if pool.shape[0] < w:
            pool = np.concatenate([pool, bg.random_raw((w - pool.shape[0] + 1) // 2).view(np.uint32)])
        hw = bounds[e % n_cols:e % n_cols + w]
        halves = np.multiply(pool[:w], hw).view(np.uint32)  # the products' low and high 32-bit halves
        low = halves[0::2]
        maybe = np.flatnonzero(low < hw)  # the threshold (2**32 - h) mod h is below h
        bad = maybe[low[maybe] < (np.uint64(1 << 32) - hw[maybe]) % hw[maybe]]
        r = int(bad[0]) if bad.size else w
        out[e:e + r] = halves[1:2 * r:2]
        if offsets is not None:
            out[e:e + r] += offsets[e % n_cols:e % n_cols + r]
        e, pool = e + r, pool[r:]
        if r < w:  # element e was rejected: draw again until accepted
            bound = int(bounds[e % n_cols])
            threshold = ((1 << 32) - bound) % bound
            pool = pool[1:]
            while True:
                if pool.shape[0] == 0:
                    pool = bg.random_raw(1).view(np.uint32)
                product = int(pool[0]) * bound
                pool = pool[1:]
                if product & 0xFFFFFFFF >= threshold:
                    break
            out[e] = (product >> 32) + (0 if offsets is None else int(offsets[e % n_cols]))
            e += 1
    state = bg.state  # the half of an output not used is kept for the next draw, as numpy does
    state["has_uint32"] = int(pool.shape[0])
    if pool.shape[0]:
        state["uinteger"] = int(pool[0])
    bg.state = state
    return out.reshape(n_rows, n_cols)


def _nan_percentiles(values: NDArray, qs: tuple[float, ...]) -> tuple[NDArray[np.float64], ...]:
    """Percentiles along axis 0 over the non-nan entries of each column (numpy's "linear" rule).

    Columns without a non-nan entry give ``nan``. Equals ``np.nanpercentile(values, q, axis=0)``
    without its per-column Python loop.
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


# ----------------------------------------------------------------------------- beta quantiles without scipy
#: Lentz's floor for a vanishing denominator, and the continued fraction's relative tolerance.
_TINY, _CF_TOL = 1e-300, 1e-15


def _lgamma(x: NDArray) -> NDArray[np.float64]:
    return np.frompyfunc(math.lgamma, 1, 1)(x).astype(np.float64)


def _stirling_tail(x: NDArray) -> NDArray[np.float64]:
    """``lgamma(x) - ((x - 1/2) ln x - x + ln(2 pi) / 2)`` by its asymptotic series (error < 1e-16 for x >= 30)."""
    r = 1.0 / (x * x)
    return (1.0 / 12 - r * (1.0 / 360 - r * (1.0 / 1260 - r / 1680))) / x


def _log_beta(a: NDArray, b: NDArray) -> NDArray[np.float64]:
    """``ln B(a, b)``; with a large argument ``hi`` (and the other ``lo``), ``lgamma(hi + lo) - lgamma(hi)`` is
    written without cancellation, so that ``B(2, 10**7)`` keeps its digits."""
    out = _lgamma(a) + _lgamma(b) - _lgamma(a + b)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    big = hi >= 30.0
    lo, hi = lo[big], hi[big]
    rise = (hi - 0.5) * np.log1p(lo / hi) + lo * np.log(hi + lo) - lo + _stirling_tail(hi + lo) - _stirling_tail(hi)
    out[big] = _lgamma(lo) - rise
    return out


def _betacf(a: NDArray, b: NDArray, x: NDArray) -> NDArray[np.float64]:
    """The continued fraction of the regularized incomplete beta function by the modified Lentz method
    (Press et al., Numerical Recipes, 3rd ed., section 6.4, ``betacf``), elementwise; each element stops
    at its own convergence. Converges fast for ``x < (a + 1) / (a + b + 2)``."""
    out = np.empty_like(x)
    idx = np.arange(x.shape[0])
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones_like(x)
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
    h = d.copy()
    m = 0
    while idx.size:
        m += 1
        for aa in (m * (b - m) * x / ((qam + 2 * m) * (a + 2 * m)),
                   -(a + m) * (qab + m) * x / ((a + 2 * m) * (qap + 2 * m))):
            d = 1.0 + aa * d
            d = 1.0 / np.where(np.abs(d) < _TINY, _TINY, d)
            c = 1.0 + aa / c
            c = np.where(np.abs(c) < _TINY, _TINY, c)
            h *= d * c
        done = np.abs(d * c - 1.0) <= _CF_TOL
        n_done = np.count_nonzero(done)
        if n_done:
            out[idx[done]] = h[done]
        if 4 * n_done >= idx.size:  # drop the converged (later terms would leave them as they are)
            keep = ~done
            idx, a, b, x, c, d, h, qab, qap, qam = (v[keep] for v in (idx, a, b, x, c, d, h, qab, qap, qam))
    return out


def _log_betainc(a: NDArray, b: NDArray, x: NDArray, log_beta: NDArray) -> NDArray[np.float64]:
    """``ln I_x(a, b)`` for ``0 < x < 1``, by the continued fraction on the side where it converges fast."""
    flip = x > (a + 1.0) / (a + b + 2.0)  # I_x(a, b) = 1 - I_{1-x}(b, a)
    aa, bb, xx = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1.0 - x, x)
    log_i = aa * np.log(xx) + bb * np.log1p(-xx) - log_beta - np.log(aa) + np.log(_betacf(aa, bb, xx))
    return np.where(flip, np.log1p(-np.exp(log_i)), log_i)


def _quantile_start(a: NDArray, b: NDArray, y: float) -> NDArray[np.float64]:
    """A start for the ``y``-quantile of Beta(a, b), ``a, b > 1``: Majumder & Bhattacharjee's approximation
    (Algorithm AS 64 [3]_, as Cran, Martin & Thomas's AS 109 [4]_ starts), from the normal quantile of
    Abramowitz & Stegun 26.2.22. For ``y > 1/2`` it works on the other tail (``1 - x`` of Beta(b, a)).

    References
    ----------
    .. [3] K. L. Majumder, G. P. Bhattacharjee (1973). Algorithm AS 64: Inverse of the incomplete beta
       function ratio. JRSS C 22(3), 411-414. doi:10.2307/2346798
    .. [4] G. W. Cran, K. J. Martin, G. E. Thomas (1977). Remark AS R19 and Algorithm AS 109. JRSS C
       26(1), 111-114. doi:10.2307/2346887
    """
    upper = y > 0.5
    p, q, tail = (b, a, 1.0 - y) if upper else (a, b, y)
    r = math.sqrt(-2.0 * math.log(tail))
    z = r - (2.30753 + 0.27061 * r) / (1.0 + (0.99229 + 0.04481 * r) * r)  # the upper tail's normal quantile
    r = (z * z - 3.0) / 6.0
    s, t = 1.0 / (2.0 * p - 1.0), 1.0 / (2.0 * q - 1.0)
    h = 2.0 / (s + t)
    w = z * np.sqrt(h + r) / h - (t - s) * (r + 5.0 / 6.0 - 2.0 / (3.0 * h))
    with np.errstate(over="ignore"):  # exp(2 w) overflows only where the quantile is 0 to double precision
        x = p / (p + q * np.exp(w + w))
    return 1.0 - x if upper else x


def _beta_lower_quantile(a: NDArray, b: NDArray, y: float, *, max_iter: int = 100) -> NDArray[np.float64]:
    """The ``y``-quantile ``x`` of Beta(a, b) (``I_x(a, b) = y``), elementwise, for shape parameters >= 1.

    ``a == 1`` and ``b == 1`` have closed forms; otherwise Halley's iteration on ``(I_x - y) / I_x``
    from the start of :func:`_quantile_start` (two or three steps; the normal approximation of
    Beta(a, b), used before, took up to eight when ``a`` or ``b`` is 2). ``ln I_x`` is concave in ``x``
    for shapes >= 1 (the CDF of a log-concave density), so the iteration cannot run away; steps outside
    (0, 1) are pulled back. Each element stops after a step below 1e-5 standard deviations of Beta(a, b) (the next would
    be ~1e-15 of one: Halley's error is cubic), below 1e-13 of ``x``, or below 1e-9 of ``x`` and no
    longer shrinking (the rounding noise of ``I_x`` when ``a`` and ``b`` are ~1e8).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    x = np.empty(a.shape)
    one_a, one_b = a == 1.0, (b == 1.0) & (a != 1.0)
    x[one_a] = -np.expm1(np.log1p(-y) / b[one_a])  # I_x(1, b) = 1 - (1 - x)^b
    x[one_b] = y ** (1.0 / a[one_b])  # I_x(a, 1) = x^a
    idx = np.flatnonzero(~(one_a | one_b))
    a, b = a[idx], b[idx]
    log_beta, log_y = _log_beta(a, b), math.log(y)
    mean, sd = a / (a + b), np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))
    t = _quantile_start(a, b, y)
    t = np.where((t <= 0.0) | (t >= 1.0) | ~np.isfinite(t), mean * 1e-3, t)
    last = np.full(idx.shape[0], np.inf)
    for _ in range(max_iter):
        if not idx.size:
            break
        log_i = _log_betainc(a, b, t, log_beta)
        f = -np.expm1(log_y - log_i)  # (I - y) / I
        slope = np.exp((a - 1.0) * np.log(t) + (b - 1.0) * np.log1p(-t) - log_beta - log_i)  # pdf / I
        step = f / slope
        step = step / (1.0 - 0.5 * step * ((a - 1.0) / t - (b - 1.0) / (1.0 - t)))  # Halley: pdf'/pdf
        new = t - step
        new = np.where(new <= 0.0, t / 16.0, np.where(new >= 1.0, (t + 1.0) / 2.0, new))
        size = np.abs(new - t)
        # Halley's error is cubic: a step of 1e-5 standard deviations leaves ~1e-15 of one.
        done = (size <= 1e-13 * new) | (size <= 1e-5 * sd) | ((size <= 1e-9 * new) & (size >= 0.5 * last))
        t, last = new, size
        x[idx[done]] = t[done]
        keep = ~done
        idx, a, b, t, log_beta, last, sd = idx[keep], a[keep], b[keep], t[keep], log_beta[keep], last[keep], sd[keep]
    x[idx] = t  # (max_iter reached: the last iterate)
    return x
