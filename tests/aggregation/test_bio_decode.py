"""crowdqa.aggregation._bio: BIO decoding of token-level posteriors (Dawid-Skene, IBCC) and BIO repair, by oracles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from benchmarks.ner_crowd import ner_crowd
from crowdqa.aggregation._bio import bio_decode, bio_rules, repair_bio
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.dawid_skene import DawidSkene
from crowdqa.aggregation.ibcc import IBCC

BIO = ("O", "B-A", "I-A", "B-B", "I-B")


def _corpus(lengths: list[int], class_names=BIO) -> Corpus:
    n = sum(lengths)
    starts = np.concatenate([np.arange(k) * 2 for k in lengths])
    return Corpus.from_arrays(token=np.arange(n), worker=np.zeros(n), label=np.zeros(n), doc_lengths=lengths,
                              token_start=starts, token_end=starts + 1, doc_ids=[f"d{i}" for i in range(len(lengths))],
                              texts=[" ".join("x" * k) for k in lengths], worker_ids=["u"], worker_roles=["crowd"],
                              class_names=class_names)


def _valid(labels: np.ndarray, corpus: Corpus) -> bool:
    ok_start, ok_trans, _ = bio_rules(corpus.class_names)
    first = np.zeros(corpus.n_tokens, dtype=bool)
    first[corpus.doc_start[:-1]] = True
    prev = np.concatenate([[0], labels[:-1]])
    return bool(np.all(np.where(first, ok_start[labels], ok_trans[prev, labels])))


@pytest.mark.parametrize("seed", range(20))
def test_bio_decode_is_the_best_valid_sequence_by_enumeration(seed):
    """Oracle: every labelling of each tiny document enumerated; the valid one of highest product wins."""
    rng = np.random.default_rng(seed)
    lengths = [int(x) for x in rng.integers(1, 5, 3)]
    corpus = _corpus(lengths)
    proba = rng.dirichlet(np.full(len(BIO), 0.5), corpus.n_tokens)
    got = bio_decode(proba, corpus)
    for d, (a, b) in enumerate(zip(corpus.doc_start[:-1], corpus.doc_start[1:], strict=True)):
        sub = _corpus([lengths[d]])
        best = max((p for p in itertools.product(range(len(BIO)), repeat=b - a) if _valid(np.array(p), sub)),
                   key=lambda p: np.prod(proba[np.arange(a, b), p]))
        assert got[a:b].tolist() == list(best)


def test_bio_decode_keeps_valid_argmax_and_ignores_io_schemes():
    corpus = _corpus([3])
    proba = np.array([[.1, .8, .05, .05, 0], [.1, 0, .7, .2, 0], [.9, 0, .1, 0, 0]])
    assert bio_decode(proba, corpus).tolist() == [1, 2, 0]
    io = _corpus([2], class_names=("O", "A", "B"))
    assert bio_decode(np.array([[.2, .5, .3], [.1, .1, .8]]), io).tolist() == [1, 2]


@pytest.mark.parametrize("model", [DawidSkene, IBCC])
def test_token_level_labels_are_the_bio_decoding_of_proba(model):
    """On a crowd whose token argmax breaks BIO, the fitted labels are the BIO decoding of ``proba_``."""
    corpus, truth, _ = ner_crowd(n_sentences=300, accuracy=(0.2, 0.6), per_sentence=3, seed=1)
    fitted = model().fit(corpus)
    assert not _valid(fitted.proba_.argmax(axis=1), corpus)  # the case the decoding is for
    assert _valid(fitted.labels_, corpus)
    assert np.array_equal(fitted.labels_, bio_decode(fitted.proba_, corpus))


def _conlleval_spans(labels: list[int], class_names: tuple[str, ...]) -> set[tuple[int, int, str]]:
    """(start, end, type) of each span as conlleval reads it: a ``B-X``, or an ``I-X`` that cannot continue the
    span before it, starts one; an ``I-X`` of the same type continues it."""
    spans, start, kind = set(), None, None
    for i, name in enumerate([class_names[k] for k in labels] + ["O"]):
        prefix, this = name[:2], name[2:]
        if start is not None and not (prefix == "I-" and this == kind):
            spans.add((start, i, kind))
            start = None
        if prefix == "B-" or (prefix == "I-" and start is None):
            start, kind = i, this
    return spans


@pytest.mark.parametrize("class_names", [BIO, ("O", "B-A", "I-A", "I-B")])
@pytest.mark.parametrize("seed", range(10))
def test_repair_bio_keeps_the_spans_conlleval_reads_and_makes_them_valid(seed, class_names):
    """Oracle: conlleval's reading of the labels, per document, and the BIO rules' validity check."""
    rng = np.random.default_rng(seed)
    lengths = [int(x) for x in rng.integers(1, 7, 4)]
    corpus = _corpus(lengths, class_names=class_names)
    labels = rng.integers(0, len(class_names), corpus.n_tokens)
    first = np.zeros(corpus.n_tokens, dtype=bool)
    first[corpus.doc_start[:-1]] = True
    got = repair_bio(labels, first=first, class_names=class_names)
    assert _valid(got, corpus)
    for a, b in zip(corpus.doc_start[:-1], corpus.doc_start[1:], strict=True):
        assert _conlleval_spans(got[a:b].tolist(), class_names) == _conlleval_spans(labels[a:b].tolist(), class_names)
    unknown = labels.copy()
    unknown[::3] = -1  # unknown labels are kept, and a label after one is left as is
    kept = repair_bio(unknown, first=first, class_names=class_names)
    assert np.array_equal(kept[::3], unknown[::3])
    after = np.flatnonzero(unknown[:-1] == -1) + 1
    after = after[~first[after]]
    assert np.array_equal(kept[after], unknown[after])
