"""Tests for crowdqa.quality.intervals.grouped_bootstrap_f1_bounds (the one-pass bootstrap of every worker).

Oracles: the exact bootstrap distribution of the resampled sums by an n-fold convolution of
the empirical distribution of one drawn document (a dynamic program, independent of both
samplers), the per-worker loop over :func:`bootstrap_f1_bounds` that reports used before
issue 14 (kept here as the reference), and ``np.nanpercentile``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.quality.intervals import (
    _index_sums,
    _multinomial_sums,
    _nan_percentiles,
    bootstrap_f1_bounds,
    grouped_bootstrap_f1_bounds,
)


def per_worker_loop(counts, group, *, n_groups, n_boot, seed, stream=2):
    """The report's bootstrap before issue 14: one index-resampling call per worker, each with its own stream."""
    low, high = np.full(n_groups, np.nan), np.full(n_groups, np.nan)
    for w in range(n_groups):
        rows = counts[group == w]
        if rows.shape[0]:
            low[w], high[w] = bootstrap_f1_bounds(rows, n_boot=n_boot, rng=np.random.default_rng([seed, stream, w]))
    return low, high


def exact_sum_pmf(tp: np.ndarray, err: np.ndarray) -> dict[tuple[int, int], float]:
    """P(sum of n documents drawn with replacement = (TP, ERR)), by n-fold convolution of one draw."""
    n = tp.shape[0]
    one = {}
    for a, b in zip(tp.tolist(), err.tolist(), strict=True):
        one[(a, b)] = one.get((a, b), 0.0) + 1.0 / n
    dist = {(0, 0): 1.0}
    for _ in range(n):
        nxt: dict[tuple[int, int], float] = {}
        for (a, b), p in dist.items():
            for (da, db), q in one.items():
                nxt[(a + da, b + db)] = nxt.get((a + da, b + db), 0.0) + p * q
        dist = nxt
    return dist


def sampled_pmf(sums: tuple[np.ndarray, np.ndarray]) -> dict[tuple[int, int], float]:
    s_tp, s_err = (np.asarray(x).ravel().astype(int) for x in sums)
    keys, n = np.unique(np.stack([s_tp, s_err], axis=1), axis=0, return_counts=True)
    return {(int(a), int(b)): c / s_tp.size for (a, b), c in zip(keys, n, strict=True)}


def total_variation(p: dict, q: dict) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


@pytest.mark.parametrize("path", ["multinomial", "index"])
def test_resampled_sums_follow_the_exact_bootstrap_distribution(path, seed):
    """Oracle: the exact distribution of the resampled (tp, fp + fn) sums, by convolution.

    Both samplers draw 40,000 resamples of one group; the total variation distance to the exact
    distribution stays within Monte-Carlo error (its expectation here is below 0.02).
    """
    rng = np.random.default_rng(seed)
    n = 7
    tp = rng.integers(0, 3, n)
    err = rng.integers(0, 3, n)
    group = np.zeros(n, dtype=np.int64)
    n_boot = 40_000
    gen = np.random.default_rng(seed + 1)
    if path == "multinomial":
        keys, mult = np.unique(np.stack([tp, err], axis=1), axis=0, return_counts=True)
        n_rows = np.array([keys.shape[0]])
        (g, sums), = _multinomial_sums(np.zeros(keys.shape[0], np.int64), keys[:, 0], keys[:, 1], mult, n_rows,
                                       np.array([0]), n_boot=n_boot, rng=gen, max_cells=1 << 22)
    else:
        (g, sums), = _index_sums(group, tp, err, np.array([n]), np.array([0]), n_boot=n_boot, rng=gen,
                                 max_cells=1 << 22)
    assert g.tolist() == [0]
    assert total_variation(sampled_pmf(sums), exact_sum_pmf(tp, err)) < 0.03


def test_grouped_matches_the_per_worker_loop(seed):
    """Oracle: the per-worker loop of index resampling (the report before issue 14).

    Workers of three kinds (categorical one-hot rows, which take the multinomial path; span-like
    rows, which take the index path; a worker of identical documents), 4,000 resamples each: the
    bounds agree within Monte-Carlo error (0.03 in F1).
    """
    rng = np.random.default_rng(seed)
    blocks, groups = [], []
    for w, n in enumerate([40, 60, 25, 12, 30]):
        if w < 2:
            rows = np.eye(3, dtype=np.int64)[rng.choice(3, size=n, p=[0.6, 0.25, 0.15])]
            rows[rng.random(n) < 0.2] = 0  # neither a hit nor an error
        elif w < 4:
            rows = rng.poisson([4, 1, 1.5], size=(n, 3))
        else:
            rows = np.tile([[2, 1, 0]], (n, 1))
        blocks.append(rows)
        groups.append(np.full(n, w))
    counts, group = np.concatenate(blocks), np.concatenate(groups)
    perm = rng.permutation(group.size)  # rows need not be sorted by group
    got = grouped_bootstrap_f1_bounds(counts[perm], group[perm], n_groups=6, n_boot=4000, rng=seed)
    want = per_worker_loop(counts, group, n_groups=6, n_boot=4000, seed=seed)
    np.testing.assert_allclose(got[0][:5], want[0][:5], atol=0.03)
    np.testing.assert_allclose(got[1][:5], want[1][:5], atol=0.03)
    assert got[0][4] == got[1][4] == pytest.approx(0.8)  # identical documents: every resample has F1 0.8
    assert np.isnan(got[0][5]) and np.isnan(got[1][5])  # a group without rows


def test_one_group_matches_bootstrap_f1_bounds():
    """Oracle: bootstrap_f1_bounds on one group, 20,000 resamples each, within Monte-Carlo error."""
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 4, size=(20, 3))
    want = bootstrap_f1_bounds(counts, n_boot=20_000, rng=1)
    (low,), (high,) = grouped_bootstrap_f1_bounds(counts, np.zeros(20, dtype=int), n_groups=1, n_boot=20_000, rng=2)
    assert (low, high) == pytest.approx(want, abs=0.01)


def test_small_chunks_give_the_same_draws_shape_and_bounds(seed):
    """Chunking (max_cells) only bounds memory: every group still gets its bounds, in [0, 1]."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 3, size=(300, 3))
    group = rng.integers(0, 30, 300)
    low, high = grouped_bootstrap_f1_bounds(counts, group, n_groups=30, n_boot=50, rng=0, max_cells=64)
    has = np.bincount(group, minlength=30) > 0
    defined = has & (np.bincount(group, weights=counts.sum(axis=1), minlength=30) > 0)
    assert np.all(np.isfinite(low[defined])) and np.all(low[defined] <= high[defined])
    assert np.all((0 <= low[defined]) & (high[defined] <= 1))


def test_reproducible_for_a_seed():
    counts = np.array([[1, 0, 0], [0, 1, 0], [2, 0, 1], [0, 0, 0]] * 5)
    group = np.arange(20) % 2
    a = grouped_bootstrap_f1_bounds(counts, group, n_groups=2, n_boot=200, rng=5)
    b = grouped_bootstrap_f1_bounds(counts, group, n_groups=2, n_boot=200, rng=5)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_nan_percentiles_match_numpy(seed):
    """Oracle: np.nanpercentile (linear rule), including an all-nan column."""
    rng = np.random.default_rng(seed)
    x = rng.random((257, 40))
    x[rng.random(x.shape) < 0.3] = np.nan
    x[:, 3] = np.nan
    x[:, 7] = np.nan
    x[5, 7] = 0.25  # one defined value
    got = _nan_percentiles(x, (2.5, 50.0, 97.5))
    with pytest.warns(RuntimeWarning, match="All-NaN slice"):
        want = np.nanpercentile(x, [2.5, 50.0, 97.5], axis=0)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9), st.integers(0, 3)),
                min_size=1, max_size=30))
def test_bounds_in_unit_range(rows):
    """Property: low <= high in [0, 1] where F1 is defined; nan exactly for groups with no count at all."""
    data = np.array(rows)
    counts, group = data[:, :3], data[:, 3]
    low, high = grouped_bootstrap_f1_bounds(counts, group, n_groups=4, n_boot=100, rng=0)
    for g in range(4):
        c = counts[group == g]
        if c.sum() == 0:
            assert np.isnan(low[g]) and np.isnan(high[g])
        else:
            assert 0.0 <= low[g] <= high[g] <= 1.0


def test_bad_input():
    with pytest.raises(ValueError, match=r"shape \(n_docs, 3\)"):
        grouped_bootstrap_f1_bounds(np.zeros((3, 2)), np.zeros(3, int), n_groups=1)
    with pytest.raises(ValueError, match=r"group must have shape \(3,\)"):
        grouped_bootstrap_f1_bounds(np.zeros((3, 3)), np.zeros(2, int), n_groups=1)
    with pytest.raises(ValueError, match=r"group must be in \[0, 1\), found 0..1"):
        grouped_bootstrap_f1_bounds(np.zeros((2, 3)), np.array([0, 1]), n_groups=1)
    with pytest.raises(ValueError, match="non-negative integers"):
        grouped_bootstrap_f1_bounds(np.full((2, 3), 0.5), np.zeros(2, int), n_groups=1)
    with pytest.raises(ValueError, match="n_boot must be >= 1"):
        grouped_bootstrap_f1_bounds(np.zeros((2, 3)), np.zeros(2, int), n_groups=1, n_boot=0)


def test_index_draws_are_one_integers_call(monkeypatch):
    """Oracle: the document indices drawn a few resamples at a time are ``rng.integers(0, high, size)`` of all
    resamples at once, from the same seed (the windows only bound memory)."""
    from crowdqa.quality import intervals

    rng = np.random.default_rng(3)
    n_docs = np.array([4, 7, 1, 5])
    group = np.repeat(np.arange(4), n_docs)
    tp, err = rng.integers(0, 5, group.size), rng.integers(0, 5, group.size)
    monkeypatch.setattr(intervals, "_DRAWS_AT_ONCE", 5)  # 1 resample (17 draws) per window
    (g, (s_tp, s_err)), = _index_sums(group, tp, err, n_docs, np.arange(4), n_boot=9,
                                     rng=np.random.default_rng(11), max_cells=10**6)
    order = np.lexsort((err, tp, group))
    idx = np.random.default_rng(11).integers(0, np.repeat(n_docs, n_docs), size=(9, group.size))
    idx += np.repeat(np.cumsum(n_docs) - n_docs, n_docs)
    at = np.cumsum(n_docs) - n_docs
    assert g.tolist() == [0, 1, 2, 3]
    assert np.array_equal(s_tp, np.add.reduceat(tp[order][idx], at, axis=1))
    assert np.array_equal(s_err, np.add.reduceat(err[order][idx], at, axis=1))


def test_draws_come_from_numpys_generator_methods():
    """Issue 32: the bootstrap draws by the Generator's own methods; no quality module reads or writes a bit
    generator's state or its raw output to reproduce them."""
    from pathlib import Path

    import crowdqa.quality

    for path in Path(crowdqa.quality.__file__).parent.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "random_raw" not in text and "bit_generator" not in text and "has_uint32" not in text, path.name


def test_counts_too_big_to_pack_give_the_same_bounds(seed):
    """Oracle: F1 does not change when every count is multiplied by 2**40 (exact in floating point), nor do the
    draws; those counts are too big for tp and err to share one integer, so the resamples are summed apart."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 10, size=(120, 3))
    group = rng.integers(0, 8, 120)
    small = grouped_bootstrap_f1_bounds(counts, group, n_groups=8, n_boot=300, rng=seed)
    big = grouped_bootstrap_f1_bounds(counts * 2**40, group, n_groups=8, n_boot=300, rng=seed)
    for s, b in zip(small, big, strict=True):
        np.testing.assert_array_equal(s, b)
    assert np.isfinite(small[0]).sum() >= 6


def test_resamples_drawn_a_few_at_a_time_are_those_drawn_at_once(seed, monkeypatch):
    """Oracle: the bounds with every resample of a chunk drawn at once (a window larger than all draws) equal
    those drawn a few resamples at a time (a tiny window), for the same seed."""
    from crowdqa.quality import intervals

    rng = np.random.default_rng(seed)
    group = np.repeat(np.arange(9), [23] + [20] * 8)  # 183 draws a resample: an odd number of 32-bit halves
    counts = rng.integers(0, 10, size=(group.shape[0], 3))
    monkeypatch.setattr(intervals, "_DRAWS_AT_ONCE", 1 << 26)
    whole = grouped_bootstrap_f1_bounds(counts, group, n_groups=9, n_boot=257, rng=seed)
    monkeypatch.setattr(intervals, "_DRAWS_AT_ONCE", 64)
    pieces = grouped_bootstrap_f1_bounds(counts, group, n_groups=9, n_boot=257, rng=seed)
    for w, p in zip(whole, pieces, strict=True):
        np.testing.assert_array_equal(w, p)
    assert np.isfinite(whole[0]).sum() >= 7
