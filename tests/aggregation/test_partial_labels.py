"""The sequence models on the tags scheme: partial labelling, tag sets of any size, learned transitions.

Oracles: with every label present, the tags scheme and the span scheme are the same model on the same
numbers (HMM-Crowd and BSC-seq fitted both ways agree exactly on an inside/outside corpus, where BIO adds no
rule); an annotator's previous label found by a binary search equals the full-coverage formula it replaced
(kept here as the naive reference) and a token-by-token loop on a partial corpus; a synthetic crowd whose
chain is known shows the transitions learned.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from benchmarks._tag_crowd import hide_per_token, tag_crowd
from crowdqa.aggregation._sequences import doc_first
from crowdqa.aggregation.bsc_seq import BayesianSequenceCombination, _previous_labels
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.dawid_skene import DawidSkene
from crowdqa.aggregation.hmm_crowd import HMMCrowd
from crowdqa.aggregation.majority_vote import MajorityVote
from tests.aggregation.test_hmm_crowd import random_corpus


def _as_tags(corpus: Corpus) -> Corpus:
    return dataclasses.replace(corpus, tags=True)


@pytest.mark.parametrize("model", [lambda: HMMCrowd(), lambda: HMMCrowd(worker_model="full"),
                                   lambda: HMMCrowd(worker_model="full", wrong_mass="split", max_iter=4),
                                   lambda: BayesianSequenceCombination(annotator_model="cm", max_iter=30)])
def test_all_labels_present_give_the_span_scheme_fit(seed, model):
    """Regression: a corpus whose annotators label whole documents, read as tags, is fitted exactly as the same
    labels under the inside/outside span scheme (the models' arithmetic did not change for complete labels).
    HMM-Crowd's two-parameter model is compared on two classes, where it is the full matrix either way; on more
    it keeps one accuracy under tags, which have no outside class (by design). Left out: BSC-seq's sequential
    annotator model, whose "before the first token" is a value of its own under tags, where a span scheme takes
    ``O``."""
    rng = np.random.default_rng(seed)
    for names in (("O", "P"), ("O", "P", "Q")):
        corpus = random_corpus(rng, n_docs=6, max_len=6, class_names=names, p_label=0.7)
        if model().get_params().get("worker_model") == "two-param" and len(names) > 2:
            continue  # one accuracy under tags, two under a span scheme
        _same_fit(model().fit(corpus), model().fit(_as_tags(corpus)))


def _same_fit(span, tags) -> None:
    np.testing.assert_array_equal(tags.labels_, span.labels_)
    np.testing.assert_allclose(tags.proba_, span.proba_, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tags.log_likelihood_, span.log_likelihood_, rtol=1e-12)


def _previous_by_shift(corpus: Corpus, *, start: int) -> np.ndarray:
    """The full-coverage formula the binary search replaced: token t - 1's rows are token t's shifted back."""
    per_token = np.diff(corpus.token_obs_start)
    has_prev = ~doc_first(corpus)[corpus.token]
    pos = np.where(has_prev, np.arange(corpus.n_obs) - per_token[corpus.token], 0)
    return np.where(has_prev, corpus.label[pos].astype(np.int64), start)


def test_previous_labels_equal_the_shift_and_a_loop(seed):
    """Oracle: on complete labels the old shift formula; on partial labels a loop over the annotations (the
    annotator's label on token t - 1 of the same document, else ``start``)."""
    rng = np.random.default_rng(seed)
    corpus = random_corpus(rng, n_docs=8, max_len=7, class_names=("O", "B-A", "I-A"), p_label=0.6)
    np.testing.assert_array_equal(_previous_labels(corpus, start=0), _previous_by_shift(corpus, start=0))
    partial = hide_per_token(_as_tags(corpus), keep=0.6, seed=seed)
    got = _previous_labels(partial, start=9)
    first = doc_first(partial)
    label_of = {(int(t), int(w)): int(lab) for t, w, lab in zip(partial.token, partial.worker, partial.label,
                                                                 strict=True)}
    expected = [9 if first[t] else label_of.get((int(t) - 1, int(w)), 9) for t, w in zip(partial.token,
                                                                                         partial.worker, strict=True)]
    np.testing.assert_array_equal(got, expected)


def test_partial_labels_are_refused_under_a_span_scheme_and_read_under_tags():
    """An annotator labelling part of a document: the coverage rule names it under io/bio; tags accept it."""
    kwargs = dict(token=[0, 1, 1], worker=[0, 0, 1], label=[1, 0, 1], doc_lengths=[2], token_start=[0, 2],
                  token_end=[1, 3], doc_ids=["d"], texts=["a b"], worker_ids=["u", "v"], worker_roles=["crowd"] * 2,
                  class_names=["O", "X"])
    with pytest.raises(ValueError, match="annotator 'v' labels 1 of the 2 tokens.*span scheme.*tags"):
        Corpus.from_arrays(**kwargs)
    tags = Corpus.from_arrays(**kwargs, tags=True)
    assert tags.scheme == "tags" and not tags.has_outside
    assert tags.doc_annotators.tolist() == [2]


def test_a_tag_named_like_bio_is_not_constrained_under_tags():
    """Under tags, ``I-X`` may start a sequence and follow ``O``: Viterbi is not given the BIO rules. The crowd
    says ``I-X`` at a document start unanimously; under bio no sequence may start with it, under tags it stays."""
    kwargs = dict(token=np.repeat([0, 1], 3), worker=np.tile([0, 1, 2], 2), label=[2, 2, 2, 0, 0, 0],
                  doc_lengths=[2], token_start=[0, 2], token_end=[1, 3], doc_ids=["d"], texts=["a b"],
                  worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["O", "B-X", "I-X"])
    bio, tags = Corpus.from_arrays(**kwargs), Corpus.from_arrays(**kwargs, tags=True)
    for model in (HMMCrowd, BayesianSequenceCombination):
        assert model().fit(tags).labels_.tolist() == [2, 0]
        assert model().fit(bio).labels_[0] != 2


def test_learned_transitions_follow_the_generating_chain():
    """A synthetic crowd of 12 tags labelled token by token (five labels a token): HMM-Crowd's transition
    matrix is close to the chain that drew the sentences (mean absolute error under 0.03 on rows seen 200+
    times), and the sequence model beats majority vote and Dawid-Skene on token accuracy."""
    crowd = tag_crowd(n_docs=300, n_classes=12, seed=3)
    corpus = crowd.corpus.select_role("crowd")
    hmm = HMMCrowd(worker_model="full", max_iter=10).fit(corpus)
    seen = np.bincount(crowd.truth, minlength=12) >= 200
    assert np.abs(hmm.transition_ - crowd.transition)[seen].mean() < 0.03
    acc = {name: float((m.fit(corpus).labels_ == crowd.truth).mean())
           for name, m in (("mv", MajorityVote()), ("ds", DawidSkene()))}
    assert float((hmm.labels_ == crowd.truth).mean()) > max(acc.values())


def test_one_accuracy_m_step_maximises_its_penalised_likelihood(seed):
    """Oracle: scipy's bounded scalar search of ``sum_k c_kk log a + (sum c - sum_k c_kk) log((1 - a) / (K - 1))``
    plus the prior ``s log a + (K - 1) s log(1 - a)`` finds the accuracy of the tag-set M-step (1e-6)."""
    from scipy.optimize import minimize_scalar

    from crowdqa.aggregation.hmm_crowd import _confusion

    rng = np.random.default_rng(seed)
    k, s = 5, 0.3
    counts = rng.uniform(0, 4, size=(2, k, k))
    got = _confusion(counts, smoothing=s, model="one-param")
    np.testing.assert_allclose(got.sum(axis=2), 1.0, rtol=1e-12)
    for w in range(2):
        right, total = np.trace(counts[w]), counts[w].sum()

        def loss(a, right=right, total=total):
            return -((right + s) * np.log(a) + (total - right + (k - 1) * s) * np.log((1 - a) / (k - 1)))

        best = minimize_scalar(loss, bounds=(1e-9, 1 - 1e-9), method="bounded", options={"xatol": 1e-10}).x
        assert np.allclose(np.diag(got[w]), best, atol=1e-6)


@pytest.mark.parametrize("wrong_mass", ["split", "each"])
def test_objective_never_decreases_on_partial_tags(wrong_mass):
    """Property: HMM-Crowd's EM objective is non-decreasing (relative slack 1e-9) on tag corpora whose
    annotators left tokens unlabelled, with the tag set's one-accuracy worker model, over fixed seeds."""
    import warnings

    from crowdqa.aggregation._base import ConvergenceWarning

    for seed in range(12):
        rng = np.random.default_rng(seed)
        corpus = hide_per_token(_as_tags(random_corpus(rng, n_docs=5, max_len=6, class_names=("A", "B", "C", "D"),
                                                       accuracy=0.6)), keep=0.6, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            ll = np.array(HMMCrowd(max_iter=8, tol=0, wrong_mass=wrong_mass).fit(corpus).log_likelihood_)
        assert ll.size == 8 and np.all(np.diff(ll) >= -1e-9 * np.abs(ll[1:])), (seed, ll)


def test_auto_wrong_mass_follows_the_scheme(seed):
    """``wrong_mass="auto"``: the authors' ``each`` (one EM step on more than two classes) under a span scheme,
    ``split`` (five steps) under tags; the fits equal the explicit settings exactly."""
    rng = np.random.default_rng(seed)
    span = random_corpus(rng, n_docs=5, max_len=6, class_names=("O", "B-A", "I-A"), p_label=0.8)
    tags = _as_tags(span)
    for corpus, mass, steps in ((span, "each", 1), (tags, "split", 5)):
        auto, explicit = HMMCrowd().fit(corpus), HMMCrowd(wrong_mass=mass).fit(corpus)
        assert auto.n_iter_ == explicit.n_iter_ == steps
        np.testing.assert_array_equal(auto.proba_, explicit.proba_)
