"""Batched forward-backward and Viterbi against brute-force enumeration of all K^T paths."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from crowdqa.aggregation._forward_backward import (
    _backward,
    _bucket_index,
    _buckets,
    _forward,
    _forward_backward_corpus,
    _log_emissions,
    _posteriors,
    _viterbi,
    _viterbi_corpus,
    _xi_sum,
)


def _random_batch(rng: np.random.Generator, *, n_classes: int, lengths: list[int], zeros: bool = False):
    """A padded batch with positive (or partly zero) frames; rows of transmat need not sum to 1."""
    max_len = max(lengths)
    frame = rng.uniform(0.05, 1.0, size=(len(lengths), max_len, n_classes))
    if zeros:
        frame[rng.random(frame.shape) < 0.2] = 0.0
        frame[..., 0] = np.maximum(frame[..., 0], 0.1)  # keep every token possible
    for d, n in enumerate(lengths):
        frame[d, n:] = rng.uniform(0.05, 1.0, size=(max_len - n, n_classes))  # junk padding must not matter
    start = rng.dirichlet(np.ones(n_classes)) * 0.9
    trans = rng.dirichlet(np.ones(n_classes), size=n_classes) * rng.uniform(0.7, 1.0, size=(n_classes, 1))
    return start, trans, frame, np.asarray(lengths, dtype=np.int64)


def _enumerate(start, trans, frame_doc):
    """Every path of one document: (paths (n_paths, T), weights (n_paths,))."""
    length, k = frame_doc.shape
    paths = np.array(list(itertools.product(range(k), repeat=length)))
    w = start[paths[:, 0]] * frame_doc[0, paths[:, 0]]
    for t in range(1, length):
        w = w * trans[paths[:, t - 1], paths[:, t]] * frame_doc[t, paths[:, t]]
    return paths, w


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("zeros", [False, True])
def test_forward_backward_equals_enumeration(seed, n_classes, zeros):
    """Oracle: brute-force sums over all K^T paths (T <= 6) of each padded document.

    Checks the log-likelihood (sum of log scales), posterior marginals and expected
    transition counts; tolerance 1e-10 relative.
    """
    rng = np.random.default_rng(seed)
    lengths = [1, 6, 3, 5, 2]
    start, trans, frame, lens = _random_batch(rng, n_classes=n_classes, lengths=lengths, zeros=zeros)
    alpha, scale = _forward(start, transmat=trans, frame=frame, lengths=lens)
    beta = _backward(trans, frame=frame, scale=scale, lengths=lens)
    gamma = _posteriors(alpha, beta=beta, lengths=lens)
    xi = _xi_sum(alpha, beta=beta, transmat=trans, frame=frame, scale=scale, lengths=lens)
    xi_expected = np.zeros((n_classes, n_classes))
    for d, n in enumerate(lengths):
        paths, w = _enumerate(start, trans, frame[d, :n])
        z = w.sum()
        np.testing.assert_allclose(np.log(scale[d]).sum(), np.log(z), rtol=1e-10)
        expected = np.stack([np.bincount(paths[:, t], weights=w, minlength=n_classes) / z for t in range(n)])
        np.testing.assert_allclose(gamma[d, :n], expected, rtol=1e-10, atol=1e-13)
        assert np.all(gamma[d, n:] == 0)
        for t in range(n - 1):
            np.add.at(xi_expected, (paths[:, t], paths[:, t + 1]), w / z)
    np.testing.assert_allclose(xi, xi_expected, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_viterbi_equals_enumeration(seed, n_classes):
    """Oracle: the best of all K^T enumerated paths, with forbidden (-inf) transitions and starts."""
    rng = np.random.default_rng(seed)
    lengths = [4, 1, 6, 2, 5]
    start, trans, frame, lens = _random_batch(rng, n_classes=n_classes, lengths=lengths)
    trans[0, n_classes - 1] = 0.0  # a forbidden move
    start[n_classes - 1] = 0.0  # a forbidden start
    with np.errstate(divide="ignore"):
        path, log_prob = _viterbi(np.log(start), log_transmat=np.log(trans), log_frame=np.log(frame), lengths=lens)
    for d, n in enumerate(lengths):
        paths, w = _enumerate(start, trans, frame[d, :n])
        best = int(np.argmax(w))
        np.testing.assert_array_equal(path[d, :n], paths[best])
        np.testing.assert_allclose(log_prob[d], np.log(w[best]), rtol=1e-10)


def test_log_emissions_equals_naive_loop(seed):
    """Oracle: a Python loop over annotations, words and features; missing annotators add nothing."""
    rng = np.random.default_rng(seed)
    n_tokens, n_workers, k, n_vocab, n_feat = 7, 3, 3, 4, 2
    rows = [(t, w, int(rng.integers(k))) for t in range(n_tokens) for w in range(n_workers) if rng.random() < 0.6]
    tok, wrk, lab = (np.array(c) for c in zip(*rows, strict=True))
    crowd = sp.csr_array((np.ones(len(rows)), (tok, wrk * k + lab)), shape=(n_tokens, n_workers * k))
    log_conf = np.log(rng.dirichlet(np.ones(k), size=(n_workers, k)))
    word = rng.integers(0, n_vocab, n_tokens)
    log_word = np.log(rng.dirichlet(np.ones(n_vocab), size=k))
    shape = rng.random((n_tokens, n_feat)) < 0.5
    log_shape = np.log(rng.dirichlet(np.ones(2), size=(n_feat, k)))
    known = np.full(n_tokens, -1)
    known[2] = 1
    out = _log_emissions(crowd=crowd, log_confusion=log_conf, word=word, log_word_emission=log_word,
                         shape=shape, log_shape_emission=log_shape, known=known)
    expected = np.zeros((n_tokens, k))
    for t in range(n_tokens):
        for h in range(k):
            expected[t, h] = log_word[h, word[t]] + sum(log_shape[f, h, int(shape[t, f])] for f in range(n_feat))
            expected[t, h] += sum(log_conf[w, h, lab_] for t_, w, lab_ in rows if t_ == t)
    expected[2, [0, 2]] = -np.inf
    np.testing.assert_allclose(out, expected, rtol=1e-12)


def test_buckets_cover_every_nonempty_document_once(seed):
    """Each document of positive length is in exactly one bucket, and lengths in a bucket are close."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 400, size=300)
    buckets = _buckets(lengths, ratio=1.3, max_cells=5000)
    seen = np.concatenate(buckets)
    np.testing.assert_array_equal(np.sort(seen), np.flatnonzero(lengths > 0))
    for b in buckets:
        assert lengths[b].max() <= 1.3 * lengths[b].min() + 1
        assert b.size == 1 or b.size * lengths[b].max() <= 5000


def test_corpus_kernels_equal_enumeration(seed):
    """Oracle: brute-force enumeration of every path of each sequence of a concatenated corpus (lengths
    0-5, some -inf frames, a forbidden start and move; one sequence with no bucket). Checks the
    posteriors (zero outside every bucket), summed transition counts, log evidence and Viterbi path
    (``fill`` outside every bucket); tolerance 1e-10 relative."""
    rng = np.random.default_rng(seed)
    k = 3
    lengths = np.array([3, 0, 5, 1, 4, 2, 5, 3])
    seq_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    n = int(lengths.sum())
    log_frame = rng.normal(scale=3.0, size=(n, k)) - 200.0  # far from 0: the offsets must be handled
    log_frame[rng.random((n, k)) < 0.15] = -np.inf
    log_frame[:, 0] = np.maximum(log_frame[:, 0], -205.0)  # keep every token possible
    start = rng.dirichlet(np.ones(k))
    start[2] = 0.0
    trans = rng.dirichlet(np.ones(k), size=k) * 0.8
    trans[0, 1] = 0.0
    used = np.ones(lengths.size, dtype=bool)
    used[4] = False  # a sequence left out of every bucket
    buckets = _bucket_index(seq_start, lengths=np.where(used, lengths, 0), n_tokens=n)
    with np.errstate(divide="ignore"):
        post, xi, log_ev = _forward_backward_corpus(log_frame, log_startprob=np.log(start),
                                                    log_transmat=np.log(trans), buckets=buckets)
        path = _viterbi_corpus(log_frame, log_startprob=np.log(start), log_transmat=np.log(trans),
                               buckets=buckets, fill=7)
    xi_expected, log_ev_expected = np.zeros((k, k)), 0.0
    for s, m, u in zip(seq_start, lengths, used, strict=True):
        if m == 0:
            continue
        if not u:
            assert np.all(post[s:s + m] == 0) and np.all(path[s:s + m] == 7)
            continue
        paths, w = _enumerate(start, trans, np.exp(log_frame[s:s + m] + 200.0))
        z = w.sum()
        log_ev_expected += np.log(z) - 200.0 * m
        expected = np.stack([np.bincount(paths[:, t], weights=w, minlength=k) / z for t in range(m)])
        np.testing.assert_allclose(post[s:s + m], expected, rtol=1e-10, atol=1e-13)
        for t in range(m - 1):
            np.add.at(xi_expected, (paths[:, t], paths[:, t + 1]), w / z)
        np.testing.assert_array_equal(path[s:s + m], paths[int(np.argmax(w))])
    np.testing.assert_allclose(xi, xi_expected, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(log_ev, log_ev_expected, rtol=1e-10)


def test_missing_emissions_equal_enumeration(seed):
    """Oracle: enumerate every path of each document with each token's factor written out by hand as the product
    of the confusion entries of the annotators who labelled *that token* (an annotator who left a token unlabelled
    contributes no factor there, not the factor of ``O``). The crowd design matrix of a partly labelled corpus
    goes through :func:`_log_emissions` and :func:`_forward_backward_corpus`; posteriors, transition counts and log
    evidence agree to 1e-10 relative; reading the missing labels as class 0 instead changes the posteriors."""
    rng = np.random.default_rng(seed)
    k, n_workers = 3, 4
    lengths = np.array([4, 2, 5, 3])
    seq_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    n = int(lengths.sum())
    present = rng.random((n, n_workers)) < 0.5
    present[rng.integers(0, n), :] = False  # a token nobody labelled: a frame of ones
    given = rng.integers(0, k, size=(n, n_workers))
    token, worker = np.nonzero(present)
    crowd = sp.csr_array((np.ones(token.size), (token, worker * k + given[token, worker])),
                         shape=(n, n_workers * k))
    confusion = rng.dirichlet(np.ones(k), size=(n_workers, k))
    log_frame = _log_emissions(crowd=crowd, log_confusion=np.log(confusion))
    start, trans = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k), size=k)
    buckets = _bucket_index(seq_start, lengths=lengths, n_tokens=n)
    post, xi, log_ev = _forward_backward_corpus(log_frame, log_startprob=np.log(start), log_transmat=np.log(trans),
                                                buckets=buckets)
    by_hand = np.ones((n, k))
    for i in range(n):
        for w in range(n_workers):
            if present[i, w]:
                by_hand[i] *= confusion[w, :, given[i, w]]
    xi_expected, log_ev_expected = np.zeros((k, k)), 0.0
    for s, m in zip(seq_start, lengths, strict=True):
        paths, w = _enumerate(start, trans, by_hand[s:s + m])
        z = w.sum()
        log_ev_expected += np.log(z)
        expected = np.stack([np.bincount(paths[:, t], weights=w, minlength=k) / z for t in range(m)])
        np.testing.assert_allclose(post[s:s + m], expected, rtol=1e-10, atol=1e-13)
        for t in range(m - 1):
            np.add.at(xi_expected, (paths[:, t], paths[:, t + 1]), w / z)
    np.testing.assert_allclose(xi, xi_expected, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(log_ev, log_ev_expected, rtol=1e-10)
    # Missing read as "O" (class 0): every absent annotator would emit its O column.
    as_outside = np.where(present, given, 0)
    filled = sp.csr_array((np.ones(n * n_workers), (np.repeat(np.arange(n), n_workers),
                                                    np.tile(np.arange(n_workers), n) * k + as_outside.ravel())),
                          shape=(n, n_workers * k))
    post_o, _, _ = _forward_backward_corpus(_log_emissions(crowd=filled, log_confusion=np.log(confusion)),
                                            log_startprob=np.log(start), log_transmat=np.log(trans), buckets=buckets)
    assert not np.allclose(post_o, post)
