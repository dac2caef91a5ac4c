"""Wawa, ZeroBasedSkill and GoldMajorityVote.

Oracles: a per-annotation Python loop for the skills; crowd-kit 1.4.2 on the shared
categorical sets (its ``predict`` fails with scikit-learn >= 1.6, so its labels are its
own ``MajorityVote`` with its fitted skills, which is what that ``predict`` runs).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.weighted_vote import GoldMajorityVote, Wawa, ZeroBasedSkill, agreement_rate
from tests.aggregation.crowdkit_reference import accuracy, crowdkit, frame, load_set, quiet, to_labels
from tests.aggregation.test_dawid_skene import random_corpus


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_agreement_rate_matches_a_loop(seed):
    rng = np.random.default_rng(seed)
    corpus, _ = random_corpus(rng, n_workers=5)
    reference = rng.integers(-1, corpus.n_classes, size=corpus.n_tokens)
    right, seen = np.zeros(corpus.n_workers), np.zeros(corpus.n_workers)
    for t, w, y in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        if reference[t] >= 0:
            seen[w] += 1
            right[w] += y == reference[t]
    got = agreement_rate(corpus, reference)
    np.testing.assert_array_equal(np.isnan(got), seen == 0)
    np.testing.assert_allclose(got[seen > 0], right[seen > 0] / seen[seen > 0], rtol=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_one_zbs_step_gives_wawa(seed):
    """With lr_init=1 the first step sets every skill to its agreement with the plain majority vote."""
    corpus, _ = random_corpus(np.random.default_rng(seed), n_workers=5)
    a, b = Wawa().fit(corpus), ZeroBasedSkill(max_iter=1).fit(corpus)
    np.testing.assert_allclose(b.skills_, a.skills_, rtol=1e-12)
    np.testing.assert_array_equal(b.labels_, a.labels_)


def test_wawa_with_known_measures_workers_against_the_known_labels():
    """Hand-worked: token 1's vote (0) is overruled by its known class 1, so w (who said 1) agrees twice."""
    c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1], worker=[0, 1, 2] * 2, label=[1, 1, 0, 0, 0, 1],
                           doc_lengths=[1, 1], token_start=[0, 0], token_end=[1, 1], doc_ids=["a", "b"],
                           texts=["a", "b"], worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3,
                           class_names=["no", "yes"])
    model = Wawa().fit(c, known=np.array([-1, 1]))
    np.testing.assert_allclose(model.skills_, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(model.labels_, [1, 1])


def test_gold_mv_from_expert_annotators_equals_known(seed):
    corpus, truth = random_corpus(np.random.default_rng(seed), n_workers=6, n_items=60)
    roles = ["crowd"] * 5 + ["expert"]
    fields = {f: getattr(corpus, f) for f in ("token", "worker", "label", "doc_lengths", "token_start", "token_end",
                                                "doc_ids", "texts", "worker_ids", "class_names")}
    with_expert = Corpus.from_arrays(**fields, worker_roles=roles)
    expert = with_expert.labels_of(5)
    a = GoldMajorityVote().fit(with_expert)
    b = GoldMajorityVote().fit(with_expert.select_role("crowd"), known=expert)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.skills_[:5], b.skills_[:5])
    assert np.isnan(a.skills_[5])


def test_gold_mv_without_true_labels_raises(seed):
    corpus, _ = random_corpus(np.random.default_rng(seed))
    with pytest.raises(ValueError, match="needs true labels"):
        GoldMajorityVote().fit(corpus)


@pytest.mark.shared_data
@pytest.mark.parametrize(("name", "zbs"), [("snow2008_rte", False), ("snow2008_temp", False), ("bluebirds", True)])
def test_wawa_and_zbs_match_crowdkit(name, zbs, tmp_path):
    """crowd-kit's Wawa, and ZeroBasedSkill for 25 iterations (past the first step-size cut at 20; it is slow).

    Skills agree exactly where no item's plain vote is tied (Bluebirds has none); RTE's 65 and
    TEMP's 17 tied items go to the lowest class here and to the most frequent answer in
    crowd-kit, so there only the accuracy is compared (within 0.005)."""
    ck = crowdkit()
    crowd, gold = load_set(name, tmp_path)
    df, classes, workers = frame(crowd)
    votes = crowd.vote_counts()
    tied = np.count_nonzero((votes == votes.max(axis=1, keepdims=True)).sum(axis=1) > 1)
    pairs = [(Wawa(), ck.Wawa())] + [(ZeroBasedSkill(max_iter=25), ck.ZeroBasedSkill(n_iter=25))] * zbs
    for ours, theirs in pairs:
        ours.fit(crowd)
        with quiet():
            theirs.fit(df)
            labels = to_labels(ck.MajorityVote().fit(df, skills=theirs.skills_).labels_, crowd.n_tokens, classes)
        if tied == 0:
            skills = theirs.skills_.sort_index()
            np.testing.assert_allclose(ours.skills_[workers[skills.index]], skills.to_numpy(), rtol=1e-12)
            np.testing.assert_array_equal(ours.labels_, labels)
        assert accuracy(ours.labels_, gold) == pytest.approx(accuracy(labels, gold), abs=0.005)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["snow2008_rte", "bluebirds"])
def test_gold_mv_matches_crowdkit(name, tmp_path):
    """Gold on a seeded 30% of the items; crowd-kit's GoldMajorityVote skills, then its MajorityVote with the
    crowd's mean skill for workers without gold (its on_missing_skill="value"); labels compared off the gold."""
    ck = crowdkit()
    import pandas as pd

    crowd, gold = load_set(name, tmp_path)
    df, classes, workers = frame(crowd)
    rng = np.random.default_rng(17)
    known = np.where(rng.random(crowd.n_tokens) < 0.3, gold, -1)
    ours = GoldMajorityVote().fit(crowd, known=known)
    code = {int(c): i for i, c in enumerate(classes)}
    has = np.flatnonzero(known >= 0)
    true_labels = pd.Series([code[int(k)] for k in known[has]], index=has)
    with quiet():
        theirs = ck.GoldMajorityVote().fit(df, true_labels)
        fill = float(theirs.skills_.mean())
        labels = to_labels(ck.MajorityVote(on_missing_skill="value", default_skill=fill)
                           .fit(df, skills=theirs.skills_).labels_, crowd.n_tokens, classes)
    np.testing.assert_allclose(ours.skills_[workers[theirs.skills_.index]], theirs.skills_.to_numpy(), rtol=1e-12)
    held = known < 0
    np.testing.assert_array_equal(ours.labels_[held], labels[held])
