"""KOS (Karger, Oh, Shah 2011).

Oracles: one round of messages against the update equations written as loops over each
edge's neighbours; crowd-kit 1.4.2's ``KOS`` run from the same initial messages (its
legacy ``np.random.seed(0)`` draws) gives the same decisions on Bluebirds and TEMP; with
its defaults, the same accuracy on all three shared sets.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.kos import KOS, _iterate
from tests.aggregation.crowdkit_reference import SETS, accuracy, crowdkit, frame, load_set, quiet, to_labels
from tests.aggregation.test_dawid_skene import random_corpus


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_one_round_matches_the_update_equations(seed):
    rng = np.random.default_rng(seed)
    corpus, _ = random_corpus(rng, n_items=8, n_workers=4, n_classes=2, per_item=3)
    a = np.where(corpus.label == 0, 1.0, -1.0)
    y0 = rng.normal(1.0, 1.0, corpus.n_obs)
    item_sum = np.bincount(corpus.token, weights=a * y0, minlength=8)
    x, y, ay = np.empty_like(y0), np.empty_like(y0), a * y0
    score = _iterate(a, ay, item_sum, x, y, token=corpus.token, worker=corpus.worker_index, n_items=8, n_workers=4)
    edges = list(zip(corpus.token.tolist(), corpus.worker.tolist(), strict=True))
    want_x = [sum(a[f] * y0[f] for f, (i2, w2) in enumerate(edges) if i2 == i and w2 != w) for i, w in edges]
    want_y = [sum(a[f] * want_x[f] for f, (i2, w2) in enumerate(edges) if w2 == w and i2 != i) for i, w in edges]
    want_y = np.asarray(want_y) / np.abs(want_y).max()
    np.testing.assert_allclose(x, want_x, atol=1e-12)
    np.testing.assert_allclose(y, want_y, atol=1e-12)
    np.testing.assert_allclose(ay, a * want_y, atol=1e-12)
    want_score = [sum(a[f] * want_y[f] for f, (i2, _) in enumerate(edges) if i2 == i) for i in range(8)]
    np.testing.assert_allclose(score, want_score, atol=1e-12)


def test_non_binary_corpus_raises(seed):
    corpus, _ = random_corpus(np.random.default_rng(seed), n_classes=3)
    with pytest.raises(ValueError, match="found 3"):
        KOS().fit(corpus)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", SETS)
def test_matches_crowdkit(name, tmp_path):
    ck = crowdkit()
    crowd, gold = load_set(name, tmp_path)
    df, classes, _ = frame(crowd)
    with quiet():
        theirs = to_labels(ck.KOS().fit_predict(df), crowd.n_tokens, classes)
    ours = KOS().fit(crowd)
    # Same defaults: 100 rounds from N(1, 1) messages; the decisions converge (0.50 on RTE, for both).
    assert accuracy(ours.labels_, gold) == pytest.approx(accuracy(theirs, gold), abs=0.005)
    if name == "snow2008_rte":
        return
    # From crowd-kit's own initial messages (np.random.seed(0); +1 = its first label met), the same decisions.
    first = int(classes[0])
    a = np.where(crowd.label == first, 1.0, -1.0)
    np.random.seed(0)  # noqa: NPY002 - crowd-kit's legacy global draw, reproduced
    ay = a * np.random.normal(loc=1, scale=1, size=crowd.n_obs)  # noqa: NPY002
    score = np.bincount(crowd.token, weights=ay, minlength=crowd.n_tokens)
    args = {"token": crowd.token, "worker": crowd.worker_index, "n_items": crowd.n_tokens,
            "n_workers": crowd.n_workers}
    x, y = np.empty_like(ay), np.empty_like(ay)
    for _ in range(100):
        score = _iterate(a, ay, score, x, y, **args)
    np.testing.assert_array_equal(np.where(score > 0, first, 1 - first), theirs)
