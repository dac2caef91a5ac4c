"""Tests for crowdqa.quality.agreement and crowdqa.quality.intervals."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta
from sklearn.metrics import cohen_kappa_score

from crowdqa.aggregation.corpus import Corpus
from crowdqa.quality.agreement import (
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_corpus,
    krippendorff_alpha_nominal,
    pairwise_f1,
    pairwise_kappa,
)
from crowdqa.quality.intervals import bootstrap_f1, bootstrap_f1_bounds, clopper_pearson, clopper_pearson_bounds


def test_cohen_matches_sklearn(seed):
    """Oracle: sklearn.metrics.cohen_kappa_score on the items both raters labelled."""
    rng = np.random.default_rng(seed)
    a, b = rng.integers(-1, 4, 300), rng.integers(-1, 4, 300)
    copy = rng.random(300) < 0.5  # correlated raters, so kappa is far from 0
    b[copy] = a[copy]
    both = (a >= 0) & (b >= 0)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a[both], b[both]), abs=1e-12)


@pytest.mark.filterwarnings("ignore:A single label was found")
def test_kappa_undefined_when_expected_agreement_is_one():
    """Pinned edge convention: p_e == 1 (both raters constant, same class) gives nan, as sklearn does."""
    a = np.zeros(5, dtype=int)
    assert np.isnan(cohen_kappa(a, a))
    with pytest.warns(UserWarning, match="undefined"):
        assert np.isnan(cohen_kappa_score(a, a))
    assert np.isnan(cohen_kappa(np.array([-1, 0]), np.array([1, -1])))  # nothing shared
    assert np.isnan(fleiss_kappa(np.array([[3, 0], [3, 0]])))


def _alpha_brute(data: np.ndarray) -> float:
    """Krippendorff's alpha from the definition: pairable values, all ordered pairs within units."""
    pairs, values = [], []
    for u in range(data.shape[1]):
        vals = [v for v in data[:, u] if not np.isnan(v)]
        if len(vals) < 2:
            continue
        values.extend(vals)
        m = len(vals)
        pairs.extend((x, y, 1.0 / (m - 1)) for i, x in enumerate(vals) for j, y in enumerate(vals) if i != j)
    n = len(values)
    d_o = sum(w for x, y, w in pairs if x != y) / n
    d_e = sum(1 for x, y in itertools.permutations(values, 2) if x != y) / (n * (n - 1))
    return 1 - d_o / d_e


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4).flatmap(lambda r: st.lists(
    st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=r, max_size=r), min_size=2, max_size=8)))
def test_krippendorff_brute_force(units):
    """Oracle: the pair-counting definition of nominal alpha (Krippendorff 2011), on random sparse data."""
    data = np.array([[np.nan if v is None else v for v in u] for u in units], dtype=float).T
    expected_ok = True
    try:
        ref = _alpha_brute(data)
    except ZeroDivisionError:
        expected_ok = False
    got = krippendorff_alpha_nominal(data)
    if expected_ok:
        assert got == pytest.approx(ref, abs=1e-9)
    else:
        assert np.isnan(got)


def test_fleiss_two_raters_brute_force():
    """Oracle: Fleiss' definition computed with explicit loops over items and categories."""
    rng = np.random.default_rng(3)
    counts = rng.multinomial(4, [0.5, 0.3, 0.2], size=30)
    n, r = counts.shape[0], 4
    p_i = [(sum(c * c for c in row) - r) / (r * (r - 1)) for row in counts.tolist()]
    p_j = [sum(row[j] for row in counts.tolist()) / (n * r) for j in range(3)]
    p_bar, p_e = sum(p_i) / n, sum(x * x for x in p_j)
    assert fleiss_kappa(counts) == pytest.approx((p_bar - p_e) / (1 - p_e), abs=1e-12)
    with pytest.raises(ValueError, match="one number of raters"):
        fleiss_kappa(np.array([[2, 0], [1, 0]]))


def test_corpus_alpha_and_pairwise():
    """The corpus form equals the matrix form; pairwise kappa equals cohen_kappa on dense labels."""
    rng = np.random.default_rng(4)
    lab = rng.integers(0, 3, size=(3, 6))
    tokens = [t for t in range(6) for _ in range(3)]
    workers = [w for _ in range(6) for w in range(3)]
    c = Corpus.from_arrays(
        token=tokens, worker=workers, label=[lab[w, t] for t, w in zip(tokens, workers, strict=True)],
        doc_lengths=[6], token_start=np.arange(6) * 2, token_end=np.arange(6) * 2 + 1, doc_ids=["d"],
        texts=["a b c d e f"], worker_ids=["x", "y", "z"], worker_roles=["expert"] * 3, class_names=["O", "A", "B"],
    )
    assert krippendorff_alpha_corpus(c) == pytest.approx(krippendorff_alpha_nominal(lab.astype(float)))
    pairs = pairwise_kappa(c, np.arange(3))
    assert [(p["a"], p["b"]) for p in pairs] == [("x", "y"), ("x", "z"), ("y", "z")]
    k = cohen_kappa(lab[0], lab[1])
    assert pairs[0]["kappa"] == (None if np.isnan(k) else pytest.approx(k))


def test_pairwise_f1_symmetric():
    """F1 as agreement is symmetric; precision and recall swap (Hripcsak & Rothschild 2005)."""
    a, b = np.array([1, 1, 0, 1, 0]), np.array([1, 0, 1, 1, 0])
    ab, ba = pairwise_f1(a, b), pairwise_f1(b, a)
    assert ab.f1 == ba.f1 and ab.precision == ba.recall


# ----------------------------------------------------------------------------- intervals
def test_clopper_pearson_definition():
    """Oracle: the defining tail equations, checked with scipy.stats.binom at the bounds."""
    from scipy.stats import binom

    for k, n in [(3, 10), (0, 7), (7, 7), (50, 120)]:
        iv = clopper_pearson(k, n, level=0.9)
        if k > 0:
            assert binom.sf(k - 1, n, iv.low) == pytest.approx(0.05, abs=1e-9)
        else:
            assert iv.low == 0.0
        if k < n:
            assert binom.cdf(k, n, iv.high) == pytest.approx(0.05, abs=1e-9)
        else:
            assert iv.high == 1.0
    low, high = clopper_pearson_bounds([0, 1], [0, 2])
    assert np.isnan(low[0]) and np.isnan(high[0]) and low[1] == pytest.approx(beta.ppf(0.025, 1, 2))
    assert clopper_pearson(0, 0).as_list() is None
    with pytest.raises(ValueError, match="level must be in"):
        clopper_pearson(1, 2, level=1.5)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(3, 2)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 200), st.integers(0, 200), st.floats(0.5, 0.999))
def test_interval_contains_estimate(k, extra, level):
    """Property: a Clopper-Pearson interval contains k / n."""
    n = k + extra
    iv = clopper_pearson(k, n, level=level)
    if n == 0:
        assert iv.as_list() is None
    else:
        assert 0.0 <= iv.low <= iv.high <= 1.0
        assert iv.contains(k / n)


def test_bootstrap_matches_loop_and_is_reproducible(seed):
    """Oracle: one resample per loop iteration with the same generator stream; seeds reproduce."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, size=(15, 3))
    counts[0] = [3, 0, 0]
    got = bootstrap_f1_bounds(counts, n_boot=300, rng=np.random.default_rng(7))
    r = np.random.default_rng(7)
    f1 = []
    for _ in range(300):
        s = counts[r.integers(0, 15, 15)].sum(axis=0)
        if 2 * s[0] + s[1] + s[2]:
            f1.append(2 * s[0] / (2 * s[0] + s[1] + s[2]))
    assert got == pytest.approx(tuple(np.percentile(f1, [2.5, 97.5])))
    assert bootstrap_f1(counts, rng=5) == bootstrap_f1(counts, rng=5)
    with pytest.raises(ValueError, match=r"shape \(n_docs, 3\)"):
        bootstrap_f1_bounds(np.zeros((3, 2)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=12))
def test_bootstrap_interval_in_unit_range(rows):
    """Property: the bootstrap interval lies in [0, 1] (and is nan only when F1 is undefined everywhere)."""
    counts = np.array(rows)
    iv = bootstrap_f1(counts, n_boot=200, rng=0)
    if counts.sum() == 0:
        assert iv.as_list() is None
    else:
        assert 0.0 <= iv.low <= iv.high <= 1.0


@pytest.mark.parametrize("method", ["dense", "sparse", "auto"])
@pytest.mark.parametrize("bio", [False, True])
def test_pair_confusions_brute_force(seed, method, bio):
    """Oracle: for every annotator pair, dense labels_of + a loop count; pairs sharing nothing are absent.
    Both ways of counting a pair's tokens (every token, or the class > 0 annotations plus margins)."""
    from crowdqa.quality.pair_agreement import kappa_from_confusions, pair_confusions
    from tests.quality.test_report import random_corpus

    c = random_corpus(seed, n_docs=25, n_crowd=7, bio=bio)
    pc = pair_confusions(c, chunk=50, method=method)  # tiny chunks exercise the chunked path
    got = {(int(a), int(b)): (cf, int(d)) for a, b, cf, d in zip(pc.a, pc.b, pc.confusion, pc.documents, strict=True)}
    kap = dict(zip(zip(pc.a.tolist(), pc.b.tolist(), strict=True), kappa_from_confusions(pc.confusion).tolist(),
                   strict=True))
    for a in range(c.n_workers):
        for b in range(a + 1, c.n_workers):
            la, lb = c.labels_of(a), c.labels_of(b)
            both = (la >= 0) & (lb >= 0)
            if not both.any():
                assert (a, b) not in got
                continue
            cm = np.zeros((c.n_classes, c.n_classes), dtype=int)
            np.add.at(cm, (la[both], lb[both]), 1)
            assert np.array_equal(got[(a, b)][0], cm)
            assert got[(a, b)][1] == len(set(c.token_doc[both].tolist()))
            k = cohen_kappa(la, lb, n_classes=c.n_classes)
            assert kap[(a, b)] == pytest.approx(k, nan_ok=True)


@pytest.mark.parametrize("method", ["dense", "sparse"])
@pytest.mark.parametrize("min_documents", [1, 2, 3, 5])
def test_pair_confusions_min_documents_and_annotators(seed, min_documents, method):
    """Oracle: the pairs sharing >= min_documents documents of the annotators' own corpus, unfiltered."""
    from crowdqa.quality.pair_agreement import pair_confusions
    from tests.quality.test_report import random_corpus

    c = random_corpus(seed, n_docs=80, n_crowd=9, n_experts=2)
    chosen = np.sort(np.random.default_rng(seed).choice(c.n_workers, 8, replace=False))
    full = pair_confusions(c.select_workers(chosen))
    keep = full.documents >= min_documents
    got = pair_confusions(c, annotators=chosen, min_documents=min_documents, chunk=40, method=method)
    for name in ("a", "b", "confusion", "documents"):
        assert np.array_equal(getattr(got, name), getattr(full, name)[keep])


@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_clopper_pearson_bounds_against_scipy(level):
    """Oracle: scipy.special's incomplete beta inverses (what the bounds used before, and what
    statsmodels' proportion_confint(method="beta") calls), from n = 1 to 1e8."""
    from scipy.special import betainccinv, betaincinv

    rng = np.random.default_rng(7)
    k, n = [], []
    for size in [1, 2, 3, 5, 10, 30, 31, 100, 1000, 10**4, 10**5, 10**6, 10**7, 10**8]:
        ks = np.concatenate([np.arange(min(size, 4) + 1), [size - 2, size - 1, size, size // 2, size - 40],
                             rng.integers(0, size + 1, 20)])
        ks = np.unique(ks[(ks >= 0) & (ks <= size)])
        k += ks.tolist()
        n += [size] * ks.size
    k, n = np.array(k, dtype=float), np.array(n, dtype=float)
    low, high = clopper_pearson_bounds(k, n, level=level)
    a = (1 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        ref_low = np.where(k == 0, 0.0, betaincinv(k, n - k + 1, a))
        ref_high = np.where(k == n, 1.0, betainccinv(k + 1, n - k, a))
    assert np.allclose(low, ref_low, rtol=1e-10, atol=0)
    assert np.allclose(1 - high, 1 - ref_high, rtol=1e-10, atol=1e-15)
    # Counts that are not whole numbers go to scipy itself.
    low, high = clopper_pearson_bounds([0.5, 2.5], [1.0, 4.0], level=level)
    assert low.tolist() == betaincinv([0.5, 2.5], [1.5, 2.5], a).tolist()
    assert high.tolist() == betainccinv([1.5, 3.5], [0.5, 1.5], a).tolist()


def _alpha_coincidence(counts: np.ndarray) -> float:
    """The nominal alpha before issue 14: the full coincidence matrix of per-unit counts (n_units, n_classes)."""
    counts = counts.astype(np.float64)
    m = counts.sum(axis=1)
    counts, m = counts[m >= 2], m[m >= 2]
    if counts.shape[0] == 0:
        return float("nan")
    w = 1.0 / (m - 1.0)
    o = (counts * w[:, None]).T @ counts
    o[np.diag_indices_from(o)] -= (counts * w[:, None]).sum(axis=0)
    n_c = o.sum(axis=1)
    expected = (n_c.sum() ** 2 - n_c @ n_c) / (n_c.sum() - 1.0)
    return float("nan") if expected <= 0 else float(1.0 - (o.sum() - np.trace(o)) / expected)


@pytest.mark.parametrize("n_classes", [2, 3, 7])
def test_corpus_alpha_matches_the_coincidence_matrix(seed, n_classes):
    """Oracle: the coincidence-matrix computation the report used before issue 14, on a corpus of one- and
    many-token documents with 1-6 annotators per document (units with one value are not pairable)."""
    from tests.quality.test_report import random_corpus

    c = random_corpus(seed, n_docs=60, n_crowd=9, n_experts=3)
    rng = np.random.default_rng(seed)
    keep = (rng.random((c.n_docs, c.n_workers)) < 0.6)[c.obs_doc, c.worker]  # whole (document, annotator) blocks
    c = Corpus.from_arrays(token=c.token[keep], worker=c.worker[keep], label=rng.integers(0, n_classes, keep.sum()),
                           doc_lengths=c.doc_lengths, token_start=c.token_start, token_end=c.token_end,
                           doc_ids=c.doc_ids, texts=c.texts, worker_ids=c.worker_ids, worker_roles=c.worker_roles,
                           class_names=["O"] + [f"L{i}" for i in range(1, n_classes)])
    counts = np.zeros((c.n_tokens, n_classes), dtype=np.int64)
    np.add.at(counts, (c.token, c.label), 1)
    assert krippendorff_alpha_corpus(c) == pytest.approx(_alpha_coincidence(counts), rel=1e-12, abs=1e-12)
    experts = c.workers_with_role("expert")
    sub = np.isin(c.worker, experts)
    counts = np.zeros((c.n_tokens, n_classes), dtype=np.int64)
    np.add.at(counts, (c.token[sub], c.label[sub]), 1)
    assert krippendorff_alpha_corpus(c, workers=experts) == pytest.approx(_alpha_coincidence(counts), rel=1e-12,
                                                                          abs=1e-12, nan_ok=True)
