"""Tests for crowdqa.quality.metrics and crowdqa.quality.references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_recall_fscore_support

from crowdqa.aggregation.corpus import Corpus
from crowdqa.quality.metrics import grouped_counts, per_label_prf, prf_from_counts, token_prf
from crowdqa.quality.references import reference_labels

labels_pair = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-1, 3), min_size=n, max_size=n),
        st.lists(st.integers(-1, 3), min_size=n, max_size=n),
    )
)


def test_binary_matches_sklearn():
    """Oracle: scikit-learn precision_recall_fscore_support(average='binary') on the non-O indicator."""
    rng = np.random.default_rng(0)
    pred = rng.integers(-1, 3, 500)
    ref = rng.integers(-1, 3, 500)
    s = token_prf(pred, ref)
    both = (pred >= 0) & (ref >= 0)
    p, r, f, _ = precision_recall_fscore_support(ref[both] > 0, pred[both] > 0, average="binary")
    assert (s.precision, s.recall, s.f1) == pytest.approx((p, r, f), abs=1e-12)


def test_per_label_micro_macro_match_sklearn():
    """Oracle: scikit-learn per-label, micro and macro (zero_division=0) over the labels present."""
    rng = np.random.default_rng(1)
    pred = rng.integers(0, 4, 300)
    ref = rng.integers(0, 4, 300)
    pred[pred == 3] = 1  # class 3 only in the reference: undefined precision -> 0 in the macro
    res = per_label_prf(pred, ref, n_classes=5)
    p, r, f, _ = precision_recall_fscore_support(ref, pred, labels=[1, 2, 3], average=None, zero_division=0)
    assert np.allclose(res["recall"][1:4], r)
    assert np.allclose(res["f1"][1:4], f)
    assert np.allclose(res["precision"][1:3], p[:2]) and np.isnan(res["precision"][3])
    pm, rm, fm, _ = precision_recall_fscore_support(ref, pred, labels=[1, 2, 3], average="micro")
    assert (res["micro"].precision, res["micro"].recall, res["micro"].f1) == pytest.approx((pm, rm, fm))
    pM, rM, fM, _ = precision_recall_fscore_support(ref, pred, labels=[1, 2, 3], average="macro", zero_division=0)
    assert (res["macro"]["precision"], res["macro"]["recall"], res["macro"]["f1"]) == pytest.approx((pM, rM, fM))
    assert np.isnan(res["f1"][4])  # class 4 never occurs: undefined, and left out of the macro


def test_zero_division_convention():
    """Pinned convention: 0/0 is nan (undefined), never 0 or 1; tp == 0 with defined P and R gives F1 == 0."""
    s = token_prf(np.array([0, 0, 0]), np.array([0, 0, 0]))
    assert (s.tp, s.fp, s.fn) == (0, 0, 0)
    assert np.isnan(s.precision) and np.isnan(s.recall) and np.isnan(s.f1)
    assert s.as_dict()["precision"] is None
    s = token_prf(np.array([1, 0]), np.array([0, 1]))
    assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)
    s = token_prf(np.array([0, 0]), np.array([0, 1]))
    assert np.isnan(s.precision) and s.recall == 0.0 and s.f1 == 0.0


def test_missing_tokens_are_left_out():
    """Hand-worked: MISSING on either side removes the token from the counts."""
    s = token_prf(np.array([1, -1, 1, 0]), np.array([1, 1, -1, 1]))
    assert (s.tp, s.fp, s.fn) == (1, 0, 1)


def test_errors():
    with pytest.raises(ValueError, match=r"one shape, found \(2,\) and \(3,\)"):
        token_prf(np.zeros(2, int), np.zeros(3, int))
    with pytest.raises(ValueError, match="found -2"):
        token_prf(np.array([-2, 0]), np.zeros(2, int))
    with pytest.raises(ValueError, match="negative"):
        prf_from_counts(-1, 0, 0)


def test_grouped_counts_brute_force():
    """Oracle: a Python loop over groups."""
    rng = np.random.default_rng(2)
    p, r, g = rng.random(200) < 0.4, rng.random(200) < 0.5, rng.integers(0, 7, 200)
    got = grouped_counts(p, r, g, n_groups=8)
    for k in range(8):
        m = g == k
        assert got[k].tolist() == [int(np.sum(p[m] & r[m])), int(np.sum(p[m] & ~r[m])), int(np.sum(~p[m] & r[m]))]



@pytest.mark.parametrize("share", [0.0, 0.1, 0.9, 1.0])
def test_grouped_outcomes_with_mask_brute_force(share):
    """Oracle: a Python loop over groups and the masked rows; sparse masks (rows taken first) and dense ones
    (rows left out in place) alike."""
    from crowdqa.quality.metrics import grouped_outcomes

    rng = np.random.default_rng(3)
    p, r, g = rng.random(300) < 0.4, rng.random(300) < 0.5, rng.integers(0, 7, 300).astype(np.int32)
    mask = rng.random(300) < share
    got = grouped_outcomes(p, r, g, n_groups=8, mask=mask)
    for k in range(8):
        m = (g == k) & mask
        assert got[k].tolist() == [int(np.sum(~p[m] & ~r[m])), int(np.sum(~p[m] & r[m])), int(np.sum(p[m] & ~r[m])),
                                   int(np.sum(p[m] & r[m]))]


@settings(max_examples=150, deadline=None)
@given(labels_pair)
def test_properties(pair):
    """Scores in [0, 1]; swapping prediction and reference swaps precision and recall; a copy scores 1."""
    pred, ref = np.array(pair[0]), np.array(pair[1])
    s = token_prf(pred, ref)
    t = token_prf(ref, pred)
    for v in (s.precision, s.recall, s.f1):
        assert np.isnan(v) or 0.0 <= v <= 1.0
    assert (s.tp, s.fp, s.fn) == (t.tp, t.fn, t.fp)
    assert s.precision == pytest.approx(t.recall, nan_ok=True)
    assert s.recall == pytest.approx(t.precision, nan_ok=True)
    assert s.f1 == pytest.approx(t.f1, nan_ok=True)
    c = token_prf(ref, ref)
    assert c.fp == c.fn == 0
    if c.tp:
        assert c.precision == c.recall == c.f1 == 1.0
    m = per_label_prf(ref, ref, n_classes=4)
    if m["micro"].tp:
        assert m["micro"].f1 == 1.0 and m["macro"]["f1"] == 1.0


def _expert_corpus() -> Corpus:
    # doc a (3 tokens): e1, e2, e3 and crowd c; doc b (1 token): only the crowd.
    rows = [
        (0, 0, 1), (0, 1, 2), (0, 2, 2), (0, 3, 0),
        (1, 0, 0), (1, 1, 0), (1, 2, 1), (1, 3, 1),
        (2, 0, 0), (2, 1, 0), (2, 2, 0), (2, 3, 2),
        (3, 3, 1),
    ]
    t, w, lab = zip(*rows, strict=True)
    return Corpus.from_arrays(
        token=t, worker=w, label=lab, doc_lengths=[3, 1], token_start=[0, 2, 4, 0], token_end=[1, 3, 5, 1],
        doc_ids=["a", "b"], texts=["x y z", "w"], worker_ids=["e1", "e2", "e3", "c"],
        worker_roles=["expert", "expert", "expert", "crowd"], class_names=["O", "A", "B"],
    )


def test_reference_rules():
    """Hand-worked oracle on three experts: union, majority (ties -> lowest index), one expert; MISSING elsewhere."""
    c = _expert_corpus()
    # token 0: labels 1, 2, 2 -> union most frequent non-O 2; majority 2.
    # token 1: labels 0, 0, 1 -> union 1 (any expert); majority 0.
    # token 2: all O -> 0 in both. token 3: no expert -> MISSING.
    assert reference_labels(c).tolist() == [2, 1, 0, -1]
    assert reference_labels(c, rule="majority").tolist() == [2, 0, 0, -1]
    assert reference_labels(c, rule="e1").tolist() == [1, 0, 0, -1]
    with pytest.raises(ValueError, match="found 'nobody'"):
        reference_labels(c, rule="nobody")


def test_union_tie_lowest_index():
    """Tie rule: two experts, one says A and one says B -> the union takes A (lowest index)."""
    c = Corpus.from_arrays(
        token=[0, 0], worker=[0, 1], label=[2, 1], doc_lengths=[1], token_start=[0], token_end=[1],
        doc_ids=["a"], texts=["x"], worker_ids=["e1", "e2"], worker_roles=["expert", "expert"],
        class_names=["O", "A", "B"],
    )
    assert reference_labels(c).tolist() == [1]
    assert reference_labels(c, rule="majority").tolist() == [1]


@pytest.mark.parametrize("rule", ["union", "majority"])
def test_reference_rules_brute_force(seed, rule):
    """Oracle: the rules by a Python loop over tokens (collections.Counter, ties to the lowest class), on
    corpora with 0-3 experts on some documents and crowd workers elsewhere."""
    from collections import Counter

    from tests.quality.test_report import random_corpus

    rng = np.random.default_rng(seed)
    c = random_corpus(seed, n_docs=20, n_crowd=4, n_experts=int(rng.integers(0, 4)), bio=True)
    got = reference_labels(c, rule=rule)
    for t in range(c.n_tokens):
        labels = [int(lab) for tok, w, lab in zip(c.token, c.worker, c.label, strict=True)
                  if tok == t and c.worker_roles[w] == "expert"]
        if not labels:
            assert got[t] == -1
            continue
        votes = Counter(labels if rule == "majority" else [x for x in labels if x > 0])
        best = max(votes.values(), default=0)
        assert got[t] == min((k for k, v in votes.items() if v == best), default=0)
