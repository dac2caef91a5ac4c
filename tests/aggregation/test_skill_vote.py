"""Tests for crowdqa.aggregation._skill_vote: the skills the weighted votes share.

Oracle: a per-annotation Python loop for the skills.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation._skill_vote import agreement_rate
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
