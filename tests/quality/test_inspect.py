"""crowdqa.quality.inspect against brute-force loops over every annotation (the oracle), on random corpora."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.aggregation.corpus import MISSING
from crowdqa.quality.inspect import (
    document_disagreement,
    document_entropy,
    measured_confusion,
    worker_document_disagreement,
)
from tests.utils.factories import synthetic_corpus


def _corpus(seed: int):
    return synthetic_corpus(n_docs=7, doc_len=5, n_crowd=4, n_expert=1, crowd_per_doc=2, accuracy=0.7, seed=seed)


def _random_labels(corpus, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, corpus.n_classes, size=corpus.n_tokens)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_measured_confusion_counts_every_annotation(seed):
    corpus = _corpus(seed)
    ref = _random_labels(corpus, seed + 1)
    ref[np.random.default_rng(seed).random(corpus.n_tokens) < 0.3] = MISSING
    expected = np.zeros((corpus.n_workers, corpus.n_classes, corpus.n_classes), dtype=np.int64)
    for t, w, o in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        if ref[t] != MISSING:
            expected[w, ref[t], o] += 1
    np.testing.assert_array_equal(measured_confusion(corpus, ref), expected)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_worker_document_disagreement_matches_a_loop(seed):
    corpus = _corpus(seed)
    labels = _random_labels(corpus, seed + 2)
    tokens, differ = {}, {}
    for t, w, o in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        d = int(corpus.token_doc[t])
        tokens[w, d] = tokens.get((w, d), 0) + 1
        differ[w, d] = differ.get((w, d), 0) + int(o != labels[t])
    got = worker_document_disagreement(corpus, labels)
    pairs = list(zip(got.worker.tolist(), got.doc.tolist(), strict=True))
    assert pairs == sorted(tokens)
    assert got.tokens.tolist() == [tokens[p] for p in pairs]
    assert got.disagree.tolist() == [differ[p] for p in pairs]
    assert got.rate.tolist() == pytest.approx([differ[p] / tokens[p] for p in pairs])


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_document_entropy_and_disagreement_match_loops(seed):
    corpus = _corpus(seed)
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(corpus.n_classes), size=corpus.n_tokens)
    proba[0] = [1.0, 0.0]  # a certain token: 0 log 0 counts as 0
    labels = _random_labels(corpus, seed + 3)
    crowd = corpus.workers_with_role("crowd")
    entropy, disagreement = document_entropy(corpus, proba), document_disagreement(corpus, labels, workers=crowd)
    for d in range(corpus.n_docs):
        toks = range(int(corpus.doc_start[d]), int(corpus.doc_start[d + 1]))
        h = [-sum(p * math.log(p) for p in proba[t] if p > 0) for t in toks]
        assert entropy[d] == pytest.approx(sum(h) / len(h))
        seen = [(o != labels[t]) for t, w, o in zip(corpus.token, corpus.worker, corpus.label, strict=True)
                if corpus.token_doc[t] == d and w in crowd]
        if seen:
            assert disagreement[d] == pytest.approx(sum(seen) / len(seen))
        else:
            assert math.isnan(disagreement[d])


def test_inputs_of_the_wrong_length_are_refused():
    corpus = _corpus(0)
    with pytest.raises(ValueError, match="one per token"):
        measured_confusion(corpus, np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="classes must be <"):
        measured_confusion(corpus, np.full(corpus.n_tokens, 5))
