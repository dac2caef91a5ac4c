"""Tests for crowdqa.quality.compare: the paired bootstrap against a brute force, the metric per data kind, and the
recommendation rule on constructed cases."""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.registry import methods_by_cost
from crowdqa.quality.compare import (
    MethodScore,
    Scoreboard,
    compare_aggregates,
    metric_for,
    more_documents,
    paired_bootstrap,
    recommend,
)
from crowdqa.quality.references import reference_labels
from tests.utils.factories import synthetic_corpus


def _brute_force(counts: np.ndarray, score, n_boot: int, seed: int) -> np.ndarray:
    """One resample at a time, one method at a time: draw n_docs documents, sum, score."""
    rng = np.random.default_rng(seed)
    n_methods, n_docs, _ = counts.shape
    out = np.full((n_boot, n_methods), np.nan)
    for b in range(n_boot):
        idx = rng.integers(0, n_docs, size=n_docs)
        for m in range(n_methods):
            out[b, m] = score(counts[m, idx].sum(axis=0))
    return out


def _f1(s):
    den = 2 * s[0] + s[1] + s[2]
    return 2 * s[0] / den if den else np.nan


@pytest.mark.parametrize("max_cells", [7, 1 << 22])  # several chunks, one chunk
def test_paired_bootstrap_matches_a_brute_force(max_cells):
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 4, size=(3, 7, 3))
    counts[:, 2] = 0  # a document without anything: resamples of it alone are undefined
    point, boot = paired_bootstrap(counts, score="f1", n_boot=50, rng=11, max_cells=max_cells)
    expected = _brute_force(counts, _f1, 50, 11)
    np.testing.assert_allclose(boot, expected, equal_nan=True)
    np.testing.assert_allclose(point, [_f1(c.sum(axis=0)) for c in counts])
    acc = np.stack([rng.integers(0, 3, size=(5,)), np.full(5, 2)], axis=1)[None].repeat(2, axis=0)
    _, boot_acc = paired_bootstrap(acc, score="accuracy", n_boot=20, rng=1)
    np.testing.assert_allclose(boot_acc, _brute_force(acc, lambda s: s[0] / s[1], 20, 1))


def test_compare_intervals_are_the_percentiles_of_the_same_resamples():
    corpus = synthetic_corpus(n_docs=40, accuracy=0.75, seed=2)
    ref = reference_labels(corpus)
    rng = np.random.default_rng(0)
    good = np.where(rng.random(corpus.n_tokens) < 0.9, np.maximum(ref, 0), 1 - np.maximum(ref, 0))
    bad = np.where(rng.random(corpus.n_tokens) < 0.7, np.maximum(ref, 0), 1 - np.maximum(ref, 0))
    out = compare_aggregates(corpus, {"mv": bad, "ds": good}, ref, n_boot=200, seed=5)
    # The brute force, on the per-document counts of the expert documents.
    docs = np.flatnonzero(np.bincount(corpus.token_doc[ref != MISSING], minlength=corpus.n_docs) > 0)
    counts = np.zeros((2, docs.size, 3))
    for m, lab in enumerate((bad, good)):
        for j, d in enumerate(docs):
            t = corpus.token_doc == d
            p, r = lab[t] > 0, ref[t] > 0
            counts[m, j] = [np.sum(p & r), np.sum(p & ~r), np.sum(~p & r)]
    _, boot = paired_bootstrap(counts, score="f1", n_boot=200, rng=np.random.default_rng([5, 7]))
    by = {s.method: s for s in out.methods}
    diff = boot[:, 0] - boot[:, 1]
    assert by["mv"].diff_low == pytest.approx(np.percentile(diff, 2.5))
    assert by["mv"].diff_high == pytest.approx(np.percentile(diff, 97.5))
    assert by["ds"].low == pytest.approx(np.percentile(boot[:, 1], 2.5))
    assert by["ds"].value == pytest.approx(_f1(counts[1].sum(axis=0)))
    assert out.documents == docs.size and out.methods[0].method == "ds"


def _typed_corpus() -> Corpus:
    """Two documents of 4 tokens, BIO with PER and LOC; one crowd worker, one expert."""
    names = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    truth = np.array([1, 2, 0, 3, 0, 3, 4, 0])
    crowd = np.array([1, 2, 0, 1, 0, 3, 4, 0])
    return Corpus.from_arrays(
        token=np.r_[np.arange(8), np.arange(8)], worker=np.r_[np.zeros(8), np.ones(8)], label=np.r_[crowd, truth],
        doc_lengths=np.array([4, 4]), token_start=np.tile(np.arange(4) * 2, 2),
        token_end=np.tile(np.arange(4) * 2 + 1, 2),
        doc_ids=["a", "b"], texts=["w w w w"] * 2, worker_ids=["c:1", "e:1"], worker_roles=["crowd", "expert"],
        class_names=names)


def test_the_metric_follows_the_kind_of_labels():
    corpus = _typed_corpus()
    assert metric_for(corpus) == ("typed-bio", "span_f1")
    assert metric_for(synthetic_corpus(n_docs=4)) == ("spans", "token_f1")
    ref = reference_labels(corpus)
    pred = np.array([1, 2, 0, 1, 0, 3, 4, 0])  # a LOC typed as PER: token F1 1.0, typed span F1 2/3
    out = compare_aggregates(corpus, {"mv": pred}, ref, n_boot=10)
    assert out.methods[0].value == pytest.approx(2 / 3)
    assert out.methods[0].extra["token_f1"] == pytest.approx(1.0)


def _score(method, value, diff_low, diff_high, vs_mv=(None, None), *, expected=None, use_experts=False):
    return MethodScore(method=method, value=value, low=value - 0.05, high=value + 0.05, diff=None,
                       diff_low=diff_low, diff_high=diff_high, vs_mv_low=vs_mv[0], vs_mv_high=vs_mv[1],
                       expected=value if expected is None else expected, weight=0.5, use_experts=use_experts)


def test_the_highest_expected_score_is_recommended_and_the_reason_gives_every_gap_in_points():
    """Issue 46: the reason said "not significantly worse ... 0.832 vs 0.858" and hid the gap; it now names every
    other candidate with its expected shortfall in points and its measured score (hand-worked: 0.80 - 0.76 = 4.0
    points, 0.80 - 0.70 = 10.0)."""
    scores = [_score("hmm-crowd", 0.80, 0.0, 0.0), _score("ds", 0.76, -0.09, -0.03, use_experts=True),
              _score("mv", 0.70, -0.15, -0.07)]
    out = recommend(scores, kind="typed-bio", metric="span_f1", documents=500,
                    prior={"anchor": "hmm-crowd", "shortfall": 0.01, "spread": 0.02})
    assert (out.recommended, out.recommended_use_experts, out.best) == ("hmm-crowd", False, "hmm-crowd")
    assert not out.too_small and out.more_documents is None
    assert "hmm-crowd has the highest expected span f1 on the items the experts did not label (0.800" in out.reason
    assert "expected points behind it: ds+experts 4.0 (measured 0.760), mv 10.0 (measured 0.700)" in out.reason
    assert "not significantly worse" not in out.reason
    assert [s.behind for s in out.methods] == pytest.approx([0.0, 4.0, 10.0])




def test_a_measured_lead_the_prior_outweighs_is_said_in_points():
    scores = [_score("glad", 0.86, 0.0, 0.0, expected=0.842), _score("ds", 0.85, -0.03, 0.01, expected=0.85,
                                                                      use_experts=True)]
    out = recommend(scores, kind="categorical", metric="accuracy", documents=200, prior={"anchor": "ds+experts"})
    assert (out.recommended, out.recommended_use_experts, out.best) == ("ds", True, "glad")
    assert ("the best measured, glad (0.860), is expected 0.8 points lower: its measured lead of 1.0 points weighs "
            "0.50 against the prior") in out.reason
    assert "fitted with the experts clamped, measured by cross-fitting" in out.reason


def test_a_tie_goes_to_the_anchor_then_to_the_cheaper_method():
    scores = [_score("bsc-seq", 0.80, 0.0, 0.0, expected=0.79), _score("ds", 0.79, -0.03, 0.01),
              _score("mv", 0.70, -0.14, -0.05)]
    out = recommend(scores, kind="spans", metric="token_f1", documents=500, prior={"anchor": "bsc-seq"})
    assert out.best == "bsc-seq" and out.recommended == "bsc-seq"
    out = recommend(scores, kind="spans", metric="token_f1", documents=500, prior={"anchor": None})
    assert out.recommended == "ds" and methods_by_cost().index("ds") < methods_by_cost().index("bsc-seq")


def test_too_few_experts_says_so_and_how_many_more():
    corpus = synthetic_corpus(n_docs=8, accuracy=0.8, seed=1)  # 4 expert documents
    ref = reference_labels(corpus)
    rng = np.random.default_rng(1)
    a = np.where(rng.random(corpus.n_tokens) < 0.9, np.maximum(ref, 0), 1 - np.maximum(ref, 0))
    b = np.where(rng.random(corpus.n_tokens) < 0.85, np.maximum(ref, 0), 1 - np.maximum(ref, 0))
    out = compare_aggregates(corpus, {"ds": a, "mv": b}, ref, n_boot=300)
    assert out.too_small and out.documents == 4
    # Neither the prior's anchor for spans (bsc-seq, with or without the experts) is here: the best point estimate
    # is the anchor, and every other candidate is shrunk toward a shortfall to it.
    assert out.prior["anchor"] == out.best == out.recommended and out.prior["prior_anchor"] == "bsc-seq"
    assert out.more_documents is not None and out.more_documents > 0
    assert f"about {out.more_documents} more expert documents" in out.reason


def test_how_many_more_is_for_the_gap_to_the_next_lower_score_not_to_a_tie():
    """Methods that tie the best (the same labels on the expert items) left a gap of 0, and the reason asked for
    the narrowest interval SLiCE takes: "about 7481 more expert documents would give the best an interval half as
    wide as the gap between the two best (0.950 and 0.950)" (crowdqa compare on 20 expert items, 6 methods at
    0.950, mv at 0.900). The gap to separate is to the next lower score; when all tie there is none."""
    plan = {"accuracy": 0.95, "per_document": 1.0, "documents": 20}
    scores = [_score("ds", 0.95, 0.0, 0.0), _score("kos", 0.95, 0.0, 0.0), _score("mv", 0.90, -0.15, 0.0)]
    out = recommend(scores, kind="categorical", metric="accuracy", documents=20, plan=plan)
    assert out.too_small and out.recommended == "ds"
    assert out.more_documents == more_documents(plan, 0.025) and out.more_documents < 1000
    assert f"about {out.more_documents} more expert documents" in out.reason
    assert "between the best and the next lower score (0.950 and 0.900)" in out.reason
    tied = recommend(scores[:2], kind="categorical", metric="accuracy", documents=20, plan=plan)
    assert tied.too_small and tied.more_documents is None
    assert tied.reason.endswith("every method has the same accuracy (0.950)")


def test_more_documents_follows_slice():
    plan = {"precision": 0.8, "recall": 0.85, "predicted_per_document": 2.0, "actual_per_document": 2.0,
            "documents": 10}
    # SLiCE for P=0.8, R=0.85, half-width 0.05: 265 predicted positives for precision, 214 actual positives for
    # recall, at 2 a document: 133 documents
    assert more_documents(plan, 0.05) == 133 - 10
    assert more_documents({"accuracy": 0.0, "per_document": 1.0, "documents": 5}, 0.05) is None


def test_a_method_significantly_worse_than_majority_vote_is_named():
    scores = [_score("mv", 0.80, 0.0, 0.0, (0.0, 0.0)), _score("mace", 0.60, -0.3, -0.1, (-0.3, -0.1)),
              _score("ds", 0.79, -0.02, 0.01, (-0.02, 0.01))]
    out = recommend(scores, kind="categorical", metric="accuracy", documents=800)
    assert out.recommended == "mv"  # the highest expected score (here the measured one)
    assert out.warnings == ["mace is significantly worse than majority vote (paired difference interval "
                            "[-0.300, -0.100])"]


def test_a_scoreboard_compares_the_methods_added_so_far_as_compare_aggregates_does():
    """The auto job keeps only the leader's fit by asking the rule after each method: the scoreboard's comparison of
    the methods added so far is compare_aggregates of those alone, also after a method that leaves an expert
    document unlabelled (it is then left out of every method's score, and not before)."""
    corpus = synthetic_corpus(n_docs=40, accuracy=0.75, seed=2)
    ref = reference_labels(corpus)
    rng = np.random.default_rng(1)
    truth = np.maximum(ref, 0)
    aggregates = {m: np.where(rng.random(corpus.n_tokens) < acc, truth, 1 - truth)
                  for m, acc in [("hmm-crowd", 0.9), ("mv", 0.8), ("ds", 0.85)]}
    first_expert_doc = corpus.token_doc[np.flatnonzero(ref != MISSING)[0]]
    aggregates["glad"] = np.where(corpus.token_doc == first_expert_doc, MISSING, truth)
    board = Scoreboard(corpus, ref)
    for k, (method, labels) in enumerate(aggregates.items(), start=1):
        board.add(method, labels)
        so_far = dict(list(aggregates.items())[:k])
        assert board.comparison(n_boot=100, seed=3) == compare_aggregates(corpus, so_far, ref, n_boot=100, seed=3)
    assert board.comparison(n_boot=100, seed=3).documents == compare_aggregates(
        corpus, {"mv": aggregates["mv"]}, ref, n_boot=100, seed=3).documents - 1
    with pytest.raises(ValueError, match="must have shape"):
        board.add("wawa", truth[:-1])


def test_a_scoreboard_draws_the_bootstrap_once_per_state_and_again_on_any_change(monkeypatch):
    """The same comparison asked twice (auto asks after each fit, then once more for its result) draws the
    bootstrap once and is the fresh computation's; a new method, another n_boot, seed or level, or a method's
    aggregate given again computes it afresh; the caller's array changed after ``add`` changes nothing."""
    from crowdqa.quality import compare

    corpus = synthetic_corpus(n_docs=30, accuracy=0.75, seed=4)
    ref = reference_labels(corpus)
    truth = np.maximum(ref, 0)
    rng = np.random.default_rng(2)
    mv = np.where(rng.random(corpus.n_tokens) < 0.8, truth, 1 - truth)
    ds = np.where(rng.random(corpus.n_tokens) < 0.9, truth, 1 - truth)
    draws = []
    bootstrap = compare.paired_bootstrap
    monkeypatch.setattr(compare, "paired_bootstrap", lambda *a, **k: draws.append(1) or bootstrap(*a, **k))
    board = Scoreboard(corpus, ref)
    board.add("mv", mv)
    first = board.comparison(n_boot=60, seed=1)
    assert board.comparison(n_boot=60, seed=1) == first and len(draws) == 1
    board.add("ds", ds)
    both = board.comparison(n_boot=60, seed=1)
    assert len(draws) == 2 and len(both.methods) == 2
    assert board.comparison(n_boot=60, seed=1) is both and len(draws) == 2
    monkeypatch.setattr(compare, "paired_bootstrap", bootstrap)
    assert both == compare_aggregates(corpus, {"mv": mv, "ds": ds}, ref, n_boot=60, seed=1)
    monkeypatch.setattr(compare, "paired_bootstrap", lambda *a, **k: draws.append(1) or bootstrap(*a, **k))
    for kwargs in ({"n_boot": 61, "seed": 1}, {"n_boot": 60, "seed": 2}, {"n_boot": 60, "seed": 1, "level": 0.9}):
        before = len(draws)
        assert board.comparison(**kwargs) == compare_aggregates(corpus, {"mv": mv, "ds": ds}, ref, **kwargs)
        assert len(draws) == before + 2  # the board's, then compare_aggregates' own
    ds[:] = truth  # the caller's array: the board scored a copy
    assert board.comparison(n_boot=60, seed=1) == both
    board.add("ds", ds)  # the same method given again, now perfect: a new state
    again = board.comparison(n_boot=60, seed=1)
    assert again == compare_aggregates(corpus, {"mv": mv, "ds": truth}, ref, n_boot=60, seed=1) != both
