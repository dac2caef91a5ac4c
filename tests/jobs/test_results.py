"""crowdqa.jobs.results: what the dashboard reads from a finished job, against direct computations on the corpus."""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.jobs.results import JobResult, disputed_documents, document_layers, worker_details
from tests.utils.factories import synthetic_corpus


def _result(corpus: Corpus) -> JobResult:
    r = run_pipeline(corpus, method="mv")
    return JobResult(corpus=corpus, labels=r.labels, clamped=r.clamped, proba=r.proba,
                     worker_confusion=r.worker_confusion)


def test_worker_details_measure_against_the_experts_and_rank_documents(seed):
    corpus = synthetic_corpus(seed=seed, accuracy=0.7)
    result = _result(corpus)
    w = 2
    details = worker_details(result, annotator=corpus.worker_ids[w], limit=100)
    ref = corpus.labels_of(corpus.n_workers - 1)  # the one expert is the union reference
    mine = corpus.labels_of(w)
    both = (ref >= 0) & (mine >= 0)
    expected = np.zeros((2, 2), dtype=np.int64)
    np.add.at(expected, (ref[both], mine[both]), 1)
    np.testing.assert_array_equal(details.measured, expected)
    np.testing.assert_array_equal(details.estimated, result.worker_confusion[w])
    rates = [d["rate"] for d in details.worst]
    assert rates == sorted(rates, reverse=True) and details.documents == len(details.worst)
    for d in details.worst:
        toks = np.flatnonzero((corpus.token_doc == d["index"]) & (mine >= 0))
        assert d["tokens"] == toks.size and d["disagree"] == int((mine[toks] != result.labels[toks]).sum())
    expert = worker_details(result, annotator=corpus.worker_ids[-1])
    assert expert.role == "expert" and expert.measured is None  # no other expert to measure it against
    with pytest.raises(KeyError):
        worker_details(result, annotator="nobody")


def test_document_layers_give_every_annotators_spans_and_the_posteriors(seed):
    corpus = synthetic_corpus(seed=seed, n_docs=4, doc_len=6)
    result = _result(corpus)
    layers = document_layers(result, 1)
    s, e = int(corpus.doc_start[1]), int(corpus.doc_start[2])
    on_doc = np.unique(corpus.worker[corpus.obs_doc == 1])
    assert [a for a, _, _ in layers.annotators] == sorted(
        (corpus.worker_ids[w] for w in on_doc), key=lambda a: (not a.startswith("expert"), a))
    for annotator, _, spans in layers.annotators:
        inside = corpus.labels_of(corpus.worker_ids.index(annotator))[s:e] > 0
        # Characters of the tokens inside a span are exactly the characters the spans cover.
        covered = {i for a, b, _ in spans for i in range(a, b) if not layers.text[i].isspace()}
        tokens = {i for t in np.flatnonzero(inside) for i in range(corpus.token_start[s + t], corpus.token_end[s + t])}
        assert covered == tokens and all(label == "Entity" for _, _, label in spans)
    assert [p for _, _, p in layers.tokens] == result.proba[s:e].tolist()
    with pytest.raises(IndexError):
        document_layers(result, 4)


def test_disputed_documents_rank_by_entropy_or_disagreement(seed):
    corpus = synthetic_corpus(seed=seed, accuracy=0.6)
    result = _result(corpus)
    by_entropy = disputed_documents(result, by="entropy", limit=corpus.n_docs)
    assert sorted(d["index"] for d in by_entropy) == list(range(corpus.n_docs))
    values = [d["entropy"] for d in by_entropy]
    assert values == sorted(values, reverse=True)
    values = [d["disagreement"] for d in disputed_documents(result, by="disagreement", limit=5)]
    assert values == sorted(values, reverse=True) and len(values) == 5
    with pytest.raises(ValueError):
        disputed_documents(result, by="size")
