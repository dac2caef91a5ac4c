"""Tests for crowdqa.aggregation.zero_based_skill (its agreement with crowd-kit is in test_wawa.py).

Oracle: Wawa, which one step of ZeroBasedSkill with ``lr_init=1`` must equal.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation import ConvergenceWarning
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


def test_max_iter_before_tol_warns_and_records_each_move():
    """The contract's rule (STYLE.md, aggregation/): a fit with a ``tol`` that stops at ``max_iter`` warns
    ``ConvergenceWarning``; ``tol=None`` is crowd-kit's fixed schedule and does not. Oracle: Wawa, whose skills the
    first step (``lr_init=1``, from 1/K) reaches, so the first recorded move is their largest distance from 1/K."""
    corpus, _ = random_corpus(np.random.default_rng(3), n_workers=5)
    first_move = float(np.nanmax(np.abs(Wawa().fit(corpus).skills_ - 1.0 / corpus.n_classes)))
    with pytest.warns(ConvergenceWarning, match=r"max_iter=1 .* moved a skill by .* \(tol=0.0\)"):
        model = ZeroBasedSkill(max_iter=1, tol=0.0).fit(corpus)
    assert model.n_iter_ == 1 and not model.converged_
    np.testing.assert_allclose(model.log_likelihood_, [-first_move], rtol=1e-12)

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fixed = ZeroBasedSkill(max_iter=5).fit(corpus)
        settled = ZeroBasedSkill(max_iter=100, tol=1.0).fit(corpus)  # every move is below 1
    assert fixed.n_iter_ == 5 and len(fixed.log_likelihood_) == 5 and not fixed.converged_
    assert settled.n_iter_ == 1 and settled.converged_
