"""Forward-backward and Viterbi for a batch of documents at once (pure functions).

The HMM of :class:`crowdqa.aggregation.hmm_crowd.HMMCrowd` runs on every document of a
corpus. Walking one document at a time (hmmlearn) costs a Python loop per document;
here documents of similar length are padded into one ``(n_docs, max_len)`` batch
(:func:`_buckets`), and the recursions loop over *time only*, each step vectorised
over documents and states (Rabiner 1989, eqs. 19-27 and 30-35).

Conventions shared by the functions below:

* a batch is left-aligned: document ``d`` occupies steps ``0 .. lengths[d] - 1``;
  steps at or after ``lengths[d]`` are padding and never influence a result;
* the forward pass is *scaled* (Rabiner 1989, section V.A): ``alpha[:, t]`` sums to 1
  over states and ``scale[:, t]`` is the normaliser, so that
  ``log p(document) = sum_t log scale[:, t]`` (plus the per-token offsets the caller
  removed from the frame likelihoods); padding steps have ``scale = 1``;
* ``frame[d, t, k]`` is the (rescaled) likelihood of everything observed at token
  ``t`` of document ``d`` given hidden state ``k``: non-negative, any positive factor
  per token is allowed because it cancels in the posteriors;
* Viterbi runs in log space; ties go to the lowest state index.

References
----------
.. [1] L. R. Rabiner (1989). A tutorial on hidden Markov models and selected
   applications in speech recognition. Proc. IEEE 77(2), 257-286. doi:10.1109/5.18626
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

__all__ = [
    "_buckets",
    "_bucket_index",
    "_log_emissions",
    "_forward",
    "_backward",
    "_posteriors",
    "_xi_sum",
    "_viterbi",
    "_forward_backward_corpus",
    "_viterbi_corpus",
]


def _buckets(
    lengths: NDArray[np.int64], *, ratio: float = 1.3, max_cells: int = 1 << 20
) -> list[NDArray[np.int64]]:
    """Group documents of similar length so that padding stays small.

    Parameters
    ----------
    lengths : ndarray of shape (n_docs,)
        Token count of each document; documents of length 0 are left out.
    ratio : float, default=1.3
        A bucket holds lengths within a factor ``ratio`` of each other, so at most
        about ``1 - 1/ratio`` of its cells are padding.
    max_cells : int, default=2**20
        Upper bound on ``n_docs_in_bucket * max_len`` (memory per batch).

    Returns
    -------
    list of ndarray of int64
        Document indices of each bucket, sorted by length (stable).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(lengths, kind="stable")
    order = order[lengths[order] > 0]
    if order.size == 0:
        return []
    sorted_len = lengths[order]
    key = np.floor(np.log(sorted_len) / np.log(ratio)).astype(np.int64)
    cuts = np.flatnonzero(np.diff(key)) + 1
    out: list[NDArray[np.int64]] = []
    for group in np.split(order, cuts):  # one iteration per bucket (a few dozen), not per document
        per = max(1, max_cells // int(lengths[group[-1]]))
        out.extend(np.split(group, np.arange(per, group.size, per)))
    return out


def _log_emissions(
    *,
    crowd: sp.csr_array,
    log_confusion: NDArray[np.float64],
    word: NDArray[np.int64] | None = None,
    log_word_emission: NDArray[np.float64] | None = None,
    shape: NDArray[np.bool_] | None = None,
    log_shape_emission: NDArray[np.float64] | None = None,
    bag: sp.csr_array | None = None,
    log_bag_emission: NDArray[np.float64] | None = None,
    known: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """Log-likelihood of everything observed at each token, per hidden state.

    Parameters
    ----------
    crowd : sparse array of shape (n_tokens, n_workers * n_classes)
        ``crowd[i, w * n_classes + o] = 1`` if annotator ``w`` labelled token ``i`` as ``o``.
    log_confusion : ndarray of shape (n_workers, n_classes, n_classes)
        ``log P(annotator w says o | true class k)`` at ``[w, k, o]``.
    word : ndarray of shape (n_tokens,), optional
        Vocabulary id of each token.
    log_word_emission : ndarray of shape (n_classes, n_vocab), optional
    shape : ndarray of shape (n_tokens, n_features) of bool, optional
        Word-shape indicators of each token.
    log_shape_emission : ndarray of shape (n_features, n_classes, 2), optional
        ``log P(feature f has value v | state k)`` at ``[f, k, v]``.
    bag : sparse array of shape (n_tokens, n_features), optional
        Features each token emits as independent draws from one per-state multinomial
        (the authors' emission: the word id and its shape features in one distribution);
        ``bag[i, f]`` is how often token ``i`` draws feature ``f``.
    log_bag_emission : ndarray of shape (n_classes, n_features), optional
        ``log P(feature f | state k)`` at ``[k, f]``.
    known : ndarray of shape (n_tokens,), optional
        Clamped class of each token, -1 = unknown; other states get ``-inf``.

    Returns
    -------
    ndarray of shape (n_tokens, n_classes)
    """
    n_workers, n_classes, _ = log_confusion.shape
    # Row (w * n_classes + o) of the table holds log C[w, :, o]; annotators missing on a
    # token have no entry in ``crowd`` and so contribute nothing (Nguyen et al. 2017, eq. 2).
    table = np.ascontiguousarray(log_confusion.transpose(0, 2, 1).reshape(n_workers * n_classes, n_classes))
    out = np.asarray(crowd @ table, dtype=np.float64)
    if word is not None and log_word_emission is not None:
        out += log_word_emission.T[word]
    if shape is not None and log_shape_emission is not None and shape.shape[1]:
        n_features = shape.shape[1]
        out += log_shape_emission[np.arange(n_features), :, shape.astype(np.intp)].sum(axis=1)
    if bag is not None and log_bag_emission is not None:
        out += np.asarray(bag @ log_bag_emission.T)
    if known is not None:
        clamped = known >= 0
        keep = np.zeros((int(clamped.sum()), n_classes), dtype=bool)
        keep[np.arange(keep.shape[0]), known[clamped]] = True
        out[clamped] = np.where(keep, out[clamped], -np.inf)
    return out


def _forward(
    startprob: NDArray[np.float64],
    *,
    transmat: NDArray[np.float64],
    frame: NDArray[np.float64],
    lengths: NDArray[np.int64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Scaled forward pass over a padded batch.

    Parameters
    ----------
    startprob : ndarray of shape (n_classes,) or (n_docs, n_classes)
        Shared by the documents, or one row per document.
    transmat : ndarray of shape (n_classes, n_classes) or (n_docs, n_classes, n_classes)
        ``transmat[j, k]`` weighs a move from state ``j`` to state ``k``. Rows need
        not sum to 1 (variational-Bayes point estimates do not). One matrix per document lets one batch hold
        copies of a chain at several temperatures (:mod:`crowdqa.aggregation.confidence`).
    frame : ndarray of shape (n_docs, max_len, n_classes)
        Non-negative frame likelihoods.
    lengths : ndarray of shape (n_docs,)

    Returns
    -------
    alpha : ndarray of shape (n_docs, max_len, n_classes)
        Normalised forward variables.
    scale : ndarray of shape (n_docs, max_len)
        Normalisers; 1 on padding.
    """
    n_docs, max_len, n_classes = frame.shape
    alpha = np.empty_like(frame)
    scale = np.ones((n_docs, max_len))
    a = startprob * frame[:, 0]
    for t in range(max_len):
        if t:
            prev = alpha[:, t - 1]
            a = (prev @ transmat if transmat.ndim == 2 else np.matmul(prev[:, None], transmat)[:, 0]) * frame[:, t]
        s = a.sum(axis=1)
        s = np.where((t < lengths) & (s > 0), s, 1.0)
        scale[:, t] = s
        alpha[:, t] = a / s[:, None]
    return alpha, scale


def _backward(
    transmat: NDArray[np.float64],
    *,
    frame: NDArray[np.float64],
    scale: NDArray[np.float64],
    lengths: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Scaled backward pass, using the forward pass's normalisers.

    ``transmat`` is shared, of shape (n_classes, n_classes), or one per document, of shape
    (n_docs, n_classes, n_classes), as in :func:`_forward`.

    Returns
    -------
    beta : ndarray of shape (n_docs, max_len, n_classes)
        ``beta[:, t] = P(obs after t | state at t) / prod_{s > t} scale[:, s]``;
        1 at the last token of each document and on padding.
    """
    n_docs, max_len, n_classes = frame.shape
    beta = np.ones_like(frame)
    for t in range(max_len - 2, -1, -1):
        ahead = frame[:, t + 1] * beta[:, t + 1]
        nb = (ahead @ transmat.T if transmat.ndim == 2 else np.matmul(transmat, ahead[..., None])[..., 0])
        nb = nb / scale[:, t + 1, None]
        beta[:, t] = np.where((t + 1 < lengths)[:, None], nb, 1.0)
    return beta


def _posteriors(
    alpha: NDArray[np.float64], *, beta: NDArray[np.float64], lengths: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Posterior marginals ``gamma[d, t, k] = P(h_t = k | document d)``; 0 on padding.

    Returns
    -------
    ndarray of shape (n_docs, max_len, n_classes)
    """
    valid = np.arange(alpha.shape[1]) < lengths[:, None]
    return alpha * beta * valid[..., None]


def _xi_sum(
    alpha: NDArray[np.float64],
    *,
    beta: NDArray[np.float64],
    transmat: NDArray[np.float64],
    frame: NDArray[np.float64],
    scale: NDArray[np.float64],
    lengths: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Expected transition counts summed over documents and time (Rabiner 1989, eq. 37).

    ``xi[j, k] = sum_{d, t} P(h_t = j, h_{t+1} = k | document d)``.

    Returns
    -------
    ndarray of shape (n_classes, n_classes)
    """
    n_classes = frame.shape[2]
    if frame.shape[1] < 2:
        return np.zeros((n_classes, n_classes))
    valid = (np.arange(1, frame.shape[1]) < lengths[:, None])[..., None]
    left = (alpha[:, :-1] * valid).reshape(-1, n_classes)
    right = (frame[:, 1:] * beta[:, 1:] / scale[:, 1:, None]).reshape(-1, n_classes)
    return transmat * (left.T @ right)


def _viterbi(
    log_startprob: NDArray[np.float64],
    *,
    log_transmat: NDArray[np.float64],
    log_frame: NDArray[np.float64],
    lengths: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Most likely state path of each document of a padded batch (Rabiner 1989, eqs. 30-35).

    ``-inf`` entries forbid a start state, a transition or a state at a token.
    Ties go to the lowest state index.

    Returns
    -------
    path : ndarray of shape (n_docs, max_len), int64
        Padding holds the document's last state.
    log_prob : ndarray of shape (n_docs,)
        Log score of the best path.
    """
    n_docs, max_len, n_classes = log_frame.shape
    back = np.empty((n_docs, max_len, n_classes), dtype=np.int8 if n_classes < 128 else np.int32)
    stay = np.arange(n_classes)
    back[:, 0] = stay
    delta = log_startprob + log_frame[:, 0]
    for t in range(1, max_len):
        cand = delta[:, :, None] + log_transmat  # (n_docs, previous, current)
        best = cand.argmax(axis=1)
        score = np.take_along_axis(cand, best[:, None, :], axis=1)[:, 0] + log_frame[:, t]
        live = (t < lengths)[:, None]
        delta = np.where(live, score, delta)
        back[:, t] = np.where(live, best, stay)  # padding carries the last state through
    path = np.empty((n_docs, max_len), dtype=np.int64)
    path[:, -1] = delta.argmax(axis=1)
    rows = np.arange(n_docs)
    for t in range(max_len - 1, 0, -1):
        path[:, t - 1] = back[rows, t, path[:, t]]
    return path, delta.max(axis=1)


def _bucket_index(
    seq_start: NDArray[np.int64], *, lengths: NDArray[np.int64], n_tokens: int
) -> list[tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """Padded token-index batches of sequences, one per :func:`_buckets` bucket.

    Parameters
    ----------
    seq_start : ndarray of shape (n_seqs,)
        First global token of each sequence.
    lengths : ndarray of shape (n_seqs,)
        Token count of each sequence; sequences of length 0 are left out.
    n_tokens : int
        Total token count; padding cells hold ``n_tokens`` (one past the last token), so
        that an array with one extra row indexed by a batch reads a neutral row there.

    Returns
    -------
    list of (idx, lens)
        ``idx`` : ndarray of shape (n_seqs_in_bucket, max_len), global token of each step;
        ``lens`` : ndarray of shape (n_seqs_in_bucket,).
    """
    seq_start = np.asarray(seq_start, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    out = []
    for seqs in _buckets(lengths):
        lens = lengths[seqs]
        steps = np.arange(lens.max())
        out.append((np.where(steps < lens[:, None], seq_start[seqs, None] + steps, n_tokens), lens))
    return out


def _forward_backward_corpus(
    log_frame: NDArray[np.float64],
    *,
    log_startprob: NDArray[np.float64],
    log_transmat: NDArray[np.float64],
    buckets: list[tuple[NDArray[np.int64], NDArray[np.int64]]],
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Forward-backward over every sequence of a corpus, bucket by bucket.

    Parameters
    ----------
    log_frame : ndarray of shape (n_tokens, n_classes)
        Log factor of everything observed at each token, per state; ``-inf`` forbids a
        state there.
    log_startprob : ndarray of shape (n_classes,)
    log_transmat : ndarray of shape (n_classes, n_classes)
        Log weights; ``-inf`` forbids a start or a move. Rows need not normalise
        (variational-Bayes potentials ``exp E[log A]`` do not).
    buckets : list of (idx, lens)
        From :func:`_bucket_index`; tokens in no bucket are left out.

    Returns
    -------
    post : ndarray of shape (n_tokens, n_classes)
        Posterior marginals; zero rows for tokens in no bucket.
    xi : ndarray of shape (n_classes, n_classes)
        Expected transition counts summed over all sequences (Rabiner 1989, eq. 37).
    log_evidence : float
        ``sum over sequences of log sum over paths of the product of all weights``.
    """
    n_tokens, n_classes = log_frame.shape
    # Each token is rescaled by its best state so that exp() stays in range; the offsets
    # return in the log evidence. States far behind may underflow to 0, which is harmless.
    # Row n_tokens (the padding cells of every batch) is a neutral frame of ones.
    offset = np.zeros(n_tokens + 1)
    offset[:n_tokens] = log_frame[:, 0]
    for k in range(1, n_classes):  # a max over a short last axis is slow in numpy; columns are not
        np.maximum(offset[:n_tokens], log_frame[:, k], out=offset[:n_tokens])
    offset[~np.isfinite(offset)] = 0.0
    frame_all = np.ones((n_tokens + 1, n_classes))
    np.subtract(log_frame, offset[:n_tokens, None], out=frame_all[:n_tokens])
    with np.errstate(under="ignore"):
        np.exp(frame_all[:n_tokens], out=frame_all[:n_tokens])
    start, trans = np.exp(log_startprob), np.exp(log_transmat)
    post = np.zeros((n_tokens + 1, n_classes))  # the last row collects padding and is dropped
    xi = np.zeros((n_classes, n_classes))
    log_evidence = 0.0
    for idx, lens in buckets:
        frame = frame_all[idx]
        alpha, scale = _forward(start, transmat=trans, frame=frame, lengths=lens)
        beta = _backward(trans, frame=frame, scale=scale, lengths=lens)
        post[idx] = _posteriors(alpha, beta=beta, lengths=lens)
        xi += _xi_sum(alpha, beta=beta, transmat=trans, frame=frame, scale=scale, lengths=lens)
        log_evidence += float(np.log(scale).sum() + offset[idx].sum())
    post = post[:n_tokens]
    return post, xi, log_evidence


def _viterbi_corpus(
    log_frame: NDArray[np.float64],
    *,
    log_startprob: NDArray[np.float64],
    log_transmat: NDArray[np.float64],
    buckets: list[tuple[NDArray[np.int64], NDArray[np.int64]]],
    fill: int = 0,
) -> NDArray[np.int64]:
    """Most likely state path of every sequence of a corpus (:func:`_viterbi` per bucket).

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        The path's state at each token; ``fill`` at tokens in no bucket.
    """
    n_tokens, n_classes = log_frame.shape
    padded = np.vstack([log_frame, np.zeros((1, n_classes))])
    out = np.full(n_tokens, fill, dtype=np.int64)
    for idx, lens in buckets:
        path, _ = _viterbi(log_startprob, log_transmat=log_transmat, log_frame=padded[idx], lengths=lens)
        real = idx < n_tokens
        out[idx[real]] = path[real]
    return out
