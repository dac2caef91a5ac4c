"""Worker quality: Raykar and Yu's spammer score, its posterior interval, label bias and the verdict rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.quality.report import build_report_data
from crowdqa.quality.worker_quality import (
    Evidence,
    VerdictRules,
    label_shares,
    posterior_spammer_bounds,
    spammer_score,
    verdicts,
    worker_confusions,
)


def _pairwise_score(conf: np.ndarray) -> float:
    """Oracle: the paper's definition written out, 1/(C'(C'-1)) * sum over pairs c < c' of seen rows of
    sum_k (a_ck - a_c'k)^2, with a double loop over the pairs of rows."""
    rows = [r / r.sum() for r in conf if r.sum() > 0]
    if len(rows) < 2:
        return float("nan")
    total = sum(float(np.sum((a - b) ** 2)) for a, b in itertools.combinations(rows, 2))
    return total / (len(rows) * (len(rows) - 1))


def test_identical_rows_score_exactly_zero_and_the_identity_one():
    """Oracle: Raykar & Yu (JMLR 2012): a spammer's confusion rows are all alike (A = e u^T, rank one), distance 0;
    a perfect worker (the identity) has the maximum, 1, after the paper's 1/(C(C-1)) scaling."""
    spammer = np.array([[0.7, 0.2, 0.1]] * 3)
    assert spammer_score(spammer) == 0.0
    assert spammer_score(np.array([[9, 1], [9, 1]])) == 0.0  # counts: rows normalised first
    for k in (2, 3, 5):
        assert spammer_score(np.eye(k)) == pytest.approx(1.0)


def test_binary_score_is_sensitivity_plus_specificity_minus_one_squared():
    """Oracle: the paper's binary case, S = (alpha + beta - 1)^2, worked by hand: specificity 0.8, sensitivity 0.7
    gives (0.5)^2 = 0.25; an adversary (0.1, 0.2) gives (-0.7)^2 = 0.49."""
    assert spammer_score(np.array([[0.8, 0.2], [0.3, 0.7]])) == pytest.approx(0.25)
    assert spammer_score(np.array([[0.1, 0.9], [0.8, 0.2]])) == pytest.approx(0.49)


def test_symmetric_workers_score_accuracy_minus_the_error_share_squared():
    """Oracle: by hand, with accuracy a and errors spread over the C - 1 other classes, every pair of rows differs
    by a - (1 - a)/(C - 1) in two cells, so S = (a - (1 - a)/(C - 1))^2."""
    for k, a in ((3, 0.7), (4, 0.5), (6, 0.9)):
        conf = np.full((k, k), (1 - a) / (k - 1))
        np.fill_diagonal(conf, a)
        assert spammer_score(conf) == pytest.approx((a - (1 - a) / (k - 1)) ** 2)


def test_score_equals_the_pairwise_definition_on_random_counts(seed):
    """Oracle: the pairwise loop above, on random count matrices with unseen rows; all at once (batched)."""
    rng = np.random.default_rng(seed)
    conf = rng.integers(0, 6, size=(40, 4, 4))
    conf[rng.random((40, 4)) < 0.3] = 0  # true classes the worker never saw
    got = spammer_score(conf)
    want = np.array([_pairwise_score(c) for c in conf])
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.allclose(got[~np.isnan(got)], want[~np.isnan(want)])


def test_one_seen_row_has_no_score():
    assert np.isnan(spammer_score(np.array([[3, 1], [0, 0]])))


def test_posterior_interval_covers_simulated_workers(seed):
    """Coverage on simulated workers: 300 workers per setting answer 60-200 items with a known confusion (true score
    0.36, 0.16, 0.64 and a 3-class one); the 95% posterior interval holds the true score in about 95% of them (the
    oracle is the simulation's own truth; tolerance: 88-99.5%, a binomial 300-draw band around 95% widened for the
    prior's pull)."""
    rng = np.random.default_rng(seed)
    settings = [np.array([[0.8, 0.2], [0.2, 0.8]]), np.array([[0.7, 0.3], [0.3, 0.7]]),
                np.array([[0.9, 0.1], [0.1, 0.9]]), np.array([[0.8, 0.1, 0.1], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])]
    for truth in settings:
        k = truth.shape[0]
        n_workers = 300
        per_row = rng.integers(20, 70, size=(n_workers, k))
        counts = np.stack([rng.multinomial(per_row[:, c], truth[c]) for c in range(k)], axis=1)
        low, high = posterior_spammer_bounds(counts, n_draws=400, level=0.95, rng=rng)
        target = spammer_score(truth)
        covered = np.mean((low <= target) & (target <= high))
        assert 0.88 <= covered <= 0.995, (truth.tolist(), covered)


def test_posterior_interval_of_a_row_seen_once_is_wide():
    """A row seen on one item says little: a bootstrap of the items would give [0, 0] for 19 items of one class and
    1 of another, all answered alike; the posterior interval reaches well above 0."""
    low, high = posterior_spammer_bounds(np.array([[[19, 0], [1, 0]]]), n_draws=2000, level=0.95,
                                         rng=np.random.default_rng(0))
    assert low[0] < 0.01 and high[0] > 0.3


def test_the_interval_does_not_depend_on_worker_order():
    counts = np.random.default_rng(3).integers(0, 20, size=(6, 2, 2))
    ranks = np.array([3, 0, 5, 1, 4, 2])
    perm = np.array([2, 0, 5, 1, 4, 3])
    a = posterior_spammer_bounds(counts, n_draws=200, level=0.95, rng=np.random.default_rng(1), ranks=ranks)
    b = posterior_spammer_bounds(counts[perm], n_draws=200, level=0.95, rng=np.random.default_rng(1),
                                 ranks=ranks[perm])
    assert np.allclose(a[0][perm], b[0]) and np.allclose(a[1][perm], b[1])


def _corpus(rows: list[tuple[int, int, int]], *, roles: list[str], n_items: int, classes=("a", "b")) -> Corpus:
    token, worker, label = (np.array(col) for col in zip(*rows, strict=True))
    names = [f"i{i}" for i in range(n_items)]
    return Corpus.from_arrays(token=token, worker=worker, label=label, doc_lengths=np.ones(n_items, int),
                              token_start=np.zeros(n_items, int), token_end=np.full(n_items, 2), doc_ids=names,
                              texts=names, worker_ids=[f"w{i}" for i in range(len(roles))], worker_roles=roles,
                              class_names=list(classes))


def test_worker_confusions_and_label_shares_equal_a_loop_over_annotations(seed):
    """Oracle: a plain loop over the annotations counts each (worker, reference, answer) cell and, for each worker,
    the other annotators' answers on its items."""
    rng = np.random.default_rng(seed)
    n_items, n_workers, k = 30, 5, 3
    rows = [(i, w, int(rng.integers(0, k))) for i in range(n_items) for w in range(n_workers) if rng.random() < 0.6]
    corpus = _corpus(rows, roles=["crowd"] * n_workers, n_items=n_items, classes=("x", "y", "z"))
    expert = np.where(rng.random(n_items) < 0.5, rng.integers(0, k, n_items), MISSING)
    aggregate = rng.integers(0, k, n_items)
    got = worker_confusions(corpus, expert=expert, aggregate=aggregate)
    want_e, want_a = np.zeros((n_workers, k, k), int), np.zeros((n_workers, k, k), int)
    others = np.zeros((n_workers, k), int)
    for t, w, y in rows:
        if expert[t] != MISSING:
            want_e[w, expert[t], y] += 1
        want_a[w, aggregate[t], y] += 1
        for t2, w2, y2 in rows:
            if t2 == t and w2 != w:
                others[w, y2] += 1
    assert np.array_equal(got.vs_expert, want_e) and np.array_equal(got.vs_aggregate, want_a)
    assert np.array_equal(got.others, others)
    own, crowd, bias = label_shares(got.answers, got.others)
    assert np.allclose(own.sum(axis=1), 1) and np.allclose(bias, np.nanmax(own - crowd, axis=1))


def _ev(score, low, high, items):
    return Evidence(*(np.asarray(v, dtype=float) for v in (score, low, high)), np.asarray(items))


def test_verdict_rules():
    """Hand-made evidence for each rule: block on the experts' interval; block on the aggregate's unless the experts
    show the worker informative; watch below watch_below; watch for an overused label; keep; too few items; and
    experts are not judged."""
    rules = VerdictRules(min_items=20, block_below=0.05, watch_below=0.15, bias_above=0.3)
    nan = float("nan")
    expert = _ev([0.01, 0.2, 0.4, 0.08, 0.5, 0.5, 0.5, nan],
                 [0.0, 0.02, 0.3, 0.05, 0.4, 0.4, 0.4, nan],
                 [0.03, 0.5, 0.6, 0.12, 0.6, 0.6, 0.6, nan],
                 [30, 25, 40, 50, 60, 5, 60, 0])
    aggregate = _ev([0.5, 0.01, 0.01, 0.5, 0.5, 0.5, 0.5, 0.01],
                    [0.4, 0.0, 0.0, 0.4, 0.4, 0.4, 0.4, 0.0],
                    [0.6, 0.03, 0.03, 0.6, 0.6, 0.6, 0.6, 0.02],
                    [100, 100, 100, 100, 100, 10, 100, 100])
    bias = np.array([0.0, 0.0, 0.0, 0.0, 0.4, 0.0, 0.1, 0.0])
    judged = np.array([True] * 7 + [False])
    got, why, by_expert = verdicts(expert, aggregate, bias, judged=judged, rules=rules, bias_label=["a"] * 8)
    assert got == ["block", "block", "keep", "watch", "watch", "keep", "keep", None]
    assert by_expert.tolist() == [True, False, True, True, True, False, True, False]
    assert "experts' labels" in why[0] and "aggregate's labels" in why[1] and "do not show otherwise" in why[1]
    assert "'a'" in why[4] and why[5].startswith("too few items") and why[7] == ""


def test_verdict_rules_refuse_bad_values():
    with pytest.raises(ValueError, match="watch_below .* must not be below block_below"):
        VerdictRules(block_below=0.2, watch_below=0.1)
    with pytest.raises(ValueError, match="min_items must be an integer >= 1"):
        VerdictRules(min_items=0)


def test_report_blocks_a_planted_constant_answerer_and_keeps_the_honest(seed):
    """End to end: three workers who copy the truth (with 10% noise) and one who always answers 'a'; the experts
    label every item. The constant answerer's rows are identical (score 0, interval near 0): block; the honest
    workers: keep. The expert gets no verdict; the report records its rules."""
    rng = np.random.default_rng(seed)
    n_items = 120
    truth = rng.integers(0, 2, n_items)
    rows = []
    for i in range(n_items):
        for w in range(3):
            rows.append((i, w, int(truth[i]) if rng.random() < 0.9 else 1 - int(truth[i])))
        rows.append((i, 3, 0))
        rows.append((i, 4, int(truth[i])))
    corpus = _corpus(rows, roles=["crowd"] * 4 + ["expert"], n_items=n_items)
    report = build_report_data(corpus, truth, method="mv", experts_used_in_fit=False, n_boot=500, seed=seed)
    q = [w["quality"] for w in report["workers"]]
    assert [x["verdict"] for x in q] == ["keep", "keep", "keep", "block", None]
    assert q[3]["spammer_score"] == 0.0 and q[3]["spammer_score_ci"][1] < 0.05 and q[3]["against"] == "experts"
    assert q[3]["label_share"] == {"a": 1.0, "b": 0.0} and q[3]["bias_label"] == "a"
    assert q[0]["confusion"]["matrix"] == q[0]["confusion_vs_expert"]["matrix"]
    assert sum(map(sum, q[0]["confusion"]["matrix"])) == n_items
    assert report["verdict_rules"] == {**VerdictRules().as_record(), "posterior_draws": 400}


def test_model_confusion_is_reported_with_its_score():
    rows = [(i, w, i % 2) for i in range(40) for w in range(2)]
    corpus = _corpus(rows, roles=["crowd", "crowd"], n_items=40)
    model = np.array([np.eye(2), np.full((2, 2), np.nan)])
    report = build_report_data(corpus, np.arange(40) % 2, method="ds", experts_used_in_fit=False, n_boot=50,
                               model_confusion=model)
    first, second = (w["quality"] for w in report["workers"])
    assert first["model_confusion"] == [[1.0, 0.0], [0.0, 1.0]] and first["model_spammer_score"] == 1.0
    assert second["model_confusion"] is None and second["model_spammer_score"] is None
    with pytest.raises(ValueError, match=r"model_confusion must have shape \(2, 2, 2\)"):
        build_report_data(corpus, np.arange(40) % 2, method="ds", experts_used_in_fit=False, n_boot=0,
                          model_confusion=np.eye(2))


def test_posterior_draws_shrink_only_for_large_crowds_of_many_classes():
    from crowdqa.quality.worker_quality import DRAW_BUDGET, MIN_DRAWS, POSTERIOR_DRAWS, posterior_draws

    assert posterior_draws(1000, n_workers=825, n_classes=4) == POSTERIOR_DRAWS
    assert posterior_draws(50, n_workers=825, n_classes=4) == 50 and posterior_draws(0, n_workers=3, n_classes=2) == 0
    assert posterior_draws(1000, n_workers=800, n_classes=20) == max(MIN_DRAWS, DRAW_BUDGET // (800 * 400))
    assert posterior_draws(1000, n_workers=10**6, n_classes=50) == MIN_DRAWS
