"""New batches with an earlier fit (crowdqa.aggregation.batches): frozen prediction and warm start.

Oracles: the earlier fit's own posteriors (a frozen model predicting the data it was fitted on
must reproduce them), an E-step and an M-step written as plain loops over the annotations, and
the crowd average computed by hand.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from sklearn.base import clone

from crowdqa.aggregation import DawidSkene
from crowdqa.aggregation.batches import carry_workers, fitted_state, restore_state, supports_batches
from crowdqa.aggregation.corpus import Corpus


def batch(rng: np.random.Generator, workers: list[str], *, n_items: int = 30, n_classes: int = 3) -> Corpus:
    """Items with a hidden truth, labelled by ``workers`` (each right with its own accuracy)."""
    truth = rng.integers(n_classes, size=n_items)
    acc = {w: 0.55 + 0.4 * rng.random() for w in workers}
    token, worker, label = [], [], []
    for i in range(n_items):
        for j, w in enumerate(workers):
            if rng.random() < 0.7:
                token.append(i)
                worker.append(j)
                right = rng.random() < acc[w]
                label.append(int(truth[i]) if right else int(rng.integers(n_classes)))
    return Corpus.from_arrays(token=token, worker=worker, label=label, doc_lengths=np.ones(n_items, dtype=int),
                              token_start=np.zeros(n_items, dtype=int), token_end=np.ones(n_items, dtype=int),
                              doc_ids=[f"i{i}" for i in range(n_items)], texts=["x"] * n_items,
                              worker_ids=workers, worker_roles=["crowd"] * len(workers),
                              class_names=[f"c{k}" for k in range(n_classes)])


def naive_posterior(corpus: Corpus, prior, conf) -> np.ndarray:
    """E-step by loops: q_i(t) proportional to prior_t * prod over (i, w, o) of conf[w, t, o]."""
    q = np.tile(np.asarray(prior, dtype=float), (corpus.n_tokens, 1))
    for t, w, o in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True):
        q[t] *= conf[w][:, o]
    return q / q.sum(axis=1, keepdims=True)


def test_a_frozen_model_reproduces_its_own_fit(seed):
    """Oracle: the fit's own ``proba_`` (its final E-step uses the final parameters)."""
    c = batch(np.random.default_rng(seed), ["a", "b", "c", "d"])
    ds = DawidSkene().fit(c)
    np.testing.assert_allclose(ds.predict_proba(c), ds.proba_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ds.predict(c), ds.labels_)
    np.testing.assert_array_equal(ds.predict(), ds.labels_)


def test_frozen_prediction_matches_annotators_by_id_and_gives_new_ones_the_crowd_average(seed):
    """Oracle: a loop E-step with the carried matrices; the average weighted by the earlier label counts."""
    rng = np.random.default_rng(seed)
    first = batch(rng, ["a", "b", "c"])
    ds = DawidSkene().fit(first)
    second = batch(rng, ["new", "c", "a"])
    counts = np.bincount(first.worker, minlength=3).astype(float)
    average = np.einsum("w,wij->ij", counts / counts.sum(), ds.worker_confusion_)
    conf = [average, ds.worker_confusion_[2], ds.worker_confusion_[0]]
    np.testing.assert_allclose(ds.predict_proba(second), naive_posterior(second, ds.class_prior_, conf), atol=1e-12)


def test_carry_workers_by_hand():
    conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]]])
    out, seen = carry_workers(("a", "b"), conf, np.array([3, 1]), ("b", "c", "a"))
    assert seen.tolist() == [True, False, True]
    np.testing.assert_allclose(out[0], conf[1])
    np.testing.assert_allclose(out[1], [[0.8, 0.2], [0.275, 0.725]])
    np.testing.assert_allclose(out[2], conf[0])
    with pytest.raises(ValueError, match="no annotators to carry"):
        carry_workers((), np.zeros((0, 2, 2)), np.zeros(0), ("a",))


def test_warm_start_is_one_em_step_from_the_carried_parameters(seed):
    """Oracle: loops for the E-step and the smoothed M-step (alpha added to every cell and class)."""
    rng = np.random.default_rng(seed)
    first = batch(rng, ["a", "b", "c"])
    ds = DawidSkene(alpha=0.01).fit(first)
    second = batch(rng, ["c", "z", "a"])
    prior, conf = ds.class_prior_.copy(), carry_workers(ds.worker_ids_, ds.worker_confusion_, ds.worker_labels_,
                                                        second.worker_ids)[0]
    q = naive_posterior(second, prior, conf)
    k, alpha = second.n_classes, 0.01
    counts = np.full((second.n_workers, k, k), alpha)
    for t, w, o in zip(second.token.tolist(), second.worker.tolist(), second.label.tolist(), strict=True):
        counts[w, :, o] += q[t]
    new_conf = counts / counts.sum(axis=2, keepdims=True)
    labelled = np.bincount(second.token, minlength=second.n_tokens) > 0  # the prior learns from these only
    new_prior = (q[labelled].sum(axis=0) + alpha) / (labelled.sum() + k * alpha)
    with pytest.warns(UserWarning):
        ds.set_params(warm_start=True, max_iter=1).fit(second)
    np.testing.assert_allclose(ds.worker_confusion_, new_conf, atol=1e-10)
    np.testing.assert_allclose(ds.class_prior_, new_prior, atol=1e-10)
    assert ds.worker_ids_ == second.worker_ids


def test_warm_start_on_the_same_data_stops_at_once_with_the_same_labels(seed):
    c = batch(np.random.default_rng(seed), ["a", "b", "c", "d", "e"], n_items=60)
    cold = DawidSkene().fit(c)
    warm = clone(cold).set_params(warm_start=True)
    assert "warm_start" in warm.get_params()
    warm.fit(c)  # not fitted yet: a plain fit (scikit-learn's warm_start semantics)
    np.testing.assert_array_equal(warm.labels_, cold.labels_)
    assert warm.n_iter_ == cold.n_iter_
    warm.fit(c)  # now from its own optimum: EM stopped by tol on the likelihood, not at an exact fixed point
    moved = float(np.abs(warm.proba_ - cold.proba_).max())
    assert moved < 0.05
    # A near-tied item may change side in those last steps (seed 1681060048: 0.508 / 0.491 became 0.498 / 0.501);
    # every item whose top two classes are further apart than the posteriors moved keeps its label.
    top2 = np.sort(cold.proba_, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * moved
    assert clear.mean() > 0.9
    np.testing.assert_array_equal(warm.labels_[clear], cold.labels_[clear])
    assert warm.n_iter_ <= 2 < cold.n_iter_


def test_the_state_round_trips_through_npz_without_pickle(seed):
    c = batch(np.random.default_rng(seed), ["a", "b"])
    ds = DawidSkene().fit(c)
    assert supports_batches(ds)
    buf = io.BytesIO()
    np.savez(buf, **fitted_state(ds))
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as npz:
        back = restore_state(DawidSkene(), {k: npz[k] for k in npz.files})
    assert back.worker_ids_ == ds.worker_ids_
    np.testing.assert_array_equal(back.predict_proba(c), ds.proba_)
    with pytest.raises(ValueError, match="the stored model has no worker_confusion_"):
        restore_state(DawidSkene(), {"class_prior_": ds.class_prior_})


def test_a_batch_with_other_classes_is_refused(seed):
    rng = np.random.default_rng(seed)
    ds = DawidSkene().fit(batch(rng, ["a", "b"], n_classes=3))
    with pytest.raises(ValueError, match="the corpus has 2 classes, the fitted model 3"):
        ds.predict_proba(batch(rng, ["a"], n_classes=2))


# ------------------------------------------------------------------ HMM-Crowd
def _sample_crowd() -> Corpus:
    from pathlib import Path

    from crowdqa.ingest import read_corpus

    sample = Path(__file__).resolve().parents[2] / "api" / "sample" / "crowd.jsonl"
    return read_corpus(sample, format="spans-jsonl", role="crowd").corpus


def test_a_frozen_hmm_crowd_reproduces_its_own_fit():
    """Oracle: the fit's own ``proba_`` and Viterbi labels (its final E-step and decoding use the final factors)."""
    from crowdqa.aggregation import HMMCrowd

    c = _sample_crowd()
    for params in ({}, {"decode": "marginal", "shape_emission": "shared", "worker_model": "full"}):
        hmm = HMMCrowd(**params).fit(c)
        np.testing.assert_allclose(hmm.predict_proba(c), hmm.proba_, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(hmm.predict(c), hmm.labels_)


def test_frozen_hmm_crowd_on_a_new_batch_equals_path_enumeration():
    """Oracle: posterior marginals by enumerating all 2^4 label paths of a 4-token document with the carried
    factors (start, transitions, word emissions with log factor 0 for unseen words, shapes, crowd answers)."""
    from itertools import product

    from crowdqa.aggregation import HMMCrowd

    hmm = HMMCrowd(worker_model="full").fit(_sample_crowd())
    seen_word = hmm.vocabulary_[0]
    words = [seen_word, "zzunseen", "Qqunseen", seen_word]
    text = " ".join(words)
    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
    known_worker = hmm.worker_ids_[0]
    answers = [[1, 1, 0, 0], [0, 1, 1, 0]]  # [worker][token]
    new = Corpus.from_arrays(token=[0, 1, 2, 3, 0, 1, 2, 3], worker=[0] * 4 + [1] * 4, label=sum(answers, []),
                             doc_lengths=[4], token_start=starts, token_end=starts + [len(w) for w in words],
                             doc_ids=["n"], texts=[text], worker_ids=[known_worker, "brand-new"],
                             worker_roles=["crowd", "crowd"], class_names=_sample_crowd().class_names)
    counts = hmm.worker_labels_.astype(float)
    average = np.einsum("w,wij->ij", counts / counts.sum(), hmm.worker_confusion_)
    conf = [hmm.worker_confusion_[0], average]
    vocab = {w: i for i, w in enumerate(hmm.vocabulary_)}
    features = [f for f in hmm.features if f != "word"]
    from crowdqa.aggregation._sequences import SHAPE_FEATURES

    def log_factor(t: int, k: int) -> float:
        out = hmm.log_word_emission_[k, vocab[words[t]]] if words[t] in vocab else 0.0
        for j, f in enumerate(features):
            out += hmm.log_shape_emission_[j, k, int(SHAPE_FEATURES[f](words[t]))]
        for w in (0, 1):
            out += np.log(conf[w][k, answers[w][t]])
        return out

    weights = {}
    for path in product(range(2), repeat=4):
        lp = hmm.log_start_[path[0]] + sum(hmm.log_transition_[a, b] for a, b in zip(path, path[1:], strict=False))
        weights[path] = np.exp(lp + sum(log_factor(t, k) for t, k in enumerate(path)))
    total = sum(weights.values())
    marg = np.array([[sum(v for p, v in weights.items() if p[t] == k) for k in range(2)] for t in range(4)]) / total
    np.testing.assert_allclose(hmm.predict_proba(new), marg, rtol=1e-9)
    # One pass gives both (the frozen job path): the same labels and posteriors as the two calls.
    labels, proba = hmm.predict_with_proba(new)
    np.testing.assert_array_equal(labels, hmm.predict(new))
    np.testing.assert_array_equal(proba, hmm.predict_proba(new))


def test_hmm_crowd_warm_start_from_its_own_fit_keeps_the_labels():
    from crowdqa.aggregation import HMMCrowd

    c = _sample_crowd()
    cold = HMMCrowd().fit(c)
    warm = restore_state(HMMCrowd(warm_start=True), fitted_state(cold)).fit(c)
    assert np.mean(warm.labels_ == cold.labels_) > 0.99
    assert warm.worker_ids_ == cold.worker_ids_ and warm.vocabulary_ == cold.vocabulary_
