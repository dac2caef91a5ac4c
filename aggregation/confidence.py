r"""The probability that an aggregate token, item or span is exactly right, under the model's posterior.

Every aggregator's posterior over the true labels is written as one chain of factors per sequence
(:class:`PosteriorChain`): a start weight, a transition weight between neighbours, and a factor per token and
state, split into the crowd's part (``log_crowd``, what the annotators' labels say) and the rest (``log_rest``:
words, word shapes, clamped expert labels, a class prior). The sequence models (HMM-Crowd, BSC-seq) give their
own chain; a model of independent tokens (Dawid-Skene, majority vote and the other categorical methods) gives
flat transitions, so its chain is its token posteriors.

A *temperature* ``T`` divides the crowd's part, ``log_frame = log_crowd / T + log_rest``: ``T > 1`` says the
annotators' labels are worth less evidence than a model of independent annotators makes of them (annotators who
agree because they make the same mistake are not independent witnesses). ``T = 1`` is the fitted model.

Scores
------
* A token's (or categorical item's) score is the tempered posterior marginal of its aggregate label,
  ``P(h_i = y_i | everything observed)``.
* A span's score is the posterior probability that the true label sequence holds exactly that span: the same
  first and last token and type, read by the rule of :func:`crowdqa.aggregation.spans.decode_spans`
  (conlleval's). For a span ``[a, b)`` of type ``X`` that is the posterior mass of the label paths in which
  the pair ``(h_{a-1}, h_a)`` starts an ``X`` span, each pair ``(h_{t-1}, h_t)``, ``a < t < b``, continues it,
  and ``(h_{b-1}, h_b)`` does not (or the document ends at ``b``). With scaled forward variables
  :math:`\hat\alpha`, backward variables :math:`\hat\beta`, normalisers :math:`c_t` (Rabiner 1989,
  section V.A), weights :math:`W_t` (the transitions, or the start weights at a sequence's first token) and
  frame factors :math:`f_t`:

  .. math::

     m_a(k) &= \frac{f_a(k)}{c_a} \sum_j \hat\alpha_{a-1}(j)\, W_a(j, k)\, S_X(j, k) \\
     m_t(k) &= \frac{f_t(k)}{c_t} \sum_j m_{t-1}(j)\, W_t(j, k)\, C_X(j, k), \quad a < t < b \\
     P(\text{span}) &= \sum_k m_{b-1}(k) \sum_l W_b(k, l)\, \bar C_X(k, l)\, \frac{f_b(l)\, \hat\beta_b(l)}{c_b}

  where :math:`S_X`, :math:`C_X` are the start and continue rules of type ``X`` and :math:`\bar C_X = 1 - C_X`
  (at a document's first token :math:`S_X(\cdot, k)` is ``k`` of type ``X`` alone; at a document's end the
  last factor is 1). It is a sum over the exact paths, so the chain's dependence between neighbours is kept:
  not the product of the tokens' confidences.

References
----------
.. [1] L. R. Rabiner (1989). A tutorial on hidden Markov models and selected applications in speech
   recognition. Proc. IEEE 77(2), 257-286. doi:10.1109/5.18626
.. [2] C. Guo, G. Pleiss, Y. Sun, K. Q. Weinberger (2017). On calibration of modern neural networks. ICML,
   PMLR 70:1321-1330 (temperature scaling).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._forward_backward import _backward, _bucket_index, _forward
from crowdqa.aggregation.corpus import Corpus

#: What a temperature divides: every factor of the chain, or the crowd's alone (:meth:`PosteriorChain.tempered`).
SCOPES = ("chain", "crowd")

__all__ = ["SCOPES", "ChainMarginals", "PosteriorChain", "chain_marginals", "independent_chain", "span_probability",
           "token_probability", "path_probability", "labels_probability", "sequence_starts", "posterior_chain",
           "AggregateConfidence",
           "score_aggregate", "fit_temperatures", "tempered_marginals", "tempered_scores"]


def _check_temperature(temperature: float) -> None:
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be > 0, found {temperature}")


@dataclass(frozen=True)
class PosteriorChain:
    """A model's posterior over the true labels as a chain of factors per sequence.

    Parameters
    ----------
    log_crowd : ndarray of shape (n_tokens, n_classes)
        Log-likelihood of the crowd's labels at each token given each true state (what a temperature divides).
    log_rest : ndarray of shape (n_tokens, n_classes)
        Every other log factor at each token: words, shapes, a class prior; ``-inf`` forbids a state there (a
        clamped expert label).
    log_start : ndarray of shape (n_classes,)
        Log weight of each state at a sequence's first token.
    log_trans : ndarray of shape (n_classes, n_classes)
        Log weight of a move from state ``j`` to ``k`` at ``[j, k]``; rows need not normalise.
    seq_first : ndarray of shape (n_tokens,), bool
        True at the first token of each sequence (a document, or a sentence of one).
    """

    log_crowd: NDArray[np.float64]
    log_rest: NDArray[np.float64]
    log_start: NDArray[np.float64]
    log_trans: NDArray[np.float64]
    seq_first: NDArray[np.bool_]

    def __post_init__(self) -> None:
        n, k = self.log_crowd.shape
        for name, shape in (("log_rest", (n, k)), ("log_start", (k,)), ("log_trans", (k, k)), ("seq_first", (n,))):
            if getattr(self, name).shape != shape:
                raise ValueError(f"PosteriorChain.{name} must have shape {shape}, found {getattr(self, name).shape}")
        if n and not self.seq_first[0]:
            raise ValueError("PosteriorChain.seq_first must be True at token 0")

    @property
    def n_tokens(self) -> int:
        return int(self.log_crowd.shape[0])

    @property
    def independent(self) -> bool:
        """True when every start weight is the same and every transition weight is the same (and finite): the
        tokens are independent given the frame factors (a model of independent tokens, :func:`independent_chain`)."""
        start, trans = self.log_start, self.log_trans
        return bool(start.size and np.isfinite(start[0]) and np.isfinite(trans[0, 0])
                    and (start == start[0]).all() and (trans == trans[0, 0]).all())

    def log_frame(self, temperature: float = 1.0) -> NDArray[np.float64]:
        """``log_crowd / temperature + log_rest``: ndarray of shape (n_tokens, n_classes)."""
        _check_temperature(temperature)
        with np.errstate(invalid="ignore"):  # -inf rest plus a finite crowd term stays -inf
            return self.log_crowd / temperature + self.log_rest

    def tempered(self, temperature: float, *, scope: str = "chain") -> PosteriorChain:
        """The chain with its log factors divided by ``temperature``.

        ``scope="crowd"`` divides the crowd's factors alone (a weight on the annotators' evidence);
        ``scope="chain"`` every factor, transitions and text included: the posterior over label paths becomes
        ``p(path) ** (1 / T)`` renormalised, temperature scaling of a structured output (Guo et al. 2017) whose
        text model, fitted on the crowd's own labels, echoes the crowd's evidence and so needs the same weight.
        """
        _check_temperature(temperature)
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {SCOPES}, found {scope!r}")
        if scope == "crowd":
            return dataclasses.replace(self, log_crowd=self.log_crowd / temperature)
        return PosteriorChain(log_crowd=self.log_crowd / temperature, log_rest=self.log_rest / temperature,
                              log_start=self.log_start / temperature, log_trans=self.log_trans / temperature,
                              seq_first=self.seq_first)

    def select(self, tokens: NDArray[np.bool_]) -> PosteriorChain:
        """The chain of the tokens where ``tokens`` (shape (n_tokens,)) is true; they must be whole sequences."""
        tokens = np.asarray(tokens, dtype=bool)
        return PosteriorChain(log_crowd=self.log_crowd[tokens], log_rest=self.log_rest[tokens],
                              log_start=self.log_start, log_trans=self.log_trans, seq_first=self.seq_first[tokens])


def sequence_starts(corpus: Corpus) -> NDArray[np.bool_]:
    """True at the first token of each non-empty document: ndarray of shape (n_tokens,)."""
    out = np.zeros(corpus.n_tokens, dtype=bool)
    out[corpus.doc_start[:-1][corpus.doc_lengths > 0]] = True
    return out


def independent_chain(proba: NDArray[np.float64], *, seq_first: NDArray[np.bool_]) -> PosteriorChain:
    """The chain of a model of independent tokens: its posteriors as the crowd's factor, flat transitions.

    Parameters
    ----------
    proba : ndarray of shape (n_tokens, n_classes)
        Token posteriors (rows sum to 1). A zero entry is floored at the smallest normal float, so a tempered
        chain never gives it mass back from nothing but still orders it last.
    seq_first : ndarray of shape (n_tokens,), bool

    Returns
    -------
    PosteriorChain
        ``log_crowd = log proba``, ``log_rest = 0``; with a temperature the token posteriors become
        ``proba ** (1 / T)`` renormalised.
    """
    proba = np.asarray(proba, dtype=np.float64)
    k = proba.shape[1]
    log_p = np.log(np.maximum(proba, np.finfo(np.float64).tiny))
    return PosteriorChain(log_crowd=log_p, log_rest=np.zeros_like(log_p), log_start=np.zeros(k),
                          log_trans=np.zeros((k, k)), seq_first=np.asarray(seq_first, dtype=bool))


@dataclass(frozen=True)
class ChainMarginals:
    """Scaled forward-backward quantities of a chain at every token (Rabiner 1989, section V.A).

    The marginals of one chain (:func:`chain_marginals`), or of copies of one chain at several temperatures
    (:func:`tempered_marginals`): then token ``g * n + i`` is token ``i`` of copy ``g`` and ``start``, ``trans`` have
    one entry per copy.

    Attributes
    ----------
    alpha : ndarray of shape (n_tokens, n_classes)
        Forward variables, normalised to sum to 1 at each token.
    beta : ndarray of shape (n_tokens, n_classes)
        Backward variables divided by the later tokens' normalisers; 1 at a sequence's last token.
    scale : ndarray of shape (n_tokens,)
        The forward pass's normalisers.
    frame : ndarray of shape (n_tokens, n_classes)
        ``exp(log_frame - max over states)``: the frame factors the other arrays were computed with.
    start, trans : ndarray of shape (n_classes,) and (n_classes, n_classes)
        ``exp`` of the chain's start and transition log weights; of shape (n_copies, n_classes) and
        (n_copies, n_classes, n_classes) for copies.
    seq_first : ndarray of shape (n_tokens,), bool
        The chain's sequence starts.
    log_offset : ndarray of shape (n_tokens,)
        The per-token maximum removed from the log frame factors, so that the log evidence of a sequence is
        ``sum over its tokens of log(scale) + log_offset``.
    copies : int, default=1
        How many copies of a chain the arrays hold.
    """

    alpha: NDArray[np.float64]
    beta: NDArray[np.float64]
    scale: NDArray[np.float64]
    frame: NDArray[np.float64]
    start: NDArray[np.float64]
    trans: NDArray[np.float64]
    seq_first: NDArray[np.bool_]
    log_offset: NDArray[np.float64]
    copies: int = 1

    @functools.cached_property
    def posterior(self) -> NDArray[np.float64]:
        """Posterior marginals ``P(h_i = k | everything)``: ndarray of shape (n_tokens, n_classes)."""
        post = self.alpha * self.beta
        return post / post.sum(axis=1, keepdims=True)

    def move_weights(self, t: NDArray[np.int64]) -> NDArray[np.float64]:
        """The weight of each move into tokens ``t``: ndarray of shape (len(t), n_classes, n_classes), ``[:, j, k]``
        from state ``j`` to ``k``: the transitions, or the start weights (``start[k]``) at a sequence's first
        token."""
        start, trans = self.start, self.trans
        if start.ndim == 1:  # one chain's
            return np.where(self.seq_first[t][:, None, None], start[None, None, :], trans[None])
        copy = t // (self.alpha.shape[0] // self.copies)
        return np.where(self.seq_first[t][:, None, None], start[copy][:, None, :], trans[copy])


def chain_marginals(chain: PosteriorChain) -> ChainMarginals:
    """Forward-backward over every sequence of ``chain``, each length bucket at once.

    A chain of independent tokens (:attr:`PosteriorChain.independent`) needs no pass: its forward variables are
    each token's frame factors normalised (the tempered softmax of its log factors), its normalisers their sum
    times the flat weight into the token, and its backward variables 1 (Rabiner's recursions with every
    transition equal).

    Parameters
    ----------
    chain : PosteriorChain
        Already tempered (:meth:`PosteriorChain.tempered`) when a temperature is wanted.

    Returns
    -------
    ChainMarginals
    """
    mg = _marginals(chain.log_frame()[None], log_start=chain.log_start[None], log_trans=chain.log_trans[None],
                    seq_first=chain.seq_first, independent=chain.independent)
    return dataclasses.replace(mg, start=mg.start[0], trans=mg.trans[0])


def tempered_marginals(chain: PosteriorChain, temperatures: NDArray[np.float64], *, scope: str = "chain"
                       ) -> ChainMarginals:
    """:func:`chain_marginals` of ``chain`` tempered by each of ``temperatures``, all in one pass.

    The copies are stacked as sequences of one batch (each with its own transitions), so the pass's loop over
    time runs once for all of them: what it costs is mostly that loop, not the size of the batch.

    Parameters
    ----------
    chain : PosteriorChain
    temperatures : ndarray of shape (n_copies,)
    scope : {"chain", "crowd"}, default="chain"
        As in :meth:`PosteriorChain.tempered`.

    Returns
    -------
    ChainMarginals
        With ``copies = n_copies``: token ``g * n_tokens + i`` is token ``i`` at ``temperatures[g]``.
    """
    temps = np.asarray(temperatures, dtype=np.float64)
    for t in temps:
        _check_temperature(float(t))
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, found {scope!r}")
    inv = (1.0 / temps)[:, None, None]
    with np.errstate(invalid="ignore"):  # -inf rest plus a finite crowd term stays -inf
        if scope == "crowd":
            log_frame = chain.log_crowd[None] * inv + chain.log_rest[None]
            log_start, log_trans = np.broadcast_to(chain.log_start, (temps.size, chain.log_start.size)), \
                np.broadcast_to(chain.log_trans, (temps.size, *chain.log_trans.shape))
        else:
            log_frame = (chain.log_crowd + chain.log_rest)[None] * inv
            log_start, log_trans = chain.log_start[None] * inv[:, :, 0], chain.log_trans[None] * inv
    return _marginals(log_frame, log_start=log_start, log_trans=log_trans, seq_first=chain.seq_first,
                      independent=chain.independent)


def _marginals(log_frame: NDArray[np.float64], *, log_start: NDArray[np.float64], log_trans: NDArray[np.float64],
               seq_first: NDArray[np.bool_], independent: bool, backward: bool = True) -> ChainMarginals:
    """Marginals of copies of one chain: ``log_frame`` of shape (n_copies, n_tokens, n_classes), ``log_start`` of
    shape (n_copies, n_classes), ``log_trans`` of shape (n_copies, n_classes, n_classes). Without ``backward`` the
    backward variables are left at 1 (the normalisers alone are wanted)."""
    copies, n, k = log_frame.shape
    rows = copies * n
    flat = log_frame.reshape(rows, k)
    offset = flat.max(axis=1) if rows else np.zeros(0)
    offset = np.where(np.isfinite(offset), offset, 0.0)
    frame = np.ones((rows + 1, k))  # row ``rows``: the neutral frame of every batch's padding cells
    with np.errstate(under="ignore"):  # states far behind the best underflow to 0, harmlessly
        frame[:rows] = np.exp(flat - offset[:, None])
    start, trans = np.exp(log_start), np.exp(log_trans)
    all_first = np.tile(seq_first, copies)
    if independent:
        # A token no state is allowed at gets forward variables 0 and normaliser 1, as _forward gives it; there the
        # sequence's later tokens stay 0, here they do not, which changes nothing read from them: the sequence's
        # evidence is 0 either way.
        copy = np.repeat(np.arange(copies), n)
        into = np.where(all_first, start[copy, 0], trans[copy, 0, 0])
        total = frame[:rows].sum(axis=1)
        live = total > 0
        alpha = frame[:rows] / np.where(live, total, 1.0)[:, None]
        return ChainMarginals(alpha=alpha, beta=np.ones((rows, k)), scale=np.where(live, total * into, 1.0),
                              frame=frame[:rows], start=start, trans=trans, seq_first=all_first, log_offset=offset,
                              copies=copies)
    alpha, beta, scale = np.zeros((rows + 1, k)), np.ones((rows + 1, k)), np.ones(rows + 1)
    first = np.flatnonzero(seq_first)
    for idx, lens in _bucket_index(first, lengths=np.diff(np.append(first, n)), n_tokens=n):
        # The bucket's sequences in every copy, padding cells on the neutral row.
        batch = np.where(idx[None] < n, idx[None] + n * np.arange(copies)[:, None, None], rows)
        batch = batch.reshape(copies * idx.shape[0], idx.shape[1])
        which = np.repeat(np.arange(copies), idx.shape[0])
        st, tr = (start[0], trans[0]) if copies == 1 else (start[which], trans[which])
        a, s = _forward(st, transmat=tr, frame=frame[batch], lengths=np.tile(lens, copies))
        real = batch < rows
        alpha[batch[real]], scale[batch[real]] = a[real], s[real]
        if backward:
            beta[batch[real]] = _backward(tr, frame=frame[batch], scale=s, lengths=np.tile(lens, copies))[real]
    return ChainMarginals(alpha=alpha[:rows], beta=beta[:rows], scale=scale[:rows], frame=frame[:rows], start=start,
                          trans=trans, seq_first=all_first, log_offset=offset, copies=copies)


def token_probability(marginals: ChainMarginals, labels: NDArray[np.int64]) -> NDArray[np.float64]:
    """Posterior probability of each token's label: ndarray of shape (n_tokens,), or (n_copies, n_tokens) for the
    marginals of copies (:func:`tempered_marginals`); 0 where ``labels`` (shape (n_tokens,)) is -1."""
    labels = np.asarray(labels, dtype=np.int64)
    post = marginals.posterior.reshape(marginals.copies, labels.shape[0], -1)
    out = np.take_along_axis(post, np.maximum(labels, 0)[None, :, None], axis=2)[..., 0]
    out = np.where(labels >= 0, out, 0.0)
    return out.reshape(-1) if marginals.copies == 1 else out


def path_probability(marginals: ChainMarginals, labels: NDArray[np.int64], *, group: NDArray[np.int64],
                     n_groups: int) -> NDArray[np.float64]:
    r"""Posterior probability that every label of each group of tokens (a document) is right at once.

    The chain's probability of the whole labelled path, sequence by sequence:
    :math:`P(y \mid \text{obs}) = \prod_t W_t(y_{t-1}, y_t)\, f_t(y_t) / c_t` (scaled forward normalisers
    :math:`c_t`, as in the module docstring), multiplied over a group's sequences.

    Parameters
    ----------
    marginals : ChainMarginals
    labels : ndarray of shape (n_tokens,)
    group : ndarray of shape (n_tokens,)
        Group of each token; a group is a union of whole sequences.
    n_groups : int

    Returns
    -------
    ndarray of shape (n_groups,)
        1 for a group without tokens.
    """
    labels = np.maximum(np.asarray(labels, dtype=np.int64), 0)
    n = labels.shape[0]
    mg = marginals
    prev = np.concatenate([[0], labels[:-1]])
    weight = np.where(mg.seq_first, mg.start[labels], mg.trans[prev, labels])
    with np.errstate(divide="ignore"):  # a label the chain forbids has probability 0: log 0 = -inf
        log_factor = np.log(weight * mg.frame[np.arange(n), labels] / mg.scale)
    return np.exp(np.bincount(group, weights=log_factor, minlength=n_groups))


def labels_probability(chain: PosteriorChain, labels: NDArray[np.int64], *, where: NDArray[np.bool_],
                       group: NDArray[np.int64], n_groups: int, marginals: ChainMarginals | None = None
                       ) -> NDArray[np.float64]:
    r"""Posterior probability that the true label is ``labels`` at every token of ``where``, per group of tokens.

    The other tokens are free: :math:`P(h_t = y_t\ \forall t \in S \mid \text{obs}) = Z_S / Z`, where :math:`Z` is
    the chain's evidence and :math:`Z_S` that of the same chain with every state but :math:`y_t` forbidden at each
    :math:`t \in S` (one more forward pass; none for independent tokens, where it is the product of the tokens'
    marginals). With ``where`` everywhere it is :func:`path_probability`.

    Parameters
    ----------
    chain : PosteriorChain
        Tempered already, if wanted.
    labels : ndarray of shape (n_tokens,)
    where : ndarray of shape (n_tokens,), bool
    group : ndarray of shape (n_tokens,)
        Group of each token (a union of whole sequences: a document).
    n_groups : int
    marginals : ChainMarginals, optional
        :func:`chain_marginals` of ``chain``, when made already: its normalisers give :math:`Z` without a pass.

    Returns
    -------
    ndarray of shape (n_groups,)
    """
    labels = np.maximum(np.asarray(labels, dtype=np.int64), 0)
    if chain.independent:  # Z_S / Z is the product of the chosen tokens' marginals
        at = np.flatnonzero(where)
        alpha = (chain_marginals(chain) if marginals is None else marginals).alpha
        with np.errstate(divide="ignore"):  # a label of probability 0: log 0 = -inf, so the group's is 0
            return np.exp(np.bincount(group[at], weights=np.log(alpha[at, labels[at]]), minlength=n_groups))
    n, k = chain.log_crowd.shape
    keep = np.ones((n, k), dtype=bool)
    keep[where] = False
    keep[np.flatnonzero(where), labels[where]] = True
    clamped = dataclasses.replace(chain, log_rest=np.where(keep, chain.log_rest, -np.inf))

    def log_evidence(c: PosteriorChain) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Each group's log evidence, and which tokens no state is left at (forward variables all 0)."""
        mg = _marginals(c.log_frame()[None], log_start=c.log_start[None], log_trans=c.log_trans[None],
                        seq_first=c.seq_first, independent=False, backward=False)
        with np.errstate(divide="ignore"):  # a sequence whose clamped labels are impossible has evidence 0
            return (np.bincount(group, weights=np.log(mg.scale) + mg.log_offset, minlength=n_groups),
                    mg.alpha.sum(axis=1) == 0)

    if marginals is None:
        full = log_evidence(chain)[0]
    else:
        full = np.bincount(group, weights=np.log(marginals.scale) + marginals.log_offset, minlength=n_groups)
    part, dead = log_evidence(clamped)
    # A clamp the chain forbids (a state or a move of weight 0) leaves the forward variables at 0 from there on and
    # the normalisers at 1 (_forward's guard), so its evidence would read as finite: say 0 outright.
    impossible = np.bincount(group, weights=dead, minlength=n_groups) > 0
    with np.errstate(invalid="ignore"):
        return np.where(impossible, 0.0, np.clip(np.exp(part - full), 0.0, 1.0))


def _span_rules(class_names: tuple[str, ...], class_entity: NDArray[np.int64]
                ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Start and continue rules of each type, by :func:`crowdqa.aggregation.spans.span_bounds`.

    Returns
    -------
    starts, continues : ndarray of shape (n_types + 1, n_classes, n_classes), bool
        ``starts[x, j, k]``: state ``k`` after state ``j`` starts a span of type ``x`` (type index + 1);
        ``continues[x, j, k]``: it continues one.
    """
    is_begin = np.array([c.startswith("B-") for c in class_names], dtype=bool)
    n_types = int(class_entity.max(initial=0))
    x = np.arange(n_types + 1)[:, None, None]
    prev_x = class_entity[None, :, None] == x
    cur_x = (class_entity[None, None, :] == x) & (x > 0)
    continues = cur_x & prev_x & ~is_begin[None, None, :]
    return cur_x & ~continues, continues


def span_probability(marginals: ChainMarginals, *, first: NDArray[np.int64], last: NDArray[np.int64],
                     span_type: NDArray[np.int64], corpus: Corpus, doc_first: NDArray[np.bool_] | None = None
                     ) -> NDArray[np.float64]:
    """Posterior probability that the true labels hold each span exactly (formula in the module docstring).

    Parameters
    ----------
    marginals : ChainMarginals
        Of the chain the probabilities are under (:func:`chain_marginals`).
    first, last : ndarray of shape (n_spans,)
        First token of each span and one past its last (:class:`~crowdqa.aggregation.spans.SpanArray`), indices
        into the chain's tokens.
    span_type : ndarray of shape (n_spans,)
        Entity type index + 1 (:attr:`Corpus.class_entity`).
    corpus : Corpus
        Gives the label scheme, and the document starts unless ``doc_first`` is given.
    doc_first : ndarray of shape (n_chain_tokens,), bool, optional
        True at each document's first token, for a chain of some of ``corpus``'s documents
        (:meth:`PosteriorChain.select`); default :func:`sequence_starts` of ``corpus``.

    Returns
    -------
    ndarray of shape (n_spans,), or (n_copies, n_spans) for the marginals of copies (:func:`tempered_marginals`)
        In [0, 1].
    """
    first, last = np.asarray(first, dtype=np.int64), np.asarray(last, dtype=np.int64)
    span_type = np.asarray(span_type, dtype=np.int64)
    if first.shape[0] == 0:
        return np.zeros((marginals.copies, 0)) if marginals.copies > 1 else np.zeros(0)
    starts, continues = _span_rules(tuple(corpus.class_names), corpus.class_entity)
    doc_start = sequence_starts(corpus) if doc_first is None else np.asarray(doc_first, dtype=bool)
    n_tokens = doc_start.shape[0]
    mg = marginals
    if mg.copies > 1:  # every span in every copy: copy g's tokens follow copy g - 1's
        shift = n_tokens * np.arange(mg.copies)[:, None]
        first, last = (first + shift).ravel(), (last + shift).ravel()
        span_type, doc_start = np.tile(span_type, mg.copies), np.tile(doc_start, mg.copies)
        n_tokens *= mg.copies
    weights = mg.move_weights

    def emit(t: NDArray[np.int64]) -> NDArray[np.float64]:
        return mg.frame[t] / mg.scale[t, None]

    a = first
    at_doc = doc_start[a]
    prev_alpha = np.where(at_doc[:, None], 0.0, mg.alpha[np.where(at_doc, 0, a - 1)])
    opened = np.einsum("nj,njk->nk", prev_alpha, weights(a) * starts[span_type])
    # At a document's first token there is no predecessor: any state of the span's type starts it.
    first_states = (corpus.class_entity[None, :] == span_type[:, None]) * weights(a)[:, 0, :]
    m = np.where(at_doc[:, None], first_states, opened) * emit(a)
    # Longest first, so the spans still open at each step are a prefix: each step works on those alone.
    order = np.argsort(first - last, kind="stable")
    remaining = (last - first)[order]
    for step in range(1, int(remaining[0])):
        live = order[: np.searchsorted(-remaining, -step, side="left")]
        t = first[live] + step
        m[live] = np.einsum("nj,njk->nk", m[live], weights(t) * continues[span_type[live]]) * emit(t)
    e = np.minimum(last, n_tokens - 1)  # the token after the span (clipped at the corpus's end)
    at_end = (last >= n_tokens) | doc_start[e]
    after = np.einsum("nk,nkl,nl->n", m, weights(e) * ~continues[span_type], emit(e) * mg.beta[e])
    # At a document's end the span closes whatever follows; the last token's beta is 1 there.
    inside = (m * mg.beta[last - 1]).sum(axis=1)
    out = np.clip(np.where(at_end, inside, after), 0.0, 1.0)
    return out.reshape(mg.copies, -1) if mg.copies > 1 else out


def posterior_chain(aggregator: object, corpus: Corpus, *, proba: NDArray[np.float64] | None = None
                    ) -> PosteriorChain:
    """A fitted aggregator's posterior as a chain: its own (``posterior_chain_`` of a sequence model fitted on
    ``corpus``), or its token posteriors (``proba``, default ``proba_``) as independent tokens
    (:func:`independent_chain`): a model of independent tokens, or a carried model that predicted without a fit."""
    chain = getattr(aggregator, "posterior_chain_", None)
    if isinstance(chain, PosteriorChain) and chain.n_tokens == corpus.n_tokens:
        return chain
    return independent_chain(aggregator.proba_ if proba is None else proba,
                             seq_first=sequence_starts(corpus))


@dataclass(frozen=True)
class AggregateConfidence:
    """The scores of an aggregate under a chain at one temperature.

    Attributes
    ----------
    temperature : float
    scope : str
        What the temperature divides (:data:`SCOPES`).
    token : ndarray of shape (n_tokens,)
        Probability that each token's (item's) aggregate label is right.
    span : ndarray of shape (n_spans,)
        Probability that each aggregate span (in :func:`~crowdqa.aggregation.spans.decode_spans` order) is exactly
        right; empty for categorical answers.
    document : ndarray of shape (n_docs,)
        Probability that each document's aggregate is right wherever the crowd marked anything: on every token the
        aggregate or any annotator labels other than ``O`` (:func:`labels_probability`; categorical answers: every
        item). The tokens every annotator and the aggregate leave ``O`` are free, so a document everyone left empty
        scores 1: what it risks is a span the whole crowd missed, which no annotator disputes.
    proba : ndarray of shape (n_tokens, n_classes)
        The tempered posterior marginals.
    """

    temperature: float
    scope: str
    token: NDArray[np.float64]
    span: NDArray[np.float64]
    document: NDArray[np.float64]
    proba: NDArray[np.float64]


def score_aggregate(chain: PosteriorChain, labels: NDArray[np.int64], corpus: Corpus, *, temperature: float = 1.0,
                    scope: str = "chain") -> AggregateConfidence:
    """Token, span and document scores of ``labels`` under ``chain`` tempered by ``temperature``.

    Parameters
    ----------
    chain : PosteriorChain
        Of ``corpus``'s tokens (:func:`posterior_chain`).
    labels : ndarray of shape (n_tokens,)
        The aggregate (its decoder's labels, not necessarily each token's argmax).
    corpus : Corpus
    temperature : float, default=1.0
    scope : {"chain", "crowd"}, default="chain"

    Returns
    -------
    AggregateConfidence
    """
    from crowdqa.aggregation.spans import decode_spans

    labels = np.asarray(labels, dtype=np.int64)
    tempered = chain.tempered(temperature, scope=scope)
    mg = chain_marginals(tempered)  # one pass for the tokens, the spans and the documents' evidence
    if corpus.has_outside:
        spans = decode_spans(labels, corpus)
        span = span_probability(mg, first=spans.first, last=spans.last, span_type=spans.type, corpus=corpus)
    else:
        span = np.zeros(0)
    where = labels >= 0  # a token the aggregate leaves without a label (a tag nobody gave) is free
    if corpus.has_outside:
        where = labels > 0
        where[corpus.token[corpus.label > 0]] = True  # or any annotator's label other than O
    document = labels_probability(tempered, labels, where=where, group=corpus.token_doc.astype(np.int64),
                                  n_groups=corpus.n_docs, marginals=mg)
    return AggregateConfidence(temperature=float(temperature), scope=scope, token=token_probability(mg, labels),
                               span=span, document=document, proba=mg.posterior)


def tempered_scores(chain: PosteriorChain, temperatures: NDArray[np.float64], *, scope: str,
                    score: Callable[[ChainMarginals], NDArray[np.float64]], max_tokens: int = 1 << 20
                    ) -> NDArray[np.float64]:
    """``score`` of ``chain`` at each of ``temperatures``: the copies' marginals (:func:`tempered_marginals`) made a
    few temperatures at a time, at most ``max_tokens`` tokens of copies at once (memory).

    Parameters
    ----------
    chain : PosteriorChain
    temperatures : ndarray of shape (n_temps,)
    scope : {"chain", "crowd"}
    score : callable
        ``score(marginals)`` -> ndarray of shape (n_copies, n_items) (:func:`span_probability`,
        :func:`token_probability`).
    max_tokens : int, default=2**20

    Returns
    -------
    ndarray of shape (n_temps, n_items)
    """
    temps = np.asarray(temperatures, dtype=np.float64)
    per = max(1, max_tokens // max(chain.n_tokens, 1))
    parts = [score(tempered_marginals(chain, temps[i:i + per], scope=scope)).reshape(min(per, temps.size - i), -1)
             for i in range(0, temps.size, per)]
    return np.concatenate(parts) if parts else np.zeros((0, 0))


#: The search of :func:`fit_temperatures`: points of the first grid over the bounds, rounds of refinement, points of
#: each round's grid (the bracket of the previous round's best point, a quarter of its width apart).
SEARCH_GRID, SEARCH_ROUNDS, SEARCH_POINTS = 17, 3, 9


def fit_temperatures(score: Callable[[NDArray[np.float64]], NDArray[np.float64]], outcome: NDArray, *,
                     subsets: NDArray[np.bool_] | None = None, bounds: tuple[float, float] = (0.05, 50.0)
                     ) -> NDArray[np.float64]:
    """The temperature whose scores best predict the outcomes, for each subset of the items: the minimum of the
    binary log loss over ``log T``.

    Temperature scaling (Guo et al. 2017) fitted by maximum likelihood on items whose rightness is known (expert
    documents). A bracketed search on ``log T``, every subset at once: a grid of :data:`SEARCH_GRID` points over the
    bounds, walked downhill from the point nearest the golden section of the bounds (where Brent's method starts) to
    a local minimum; then :data:`SEARCH_ROUNDS` times a grid of :data:`SEARCH_POINTS` points over the bracket around
    each subset's best point so far (its neighbours on the previous grid); then the vertex of the parabola through the
    best point and its two neighbours. Each round scores every subset's temperatures in one call of ``score``
    (one pass over a chain's copies, :func:`tempered_scores`), four calls in all. The result is within a few
    ``1e-4`` of ``log T`` of the minimum (with several, of the one downhill of the start): the last grid's points
    are ``log(1000) / 16 / 4 ** 3 = 0.0067`` apart, and the parabola's vertex is exact for a quadratic.

    Parameters
    ----------
    score : callable
        ``score(temperatures)``, temperatures an ndarray of shape (n_temps,) -> ndarray of shape (n_temps, n_items):
        each item's probability of being right at each temperature.
    outcome : ndarray of shape (n_items,), bool
        Whether each item is right.
    subsets : ndarray of shape (n_subsets, n_items), bool, optional
        The items each temperature is fitted on (the folds of a cross-fitting); default all of them (one subset).
    bounds : (float, float), default=(0.05, 50)
        The temperatures searched.

    Returns
    -------
    ndarray of shape (n_subsets,)
        1.0 for a subset without items, or whose items are all right or all wrong (no temperature is identified:
        the log loss only falls towards a bound).
    """
    y = np.asarray(outcome, dtype=bool)
    subsets = np.ones((1, y.size), dtype=bool) if subsets is None else np.asarray(subsets, dtype=bool)
    out = np.ones(subsets.shape[0])
    fit = np.flatnonzero((subsets & y).any(axis=1) & (subsets & ~y).any(axis=1))
    if fit.size == 0:
        return out
    weight = subsets[fit].astype(np.float64)
    low, high = np.log(bounds[0]), np.log(bounds[1])
    tiny, top = np.finfo(np.float64).tiny, 1.0 - np.finfo(np.float64).epsneg

    def log_loss(log_t: NDArray[np.float64]) -> NDArray[np.float64]:
        """The log loss of each fitted subset (rows) at each point of ``log_t``, shape (n_fit, n_points) or, with
        ``log_t`` of shape (n_fit, n_points), each subset at its own points."""
        points = np.clip(log_t, low, high)
        p = np.clip(score(np.exp(points.ravel())), tiny, top)
        loss = -(weight @ np.where(y, np.log(p), np.log1p(-p)).T)  # (n_fit, n_temps)
        if points.ndim == 1:
            return loss
        rows = np.arange(fit.size)[:, None]
        return loss[rows, rows * points.shape[1] + np.arange(points.shape[1])]

    grid = np.linspace(low, high, SEARCH_GRID)
    loss = log_loss(grid)
    # Downhill on the grid from the point nearest Brent's first one (a golden section into the bounds), to the
    # first local minimum: a loss with two minima keeps the one a local search from there finds (hard posteriors,
    # whose floored zeros regain mass at the largest temperatures, can make the loss fall again towards the upper
    # bound, where their scores are not calibrated).
    at = np.full(fit.size, int(np.argmin(np.abs(grid - (low + (3.0 - np.sqrt(5.0)) / 2.0 * (high - low))))))
    rows = np.arange(fit.size)
    for _ in range(SEARCH_GRID):
        here = loss[rows, at]
        left, right = loss[rows, np.maximum(at - 1, 0)], loss[rows, np.minimum(at + 1, SEARCH_GRID - 1)]
        at = at + np.where((left < here) & (left <= right), -1, np.where(right < here, 1, 0))
    best = grid[at]
    half = np.full(fit.size, grid[1] - grid[0])  # the bracket around each subset's best point: best +- half
    for _ in range(SEARCH_ROUNDS):
        points = np.clip(best[:, None] + half[:, None] * np.linspace(-1.0, 1.0, SEARCH_POINTS), low, high)
        loss = log_loss(points)
        i = np.argmin(loss, axis=1)
        best, half = points[np.arange(fit.size), i], half * 2.0 / (SEARCH_POINTS - 1)
    # The vertex of the parabola through the best point and its neighbours, where it lies between them.
    inner = np.clip(i, 1, SEARCH_POINTS - 2)
    x0, x1, x2 = (points[rows, inner + d] for d in (-1, 0, 1))
    f0, f1, f2 = (loss[rows, inner + d] for d in (-1, 0, 1))
    with np.errstate(divide="ignore", invalid="ignore"):  # three equal points, a flat loss: no vertex
        curve = (x1 - x0) * (f1 - f2) - (x1 - x2) * (f1 - f0)
        vertex = x1 - 0.5 * ((x1 - x0) ** 2 * (f1 - f2) - (x1 - x2) ** 2 * (f1 - f0)) / curve
    usable = np.isfinite(vertex) & (curve != 0) & (vertex > x0) & (vertex < x2) & (x0 < x1) & (x1 < x2)
    usable &= (f1 <= f0) & (f1 <= f2)
    out[fit] = np.exp(np.where(usable, vertex, best))
    return out
