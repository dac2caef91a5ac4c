"""Tests for crowdqa.aggregation.wawa, and ZeroBasedSkill beside it against crowd-kit.

Oracles: a hand-worked example; crowd-kit 1.4.2 on the shared categorical sets (its ``predict`` fails with
scikit-learn >= 1.6, so its labels are its own ``MajorityVote`` with its fitted skills, which is what that
``predict`` runs).
"""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.wawa import Wawa
from crowdqa.aggregation.zero_based_skill import ZeroBasedSkill
from tests.aggregation.crowdkit_reference import accuracy, crowdkit, frame, load_set, quiet, to_labels


def test_wawa_with_known_measures_workers_against_the_known_labels():
    """Hand-worked: token 1's vote (0) is overruled by its known class 1, so w (who said 1) agrees twice."""
    c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1], worker=[0, 1, 2] * 2, label=[1, 1, 0, 0, 0, 1],
                           doc_lengths=[1, 1], token_start=[0, 0], token_end=[1, 1], doc_ids=["a", "b"],
                           texts=["a", "b"], worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3,
                           class_names=["no", "yes"])
    model = Wawa().fit(c, true_labels=np.array([-1, 1]))
    np.testing.assert_allclose(model.skills_, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(model.labels_, [1, 1])


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
