"""Tests for crowdqa.aggregation.zero_based_skill (its agreement with crowd-kit is in test_wawa.py).

Oracle: Wawa, which one step of ZeroBasedSkill with ``lr_init=1`` must equal.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.wawa import Wawa
from crowdqa.aggregation.zero_based_skill import ZeroBasedSkill
from tests.aggregation.test_dawid_skene import random_corpus


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_one_zbs_step_gives_wawa(seed):
    """With lr_init=1 the first step sets every skill to its agreement with the plain majority vote."""
    corpus, _ = random_corpus(np.random.default_rng(seed), n_workers=5)
    a, b = Wawa().fit(corpus), ZeroBasedSkill(max_iter=1).fit(corpus)
    np.testing.assert_allclose(b.skills_, a.skills_, rtol=1e-12)
    np.testing.assert_array_equal(b.labels_, a.labels_)
