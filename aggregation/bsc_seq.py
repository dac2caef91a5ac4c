"""Bayesian sequence combination (BSC; Simpson & Gurevych, EMNLP-IJCNLP 2019).

A hidden Markov model over the true labels of each sequence, whose states emit every
annotator's label through that annotator's model (optionally also the token's word and
word shape), with Dirichlet priors on every distribution and mean-field variational
Bayes between the label sequences and the parameters. The sequential annotator model
(``seq``, the paper's BSC-seq) conditions an annotator's label on the true label *and*
on that annotator's own previous label, so it can learn habits such as starting spans
late or stopping them early.

The math lives in pure module-level functions (:func:`_e_step`, :func:`_m_step`,
:func:`_elbo`); :class:`BayesianSequenceCombination` coordinates. The E-step runs the
batched forward-backward kernels of :mod:`crowdqa.aggregation._forward_backward` over every
sequence at once; sufficient statistics are sparse products over the COO annotations.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.special import digamma, gammaln

from crowdqa.aggregation._base import BaseAggregator, ConvergenceWarning, ProgressCallback, one_blas_thread
from crowdqa.aggregation._bio import repair_bio, sequence_rules
from crowdqa.aggregation._forward_backward import (
    _bucket_index,
    _forward_backward_corpus,
    _log_emissions,
    _viterbi_corpus,
)
from crowdqa.aggregation._params import ITERATIONS, InstanceOf, Interval, Options
from crowdqa.aggregation._sequences import FEATURES, doc_first, layout, text_features, token_text
from crowdqa.aggregation.confidence import PosteriorChain
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.dawid_skene import DawidSkene

__all__ = ["BayesianSequenceCombination"]

_ANNOTATOR_MODELS = ("seq", "cm", "acc")
_SEQUENCES = ("document", "sentence")
_DECODERS = ("viterbi", "marginal")
_INITS = ("vote", "ds")
#: Pseudo-count of an annotator label that breaks BIO after that annotator's previous
#: label (``O`` then ``I-X``). The authors' code uses 1e-12 and moves the rest of the cell's prior
#: to the label meant (``B-X``); both measured within noise of this (``benchmarks/README.md``). Not zero,
#: because crowd labels may break BIO (IOB1 data), and their counts must stay possible.
_RARE = 0.1


# ---------------------------------------------------------------------------- design
@dataclass(frozen=True)
class _Design:
    """Arrays derived once from the corpus; the VB loop only reads them."""

    n_classes: int
    n_workers: int
    n_prev: int  # previous-label values of the annotator model (1 unless "seq")
    crowd: sp.csr_array  # (n_tokens, n_workers * n_prev * n_classes) one-hot annotations
    vocab: sp.csr_array | None  # (n_tokens, n_vocab) one-hot word of each token
    shape: NDArray[np.bool_]  # (n_tokens, n_features)
    known: NDArray[np.int64] | None  # (n_tokens,), BIO-repaired
    active: NDArray[np.bool_]  # (n_tokens,) tokens of documents with any evidence
    first: NDArray[np.int64]  # first token of each active sequence
    seq_first: NDArray[np.bool_]  # (n_tokens,) first token of a sequence
    buckets: list[tuple[NDArray[np.int64], NDArray[np.int64]]]
    ok_start: NDArray[np.bool_]  # (n_classes,) classes a sequence may start with
    ok_trans: NDArray[np.bool_]  # (n_classes, n_classes) allowed moves [from, to]
    begin: NDArray[np.int64]  # (n_classes,) the B-X class of each I-X (itself otherwise)
    class_names: tuple[str, ...]


def _previous_labels(corpus: Corpus, *, start: int) -> NDArray[np.int64]:
    """Each annotation's annotator's label on the previous token of the same document.

    Rows are sorted by ``(token, worker)`` and unique (checked at corpus construction), so the
    key ``token * n_workers + worker`` increases strictly along them and one binary search of
    ``(token - 1) * n_workers + worker`` finds every predecessor at once. ``start`` where there
    is none: the document's first token, or a previous token the annotator left unlabelled
    (the ``tags`` scheme's partial labelling: the annotator said nothing there, as before a
    document's first token).

    Returns
    -------
    ndarray of shape (n_obs,)
    """
    n_w = max(corpus.n_workers, 1)
    key = corpus.token * n_w + corpus.worker
    has_prev = ~doc_first(corpus)[corpus.token]
    pos = np.searchsorted(key, key - n_w)  # the row of (token - 1, worker), if it is there
    pos = np.minimum(pos, max(corpus.n_obs - 1, 0))
    found = has_prev & (key[pos] == key - n_w) if corpus.n_obs else has_prev
    return np.where(found, corpus.label[pos].astype(np.int64), start)


def _build_design(corpus: Corpus, *, known: NDArray[np.int64] | None, annotator_model: str,
                  features: tuple[str, ...], lowercase: bool, sequences: str) -> _Design:
    """The one-hot crowd matrix (indexed by previous label for ``seq``), text features and batches."""
    n_tokens, k, n_workers = corpus.n_tokens, corpus.n_classes, corpus.n_workers
    ok_start, ok_trans, begin = sequence_rules(corpus)  # none under the tags scheme
    if annotator_model == "seq":
        # Before a document's first token the annotator has said nothing: "O" when the
        # schema has an outside class (the paper's convention), else an extra value.
        n_prev = k if corpus.has_outside else k + 1
        prev = _previous_labels(corpus, start=0 if corpus.has_outside else k)
    else:
        n_prev, prev = 1, np.zeros(corpus.n_obs, dtype=np.int64)
    column = (corpus.worker.astype(np.int64) * n_prev + prev) * k + corpus.label
    crowd = sp.csr_array((np.ones(corpus.n_obs), (corpus.token, column)), shape=(n_tokens, n_workers * n_prev * k))

    tokens = token_text(corpus) if features or sequences == "sentence" else []
    _, vocab, shape, _ = text_features(tokens, n_tokens=n_tokens, features=features, lowercase=lowercase)
    seqs = layout(corpus, known=known, sequences=sequences, tokens=tokens)
    active, start = seqs.active, seqs.start
    design = _Design(k, n_workers, n_prev, crowd, vocab, shape, None, active, start[active[start]], seqs.seq_first,
                     _bucket_index(start, lengths=seqs.lengths, n_tokens=n_tokens), ok_start, ok_trans, begin,
                     tuple(corpus.class_names))
    if known is None:
        return design
    return dataclasses.replace(design, known=_repaired(known, design))


def _repaired(labels: NDArray[np.int64], design: _Design) -> NDArray[np.int64]:
    """``labels`` made valid BIO (:func:`repair_bio`); unchanged where no class is constrained (tags, IO)."""
    if np.array_equal(design.begin, np.arange(design.n_classes)):
        return labels
    return repair_bio(labels, first=design.seq_first, class_names=design.class_names)


# ---------------------------------------------------------------------------- priors
def _priors(design: _Design, *, annotator_model: str, alpha0: float, epsilon0: float, gamma0: float,
            nu0: float) -> dict[str, NDArray[np.float64]]:
    """Dirichlet concentrations of every prior; the last axis of each array is one simplex.

    ``start`` (K,) and ``trans`` (K, K): ``gamma0`` on allowed moves, 0 (no mass) on the
    moves BIO forbids. ``worker``: ``acc`` (n_workers, 2) = ``[alpha0 + epsilon0, alpha0]``
    for (correct, wrong); ``cm`` and ``seq`` (n_workers, n_prev, K, K) ``[w, p, t, o]``:
    ``alpha0`` everywhere, ``+ epsilon0`` where ``o == t``, and for ``seq`` the labels
    that break BIO after the annotator's previous label ``p`` get ``min(alpha0, 0.1)``
    (a small pseudo-count for disallowed transitions, see ``_RARE``) instead of ``alpha0``.
    ``word`` (K, n_vocab) and ``shape`` (n_features, K, 2): ``nu0``.
    """
    k, n_workers = design.n_classes, design.n_workers
    out = {"start": gamma0 * design.ok_start.astype(np.float64), "trans": gamma0 * design.ok_trans.astype(np.float64)}
    if annotator_model == "acc":
        out["worker"] = np.tile([alpha0 + epsilon0, alpha0], (n_workers, 1))
    else:
        cell = np.full((design.n_prev, k, k), alpha0)
        if annotator_model == "seq":
            ok_after = np.vstack([design.ok_trans, design.ok_start[None, :]])[: design.n_prev]  # [prev, label]
            cell = np.where(ok_after[:, None, :], cell, min(alpha0, _RARE))
        cell = cell + epsilon0 * np.eye(k)
        out["worker"] = np.broadcast_to(cell, (n_workers, *cell.shape)).copy()
    if design.vocab is not None:
        out["word"] = np.full((k, design.vocab.shape[1]), nu0)
    if design.shape.shape[1]:
        out["shape"] = np.full((design.shape.shape[1], k, 2), nu0)
    return out


# ---------------------------------------------------------------------------- VB steps
def _expected_log(alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    """``E[log theta]`` under ``Dirichlet(alpha)`` along the last axis; ``-inf`` where ``alpha == 0``."""
    positive = alpha > 0
    inner = digamma(np.where(positive, alpha, 1.0)) - digamma(alpha.sum(axis=-1, keepdims=True))
    return np.where(positive, inner, -np.inf)


def _log_worker_table(worker: NDArray[np.float64], *, n_classes: int) -> NDArray[np.float64]:
    """``E[log P(label o | true t, previous p)]`` at ``[w * n_prev + p, t, o]`` from the worker posteriors.

    ``acc`` (shape (n_workers, 2)): ``E[log a]`` on the diagonal and
    ``E[log (1 - a)] - log(K - 1)`` elsewhere (a wrong label is uniform over the others).
    """
    el = _expected_log(worker)
    if worker.ndim == 2:
        eye = np.eye(n_classes, dtype=bool)
        return np.where(eye, el[:, 0, None, None], el[:, 1, None, None] - np.log(max(n_classes - 1, 1)))
    return el.reshape(-1, n_classes, n_classes)


def _token_log_lik(post_params: dict[str, NDArray[np.float64]], design: _Design) -> NDArray[np.float64]:
    """``E[log p(everything observed at token i | t_i = k)]``: ndarray of shape (n_tokens, n_classes).

    Clamped tokens get ``-inf`` for every class but the known one.
    """
    elog = {key: _expected_log(post_params[key]) for key in ("word", "shape") if key in post_params}
    return _log_emissions(
        crowd=design.crowd, log_confusion=_log_worker_table(post_params["worker"], n_classes=design.n_classes),
        bag=design.vocab, log_bag_emission=elog.get("word"),
        shape=design.shape, log_shape_emission=elog.get("shape"), known=design.known,
    )


def _e_step(post_params: dict[str, NDArray[np.float64]], design: _Design
            ) -> tuple[dict[str, NDArray[np.float64]], NDArray[np.float64], float]:
    """Optimal ``q(t)`` given the parameter posteriors: forward-backward on ``exp E[log theta]``.

    Returns
    -------
    stats : dict
        Expected counts, shaped like the matching Dirichlet (see :func:`_priors`).
    post : ndarray of shape (n_tokens, n_classes)
        ``q(t_i = k)``; zero rows for tokens of documents without evidence.
    log_z : float
        Log normaliser of ``q(t)`` (``log Z~``), the first term of the ELBO.
    """
    post, xi, log_z = _forward_backward_corpus(
        _token_log_lik(post_params, design), log_startprob=_expected_log(post_params["start"]),
        log_transmat=_expected_log(post_params["trans"]), buckets=design.buckets)
    return _expected_counts(design, post, xi, acc=post_params["worker"].ndim == 2), post, log_z


def _expected_counts(design: _Design, post: NDArray[np.float64], xi: NDArray[np.float64], *, acc: bool
                     ) -> dict[str, NDArray[np.float64]]:
    """Sufficient statistics of every Dirichlet from ``q(t)`` (marginals ``post``, summed pair counts ``xi``).

    Annotator counts ``[w, p, t, o]`` = sum of ``q(t_i = t)`` over the tokens ``i`` that
    annotator ``w`` labelled ``o`` after previous label ``p``: one sparse product over all
    annotations. ``acc`` collapses them to (correct, wrong) totals per annotator.
    """
    k = design.n_classes
    counts = np.asarray(design.crowd.T @ post).reshape(design.n_workers, design.n_prev, k, k).transpose(0, 1, 3, 2)
    if acc:
        correct = np.trace(counts, axis1=2, axis2=3).sum(axis=1)
        counts = np.stack([correct, counts.sum(axis=(1, 2, 3)) - correct], axis=1)
    stats = {"start": post[design.first].sum(axis=0), "trans": xi, "worker": counts}
    if design.vocab is not None:
        stats["word"] = np.asarray(design.vocab.T @ post).T
    if design.shape.shape[1]:
        present = design.shape.T.astype(np.float64) @ post
        stats["shape"] = np.stack([post.sum(axis=0) - present, present], axis=2)
    return stats


def _initial_counts(corpus: Corpus, design: _Design, *, acc: bool, init: str) -> dict[str, NDArray[np.float64]]:
    """Statistics of a simple aggregate taken as ``q(t)``: the starting point of VB.

    ``init="vote"``: each token's annotators' vote fractions (uniform without votes);
    ``init="ds"``: token-level Dawid-Skene posteriors (the authors start from a simple
    aggregate too; their code offers majority vote and Dawid-Skene). Clamped tokens are
    one-hot either way; a pair of neighbours counts ``q_i q_{i+1}^T`` on the moves BIO allows.
    """
    k = design.n_classes
    if init == "ds":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a start, not a result
            q = DawidSkene().fit(corpus, true_labels=design.known).proba_ * design.active[:, None]
    else:
        votes = corpus.vote_counts()
        n = votes.sum(axis=1, keepdims=True)
        q = np.where(n > 0, votes / np.where(n > 0, n, 1.0), 1.0 / k) * design.active[:, None]
    if design.known is not None:
        clamped = design.known >= 0
        q[clamped] = np.eye(k)[design.known[clamped]]
    pair = np.flatnonzero(design.active[:-1] & ~design.seq_first[1:])
    xi = (q[pair].T @ q[pair + 1]) * design.ok_trans
    stats = _expected_counts(design, q, xi, acc=acc)
    stats["start"] = stats["start"] * design.ok_start
    return stats


def _m_step(stats: dict[str, NDArray[np.float64]], priors: dict[str, NDArray[np.float64]]
            ) -> dict[str, NDArray[np.float64]]:
    """Optimal Dirichlet posteriors given ``q(t)``: prior concentration plus expected counts.

    Forbidden entries (prior 0) have zero expected counts, so they stay at zero mass.
    """
    return {key: np.where(prior > 0, prior + stats[key], 0.0) for key, prior in priors.items()}


def _kl_dirichlet(alpha: NDArray[np.float64], prior: NDArray[np.float64]) -> float:
    """``sum KL(Dirichlet(alpha) || Dirichlet(prior))`` over all simplices (last axis); zero-mass entries left out."""
    on = prior > 0
    a = np.where(on, alpha, 1.0)
    b = np.where(on, prior, 1.0)
    a0 = np.where(on, alpha, 0.0).sum(axis=-1)
    b0 = np.where(on, prior, 0.0).sum(axis=-1)
    terms = np.where(on, -gammaln(a) + gammaln(b) + (a - b) * (digamma(a) - digamma(a0)[..., None]), 0.0)
    return float((gammaln(a0) - gammaln(b0) + terms.sum(axis=-1)).sum())


def _elbo(log_z: float, post_params: dict[str, NDArray[np.float64]], priors: dict[str, NDArray[np.float64]]
          ) -> float:
    """Evidence lower bound ``log Z~ - sum KL(q(theta) || p(theta))`` right after an E-step.

    With ``q(t)`` optimal for the current ``q(theta)``, the expected complete-data log
    likelihood minus the entropy of ``q(t)`` is exactly ``log Z~`` (Beal 2003, ch. 3).
    """
    return float(log_z - sum(_kl_dirichlet(post_params[key], prior) for key, prior in priors.items()))


# ---------------------------------------------------------------------------- exports
def _posterior_mean(alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    total = alpha.sum(axis=-1, keepdims=True)
    return np.divide(alpha, total, out=np.zeros_like(alpha), where=total > 0)


def _worker_models(worker: NDArray[np.float64], counts: NDArray[np.float64] | None, *, n_classes: int
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Posterior-mean annotator models (n_workers, n_prev, K, K) and their confusion matrices (n_workers, K, K).

    For ``seq`` the confusion ``[w, t, o]`` averages ``P(o | t, p)`` over the previous
    labels ``p`` weighted by how often annotator ``w`` had previous label ``p`` when the
    truth was ``t`` (expected counts); the plain mean over ``p`` where it never did.
    """
    if worker.ndim == 2:  # acc
        acc = worker[:, 0] / worker.sum(axis=1)
        eye = np.eye(n_classes, dtype=bool)
        conf = np.where(eye, acc[:, None, None], ((1 - acc) / max(n_classes - 1, 1))[:, None, None])
        return conf[:, None], conf
    model = _posterior_mean(worker)
    if model.shape[1] == 1:
        return model, model[:, 0]
    weight = counts.sum(axis=3)  # (n_workers, n_prev, K): how often (p, t) occurred
    total = weight.sum(axis=1)  # (n_workers, K)
    pooled = np.einsum("wpt,wpto->wto", weight, model) / np.where(total > 0, total, 1.0)[..., None]
    conf = np.where((total > 0)[..., None], pooled, model.mean(axis=1))
    return model, conf


# ---------------------------------------------------------------------------- estimator
class BayesianSequenceCombination(BaseAggregator):
    r"""Bayesian sequence combination (BSC): an HMM over true labels, fitted by variational Bayes.

    Parameters
    ----------
    annotator_model : {"seq", "cm", "acc"}, default="seq"
        ``"seq"``: an annotator's label depends on the true label and on that
        annotator's previous label (BSC-seq); ``"cm"``: a full confusion matrix
        (IBCC-like); ``"acc"``: one accuracy, wrong labels uniform over the others.
    max_iter : int, default=100
        VB iterations at most. The authors cap at 20, which a small project can hit
        before the bound settles; an iteration costs a forward-backward pass, and fits
        converge in 10-20 (``benchmarks/seq_protocol.py``), so the cap is a guard.
    tol : float or None, default=1e-5
        Stop when the relative change of the ELBO, ``|dL| / max(|L|, 1)``, is below it;
        None runs exactly ``max_iter`` iterations with no convergence test or warning.
    alpha0 : float, default=1.0
        Dirichlet pseudo-count of every label in each row of an annotator model (the
        paper's :math:`\alpha_0`). This default and ``epsilon0``'s, ``nu0``'s, ``features``',
        ``lowercase``'s and ``init``'s were chosen by the protocol of ``benchmarks/README.md``
        (``python -m benchmarks.seq_protocol``).
    epsilon0 : float, default=3.0
        Extra pseudo-count on the correct label (the paper's :math:`\epsilon_0`): the
        prior belief that annotators beat chance, which also keeps the classes from
        swapping.
    gamma0 : float, default=1.0
        Dirichlet pseudo-count of every allowed start and transition (the paper's
        :math:`\gamma_0`); moves that BIO forbids have no prior mass.
    nu0 : float, default=0.1
        Dirichlet pseudo-count of each word in each state's word emissions, and of each
        value of each word shape (the authors' ``nu0``, whose class default is 1). With a
        vocabulary of thousands of words the prior's mass is ``nu0`` times the vocabulary
        per state: at 1 it outweighs the counts of the rare states (``I-MISC``, or every
        entity state of a small project), so a word seen once looks likelier under a rare
        state than under ``O`` and spans are cut or invented. 0.1 was chosen by the
        written protocol on two development sets together (``benchmarks/README.md``; 0.01
        before word shapes); at 1 BSC-seq lost to majority vote on small synthetic
        projects (``tests/aggregation/test_bsc_seq.py``).
    features : tuple of str, default=("word", "capitalised")
        Token emissions of each state: ``"word"`` (the token text, the authors' text
        model) and any word shape of :data:`crowdqa.aggregation._sequences.SHAPE_FEATURES`;
        ``()`` uses the crowd labels alone (the paper's *notext*). The default adds
        HMMCrowd's ``capitalised`` shape to the authors' words, chosen by the protocol: a
        word seen once or twice in a small project says little, its shape generalises
        (conll_val's 300-sentence project .743 -> .774 with ``lowercase``). HMMCrowd's
        ``digit`` shape lost to it in the third run (score .7594 against .7627, both
        lower-cased).
    lowercase : bool, default=True
        Lower-case words before indexing (the shapes still read the word as written).
        With the ``capitalised`` shape the case is counted once, by the shape, instead of
        again by every cased form of a word; chosen by the protocol's third run (score
        .7627 against .7602 with cased words; conll_val whole .751 -> .758).
    sequences : {"sentence", "document"}, default="sentence"
        The HMM's sequences: sentences (cut by
        :func:`~crowdqa.aggregation._sequences.sentence_starts`), as HMMCrowd cuts them, or
        whole documents. Each sentence is an independent chain with its own
        start; an annotator's previous label still runs across sentences of a document.
    decode : {"viterbi", "marginal"}, default="viterbi"
        ``labels_`` from the most probable sequence of ``q(t)`` (valid BIO by
        construction), or from each token's marginal (lowest class on ties; an
        ``I-X`` that cannot follow its predecessor becomes ``B-X``).
    init : {"vote", "ds"}, default="vote"
        The ``q(t)`` that VB starts from: vote fractions, or token-level Dawid-Skene
        posteriors (see :func:`_initial_counts`).

    Attributes
    ----------
    labels_ : ndarray of shape (n_tokens,)
    proba_ : ndarray of shape (n_tokens, n_classes)
        ``q(t_i = k)`` under the final parameter posteriors.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        ``[w, t, o]`` = posterior-mean P(annotator w labels o | true t); for ``"seq"``
        averaged over previous labels (see Notes).
    worker_model_ : ndarray of shape (n_workers, n_prev, n_classes, n_classes)
        ``[w, p, t, o]`` = posterior-mean P(annotator w labels o | true t, previous label
        p); ``n_prev`` is ``n_classes`` for ``"seq"`` (``n_classes + 1`` without an
        outside class, the last value meaning "no previous label") and 1 otherwise.
    class_prior_ : ndarray of shape (n_classes,)
        Mean posterior over the tokens of documents with evidence.
    start_ : ndarray of shape (n_classes,)
    transition_ : ndarray of shape (n_classes, n_classes)
        ``[j, k]`` = posterior-mean P(t_{i+1} = k | t_i = j); 0 where BIO forbids it.
    log_likelihood_ : list of float
        The evidence lower bound after each VB iteration; it never decreases.
    n_iter_ : int
    converged_ : bool

    Notes
    -----
    Generative model of a sequence with true labels :math:`t_1..t_T`:
    :math:`t_1 \sim \kappa`, :math:`t_\tau \sim A_{t_{\tau-1}}`; annotator :math:`k`'s label
    :math:`c^{(k)}_\tau \sim \pi^{(k)}_{t_\tau, c^{(k)}_{\tau-1}}` (``seq``; ``cm`` drops
    the previous label, ``acc`` keeps one accuracy); word :math:`x_\tau \sim \rho_{t_\tau}`.
    Priors: :math:`\kappa, A_j \sim \mathrm{Dir}(\gamma_0)` on allowed entries;
    :math:`\pi^{(k)}_{j,l} \sim \mathrm{Dir}(\alpha_0 + \epsilon_0 e_j)`;
    :math:`\rho_j \sim \mathrm{Dir}(\nu_0)`. Mean-field
    :math:`q(t) q(\kappa) q(A) q(\pi) q(\rho)`: the optimal :math:`q(t)` is an HMM with
    potentials :math:`\exp E[\log\theta]`, run by forward-backward over all sequences at
    once; each optimal :math:`q(\theta)` is the prior's Dirichlet plus expected counts.
    ``log_likelihood_`` is :math:`\log\tilde Z - \sum KL(q(\theta)\,\|\,p(\theta))`,
    evaluated after each E-step. The parameter posteriors start from the vote fractions
    (``init="vote"``) or Dawid-Skene's posteriors (``init="ds"``) taken as ``q(t)``.
    Symbols: :math:`\kappa` = ``start_``, :math:`A` = ``transition_``,
    :math:`\pi` = ``worker_model_``.

    A sequence starts as if the annotator's previous label were ``O`` (the paper's
    convention). Clamped (``true_labels``) labels are first made valid BIO (an ``I-X`` that
    cannot follow its known predecessor becomes ``B-X``, which keeps its spans). Tokens
    of documents nobody labelled get ``class_prior_``.

    References
    ----------
    .. [1] E. Simpson, I. Gurevych (2019). A Bayesian approach for sequence tagging with
       crowds. EMNLP-IJCNLP 2019, 1093-1104. doi:10.18653/v1/D19-1101
    .. [2] H.-C. Kim, Z. Ghahramani (2012). Bayesian classifier combination. AISTATS 2012.
    .. [3] M. J. Beal (2003). Variational algorithms for approximate Bayesian inference.
       PhD thesis, University College London, ch. 3 (variational Bayes for HMMs).

    Examples
    --------
    >>> import numpy as np
    >>> c = Corpus.from_arrays(token=np.repeat(np.arange(4), 3), worker=np.tile(np.arange(3), 4),
    ...     label=[0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 1], doc_lengths=[4], token_start=[0, 2, 4, 6],
    ...     token_end=[1, 3, 5, 7], doc_ids=["d"], texts=["a b c d"], worker_ids=["x", "y", "z"],
    ...     worker_roles=["crowd"] * 3, class_names=["O", "P"])
    >>> BayesianSequenceCombination().fit(c).labels_
    array([0, 1, 1, 0])
    """

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "annotator_model": [Options(_ANNOTATOR_MODELS)], "sequences": [Options(_SEQUENCES)],
        "decode": [Options(_DECODERS)], "init": [Options(_INITS)],
        "max_iter": [ITERATIONS], "tol": [Interval(float, 0, None), None],
        "alpha0": [Interval(float, 0, None, closed="neither")], "epsilon0": [Interval(float, 0, None)],
        "gamma0": [Interval(float, 0, None, closed="neither")], "nu0": [Interval(float, 0, None, closed="neither")],
        "features": [FEATURES],
        "lowercase": [InstanceOf((bool,), "True or False")],
    }

    def __init__(self, *, annotator_model: str = "seq", max_iter: int = 100, tol: float | None = 1e-5,
                 alpha0: float = 1.0, epsilon0: float = 3.0, gamma0: float = 1.0, nu0: float = 0.1,
                 features: tuple[str, ...] = ("word", "capitalised"), lowercase: bool = True,
                 sequences: str = "sentence", decode: str = "viterbi", init: str = "vote") -> None:
        self.annotator_model = annotator_model
        self.max_iter = max_iter
        self.tol = tol
        self.alpha0 = alpha0
        self.epsilon0 = epsilon0
        self.gamma0 = gamma0
        self.nu0 = nu0
        self.features = features
        self.lowercase = lowercase
        self.sequences = sequences
        self.decode = decode
        self.init = init

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None, callback: ProgressCallback | None = None
            ) -> BayesianSequenceCombination:
        """Fit the model to ``corpus`` by variational Bayes and decode the true labels.

        Parameters
        ----------
        corpus : Corpus
        true_labels : ndarray of shape (n_tokens,), optional
            Class of tokens whose true label is known (-1 = unknown); clamped in every E-step.
        callback : callable, optional
            ``callback(iteration, elbo)`` after each E-step.

        Returns
        -------
        self
        """
        known = self._start_fit(corpus, true_labels)
        design = _build_design(corpus, known=known, annotator_model=self.annotator_model,
                               features=tuple(self.features), lowercase=self.lowercase, sequences=self.sequences)
        priors = _priors(design, annotator_model=self.annotator_model, alpha0=self.alpha0, epsilon0=self.epsilon0,
                         gamma0=self.gamma0, nu0=self.nu0)
        acc = self.annotator_model == "acc"
        params = _m_step(_initial_counts(corpus, design, acc=acc, init=self.init), priors)
        monitor = self._monitor(callback)
        converged = False
        for _ in range(self.max_iter):
            stats, _, log_z = _e_step(params, design)
            converged = monitor.report(_elbo(log_z, params, priors))
            params = _m_step(stats, priors)
            if converged:
                break
        # Final E-step so that proba_ matches the final parameter posteriors.
        stats, post, _ = _e_step(params, design)
        self._record_run(monitor.history, converged)

        active = design.active
        prior = post[active].sum(axis=0) + (0.0 if active.any() else 1.0)
        self.class_prior_ = prior / prior.sum()
        post[~active] = self.class_prior_
        self.proba_ = post
        counts = stats["worker"] if self.annotator_model == "seq" else None
        self.worker_model_, self.worker_confusion_ = _worker_models(params["worker"], counts,
                                                                     n_classes=corpus.n_classes)
        self.start_ = _posterior_mean(params["start"])
        self.transition_ = _posterior_mean(params["trans"])
        self.labels_ = self._decode(design, params, post, fill=int(self.class_prior_.argmax()))
        # q(t) as a chain (crowdqa.aggregation.confidence): the crowd's E[log] factors apart from the rest.
        log_crowd = _log_emissions(crowd=design.crowd, log_confusion=_log_worker_table(params["worker"],
                                                                                       n_classes=design.n_classes))
        with np.errstate(invalid="ignore"):  # a clamped -inf minus a finite crowd term stays -inf
            log_rest = _token_log_lik(params, design) - log_crowd
        self.posterior_chain_ = PosteriorChain(
            log_crowd=log_crowd, log_rest=log_rest, log_start=_expected_log(params["start"]),
            log_trans=_expected_log(params["trans"]), seq_first=design.seq_first.copy())
        return self

    def _decode(self, design: _Design, params: dict[str, NDArray[np.float64]], post: NDArray[np.float64], *,
                fill: int) -> NDArray[np.int64]:
        """Viterbi path of ``q(t)`` (whose potentials are ``exp E[log theta]``), or the repaired marginal argmax."""
        if self.decode == "marginal":
            labels = np.where(design.active, post.argmax(axis=1), fill).astype(np.int64)
            return _repaired(labels, design)
        return _viterbi_corpus(_token_log_lik(params, design), log_startprob=_expected_log(params["start"]),
                               log_transmat=_expected_log(params["trans"]), buckets=design.buckets, fill=fill)
