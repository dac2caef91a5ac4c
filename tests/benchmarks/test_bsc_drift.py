"""benchmarks.bsc_drift: the VB harness behind the diagnosis of BSC-seq's F1 drift (issue 28)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import bsc_drift
from benchmarks.ner_crowd import ner_crowd
from crowdqa.aggregation.bsc_seq import BayesianSequenceCombination
from crowdqa.aggregation.corpus import Corpus


@pytest.mark.parametrize("params", [{}, {"annotator_model": "cm", "features": ()}])
def test_the_harness_without_freezing_gives_the_estimators_labels_after_each_iteration(params):
    """Oracle: the estimator itself, run for exactly n iterations (``tol=None``)."""
    corpus, _, _ = ner_crowd(n_sentences=80, seed=5)
    curve = bsc_drift.vb_curve(corpus, n_iter=4, **params)
    for n in (1, 2, 4):
        fit = BayesianSequenceCombination(max_iter=n, tol=None, **params).fit(corpus)
        np.testing.assert_array_equal(curve[n - 1][0], fit.labels_)


@pytest.mark.parametrize(("part", "keys", "other"), [("text", ("word", "shape"), "worker"),
                                                     ("worker", ("worker",), "trans"),
                                                     ("trans", ("start", "trans"), "word")])
def test_a_frozen_part_keeps_its_posterior_while_the_others_move(part, keys, other):
    corpus, _, _ = ner_crowd(n_sentences=80, seed=5)
    curve = bsc_drift.vb_curve(corpus, n_iter=4, freeze=(part,), freeze_after=1)
    first, last = curve[0][1], curve[-1][1]
    for key in keys:
        np.testing.assert_array_equal(last[key], first[key])
    assert not np.allclose(last[other], first[other])


def test_span_errors_sort_each_predicted_span_by_its_kind():
    """Hand-made case: one exact span, one wrong type, one wrong boundary, one spurious, one gold span missed."""
    names = ("O", "B-LOC", "I-LOC", "B-PER", "I-PER")
    n = 16
    corpus = Corpus.from_arrays(token=[], worker=[], label=[], doc_lengths=[n], token_start=np.arange(n) * 2,
                                token_end=np.arange(n) * 2 + 1, doc_ids=["d"], texts=[" ".join("x" * n)],
                                worker_ids=[], worker_roles=[], class_names=names)
    gold = np.array([1, 2, 0, 3, 0, 1, 2, 0, 0, 0, 0, 3, 4, 0, 0, 0])
    pred = np.array([1, 2, 0, 1, 0, 1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0])
    assert bsc_drift.span_errors(pred, gold, corpus) == {"tp": 1, "type": 1, "boundary": 1, "both": 0,
                                                         "spurious": 1, "missed": 1}
