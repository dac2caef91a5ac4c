"""Tests for crowdqa.aggregation.gold_majority_vote.

Oracles: the same fit from the expert annotators and from ``known``; crowd-kit 1.4.2 on the shared
categorical sets (its labels: its own ``MajorityVote`` with its fitted skills, as its ``predict`` runs).
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.gold_majority_vote import GoldMajorityVote
from tests.aggregation.crowdkit_reference import crowdkit, frame, load_set, quiet, to_labels
from tests.aggregation.test_dawid_skene import random_corpus


def test_gold_mv_from_expert_annotators_equals_known(seed):
    corpus, truth = random_corpus(np.random.default_rng(seed), n_workers=6, n_items=60)
    roles = ["crowd"] * 5 + ["expert"]
    fields = {f: getattr(corpus, f) for f in ("token", "worker", "label", "doc_lengths", "token_start", "token_end",
                                                "doc_ids", "texts", "worker_ids", "class_names")}
    with_expert = Corpus.from_arrays(**fields, worker_roles=roles)
    expert = with_expert.labels_of(5)
    a = GoldMajorityVote().fit(with_expert)
    b = GoldMajorityVote().fit(with_expert.select_role("crowd"), true_labels=expert)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_allclose(a.skills_[:5], b.skills_[:5])
    assert np.isnan(a.skills_[5])


def test_gold_mv_without_true_labels_raises(seed):
    corpus, _ = random_corpus(np.random.default_rng(seed))
    with pytest.raises(ValueError, match="needs true labels"):
        GoldMajorityVote().fit(corpus)


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
    ours = GoldMajorityVote().fit(crowd, true_labels=known)
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
