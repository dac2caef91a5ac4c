r"""MACE: Multi-Annotator Competence Estimation (Hovy, Berg-Kirkpatrick, Vaswani, Hovy, NAACL 2013).

Each worker either *knows* the answer (and gives it) or *spams* (answers from a
distribution of its own). The math lives in pure functions over the corpus's COO arrays
(:func:`_e_step`, :func:`_m_step`); :class:`MACE` runs random restarts of EM (or of
variational Bayes) and keeps the one with the highest marginal likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import digamma

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_blas_thread
from crowdqa.aggregation._params import ITERATIONS, RANDOM_STATE, RESTARTS, Interval, Options
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.ibcc import dirichlet_kl

__all__ = ["MACE"]

_METHODS = ("vb", "em")


def _e_step(
    spam: NDArray[np.float64],
    know: NDArray[np.float64],
    strategy: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    worker: NDArray[np.int32],
    label: NDArray[np.int16],
    n_items: int,
    known: NDArray[np.int64] | None = None,
    design: _Design | None = None,
) -> tuple[NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64]]:
    r"""Posteriors of the true labels, the log marginal likelihood and the expected counts.

    With :math:`s_w` = P(spamming), :math:`\theta_w` = P(knowing) and :math:`\xi_w` the
    spamming strategy, an answer :math:`o` of worker :math:`w` has, given true class
    :math:`k`, probability :math:`s_w\xi_{w,o} + \theta_w[o = k]`;
    :math:`q_i(k) \propto \frac1K\prod_{(i,w,o)} (s_w\xi_{w,o} + \theta_w[o = k])`.
    The posterior probability that the answer was *known* is
    :math:`\kappa_{iw} = q_i(o)\,\theta_w / (s_w\xi_{w,o} + \theta_w)`; it was spam with
    :math:`1 - \kappa_{iw}`.

    Parameters
    ----------
    spam, know : ndarray of shape (n_workers,)
        :math:`s_w` and :math:`\theta_w` (variational Bayes: sub-normalised weights).
    strategy : ndarray of shape (n_workers, n_classes)
        :math:`\xi_w`.
    token, worker, label : ndarray of shape (n_obs,)
    n_items : int
    known : ndarray of shape (n_items,), optional
        Known class or -1 (clamped: the answers that differ from it are spam for sure).
    design : _Design, optional
        :func:`_design` of the annotations (built here when not given).

    Returns
    -------
    posterior : ndarray of shape (n_items, n_classes)
    log_marginal_likelihood : float
    knowing : ndarray of shape (n_workers, 2)
        Expected spam and knowing counts per worker (columns 0, 1).
    strategy_counts : ndarray of shape (n_workers, n_classes)
        Expected spam answers per worker and class.
    """
    n_workers, n_classes = strategy.shape
    if design is None:
        design = _design(token, worker, label, n_items=n_items, n_workers=n_workers, n_classes=n_classes)
    cell_post, blank, log_lik, knowing, strategy_counts = _cell_e_step(spam, know, strategy, known=known,
                                                                       design=design)
    return _dense_posterior(cell_post, blank, known, design), log_lik, knowing, strategy_counts


@dataclass(frozen=True)
class _Design:
    """The answers grouped by *cell* (item, answered class), built once per fit.

    In cell order: ``key`` (``worker * n_classes + label``) and ``cell`` of every answer;
    per cell its first answer, item and class; per item the number of classes nobody
    answered; per worker and class the number of answers.
    """

    key: NDArray[np.intp]  # (n_obs,)
    cell: NDArray[np.intp]  # (n_obs,)
    cell_start: NDArray[np.intp]  # (n_cells,)
    cell_item: NDArray[np.intp]  # (n_cells,)
    cell_class: NDArray[np.intp]  # (n_cells,)
    unanswered: NDArray[np.float64]  # (n_items,)
    counts: NDArray[np.float64]  # (n_workers, n_classes)


def _design(token: NDArray[np.int64], worker: NDArray[np.int32], label: NDArray[np.int16], *, n_items: int,
            n_workers: int, n_classes: int) -> _Design:
    """Sort the answers by (item, class, worker) once; every E-step then works on contiguous runs."""
    item_class = token.astype(np.intp) * n_classes + label
    order = np.lexsort((worker, item_class))  # a cell's answers by worker, not by row: the same product
    item_class = item_class[order]
    new = np.concatenate([[True], item_class[1:] != item_class[:-1]]) if order.size else order.astype(bool)
    first = np.flatnonzero(new)  # where each cell's run of answers starts
    cell = np.cumsum(new) - 1
    cells = item_class[first]
    key = worker.astype(np.intp) * n_classes + label
    counts = np.bincount(key, minlength=n_workers * n_classes).reshape(n_workers, n_classes).astype(np.float64)
    unanswered = n_classes - np.bincount(cells // n_classes, minlength=n_items).astype(np.float64)
    return _Design(key[order], cell, first, cells // n_classes, cells % n_classes, unanswered, counts)


def _cell_e_step(
    spam: NDArray[np.float64],
    know: NDArray[np.float64],
    strategy: NDArray[np.float64],
    *,
    known: NDArray[np.int64] | None,
    design: _Design,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, NDArray[np.float64], NDArray[np.float64]]:
    r""":func:`_e_step` over the answered cells: the posteriors without an ``exp`` per (item, class).

    Relative to a class nobody answered on item :math:`i`, class :math:`k` has the joint
    probability :math:`w_{ik} = \prod_{w \text{ answered } k \text{ on } i} (1 + \theta_w / (s_w\xi_{w,k}))`
    (the answers' "knowing" mass on top of their spamming mass, which every class shares),
    a product of per-(worker, class) factors over the cell's answers: one ``multiply.reduceat``.
    Then :math:`Z_i = \sum_k w_{ik}` (1 for every class nobody answered),
    :math:`q_i(k) = w_{ik} / Z_i`, and the log-likelihood is
    :math:`\sum_i \log Z_i + \sum_{(i,w,o)} \log(s_w\xi_{w,o}) - n_{\text{items}}\log K`. Where a
    product overflows (an item with a hundred or more confident answers in one class) the
    cells are summed in log space instead.

    Returns
    -------
    cell_post : ndarray of shape (n_cells,)
        :math:`q_i(k)` of every answered cell (0 or 1 on ``known`` items).
    blank : ndarray of shape (n_items,)
        :math:`q_i(k)` of a class :math:`k` nobody answered on item :math:`i`.
    log_marginal_likelihood : float
    knowing : ndarray of shape (n_workers, 2)
    strategy_counts : ndarray of shape (n_workers, n_classes)
    """
    n_items = design.unanswered.shape[0]
    n_classes = strategy.shape[1]
    guess = spam[:, None] * strategy
    ratio = know[:, None] / guess
    with np.errstate(over="ignore"):  # checked on the next line
        weight = np.multiply.reduceat((1.0 + ratio).ravel()[design.key], design.cell_start)
    if np.isfinite(weight).all():
        z = np.bincount(design.cell_item, weights=weight, minlength=n_items) + design.unanswered
        cell_post = weight / z[design.cell_item]
        blank = 1.0 / z
        log_z = np.log(z)
        log_weight = None
    else:  # the same sums in log space, shifted by each item's largest cell
        log_weight = np.add.reduceat(np.log1p(ratio).ravel()[design.key], design.cell_start)
        top = np.zeros(n_items)
        np.maximum.at(top, design.cell_item, log_weight)
        shifted = np.exp(log_weight - top[design.cell_item])
        z = np.bincount(design.cell_item, weights=shifted, minlength=n_items) + design.unanswered * np.exp(-top)
        cell_post = shifted / z[design.cell_item]
        blank = np.exp(-top) / z
        log_z = np.log(z) + top
    if known is not None:  # clamped items: one-hot posteriors; their joint at the known class enters the likelihood
        k_cell = known[design.cell_item]
        hit = k_cell == design.cell_class
        cell_post = np.where(k_cell >= 0, hit.astype(np.float64), cell_post)
        log_z[known >= 0] = 0.0  # a known class nobody answered: joint weight 1
        log_z[design.cell_item[hit]] = np.log(weight[hit]) if log_weight is None else log_weight[hit]
    log_lik = float(log_z.sum()) + float(np.sum(design.counts * np.log(guess))) - n_items * float(np.log(n_classes))
    # P(answer known) = q_i(o) know_w / (guess[w, o] + know_w): summed per (worker, answer).
    right = np.bincount(design.key, weights=cell_post[design.cell], minlength=ratio.size).reshape(ratio.shape)
    strategy_counts = design.counts - right * (know[:, None] / (guess + know[:, None]))
    spammed = strategy_counts.sum(axis=1)
    knowing = np.stack([spammed, design.counts.sum(axis=1) - spammed], axis=1)
    return cell_post, blank, log_lik, knowing, strategy_counts


def _dense_posterior(cell_post: NDArray[np.float64], blank: NDArray[np.float64], known: NDArray[np.int64] | None,
                     design: _Design) -> NDArray[np.float64]:
    """ndarray of shape (n_items, n_classes): the cells' posteriors, ``blank`` for the classes nobody answered."""
    n_classes = design.counts.shape[1]
    post = np.repeat(blank[:, None], n_classes, axis=1)
    if known is not None:
        idx = np.flatnonzero(known >= 0)
        post[idx] = 0.0
        post[idx, known[idx]] = 1.0
    post[design.cell_item, design.cell_class] = cell_post
    return post


def _renumbered(known: NDArray[np.int64], rank: NDArray[np.intp]) -> NDArray[np.int64]:
    """``known`` (per token) with token ``t`` moved to position ``rank[t]``."""
    renumbered = np.empty_like(known)
    renumbered[rank] = known
    return renumbered


def _m_step(counts: NDArray[np.float64], prior: float | NDArray[np.float64], *, variational: bool
            ) -> NDArray[np.float64]:
    r"""New rows from expected counts: smoothed normalisation (EM) or the variational weights (VB).

    EM: :math:`(c + \lambda) / \sum (c + \lambda)`. VB: :math:`\exp\psi(c + a) / \exp\psi(\sum (c + a))`,
    the geometric mean of a Dirichlet(:math:`c + a`) posterior, which sums to less than 1.

    Parameters
    ----------
    counts : ndarray of shape (n_workers, m)
    prior : float or ndarray
        :math:`\lambda` (EM) or the Dirichlet parameters :math:`a` (VB).

    Returns
    -------
    rows : ndarray of shape (n_workers, m)
    """
    total = counts + prior
    if variational:
        return np.exp(digamma(total) - digamma(total.sum(axis=1, keepdims=True)))
    return total / total.sum(axis=1, keepdims=True)


def _objective(ll: float, knowing_post: NDArray, strategy_post: NDArray, knowing_prior: float | NDArray,
               strategy_prior: float | NDArray, *, variational: bool, spamming: NDArray, strategy: NDArray) -> float:
    r"""What the restart increases: the ELBO (VB) or the log-likelihood plus the smoothing's log prior (EM).

    VB: the E-step's log normaliser at :math:`\exp E[\log\theta]` minus the Dirichlet KL
    divergences of the parameter posteriors (``counts + prior``) from their priors. EM: the
    log-likelihood plus :math:`\lambda\sum\log` of every parameter (a Dirichlet(:math:`1 + \lambda`)
    prior, whose MAP estimate the smoothed M-step is).
    """
    if variational:
        return ll - dirichlet_kl(knowing_post, knowing_prior) - dirichlet_kl(strategy_post, strategy_prior)
    return ll + float(knowing_prior) * float(np.log(spamming).sum() + np.log(strategy).sum())


class MACE(BaseAggregator):
    r"""MACE: every worker knows the answer with probability :math:`\theta_w`, else spams from its own :math:`\xi_w`.

    Generative model (Hovy et al. 2013), for item :math:`i` and worker :math:`w`:
    :math:`T_i \sim \mathrm{Uniform}(K)`; :math:`S_{iw} \sim \mathrm{Bernoulli}(1 - \theta_w)`;
    :math:`A_{iw} = T_i` if :math:`S_{iw} = 0`, else :math:`A_{iw} \sim \mathrm{Cat}(\xi_w)`.
    Priors (variational Bayes): :math:`\theta_w \sim \mathrm{Beta}(\beta, \alpha)` on
    (knowing, spamming) and :math:`\xi_w \sim \mathrm{Dir}(\gamma)`.

    * **E-step** (:func:`_e_step`): posteriors :math:`q_i(k)` and the expected counts of
      known and spammed answers, and of spammed answers per class.
    * **M-step** (:func:`_m_step`): EM normalises the counts plus ``smoothing``; VB takes
      :math:`\exp\psi(\cdot)` of the Dirichlet posterior's parameters (mean-field update).

    Each of ``n_restarts`` runs starts from random parameters (rows of
    :math:`U(1, 1 + \text{noise})` draws, normalised) and does ``max_iter`` M/E steps;
    the run with the highest objective wins: the evidence lower bound under VB (MACE
    compares the likelihood at the variational weights), the log-likelihood plus the
    smoothing prior under EM. The competence
    :math:`\theta_w` is the worker's skill.

    Parameters
    ----------
    n_restarts : int, default=10
        Random restarts.
    max_iter : int, default=50
        Iterations per restart.
    tol : float or None, default=None
        Stop a restart when the relative change of its objective is below ``tol``; None
        (MACE's behaviour) runs ``max_iter`` iterations.
    method : {"vb", "em"}, default="vb"
        Variational Bayes with the priors, or EM with ``smoothing``.
    smoothing : float or None, default=None
        EM pseudo-count; None is MACE's :math:`0.01 / K`.
    default_noise : float, default=0.5
        Spread of the random initial values.
    alpha : float, default=0.5
        Beta prior pseudo-count of spamming.
    beta : float, default=0.5
        Beta prior pseudo-count of knowing.
    strategy_prior : float, default=10.0
        :math:`\gamma`, symmetric Dirichlet prior of each spamming strategy (VB).
    random_state : int, numpy.random.Generator or None, default=0
        Seeds the restarts (fixed by default, so a job gives the same result twice).

    Attributes
    ----------
    labels_ : ndarray of shape (n_items,)
        Argmax of ``proba_``; ties go to the lowest class index.
    proba_ : ndarray of shape (n_items, n_classes)
        :math:`q_i` of the best restart.
    competence_ : ndarray of shape (n_workers,)
        :math:`\theta_w` as MACE reports it (under VB the variational weight
        :math:`\exp E[\log\theta_w]`, a little below the posterior mean).
    spamming_ : ndarray of shape (n_workers, 2)
        (spam, knowing) weights :math:`(s_w, \theta_w)`.
    strategy_ : ndarray of shape (n_workers, n_classes)
        :math:`\xi_w`.
    skills_ : ndarray of shape (n_workers,)
        ``competence_``, NaN for annotators without labels.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        :math:`P(o \mid k) \propto s_w\xi_{w,o} + \theta_w[o = k]` (rows normalised).
    class_prior_ : ndarray of shape (n_classes,)
        Uniform (MACE's prior).
    log_likelihood_ : list of float
        The objective per iteration of the best restart: the evidence lower bound (VB) or
        the log marginal likelihood plus the smoothing's log prior (EM).
    n_iter_ : int
        Iterations of the best restart.
    converged_ : bool
    best_restart_ : int

    Notes
    -----
    ``true_labels`` clamps :math:`q_i` to the known class (MACE's control items): an answer
    that differs from it counts as spam.

    Defaults are MACE's (and crowd-kit 1.4.2's). Where crowd-kit 1.4.2 differs: it draws
    every restart from the same seed, so its ten restarts are one; its initial values
    are :math:`U(1, 2.5)` (scipy's ``uniform(loc, scale)`` read as bounds) where MACE
    draws :math:`U(1, 1.5)`; it multiplies probabilities (no log space) and adds
    :math:`10^{-8}` inside the log-likelihood; and it indexes its expected strategy
    counts by sorted worker and label values while its parameters are in order of first
    appearance, so its :math:`\xi_w` belong to other workers unless the rows happen to
    be sorted by worker. This estimator fits on the canonical numbering (annotators by id,
    :attr:`Corpus.worker_rank <crowdqa.aggregation.corpus.Corpus.worker_rank>`; tokens by
    document id and position, :attr:`Corpus.token_rank <crowdqa.aggregation.corpus.Corpus.token_rank>`)
    and draws its starts in it, so its result does not depend on the row order, to the last
    bit: restarts often reach one optimum with objectives equal to rounding, and sums taken
    in the rows' order would let the order of an export pick among them (posteriors differing
    by up to 8e-8 after 30 iterations).

    References
    ----------
    .. [1] D. Hovy, T. Berg-Kirkpatrick, A. Vaswani, E. Hovy (2013). Learning whom to
       trust with MACE. NAACL-HLT 2013, 1120-1130. https://aclanthology.org/N13-1132

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1, 2, 2, 2], worker=[0, 1, 2] * 3,
    ...     label=[1, 1, 0, 0, 0, 0, 1, 1, 0], doc_lengths=[1, 1, 1], token_start=[0, 0, 0],
    ...     token_end=[1, 1, 1], doc_ids=["a", "b", "c"], texts=["a", "b", "c"],
    ...     worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["no", "yes"])
    >>> model = MACE().fit(c)
    >>> model.labels_
    array([1, 0, 1])
    >>> int(model.skills_.argmin())  # w always answers "no"
    2
    """

    skill_description: ClassVar[str | None] = "competence: probability of knowing (not spamming) the answer"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "n_restarts": [RESTARTS],
        "max_iter": [ITERATIONS],
        "tol": [Interval(float, 0, None), None],
        "method": [Options(_METHODS)],
        "smoothing": [Interval(float, 0, None, closed="neither"), None],
        "default_noise": [Interval(float, 0, None)],
        "alpha": [Interval(float, 0, None, closed="neither")],
        "beta": [Interval(float, 0, None, closed="neither")],
        "strategy_prior": [Interval(float, 0, None, closed="neither")],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, *, n_restarts: int = 10, max_iter: int = 50, tol: float | None = None, method: str = "vb",
                 smoothing: float | None = None, default_noise: float = 0.5, alpha: float = 0.5, beta: float = 0.5,
                 strategy_prior: float = 10.0, random_state: int | np.random.Generator | None = 0) -> None:
        self.n_restarts = n_restarts
        self.max_iter = max_iter
        self.tol = tol
        self.method = method
        self.smoothing = smoothing
        self.default_noise = default_noise
        self.alpha = alpha
        self.beta = beta
        self.strategy_prior = strategy_prior
        self.random_state = random_state

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None,
            callback: ProgressCallback | None = None) -> MACE:
        """Run the restarts and keep the best.

        ``true_labels`` (class or -1 per token): clamped in every E-step. ``callback(iteration, objective)`` after
        every iteration of every restart (iterations counted across restarts). Parameters and return value:
        :meth:`BaseAggregator.fit <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, true_labels)
        rng = np.random.default_rng(self.random_state)
        n_workers, n_classes = corpus.n_workers, corpus.n_classes
        # Fitted on the canonical numbering (tokens by document id and position, annotators by id), so every
        # sum adds the same numbers in the same order for any row order of an export: restarts whose
        # objectives tie to rounding are ranked alike, and the result is the same to the last bit.
        token_rank, worker_rank = corpus.token_rank, corpus.worker_rank
        if known is not None:
            known = _renumbered(known, token_rank)
        variational = self.method == "vb"
        if variational:
            knowing_prior: float | NDArray = np.array([float(self.alpha), float(self.beta)])
            strategy_prior: float | NDArray = float(self.strategy_prior)
        else:
            knowing_prior = strategy_prior = (0.01 / n_classes if self.smoothing is None else float(self.smoothing))
        design = _design(token_rank[corpus.token], worker_rank[corpus.worker], corpus.label, n_items=corpus.n_tokens,
                         n_workers=n_workers, n_classes=n_classes)
        e_args = {"known": known, "design": design}
        noise = float(self.default_noise)
        done = 0

        def progress(iteration: int, value: float) -> None:
            if callback is not None:
                callback(done + iteration, value)

        best = None
        for restart in range(int(self.n_restarts)):
            # drawn in the canonical annotator order: a seed means the same start for any row order
            spamming = rng.uniform(1.0, 1.0 + noise, size=(n_workers, 2))
            strategy = rng.uniform(1.0, 1.0 + noise, size=(n_workers, n_classes))
            spamming /= spamming.sum(axis=1, keepdims=True)
            strategy /= strategy.sum(axis=1, keepdims=True)
            monitor = self._monitor(progress)
            _, _, ll, knowing, counts = _cell_e_step(spamming[:, 0], spamming[:, 1], strategy, **e_args)
            converged = False
            for _ in range(int(self.max_iter)):
                spamming = _m_step(knowing, knowing_prior, variational=variational)
                strategy = _m_step(counts, strategy_prior, variational=variational)
                posts = (knowing + knowing_prior, counts + strategy_prior)
                _, _, ll, knowing, counts = _cell_e_step(spamming[:, 0], spamming[:, 1], strategy, **e_args)
                objective = _objective(ll, *posts, knowing_prior, strategy_prior, variational=variational,
                                       spamming=spamming, strategy=strategy)
                if monitor.report(objective):
                    converged = True
                    break
            done += len(monitor.history)
            if best is None or objective > best[0]:
                best = (objective, spamming, strategy, monitor.history, converged, restart)
        _, spamming, strategy, history, converged, restart = best
        # Final E-step of the best restart's parameters (its last one already; recomputed for proba_).
        cell_post, blank, _, _, _ = _cell_e_step(spamming[:, 0], spamming[:, 1], strategy, **e_args)
        # back to the corpus's numbering
        post = _dense_posterior(cell_post, blank, known, design)[token_rank]
        spamming, strategy = spamming[worker_rank], strategy[worker_rank]

        present = corpus.worker_answers > 0
        confusion = spamming[:, 0, None, None] * strategy[:, None, :] + spamming[:, 1, None, None] * np.eye(n_classes)
        confusion /= confusion.sum(axis=2, keepdims=True)
        self.proba_ = post
        self.labels_ = post.argmax(axis=1).astype(np.int64)
        self.spamming_ = spamming
        self.strategy_ = strategy
        self.competence_ = spamming[:, 1].copy()
        self.skills_ = np.where(present, self.competence_, np.nan)
        self.worker_confusion_ = confusion
        self.class_prior_ = np.full(n_classes, 1.0 / n_classes)
        self._record_run(history, converged)
        self.best_restart_ = restart
        return self
