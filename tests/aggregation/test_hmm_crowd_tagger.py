"""HMMCrowdTagger: HMM-Crowd with a tagger in the loop (reductions, cross-fitting, pre-annotation)."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from crowdqa.aggregation._base import ConvergenceWarning
from crowdqa.aggregation._sequences import doc_first, token_text
from crowdqa.aggregation._tagger import cross_fit_proba, tagger_features, tagger_votes
from crowdqa.aggregation.batches import fitted_state, restore_state
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.hmm_crowd import HMMCrowd
from crowdqa.aggregation.hmm_crowd_tagger import HMMCrowdTagger

NAMES = ("Smith", "Jones", "Paris", "Berlin", "Acme")
FILLER = ("the", "said", "in", "a", "on", "was", "of")


def ner_corpus(rng: np.random.Generator, *, n_docs: int = 40, n_workers: int = 4, accuracy: float = 0.75,
               unlabelled: int = 0) -> tuple[Corpus, np.ndarray]:
    """Sentences of filler words with one or two capitalised names (``B-X``); annotators who miss or mislabel.

    The last ``unlabelled`` documents have no annotation. Returns the corpus and the true labels.
    """
    texts, starts, ends, truth, lengths = [], [], [], [], []
    for _ in range(n_docs):
        words = list(rng.choice(FILLER, rng.integers(4, 9)))
        tags = [0] * len(words)
        for _ in range(rng.integers(1, 3)):
            i = int(rng.integers(0, len(words)))
            words.insert(i, str(rng.choice(NAMES)))
            tags.insert(i, 1)
        pos = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        texts.append(" ".join(words))
        starts += pos.tolist()
        ends += (pos + np.array([len(w) for w in words])).tolist()
        truth += tags
        lengths.append(len(words))
    truth = np.array(truth)
    doc_start = np.concatenate([[0], np.cumsum(lengths)])
    tok, wrk, lab = [], [], []
    for d in range(n_docs - unlabelled):
        t = np.arange(doc_start[d], doc_start[d + 1])
        for w in range(n_workers):
            noisy = np.where(rng.random(t.size) < accuracy, truth[t], rng.integers(0, 3, t.size))
            tok += t.tolist()
            wrk += [w] * t.size
            lab += noisy.tolist()
    corpus = Corpus.from_arrays(token=tok, worker=wrk, label=lab, doc_lengths=lengths, token_start=starts,
                                token_end=ends, doc_ids=[f"d{d}" for d in range(n_docs)], texts=texts,
                                worker_ids=[f"w{w}" for w in range(n_workers)], worker_roles=["crowd"] * n_workers,
                                class_names=["O", "B-X", "I-X"])
    return corpus, truth


def _fit(est, corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(corpus)


@pytest.mark.parametrize("tagger_vote", ["hard", "soft"])
@pytest.mark.parametrize("worker_model", ["two-param", "full"])
def test_a_uniform_tagger_confusion_gives_plain_hmm_crowd(seed, worker_model, tagger_vote):
    """Reduction (oracle: HMMCrowd itself): with the tagger's confusion fixed uniform its vote is the same factor in
    every state, so labels and posteriors are HMM-Crowd's (to rounding), and the labels never change in a round."""
    corpus, _ = ner_corpus(np.random.default_rng(seed))
    plain = HMMCrowd(worker_model=worker_model).fit(corpus)
    tagged = _fit(HMMCrowdTagger(worker_model=worker_model, tagger_confusion="uniform", tagger_vote=tagger_vote,
                                 n_folds=2), corpus)
    np.testing.assert_array_equal(tagged.labels_, plain.labels_)
    np.testing.assert_allclose(tagged.proba_, plain.proba_, atol=1e-10)
    np.testing.assert_allclose(tagged.worker_confusion_, plain.worker_confusion_, atol=1e-10)
    assert tagged.round_changes_ == [0.0] and tagged.rounds_converged_
    np.testing.assert_allclose(tagged.tagger_confusion_, 1 / 3)


def test_the_learned_tagger_is_a_better_than_chance_annotator(seed):
    """The tagger's learned confusion puts most of each true class's mass on that class (its diagonal beats the
    uniform 1/3), and with three noisy annotators the fit is at least as accurate as HMM-Crowd's on the truth."""
    corpus, truth = ner_corpus(np.random.default_rng(seed), n_workers=3, accuracy=0.7, n_docs=60)
    plain = HMMCrowd().fit(corpus)
    tagged = _fit(HMMCrowdTagger(n_folds=3), corpus)
    assert (np.diag(tagged.tagger_confusion_)[:2] > 0.5).all()
    assert (tagged.labels_ == truth).mean() >= (plain.labels_ == truth).mean() - 0.01


def test_hard_votes_by_brute_force(seed):
    """``tagger_votes`` (oracle: a loop over the rows, written out): ``"hard"`` is one-hot at the most probable class,
    a tie goes to the lowest class index, a row of zeros (no vote) stays zeros; ``"soft"`` returns the
    probabilities as they are."""
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(4), 30)
    proba[3] = [0.4, 0.1, 0.4, 0.1]  # a tie: class 0
    proba[7] = [0.1, 0.3, 0.3, 0.3]  # a tie: class 1
    proba[11] = 0.0  # not voted on
    expected = np.zeros_like(proba)
    for i, row in enumerate(proba):
        if row.sum() > 0:
            best = max(range(4), key=lambda k: (row[k], -k))
            expected[i, best] = 1.0
    np.testing.assert_array_equal(tagger_votes(proba, kind="hard"), expected)
    assert tagger_votes(proba, kind="soft") is proba


def test_hard_votes_enter_the_fit_as_an_annotator_labels(seed):
    """With ``tagger_vote="hard"`` the fit's tagger confusion is counted from one-hot answers (oracle: the
    posteriors times the argmax of the recorded probabilities, the M-step's counts by hand, normalised): each row of
    ``tagger_confusion_`` is then the share of each answer among the tokens of that true class."""
    corpus, _ = ner_corpus(np.random.default_rng(seed), n_docs=60)
    model = _fit(HMMCrowdTagger(n_folds=2, tagger_vote="hard", max_rounds=1, round_tol=1.0), corpus)
    hard = np.eye(3)[model.tagger_proba_.argmax(axis=1)]
    soft = _fit(HMMCrowdTagger(n_folds=2, tagger_vote="soft", max_rounds=1, round_tol=1.0), corpus)
    # the first round's tagger is trained on round 0 (plain HMM-Crowd) in both: the same probabilities
    np.testing.assert_allclose(soft.tagger_proba_, model.tagger_proba_)
    # the M-step before the final E-step read counts post.T @ hard: the learned rows are near those shares
    # (smoothing 0.001 and one E-step apart), while the soft fit's rows are spread by the probabilities
    counts = model.proba_.T @ hard
    np.testing.assert_allclose(model.tagger_confusion_, counts / counts.sum(axis=1, keepdims=True), atol=0.05)
    assert np.trace(model.tagger_confusion_) > np.trace(soft.tagger_confusion_)


def test_cross_fitted_votes_never_read_their_own_documents_labels(seed):
    """Cross-fitting (oracle: invariance). Changing the training labels of one fold's tokens leaves that fold's
    votes exactly as they were (they come from taggers trained on the other folds), and changes other folds'.
    Without cross-fitting (one fold) the same change moves the fold's own votes: the tagger copies them."""
    rng = np.random.default_rng(seed)
    corpus, truth = ner_corpus(rng)
    x, _ = tagger_features(token_text(corpus), seq_first=doc_first(corpus))
    target = np.eye(3)[truth]
    fold = rng.permutation(np.arange(corpus.n_docs) % 3)[corpus.token_doc]
    train = np.ones(corpus.n_tokens, dtype=bool)
    changed = target.copy()
    changed[fold == 0] = np.eye(3)[rng.integers(0, 3, int((fold == 0).sum()))]
    args = dict(token_fold=fold, train=train, c=1.0, max_iter=200)
    before, _ = cross_fit_proba(x, target, n_folds=3, **args)
    after, _ = cross_fit_proba(x, changed, n_folds=3, **args)
    np.testing.assert_array_equal(after[fold == 0], before[fold == 0])
    assert not np.allclose(after[fold != 0], before[fold != 0])
    in_sample, _ = cross_fit_proba(x, target, n_folds=1, **args)
    in_sample_changed, _ = cross_fit_proba(x, changed, n_folds=1, **args)
    assert not np.allclose(in_sample_changed[fold == 0], in_sample[fold == 0])


def test_the_fit_votes_on_every_labelled_token_with_a_held_out_tagger(seed):
    """The fit's own cross-fitting: every labelled token has a vote (a distribution), each from the tagger of the
    folds its document is not in; with ``n_folds=1`` the votes on the training tokens agree more with the
    aggregate than cross-fitted ones (the in-sample tagger copies it: measured here as agreement)."""
    corpus, _ = ner_corpus(np.random.default_rng(seed), n_docs=60)
    crossed = _fit(HMMCrowdTagger(n_folds=3), corpus)
    np.testing.assert_allclose(crossed.tagger_proba_.sum(axis=1), 1.0)
    copied = _fit(HMMCrowdTagger(n_folds=1), corpus)
    agree = [(m.tagger_proba_.argmax(axis=1) == m.labels_).mean() for m in (crossed, copied)]
    assert agree[1] >= agree[0]


def _without_labels(corpus: Corpus) -> Corpus:
    return Corpus.from_arrays(token=[], worker=[], label=[], doc_lengths=corpus.doc_lengths,
                              token_start=corpus.token_start, token_end=corpus.token_end, doc_ids=corpus.doc_ids,
                              texts=corpus.texts, worker_ids=[], worker_roles=[], class_names=corpus.class_names)


def test_pre_annotation_round_trip(seed):
    """Pre-annotation: a model saved as arrays (npz, no pickle) and restored labels documents nobody annotated
    exactly as the fitted model does; on the training texts without their labels it finds the names (oracle: the
    truth of this corpus, where every capitalised word is a name)."""
    corpus, truth = ner_corpus(np.random.default_rng(seed), n_docs=60)
    model = _fit(HMMCrowdTagger(n_folds=3), corpus)
    new = _without_labels(corpus)
    labels = model.predict(new)
    buf = io.BytesIO()
    np.savez(buf, **fitted_state(model))
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as npz:
        restored = restore_state(HMMCrowdTagger(n_folds=3), {k: npz[k] for k in npz.files})
    np.testing.assert_array_equal(restored.predict(new), labels)
    np.testing.assert_allclose(restored.predict_proba(new).sum(axis=1), 1.0)
    assert (labels == truth).mean() > 0.95


def test_documents_nobody_labelled_are_labelled_by_the_tagger(seed):
    """Documents of the fitted corpus without annotations get the tagger's labels (HMM-Crowd gives them the class
    prior's argmax, ``O``): names found there (oracle: the truth)."""
    corpus, truth = ner_corpus(np.random.default_rng(seed), n_docs=60, unlabelled=10)
    model = _fit(HMMCrowdTagger(n_folds=3), corpus)
    rest = np.isin(corpus.token_doc, np.arange(50, 60))
    assert (HMMCrowd().fit(corpus).labels_[rest] == 0).all()
    assert (model.labels_[rest] == truth[rest]).mean() > 0.95
    np.testing.assert_allclose(model.proba_.sum(axis=1), 1.0)


def test_tagger_features_by_hand():
    """The feature matrix of a two-sentence corpus, read by hand: word, lower case, shape, affixes, neighbours
    (a sentence boundary is ``<s>``, never the other sentence's word)."""
    tokens = ["Smith", "said", "Hi", "x1"]
    x, vocab = tagger_features(tokens, seq_first=np.array([True, False, True, False]), min_count=1)
    assert isinstance(x, sp.csr_array) and x.shape == (4, len(vocab))
    row = {vocab[j] for j in x[[0]].indices}
    assert {"w=Smith", "lw=smith", "sh=Xx", "cap", "pre2=sm", "suf3=ith", "lw[+1]=said", "lw[-1]=<s>",
            "lw[+2]=<s>", "bias"} <= row
    assert "lw[+2]=hi" not in row and "digit" in {vocab[j] for j in x[[3]].indices}
    again, _ = tagger_features(tokens[:2], seq_first=np.array([True, False]), vocabulary=vocab)
    # the first sentence alone, on the fitted vocabulary: the same columns (its edges were already <s>)
    assert again.shape == (2, len(vocab)) and (again != x[[0, 1]]).nnz == 0


def test_rounds_stop_when_the_labels_settle_or_warn_at_max_rounds(seed):
    """A round that still changes labels at ``max_rounds`` warns (said in the message); a round that changes no more
    than ``round_tol`` ends the fit."""
    corpus, _ = ner_corpus(np.random.default_rng(seed), accuracy=0.5, n_workers=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = HMMCrowdTagger(max_rounds=1, round_tol=0.0, n_folds=2).fit(corpus)
    rounds = [w for w in caught if "max_rounds=1" in str(w.message)]
    assert len(rounds) == (model.round_changes_[0] > 0) and model.rounds_converged_ == (not rounds)
    fitted = _fit(HMMCrowdTagger(n_folds=2, round_tol=1.0), corpus)
    assert fitted.n_rounds_ == 1 and fitted.rounds_converged_
