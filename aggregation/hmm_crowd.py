"""HMM-Crowd: sequence-aware aggregation of crowd token labels (Nguyen et al., ACL 2017)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.special import digamma, gammaln, xlogy

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_blas_thread
from crowdqa.aggregation._bio import bio_rules, repair_bio
from crowdqa.aggregation._forward_backward import (
    _backward,
    _bucket_index,
    _forward,
    _log_emissions,
    _posteriors,
    _viterbi,
    _xi_sum,
)
from crowdqa.aggregation._normalise import normalise
from crowdqa.aggregation._params import ITERATIONS, InstanceOf, Interval, Options
from crowdqa.aggregation._sequences import FEATURES, layout, text_features, token_text
from crowdqa.aggregation._votes import break_ties
from crowdqa.aggregation.confidence import PosteriorChain
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.limits import MAX_ITER

__all__ = ["HMMCrowd"]

_DECODERS = ("viterbi", "marginal")
_WORKER_MODELS = ("two-param", "full")
_SEQUENCES = ("sentence", "document")
_SHAPE_EMISSIONS = ("shared", "bernoulli")
_WRONG_MASS = ("auto", "each", "split")


@dataclass(frozen=True)
class _Design:
    """Arrays derived once from the corpus; the EM loop only reads them."""

    n_classes: int
    crowd: sp.csr_array  # (n_tokens, n_workers * n_classes)
    word: NDArray[np.int64] | None  # (n_tokens,) word id; None when words and shapes share one multinomial
    vocab: sp.csr_array | None  # (n_tokens, n_vocab [+ n_features]) feature counts of each token
    shape: NDArray[np.bool_]  # (n_tokens, n_features) two-valued shape features (n_features = 0 if shared)
    known: NDArray[np.int64] | None  # (n_tokens,)
    active: NDArray[np.bool_]  # (n_tokens,) tokens of documents with any evidence
    seq_first: NDArray[np.bool_]  # (n_tokens,) first token of a sequence (document or sentence)
    first: NDArray[np.int64]  # first token of each active sequence
    pairs: NDArray[np.int64]  # tokens t of active documents whose successor t + 1 is in the same sequence
    buckets: list[tuple[NDArray[np.int64], NDArray[np.int64]]]  # (token index (n_seqs_b, max_len), lengths)
    words: tuple[str, ...]  # the word of each word id (text_features); empty without the "word" feature
    tagger: NDArray[np.float64] | None = None  # (n_tokens, n_classes) soft labels of one more annotator (a tagger)


@dataclass(frozen=True)
class _Params:
    """Log point estimates used by the E-step, and the Dirichlet posteriors behind them."""

    log_start: NDArray[np.float64]  # (n_classes,)
    log_trans: NDArray[np.float64]  # (n_classes, n_classes)
    log_word: NDArray[np.float64] | None  # (n_classes, n_vocab [+ n_features])
    log_shape: NDArray[np.float64]  # (n_features, n_classes, 2)
    confusion: NDArray[np.float64]  # (n_workers, n_classes, n_classes), rows sum to 1
    dirichlets: tuple[NDArray[np.float64], ...]  # concentration of q(start) (unless MAP), q(trans), q(word), q(shape)
    wrong_boost: float = 0.0  # log of the factor by which the E-step weighs every wrong answer (see _log_crowd)
    tagger_confusion: NDArray[np.float64] | None = None  # (n_classes, n_classes) the tagger's full confusion matrix


def _build_design(corpus: Corpus, *, known: NDArray[np.int64] | None, features: tuple[str, ...],
                  lowercase: bool, sequences: str = "document", shape_emission: str = "bernoulli",
                  every_document: bool = False) -> _Design:
    """Word ids, shape indicators, the crowd design matrix and the padded batches of sequences.

    ``sequences="sentence"`` cuts documents at
    :func:`~crowdqa.aggregation._sequences.sentence_starts`; each piece is an independent
    sequence with its own start probability, exactly like a document.
    ``shape_emission="shared"`` puts each token's word and shape features into one bag of
    draws from a single per-state multinomial (``vocab`` holds the counts, ``word`` is None).
    ``every_document`` makes every document active, labelled or not (see
    :func:`~crowdqa.aggregation._sequences.layout`).
    """
    n_tokens, n_classes = corpus.n_tokens, corpus.n_classes
    crowd = sp.csr_array(
        (np.ones(corpus.n_obs), (corpus.token, corpus.worker.astype(np.int64) * n_classes + corpus.label)),
        shape=(n_tokens, corpus.n_workers * n_classes),
    )
    tokens = token_text(corpus) if features or sequences == "sentence" else []
    word, vocab, shape, words = text_features(tokens, n_tokens=n_tokens, features=features, lowercase=lowercase)
    if shape_emission == "shared" and shape.shape[1]:
        # The authors' emission: the shape features are extra "words" of the same
        # multinomial, emitted only when present (util.get_features, HMM.pr_obs).
        extra = sp.csr_array(shape.astype(np.float64))
        vocab = extra if vocab is None else sp.csr_array(sp.hstack([vocab, extra], format="csr"))
        word, shape = None, np.zeros((n_tokens, 0), dtype=bool)
    seqs = layout(corpus, known=known, sequences=sequences, tokens=tokens, every_document=every_document)
    active, seq_first, start = seqs.active, seqs.seq_first, seqs.start
    pairs = np.flatnonzero(active[:-1] & ~seq_first[1:])
    return _Design(n_classes, crowd, word, vocab, shape, known, active, seq_first, start[active[start]], pairs,
                   _bucket_index(start, lengths=seqs.lengths, n_tokens=n_tokens), words)


def _dawid_skene_init(design: _Design, *, n_workers: int, n_rounds: int, diagonal: float,
                      smoothing: float) -> NDArray[np.float64]:
    """Token-level Dawid-Skene posteriors, as the authors' ``dw`` initialiser computes them.

    Vote fractions (each class count plus ``smoothing``), then ``n_rounds`` of EM whose
    confusion counts start from ``diagonal`` on the diagonal and ``(1 - diagonal) / (K - 1)``
    elsewhere (get-another-label's prior) and whose class prior has ``smoothing`` added.

    Returns
    -------
    ndarray of shape (n_tokens, n_classes)
        Zero rows for inactive tokens; known tokens are one-hot.
    """
    k = design.n_classes
    votes = np.asarray(design.crowd @ np.tile(np.eye(k), (n_workers, 1)))  # (n_tokens, n_classes)
    post = _clamp((votes + smoothing) / (votes + smoothing).sum(axis=1, keepdims=True), design)
    off = (1.0 - diagonal) / max(k - 1, 1)
    prior_counts = np.where(np.eye(k, dtype=bool), diagonal, off)
    for _ in range(n_rounds):
        counts = prior_counts + _worker_counts(design.crowd, post, n_workers=n_workers)
        log_conf = np.log(counts / counts.sum(axis=2, keepdims=True))
        prior = smoothing + post.sum(axis=0)
        log_joint = np.log(prior / prior.sum()) + _log_emissions(crowd=design.crowd, log_confusion=log_conf)
        # class-major (_normalise.normalise): scipy's logsumexp along the short last axis is many times slower
        post, _ = normalise(np.ascontiguousarray(log_joint.T))
        post = _clamp(post.T, design)
    return post


def _clamp(post: NDArray[np.float64], design: _Design) -> NDArray[np.float64]:
    """Zero the rows of inactive tokens and make known tokens one-hot (returns a new array)."""
    out = post * design.active[:, None]
    if design.known is not None:
        k = design.known >= 0
        out[k] = np.eye(design.n_classes)[design.known[k]]
    return out


def _worker_counts(crowd: sp.csr_array, post: NDArray[np.float64], *, n_workers: int) -> NDArray[np.float64]:
    """Expected confusion counts ``[w, k, o]``: sum over tokens w labelled o of ``post[token, k]``."""
    k = post.shape[1]
    return np.asarray(crowd.T @ post).reshape(n_workers, k, k).transpose(0, 2, 1)


def _hard_stats(design: _Design, post: NDArray[np.float64], *, n_workers: int) -> dict[str, NDArray[np.float64]]:
    """Counts of the HMM from the argmax labels of ``post`` (worker counts stay soft), as the authors' init."""
    k = design.n_classes
    # Ties to the lowest class index, also where rounding (which depends on the order of
    # documents and annotators) left the tied classes a few ulps apart.
    h = break_ties(post.T, tie_break="lowest")
    hard = np.zeros_like(post)
    hard[np.arange(post.shape[0]), h] = 1.0
    hard *= design.active[:, None]
    trans = np.bincount(h[design.pairs] * k + h[design.pairs + 1], minlength=k * k).reshape(k, k)
    stats = _emission_stats(design, hard)
    stats.update(start=hard[design.first].sum(axis=0), trans=trans.astype(np.float64),
                 worker=_worker_counts(design.crowd, post, n_workers=n_workers))
    if design.tagger is not None:
        stats["tagger"] = post.T @ design.tagger  # soft, as the annotators' counts
    return stats


def _emission_stats(design: _Design, post: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Expected word counts (n_classes, n_vocab) and shape counts (n_features, n_classes, 2)."""
    present = design.shape.T.astype(np.float64) @ post
    total = post.sum(axis=0)
    stats = {"shape": np.stack([total - present, present], axis=2)}
    if design.vocab is not None:
        stats["word"] = np.asarray(design.vocab.T @ post).T
    return stats


def _token_log_lik(params: _Params, design: _Design) -> NDArray[np.float64]:
    """Log factor of everything observed at each token, per state (n_tokens, n_classes)."""
    log_crowd = _log_crowd(params.confusion, wrong_boost=params.wrong_boost)
    if design.word is not None:
        words = dict(word=design.word, log_word_emission=params.log_word)
    else:
        words = dict(bag=design.vocab, log_bag_emission=params.log_word)
    out = _log_emissions(crowd=design.crowd, log_confusion=log_crowd, shape=design.shape,
                         log_shape_emission=params.log_shape, known=design.known, **words)
    if design.tagger is not None and params.tagger_confusion is not None:
        # The tagger is one more annotator whose answer is a distribution q(o): its factor is
        # prod_o C[k, o] ** q(o), a fractional count of each answer (hard labels: one-hot q).
        out += design.tagger @ np.log(params.tagger_confusion).T
    return out


def _posterior_chain(params: _Params, design: _Design) -> PosteriorChain:
    """The final posterior as a chain of factors (:mod:`crowdqa.aggregation.confidence`): the crowd's log-likelihood
    apart from the words, shapes and clamps, so that a temperature can weigh the annotators alone."""
    log_crowd = _log_emissions(crowd=design.crowd, log_confusion=_log_crowd(params.confusion,
                                                                           wrong_boost=params.wrong_boost))
    with np.errstate(invalid="ignore"):  # a clamped -inf minus a finite crowd term stays -inf
        log_rest = _token_log_lik(params, design) - log_crowd
    return PosteriorChain(log_crowd=log_crowd, log_rest=log_rest, log_start=params.log_start,
                          log_trans=params.log_trans, seq_first=design.seq_first.copy())


def _e_step(params: _Params, design: _Design) -> tuple[dict, NDArray[np.float64], float]:
    """Forward-backward over all documents; sufficient statistics, posteriors and log evidence.

    Returns
    -------
    stats : dict
        ``start`` (n_classes,), ``trans`` (n_classes, n_classes), ``word`` (n_classes, n_vocab),
        ``shape`` (n_features, n_classes, 2), ``worker`` (n_workers, n_classes, n_classes).
    post : ndarray of shape (n_tokens, n_classes)
        Posterior marginals; zero rows for inactive tokens.
    log_evidence : float
        ``log p(words, crowd labels)`` under the point estimates.
    """
    k = design.n_classes
    log_b = _token_log_lik(params, design)
    offset = log_b.max(axis=1)
    offset = np.where(np.isfinite(offset), offset, 0.0)
    # Rescale each token by its best state so exp() stays in range; the offsets go back
    # into the log evidence. Far-behind states may underflow to 0, which is harmless.
    with np.errstate(under="ignore"):
        frame_all = np.vstack([np.exp(log_b - offset[:, None]), np.ones((1, k))])
    start, trans = np.exp(params.log_start), np.exp(params.log_trans)
    post = np.zeros_like(log_b)
    xi = np.zeros((k, k))
    log_evidence = float(offset[design.active].sum())
    for idx, lens in design.buckets:
        frame = frame_all[idx]
        alpha, scale = _forward(start, transmat=trans, frame=frame, lengths=lens)
        beta = _backward(trans, frame=frame, scale=scale, lengths=lens)
        gamma = _posteriors(alpha, beta=beta, lengths=lens)
        real = idx < log_b.shape[0]
        post[idx[real]] = gamma[real]
        xi += _xi_sum(alpha, beta=beta, transmat=trans, frame=frame, scale=scale, lengths=lens)
        log_evidence += float(np.log(scale).sum())
    stats = _emission_stats(design, post)
    stats.update(start=post[design.first].sum(axis=0), trans=xi,
                 worker=_worker_counts(design.crowd, post, n_workers=params.confusion.shape[0]))
    if design.tagger is not None:
        stats["tagger"] = post.T @ design.tagger  # [k, o]: expected count of true k where the tagger says o
    return stats, post, log_evidence


def _m_step(stats: dict, *, pseudo_count: float, worker_smoothing: float, worker_model: str,
            wrong_mass: str = "split", start_smoothing: float | None = None, variational: bool = True,
            tagger_model: str = "full") -> _Params:
    """New parameters from expected counts.

    With ``variational`` (the authors' ``m_step_vb``), transition and emission rows are
    the variational-Bayes point estimates ``exp(digamma(count + a)) / exp(digamma(sum(count + a)))``
    of a Dirichlet(a) prior (MacKay 1997); otherwise the smoothed frequencies
    ``(count + a) / sum(count + a)``. The start probabilities are the same estimate, or,
    with ``start_smoothing = s``, ``(count + s) / sum(count + s)`` as in ``m_step_vb`` (a MAP
    estimate under Dirichlet(1 + s)). Confusion matrices are MAP estimates (:func:`_confusion`);
    ``wrong_mass`` sets the E-step factor of a wrong answer (:func:`_log_crowd`). With a tagger's counts
    (``stats["tagger"]``) its confusion matrix is a full MAP matrix (``tagger_model="full"``), or uniform
    (``"uniform"``: a constant factor in every state, so the tagger changes nothing).
    """
    keys = [key for key in ("start", "trans", "word", "shape") if key in stats]
    if start_smoothing is not None:
        keys.remove("start")
    dirichlets = tuple(stats[key] + pseudo_count for key in keys)

    def log_estimate(alpha: NDArray[np.float64]) -> NDArray[np.float64]:
        if variational:
            return digamma(alpha) - digamma(alpha.sum(axis=-1, keepdims=True))
        return np.log(alpha / alpha.sum(axis=-1, keepdims=True))

    logs = dict(zip(keys, (log_estimate(a) for a in dirichlets), strict=True))
    if start_smoothing is not None:
        start = stats["start"] + start_smoothing
        logs["start"] = np.log(start / start.sum())
    confusion = _confusion(stats["worker"], smoothing=worker_smoothing, model=worker_model)
    tagger = None
    if "tagger" in stats:
        k = stats["tagger"].shape[0]
        tagger = (np.full((k, k), 1.0 / k) if tagger_model == "uniform"
                  else _confusion(stats["tagger"][None], smoothing=worker_smoothing, model="full")[0])
    return _Params(
        log_start=logs["start"],
        log_trans=logs["trans"],
        log_word=logs.get("word"),
        log_shape=logs["shape"],
        confusion=confusion,
        dirichlets=dirichlets,
        wrong_boost=_wrong_boost(confusion.shape[1], model=worker_model, wrong_mass=wrong_mass),
        tagger_confusion=tagger,
    )


def _wrong_boost(k: int, *, model: str, wrong_mass: str) -> float:
    """Log factor on every wrong answer in the E-step: ``log(K - 1)`` for the authors' two-parameter model.

    With ``wrong_mass="each"`` every wrong class weighs ``1 - a`` (the authors'
    ``WorkerModel.get_prob`` for ``cv2``), ``K - 1`` times the proper ``(1 - a) / (K - 1)``
    that ``worker_confusion_`` holds; 0 otherwise (and whenever ``K = 2``).
    """
    return float(np.log(k - 1)) if model in ("two-param", "one-param") and wrong_mass == "each" and k > 2 else 0.0


def _log_crowd(confusion: NDArray[np.float64], *, wrong_boost: float) -> NDArray[np.float64]:
    """The factor a worker's answer contributes in the E-step, in log (n_workers, n_classes, n_classes)."""
    out = np.log(confusion)
    if wrong_boost:
        out = out + np.where(np.eye(confusion.shape[1], dtype=bool), 0.0, wrong_boost)
    return out


def _confusion(counts: NDArray[np.float64], *, smoothing: float, model: str) -> NDArray[np.float64]:
    """Confusion matrices (n_workers, n_classes, n_classes) from expected counts ``[w, true, given]``.

    ``"full"``: each row ``(counts + s) / sum``. ``"two-param"`` (the authors' ``cv2``):
    accuracy ``a0 = (c[0, 0] + s) / (sum_o c[0, o] + K s)`` when the truth is ``O`` and
    ``a1 = (sum_{k>0} c[k, k] + s) / (sum_{k>0, o} c[k, o] + 2 s)`` otherwise; a wrong
    answer shares ``1 - a`` equally among the other ``K - 1`` classes. (The authors give
    each wrong class ``1 - a``, which is a distribution only for ``K = 2``, where both agree.)
    ``"one-param"`` (the two-parameter model of a tag set, which has no outside class): one accuracy
    ``a = (sum_k c[k, k] + s) / (sum c + K s)`` whatever the true class.
    """
    n_workers, k, _ = counts.shape
    if model == "full":
        c = counts + smoothing
        return c / c.sum(axis=2, keepdims=True)
    eye = np.eye(k, dtype=bool)
    if model == "one-param":
        a = (np.trace(counts, axis1=1, axis2=2) + smoothing) / (counts.sum(axis=(1, 2)) + k * smoothing)
        return np.where(eye, a[:, None, None], (1.0 - a[:, None, None]) / max(k - 1, 1))
    a0 = (counts[:, 0, 0] + smoothing) / (counts[:, 0].sum(axis=1) + k * smoothing)
    inner = counts[:, 1:]
    a1 = (np.trace(counts, axis1=1, axis2=2) - counts[:, 0, 0] + smoothing) / (inner.sum(axis=(1, 2)) + 2 * smoothing)
    acc = np.concatenate([a0[:, None], np.repeat(a1[:, None], k - 1, axis=1)], axis=1)  # (n_workers, K)
    return np.where(eye, acc[:, :, None], (1.0 - acc[:, :, None]) / max(k - 1, 1))


def _initial_params(stats: dict, *, smoothing: float | None, **opts) -> _Params:
    """Parameters from the initial (hard) counts: the authors' smoothed frequencies, or the VB M-step.

    With ``smoothing = s`` (the authors' ``HMM.learn(smooth=s)`` on the Dawid-Skene labels):
    start, transition and emission rows ``(count + s) / sum(count + s)``; confusion
    matrices as in every M-step. With None: exactly the EM M-step (:func:`_m_step`).
    """
    if smoothing is None:
        return _m_step(stats, **opts)
    return _m_step(stats, **{**opts, "pseudo_count": smoothing, "start_smoothing": smoothing}, variational=False)


def _expected_log_factor(stats: dict, params: _Params) -> float:
    """``E_q[log f(x, h)]``: the expected counts of ``stats`` dotted with the log factors the E-step uses.

    Every factor of the model (start, transitions, words, shapes, crowd answers, the
    latter with the ``wrong_mass`` boost) is a product over sufficient statistics, so its
    expectation under the posterior is linear in the expected counts. Cells with zero
    count contribute 0 even where the log factor is ``-inf``.
    """
    pairs = [(stats["start"], params.log_start), (stats["trans"], params.log_trans),
             (stats["shape"], params.log_shape),
             (stats["worker"], _log_crowd(params.confusion, wrong_boost=params.wrong_boost))]
    if params.log_word is not None:
        pairs.append((stats["word"], params.log_word))
    if params.tagger_confusion is not None:
        pairs.append((stats["tagger"], np.log(params.tagger_confusion)))
    total = 0.0
    for counts, log in pairs:
        total += float(np.multiply(counts, log, out=np.zeros(np.shape(counts)), where=counts > 0).sum())
    return total


def _log_prior_minus_kl(params: _Params, *, pseudo_count: float, worker_smoothing: float, worker_model: str,
                        start_smoothing: float | None = None, tagger_model: str = "full", **_: object) -> float:
    """``log p(C) [+ log p(pi)] - sum KL(q(theta) || Dirichlet(a))`` of the parameters ``params``.

    ``log p(C)`` is the (unnormalised) log prior that makes the confusion M-step a MAP
    estimate (and the start probabilities' when they are MAP too); the KL terms are those
    of the variational Dirichlets of transitions and emissions (MacKay 1997; Beal 2003, ch. 3).
    """
    c = params.confusion
    if worker_model == "full":
        log_prior = xlogy(worker_smoothing, c).sum()
    elif worker_model == "one-param":
        a = c[:, 0, 0]
        log_prior = (xlogy(worker_smoothing, a) + xlogy((c.shape[1] - 1) * worker_smoothing, 1 - a)).sum()
    else:
        k = c.shape[1]
        a0, a1 = c[:, 0, 0], c[:, min(1, k - 1), min(1, k - 1)]
        log_prior = (xlogy(worker_smoothing, a0) + xlogy((k - 1) * worker_smoothing, 1 - a0)).sum()
        if k > 1:
            log_prior += (xlogy(worker_smoothing, a1) + xlogy(worker_smoothing, 1 - a1)).sum()
    if start_smoothing is not None:
        log_prior += start_smoothing * params.log_start.sum()
    if params.tagger_confusion is not None and tagger_model == "full":
        log_prior += xlogy(worker_smoothing, params.tagger_confusion).sum()
    kl = 0.0
    for alpha in params.dirichlets:
        a0 = alpha.sum(axis=-1)
        n = alpha.shape[-1]
        kl += float((gammaln(a0) - gammaln(alpha).sum(axis=-1) - gammaln(n * pseudo_count) + n * gammaln(pseudo_count)
                     + ((alpha - pseudo_count) * (digamma(alpha) - digamma(a0)[..., None])).sum(axis=-1)).sum())
    return float(log_prior - kl)


def _objective(log_evidence: float, stats: dict, *, old: _Params, new: _Params, **opts: object) -> float:
    """The bound EM climbs, ``F(q(h), theta)``, after an E-step under ``old`` and the M-step to ``new``.

    ``F = E_q[log f(x, h; new)] + H(q) + log p(C, pi) - KL(q(theta) || prior)``, where
    ``q`` is the exact posterior of the chain under ``old`` (the E-step), so that its
    entropy is ``H(q) = log Z(old) - E_q[log f(x, h; old)]`` and

    ``F = log Z(old) + E_q[log f(new)] - E_q[log f(old)] + log p(C, pi) - KL``.

    ``F`` never decreases from one iteration to the next, whatever the starting point
    (the authors' smoothed-frequency initial estimates are no Dirichlet posterior): the
    E-step maximises it over ``q`` (giving ``log Z(old) + log p - KL``, Neal & Hinton
    1998), the M-step over the parameters (VB Dirichlets for transitions and emissions,
    MAP for the confusion matrices and MAP start probabilities). With ``wrong_mass="each"``
    the crowd factors are not normalised over answers; the bound (Jensen) needs only
    non-negative factors and an M-step that maximises their expected log, so ``F`` still
    never decreases, though it is then no bound on a likelihood.
    """
    return float(log_evidence + _expected_log_factor(stats, new) - _expected_log_factor(stats, old)
                 + _log_prior_minus_kl(new, **opts))


def _decode_labels(corpus: Corpus, design: _Design, params: _Params, post: NDArray[np.float64], *,
                   decode: str, fill: int) -> NDArray[np.int64]:
    """Labels by Viterbi (BIO transitions forbidden where invalid) or by posterior argmax (then repaired).

    Tokens outside every batch (documents without evidence) get ``fill``.
    """
    bio = corpus.scheme == "bio"
    first = design.seq_first  # a sentence start is treated like a document start
    if decode == "marginal":
        labels = post.argmax(axis=1).astype(np.int64)
    else:
        labels = np.full(corpus.n_tokens, fill, dtype=np.int64)
        log_start, log_trans = params.log_start, params.log_trans
        if bio:
            ok_start, ok_trans, _ = bio_rules(corpus.class_names)
            log_start = np.where(ok_start, log_start, -np.inf)
            log_trans = np.where(ok_trans, log_trans, -np.inf)
        log_b = np.vstack([_token_log_lik(params, design), np.zeros((1, corpus.n_classes))])
        for idx, lens in design.buckets:
            path, _ = _viterbi(log_start, log_transmat=log_trans, log_frame=log_b[idx], lengths=lens)
            real = idx < corpus.n_tokens
            labels[idx[real]] = path[real]
    if bio:  # a no-op after constrained Viterbi unless clamped labels are themselves invalid
        labels = repair_bio(labels, first=first, class_names=corpus.class_names)
    return labels


class HMMCrowd(BaseAggregator):
    r"""HMM-Crowd: an HMM over true labels whose states emit words, word shapes and crowd labels.

    Parameters
    ----------
    decode : {"viterbi", "marginal"}, default="viterbi"
        Viterbi path including the crowd terms (the authors' ``mls``), or the argmax
        of each token's posterior marginal (lowest class on ties; BIO repaired by
        turning an ``I-X`` that cannot follow its predecessor into ``B-X``).
    worker_model : {"two-param", "full"}, default="two-param"
        The paper's two accuracies per annotator (true ``O`` / any other class), or a
        full confusion matrix. Identical for two classes. A tag set (the ``tags`` scheme) has
        no outside class: there the two-parameter model of more than two tags keeps one accuracy
        per annotator for every true tag, a wrong answer shared among the other tags as above.
    max_iter : int or "auto", default="auto"
        EM iterations. ``"auto"`` follows the authors' two schedules: five iterations
        (``niter = 5`` in ``src/seqcrowd/run.py`` of github.com/yinfeiy/PICO-data, the run
        that produced the published PICO ``HMMCrowd`` aggregates and worker confusion
        matrices), except for the one model they ran for a single step: the two-parameter
        worker model with unnormalised wrong answers (``wrong_mass="each"``) on more than
        two classes, their multi-class NER setting (``hmm.py``, ``--emsteps`` defaults to
        1). There the crowd factor of a token is not a distribution over answers (the
        ``K - 1`` wrong classes each weigh ``1 - a``), so the bound EM climbs is not a
        likelihood of the answers, and each further step moves the estimates towards
        what the inflated wrong answers favour; with two classes, ``"split"`` or the
        full confusion model the model is proper and five steps are the PICO schedule.
        :meth:`resolved_max_iter` gives the number for a corpus. EM stops at the authors'
        schedule on principle (the published method, whose outputs the benchmarks compare
        with), not at a number chosen on the expert documents the benchmarks then score.
    tol : float or None, default=None
        ``None`` runs exactly ``max_iter`` iterations, the authors' fixed schedule, with
        no convergence test and no warning (``converged_`` stays False). A float stops
        early when the relative change of the objective is below it, and warns with a
        :class:`ConvergenceWarning` when ``max_iter`` comes first.
    pseudo_count : float, default=0.1
        Dirichlet pseudo-count of the variational estimates of start, transitions and emissions.
    worker_smoothing : float, default=0.001
        Added to each confusion count.
    init_rounds : int, default=5
        Rounds of token-level Dawid-Skene EM for the initialisation.
    init_diagonal : float, default=0.9
        Diagonal of the confusion prior counts of that Dawid-Skene.
    features : tuple of str, default=("word", "capitalised", "digit")
        Token emissions: ``"word"`` (the token text as vocabulary id) and any of
        :data:`~crowdqa.aggregation._sequences.SHAPE_FEATURES`; ``()`` leaves only the crowd labels.
    lowercase : bool, default=False
        Lower-case words before indexing (the authors do not).
    sequences : {"document", "sentence"}, default="document"
        The HMM's sequences: whole documents, or sentences cut by
        :func:`~crowdqa.aggregation._sequences.sentence_starts`
        (each sentence start is then treated exactly like a document start: start
        probabilities, no transition into it, and an ``I-X`` may not begin it). Documents
        by default, on two principles: a corpus whose documents are sentences (CoNLL)
        needs no splitting, and a splitter must never cut inside a sentence, which any
        rule-based one does (``U . S . Treasury`` in raw text). The authors cut PICO
        abstracts into sentences because their forward-backward is unscaled and
        underflows on long sequences (``HMM_crowd.inference`` adds ``1e-300``); the scaled
        recursions here have no length limit, and a sentence boundary inside a document
        is one more ``O -> O`` transition.
    shape_emission : {"bernoulli", "shared"}, default="bernoulli"
        ``"bernoulli"``: each shape feature is its own two-valued per-state distribution.
        ``"shared"``: the authors' emission, shape features as extra entries of the word
        multinomial, counted only when present.
    wrong_mass : {"auto", "each", "split"}, default="auto"
        Two-parameter model only, ``K > 2``: a wrong answer weighs ``1 - a`` whichever wrong
        class it is (``"each"``, the authors' ``WorkerModel.get_prob`` for ``cv2``, used in
        their NER runs), or has probability ``(1 - a) / (K - 1)`` (``"split"``, a
        distribution over the wrong classes that assumes a wrong annotator picks among them
        uniformly). Identical for ``K = 2``. ``"auto"``: the authors' ``"each"`` under a span
        scheme; ``"split"`` under the ``tags`` scheme, whose tag sets are larger than the NER
        schema ``"each"`` was made for and where a wrong answer's weight of ``1 - a`` for each of
        many tags would outweigh a right one.
    start_smoothing : float or None, default=0.001
        Start probabilities ``(count + s) / sum`` as in the authors' ``m_step_vb``; None
        uses the variational estimate with ``pseudo_count`` as for transitions.
    init_smoothing : float or None, default=0.001
        Initial start, transition and emission rows are the frequencies of the
        Dawid-Skene labels plus ``s`` (the authors' ``HMM.learn``); None uses the
        variational M-step with ``pseudo_count``.

    Attributes
    ----------
    labels_ : ndarray of shape (n_tokens,)
    proba_ : ndarray of shape (n_tokens, n_classes)
        Posterior marginals under the final parameters.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        ``[w, k, o]`` = P(annotator w answers o | true class k).
    class_prior_ : ndarray of shape (n_classes,)
        Mean posterior over the tokens of documents with evidence.
    start_ : ndarray of shape (n_classes,)
    transition_ : ndarray of shape (n_classes, n_classes)
        ``[j, k]`` = P(h_{t+1} = k | h_t = j); the variational estimates, rows normalised.
    log_likelihood_ : list of float
        The EM objective per iteration, the bound ``F(q, theta)`` after that iteration's E-
        and M-steps (see ``_objective``); it never decreases, from the first value on.
    n_iter_ : int
    converged_ : bool
        True when the objective's relative change fell below ``tol``.
    worker_ids_ : tuple of str, length n_workers
        The annotators of the fit, by id (what a later batch is matched on).
    worker_labels_ : ndarray of shape (n_workers,)
        Labels each annotator gave in the fit.
    vocabulary_ : tuple of str
        The words of the fit (as the word emission sees them), in the order of ``log_word_emission_``'s columns.
    log_start_, log_transition_ : ndarray of shape (n_classes,), (n_classes, n_classes)
    log_word_emission_ : ndarray of shape (n_classes, n_vocab [+ n_features]) or (0, 0)
    log_shape_emission_ : ndarray of shape (n_features, n_classes, 2)
        The E-step's log factors at the end of the fit (variational estimates, not renormalised), what a
        new batch is predicted with; ``log_word_emission_`` is empty without the ``"word"`` feature.

    Notes
    -----
    For a document with true labels :math:`h_1..h_T`, words :math:`x_t` and the labels
    :math:`l_{jt}` of the annotators :math:`j` who labelled it:
    :math:`p = \pi_{h_1} \prod_t A_{h_{t-1} h_t} \, B_{h_t}(x_t) \prod_j C^{(j)}_{h_t, l_{jt}}`
    (:math:`\pi` = ``start_``, :math:`A` = ``transition_``, :math:`C` = ``worker_confusion_``;
    :math:`B` multiplies per-state multinomials of the word and of each shape feature).
    E-step: scaled forward-backward over all documents at once. M-step: variational
    estimates for :math:`\pi, A, B`, MAP for :math:`C`. Initialisation: token-level
    Dawid-Skene; :math:`\pi, A, B` from its argmax labels, :math:`C` from its posteriors.
    Tokens of documents nobody labelled get ``class_prior_``.

    Fidelity to the authors' code (github.com/thanhan/seqcrowd-acl17 ``hmm.py``, and the
    PICO driver ``src/seqcrowd/run.py`` of github.com/yinfeiy/PICO-data): Dawid-Skene
    initialisation with 5 rounds (``dw_em=5``) and get-another-label's 0.9 diagonal;
    initial start, transition and emission rows the smoothed frequencies (0.001) of its
    labels; confusion matrices from its posteriors; variational M-step (prior 0.1) for
    transitions and emissions, smoothed frequencies for the start; 5 EM iterations (1 in
    their multi-class NER runs, see ``max_iter``);
    Viterbi with the crowd terms; unnormalised wrong answers (``wrong_mass="each"``).
    Departures, each a principle: scaled forward-backward over whole documents (theirs
    is unscaled, per sentence, with a ``1e-300`` floor); the crowd terms enter Viterbi at
    every token (their ``decode`` skips them at a sentence's first token); the backward
    pass starts from 1 (theirs starts from the last token's factor, counting it twice);
    shape features are separate two-valued distributions (``shape_emission``), a proper
    likelihood of each token's shape where the shared multinomial only rewards a present
    feature (identical results on PICO). Under ``"each"``, ``worker_confusion_`` still
    holds the proper matrix; EM stays monotone in the bound it climbs.
    The number of steps is the authors' schedule, not a convergence test, so that a fit
    is the published method's (a rule from principle; it was not tuned on PICO's expert
    documents, which ``benchmarks.pico_study`` scores).
    The two-parameter accuracy for entity classes is ``(sum_k c_kk + s) / (sum c + 2 s)``
    (the authors' differs by O(s) because their counts carry ``s`` in every cell).

    References
    ----------
    .. [1] A. T. Nguyen, B. C. Wallace, J. J. Li, A. Nenkova, M. Lease (2017).
       Aggregating and predicting sequence labels from crowd annotations. ACL 2017,
       299-309. doi:10.18653/v1/P17-1028
    .. [2] L. R. Rabiner (1989). A tutorial on hidden Markov models and selected
       applications in speech recognition. Proc. IEEE 77(2). doi:10.1109/5.18626

    A new batch (:mod:`crowdqa.aggregation.batches`): ``predict(corpus)`` runs one forward-backward
    and the decoder with the fitted factors, and ``warm_start=True`` starts EM from them instead of the
    Dawid-Skene initialisation; annotators are matched by id (a new one gets the crowd average) and words
    by their text, a word the fit never saw emitting the same factor from every state (no evidence).

    Examples
    --------
    >>> import numpy as np
    >>> c = Corpus.from_arrays(token=np.repeat(np.arange(4), 3), worker=np.tile(np.arange(3), 4),
    ...     label=[0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1], doc_lengths=[4], token_start=[0, 2, 4, 6],
    ...     token_end=[1, 3, 5, 7], doc_ids=["d"], texts=["a b c d"], worker_ids=["x", "y", "z"],
    ...     worker_roles=["crowd"] * 3, class_names=["O", "P"])
    >>> HMMCrowd().fit(c).labels_
    array([0, 1, 1, 0])
    """

    #: Fitted attributes a new batch is aggregated with (:mod:`crowdqa.aggregation.batches`).
    _carried_attributes: ClassVar[tuple[str, ...]] = (
        "class_prior_", "worker_confusion_", "worker_ids_", "worker_labels_", "vocabulary_", "log_start_",
        "log_transition_", "log_word_emission_", "log_shape_emission_")
    _parameter_constraints: ClassVar[dict[str, list]] = {
        "warm_start": [InstanceOf((bool,), "True or False")],
        "decode": [Options(_DECODERS)], "worker_model": [Options(_WORKER_MODELS)],
        "sequences": [Options(_SEQUENCES)], "shape_emission": [Options(_SHAPE_EMISSIONS)],
        "wrong_mass": [Options(_WRONG_MASS)],
        "start_smoothing": [Interval(float, 0, None, closed="neither"), None],
        "init_smoothing": [Interval(float, 0, None, closed="neither"), None],
        "max_iter": [ITERATIONS, Options(("auto",))], "init_rounds": [Interval(int, 0, MAX_ITER)],
        "tol": [Interval(float, 0, None), None], "worker_smoothing": [Interval(float, 0, None)],
        "pseudo_count": [Interval(float, 0, None, closed="neither")],
        "init_diagonal": [Interval(float, 0, 1, closed="neither")],
        "features": [FEATURES],
        "lowercase": [InstanceOf((bool,), "True or False")],
    }

    def __init__(self, *, decode: str = "viterbi", worker_model: str = "two-param",
                 max_iter: int | str = "auto",
                 tol: float | None = None, pseudo_count: float = 0.1, worker_smoothing: float = 0.001,
                 init_rounds: int = 5, init_diagonal: float = 0.9,
                 features: tuple[str, ...] = ("word", "capitalised", "digit"), lowercase: bool = False,
                 sequences: str = "document", shape_emission: str = "bernoulli", wrong_mass: str = "auto",
                 start_smoothing: float | None = 0.001, init_smoothing: float | None = 0.001,
                 warm_start: bool = False) -> None:
        self.decode = decode
        self.worker_model = worker_model
        self.max_iter = max_iter
        self.tol = tol
        self.pseudo_count = pseudo_count
        self.worker_smoothing = worker_smoothing
        self.init_rounds = init_rounds
        self.init_diagonal = init_diagonal
        self.features = features
        self.lowercase = lowercase
        self.sequences = sequences
        self.shape_emission = shape_emission
        self.wrong_mass = wrong_mass
        self.start_smoothing = start_smoothing
        self.init_smoothing = init_smoothing
        self.warm_start = warm_start

    def resolved_max_iter(self, n_classes: int, *, tags: bool = False) -> int:
        """The number of EM iterations ``fit`` runs on ``n_classes`` classes (``max_iter="auto"`` resolved), under
        the ``tags`` scheme or a span scheme."""
        if self.max_iter != "auto":
            return int(self.max_iter)
        wrong_mass = self.wrong_mass if self.wrong_mass != "auto" else "split" if tags else "each"
        improper = self.worker_model == "two-param" and wrong_mass == "each" and n_classes > 2
        return 1 if improper else 5

    def _wrong_mass(self, corpus: Corpus) -> str:
        """``wrong_mass`` for ``corpus`` (``"auto"`` resolved by its scheme)."""
        if self.wrong_mass != "auto":
            return self.wrong_mass
        return "split" if corpus.scheme == "tags" else "each"

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None, callback: ProgressCallback | None = None
            ) -> HMMCrowd:
        """Fit the HMM to ``corpus`` by EM and decode the true labels.

        Parameters
        ----------
        corpus : Corpus
        true_labels : ndarray of shape (n_tokens,), optional
            Class of tokens whose true label is known (-1 = unknown); clamped in every E-step.
        callback : callable, optional
            ``callback(iteration, objective)`` after each E-step.

        Returns
        -------
        self
        """
        known = self._start_fit(corpus, true_labels)
        design = self._design(corpus, known)
        monitor = self._monitor(callback)
        max_iter = self.resolved_max_iter(corpus.n_classes, tags=corpus.scheme == "tags")
        params, post, converged = self._run_em(corpus, design, monitor=monitor)
        self._record_run(monitor.history, converged, max_iter=max_iter)
        self._set_fitted(corpus, design, params, post)
        return self

    def _design(self, corpus: Corpus, known: NDArray[np.int64] | None, *, every_document: bool = False) -> _Design:
        """The arrays of ``corpus`` the EM loop reads (:func:`_build_design` with this model's settings)."""
        return _build_design(corpus, known=known, features=tuple(self.features), lowercase=self.lowercase,
                             sequences=self.sequences, shape_emission=self.shape_emission,
                             every_document=every_document)

    def _token_posteriors(self, params: _Params, design: _Design) -> NDArray[np.float64]:
        """Posterior marginals of every token under ``params`` (one forward-backward, :func:`_e_step`)."""
        return _e_step(params, design)[1]

    def _decode(self, corpus: Corpus, design: _Design, params: _Params, post: NDArray[np.float64], *,
                fill: int) -> NDArray[np.int64]:
        """Labels by this model's decoder (:func:`_decode_labels`); tokens outside every sequence get ``fill``."""
        return _decode_labels(corpus, design, params, post, decode=self.decode, fill=fill)

    def _em_options(self, corpus: Corpus) -> dict:
        """The M-step's and objective's settings for ``corpus`` (worker model and wrong mass resolved by its scheme)."""
        return dict(pseudo_count=self.pseudo_count, worker_smoothing=self.worker_smoothing,
                    worker_model=self._worker_model(corpus), wrong_mass=self._wrong_mass(corpus),
                    start_smoothing=self.start_smoothing)

    def _run_em(self, corpus: Corpus, design: _Design, *, monitor, warm: bool = True
                ) -> tuple[_Params, NDArray[np.float64], bool]:
        """EM from the initial estimates (or, with ``warm_start``, the carried ones): parameters, posteriors
        under them, and whether the objective converged. Each iteration's objective goes to ``monitor``."""
        n_workers = corpus.n_workers
        opts = self._em_options(corpus)
        if warm and self.warm_start and self._has_carried_attributes():
            params = self._carried(corpus, design)  # the earlier fit's factors, annotators and words matched
        else:
            init = _dawid_skene_init(design, n_workers=n_workers, n_rounds=self.init_rounds,
                                     diagonal=self.init_diagonal, smoothing=self.worker_smoothing)
            params = _initial_params(_hard_stats(design, init, n_workers=n_workers), smoothing=self.init_smoothing,
                                     **opts)
        converged = False
        for _ in range(self.resolved_max_iter(corpus.n_classes, tags=corpus.scheme == "tags")):
            stats, _, log_evidence = _e_step(params, design)
            new = _m_step(stats, **opts)
            # The objective of this iteration is F(q, new): E-step under the old parameters,
            # then the M-step; reported after both so the first value is already the bound EM
            # climbs, whatever the initial estimates were (see _objective).
            converged = monitor.report(_objective(log_evidence, stats, old=params, new=new, **opts))
            params = new
            if converged:
                break
        # Final E-step so that proba_ matches the final parameters.
        _, post, _ = _e_step(params, design)
        return params, post, converged

    def _set_fitted(self, corpus: Corpus, design: _Design, params: _Params, post: NDArray[np.float64]) -> None:
        """The fitted attributes from the final parameters and posteriors (``post`` is filled in place)."""
        n_workers = corpus.n_workers
        active = design.active
        prior = post[active].sum(axis=0) + (0.0 if active.any() else 1.0)
        self.class_prior_ = prior / prior.sum()
        post[~active] = self.class_prior_
        self.proba_ = post
        self.worker_confusion_ = params.confusion
        self.start_ = np.exp(params.log_start) / np.exp(params.log_start).sum()
        trans = np.exp(params.log_trans)
        self.transition_ = trans / trans.sum(axis=1, keepdims=True)
        self.labels_ = _decode_labels(corpus, design, params, post, decode=self.decode,
                                      fill=int(self.class_prior_.argmax()))
        self.posterior_chain_ = _posterior_chain(params, design)
        self.worker_ids_ = tuple(corpus.worker_ids)
        self.worker_labels_ = np.bincount(corpus.worker, minlength=n_workers)
        self.vocabulary_ = design.words if params.log_word is not None else ()
        self.log_start_, self.log_transition_ = params.log_start, params.log_trans
        self.log_word_emission_ = params.log_word if params.log_word is not None else np.zeros((0, 0))
        self.log_shape_emission_ = params.log_shape

    def _worker_model(self, corpus: Corpus) -> str:
        """``worker_model`` for ``corpus``: a tag set of more than two tags has no outside class, so two parameters
        become one; with two tags the two accuracies are the full 2 x 2 matrix, as under a span scheme."""
        if self.worker_model != "two-param" or corpus.scheme != "tags":
            return self.worker_model
        return "full" if corpus.n_classes == 2 else "one-param"

    def _carried(self, corpus: Corpus, design: _Design) -> _Params:
        """The fitted factors carried to ``corpus`` (whose design is ``design``): annotators by id (a new one gets
        the crowd average), word columns by text (a word the fit never saw gets log factor 0 in every state: no
        evidence)."""
        from crowdqa.aggregation.batches import carry_workers

        if corpus.n_classes != self.class_prior_.shape[0]:
            raise ValueError(f"the corpus has {corpus.n_classes} classes, the fitted model "
                             f"{self.class_prior_.shape[0]}")
        confusion, _ = carry_workers(self.worker_ids_, self.worker_confusion_, self.worker_labels_,
                                     corpus.worker_ids)
        log_word = None
        if self.log_word_emission_.size:
            old = {w: i for i, w in enumerate(self.vocabulary_)}
            where = np.fromiter((old.get(w, -1) for w in design.words), dtype=np.int64, count=len(design.words))
            words = np.where(where >= 0, self.log_word_emission_[:, np.maximum(where, 0)], 0.0)
            # Shape features sharing the word multinomial follow the words (shape_emission="shared").
            log_word = np.hstack([words, self.log_word_emission_[:, len(self.vocabulary_):]])
        return _Params(log_start=self.log_start_, log_trans=self.log_transition_, log_word=log_word,
                       log_shape=self.log_shape_emission_, confusion=confusion, dirichlets=(),
                       wrong_boost=_wrong_boost(corpus.n_classes, model=self._worker_model(corpus),
                                                wrong_mass=self._wrong_mass(corpus)))

    def _predict_batch(self, corpus: Corpus) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Labels and posteriors of ``corpus`` under the fitted factors: one forward-backward and the decoder."""
        design = _build_design(corpus, known=None, features=tuple(self.features), lowercase=self.lowercase,
                               sequences=self.sequences, shape_emission=self.shape_emission)
        params = self._carried(corpus, design)
        _, post, _ = _e_step(params, design)
        post[~design.active] = self.class_prior_
        labels = _decode_labels(corpus, design, params, post, decode=self.decode,
                                fill=int(self.class_prior_.argmax()))
        return labels, post
