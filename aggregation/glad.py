r"""GLAD: worker ability and item difficulty, fitted by EM with a gradient M-step (Whitehill et al., NIPS 2009).

The math lives in pure functions over the corpus's COO arrays (:func:`_e_step`,
:func:`_m_objective`); :class:`GLAD` coordinates the EM loop. Every sum over
annotations is one ``np.bincount``; the M-step hands the objective and its gradient
to ``scipy.optimize.minimize`` (conjugate gradient, as the authors' code).
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import log_expit

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback
from crowdqa.aggregation._params import Check, Interval
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.dawid_skene import _expected_counts, _normalise, _obs_key

__all__ = ["GLAD"]

_HALF_LOG_2PI = 0.5 * float(np.log(2 * np.pi))


def _log_answer(x: NDArray[np.float64], n_classes: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Log-probability of a right and of one given wrong answer at :math:`x = \alpha_w \beta_i`.

    :math:`\log\sigma(x)` and :math:`\log(1 - \sigma(x)) - \log(K - 1)`.
    """
    right = log_expit(x)
    return right, right - x - np.log(n_classes - 1)  # log(1 - sigma(x)) = log sigma(x) - x


def _log_sigmoid(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r""":math:`\log\sigma(x)` and :math:`\sigma(x)` from one ``exp`` and one ``log1p`` (stable for any :math:`x`).

    With :math:`e = \exp(-|x|)`: :math:`\log\sigma(x) = \min(x, 0) - \log(1 + e)` and
    :math:`\sigma(x) = 1 / (1 + e)` for :math:`x \ge 0`, :math:`e / (1 + e)` otherwise.
    """
    e = np.exp(-np.abs(x))
    one_plus = 1.0 + e
    log_sigma = np.minimum(x, 0.0)
    log_sigma -= np.log1p(e)
    return log_sigma, np.where(x >= 0, 1.0, e) / one_plus


def _e_step(
    alpha: NDArray[np.float64],
    log_beta: NDArray[np.float64],
    log_prior: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    worker: NDArray[np.int32],
    label: NDArray[np.int16],
    known: NDArray[np.int64] | None = None,
) -> tuple[NDArray[np.float64], float]:
    r"""Posterior of every item's true class and the log-likelihood at given abilities and difficulties.

    :math:`\log q_i(k) = \log p_k + \sum_{(i,w,o)} \big([o = k]\log\sigma(\alpha_w\beta_i) +
    [o \ne k](\log(1 - \sigma(\alpha_w\beta_i)) - \log(K-1))\big) - \log Z_i`.

    Parameters
    ----------
    alpha : ndarray of shape (n_workers,)
        Abilities :math:`\alpha_w`.
    log_beta : ndarray of shape (n_items,)
        :math:`\log\beta_i` (:math:`\beta_i > 0` is the inverse difficulty).
    log_prior : ndarray of shape (n_classes,)
    token, worker, label : ndarray of shape (n_obs,)
        The annotations (COO).
    known : ndarray of shape (n_items,), optional
        Known class or -1; known items get a one-hot posterior and add their joint
        log-probability to the log-likelihood.

    Returns
    -------
    posterior : ndarray of shape (n_items, n_classes)
    log_likelihood : float
    """
    n_items, n_classes = log_beta.shape[0], log_prior.shape[0]
    right, wrong = _log_answer(alpha[worker] * np.exp(log_beta)[token], n_classes)
    # Every answer counts as wrong for every class; the answered class gets right - wrong on top.
    cell = label.astype(np.intp) * n_items + token  # the answered cell of the class-major joint
    joint = np.bincount(cell, weights=right - wrong, minlength=n_classes * n_items)
    joint = joint.reshape(n_classes, n_items)  # class-major (see _normalise)
    joint += np.bincount(token, weights=wrong, minlength=n_items) + log_prior[:, None]
    post, ll = _normalise(joint, known)
    return post.T, ll


def _log_param_prior(alpha: NDArray, log_beta: NDArray, *, alpha_mean: float, log_beta_mean: float) -> float:
    """Log-density of the independent unit-variance Gaussian priors on the abilities and log inverse difficulties."""
    return float(-0.5 * (np.sum((alpha - alpha_mean) ** 2) + np.sum((log_beta - log_beta_mean) ** 2))
                 - _HALF_LOG_2PI * (alpha.size + log_beta.size))


def _m_objective(
    params: NDArray[np.float64],
    right_prob: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    worker: NDArray[np.int32],
    n_workers: int,
    n_classes: int,
    alpha_mean: float,
    log_beta_mean: float,
    indptr: NDArray[np.int64] | None = None,
) -> tuple[float, NDArray[np.float64]]:
    r"""Minus the EM auxiliary function :math:`Q(\alpha, \log\beta)` and its gradient.

    :math:`Q = \sum_{(i,w,o)} \big(r_{iw}\log\sigma(x_{iw}) + (1 - r_{iw})(\log(1 - \sigma(x_{iw}))
    - \log(K-1))\big) + \log N(\alpha; \mu_\alpha, 1) + \log N(\log\beta; \mu_\beta, 1)`,
    with :math:`x_{iw} = \alpha_w\beta_i` and :math:`r_{iw} = q_i(o)` the posterior
    probability that the answer is right.
    :math:`\partial Q / \partial x_{iw} = r_{iw} - \sigma(x_{iw})`, so
    :math:`\partial Q/\partial\alpha_w = \sum_i (r_{iw} - \sigma(x_{iw}))\beta_i - (\alpha_w - \mu_\alpha)` and
    :math:`\partial Q/\partial\log\beta_i = \sum_w (r_{iw} - \sigma(x_{iw}))x_{iw} - (\log\beta_i - \mu_\beta)`.

    Parameters
    ----------
    params : ndarray of shape (n_workers + n_items,)
        :math:`\alpha` then :math:`\log\beta`.
    right_prob : ndarray of shape (n_obs,)
        :math:`r_{iw}`.
    token, worker : ndarray of shape (n_obs,)
        The annotations, sorted by ``token`` (as a :class:`Corpus` keeps them).
    indptr : ndarray of shape (n_items + 1,), optional
        Where each item's annotations start (computed when not given).

    Returns
    -------
    value : float
    gradient : ndarray of shape (n_workers + n_items,)
    """
    alpha, log_beta = params[:n_workers], params[n_workers:]
    beta_item = np.exp(log_beta)
    beta = beta_item[token]
    x = alpha[worker] * beta
    right, sigma = _log_sigmoid(x)
    # r log s(x) + (1 - r)(log(1 - s(x)) - log(K - 1)), with log(1 - s(x)) = log s(x) - x, summed:
    wrong_prob = 1.0 - right_prob
    q = float(right.sum() - np.dot(wrong_prob, x) - np.log(n_classes - 1) * wrong_prob.sum())
    q += _log_param_prior(alpha, log_beta, alpha_mean=alpha_mean, log_beta_mean=log_beta_mean)
    dx = right_prob - sigma
    # The annotations are sorted by item: dx as the data of an (n_items, n_workers) CSR matrix without
    # copying, whose products give both gradient sums in one sequential pass each.
    if indptr is None:
        indptr = np.concatenate([[0], np.cumsum(np.bincount(token, minlength=log_beta.size))])
    d = sp.csr_array((dx, worker, indptr), shape=(log_beta.size, n_workers))
    grad = np.concatenate([
        d.T @ beta_item - (alpha - alpha_mean),
        (d @ alpha) * beta_item - (log_beta - log_beta_mean),
    ])
    return -q, -grad


def _is_distribution(p: object) -> bool:
    a = np.asarray(p, dtype=np.float64)
    return a.ndim == 1 and bool(np.all(a > 0)) and abs(float(a.sum()) - 1.0) < 1e-9


class GLAD(BaseAggregator):
    r"""GLAD: each worker has an ability, each item a difficulty, and EM estimates both with the true labels.

    Generative model (Whitehill et al. 2009) for :math:`K` classes: item :math:`i` has a
    true class :math:`z_i \sim p` and an inverse difficulty :math:`\beta_i > 0`; worker
    :math:`w` has an ability :math:`\alpha_w \in \mathbb{R}` (0: guessing, negative:
    adversarial) and answers right with probability :math:`\sigma(\alpha_w\beta_i)`,
    else one of the other :math:`K - 1` classes uniformly:

    .. math:: P(y_{iw} = o \mid z_i = k) = \sigma(\alpha_w\beta_i)^{[o = k]}
              \Big(\frac{1 - \sigma(\alpha_w\beta_i)}{K - 1}\Big)^{[o \ne k]}.

    Priors: :math:`\alpha_w \sim N(\mu_\alpha, 1)`, :math:`\log\beta_i \sim N(\mu_\beta, 1)`;
    :math:`p` is fixed (uniform by default).

    * **E-step**: :math:`q_i(k) \propto p_k \prod_{(i,w,o)} P(o \mid z_i = k)` (:func:`_e_step`).
    * **M-step**: maximise :math:`Q(\alpha, \log\beta)`, the expected complete-data
      log-likelihood plus the log priors, by conjugate gradient from the current
      values (:func:`_m_objective` gives :math:`Q` and its gradient), at most
      ``m_step_max_iter`` steps. A partial M-step still increases the objective
      (generalised EM).

    Parameters
    ----------
    max_iter : int, default=100
        Cap on EM iterations.
    tol : float or None, default=1e-5
        Stop when the relative change of the objective (log-likelihood plus log
        priors) is below ``tol``; None runs ``max_iter`` iterations.
    m_step_max_iter : int, default=25
        Conjugate-gradient iterations per M-step.
    m_step_tol : float, default=1e-2
        Gradient tolerance of the M-step (``scipy.optimize.minimize``'s ``tol``).
    alpha_prior_mean : float, default=1.0
        :math:`\mu_\alpha`; also the starting ability.
    beta_prior_mean : float, default=1.0
        :math:`\mu_\beta`, the prior mean of :math:`\log\beta`; also its starting value.
    class_prior : array-like of shape (n_classes,) or None, default=None
        :math:`p`; None is uniform.

    Attributes
    ----------
    labels_ : ndarray of shape (n_items,)
        Argmax of ``proba_``; ties go to the lowest class index.
    proba_ : ndarray of shape (n_items, n_classes)
        :math:`q_i` after the final E-step; one-hot on ``known`` items.
    alpha_ : ndarray of shape (n_workers,)
        Abilities :math:`\alpha_w` (workers without labels keep the prior mean).
    beta_ : ndarray of shape (n_items,)
        Inverse difficulties :math:`\beta_i` (larger: easier).
    skills_ : ndarray of shape (n_workers,)
        ``alpha_``, NaN for annotators without labels.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        Each worker's answers tallied against ``proba_`` (expected counts, rows
        normalised; empty rows uniform): GLAD's own confusion depends on the item.
    class_prior_ : ndarray of shape (n_classes,)
        :math:`p`.
    log_likelihood_ : list of float
        The objective per iteration (log-likelihood plus log priors).
    n_iter_ : int
    converged_ : bool

    Notes
    -----
    ``known`` clamps :math:`q_i` to the known class in every E-step, so those items
    teach the abilities (the paper's use of gold items).

    Defaults are crowd-kit 1.4.2's (``GLAD``): the same priors, starting point, fixed
    uniform class prior and M-step budget. It differs in bookkeeping only: crowd-kit
    stops when its objective divided by ``n_obs * K`` gains less than ``tol`` (its
    first comparison is against the undivided value); here the relative change of the
    objective is tested. :math:`K` here is the corpus's number of classes; crowd-kit
    counts the distinct answers.

    References
    ----------
    .. [1] J. Whitehill, P. Ruvolo, T. Wu, J. Bergsma, J. Movellan (2009). Whose vote
       should count more: optimal integration of labels from labelers of unknown
       expertise. NIPS 22, 2035-2043.
       https://proceedings.neurips.cc/paper/2009/hash/f899139df5e1059396431415e770c6dd-Abstract.html

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1, 2, 2, 2], worker=[0, 1, 2] * 3,
    ...     label=[1, 1, 0, 0, 0, 1, 1, 1, 0], doc_lengths=[1, 1, 1], token_start=[0, 0, 0],
    ...     token_end=[1, 1, 1], doc_ids=["a", "b", "c"], texts=["a", "b", "c"],
    ...     worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["no", "yes"])
    >>> model = GLAD().fit(c)
    >>> model.labels_
    array([1, 0, 1])
    >>> int(model.skills_.argmin())  # w, who disagrees with the other two
    2
    """

    _n_classes_range: ClassVar[tuple[int, int | None]] = (2, None)
    skill_description: ClassVar[str | None] = "ability alpha (0: guessing, negative: adversarial)"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "max_iter": [Interval(int, 1, None)],
        "tol": [Interval(float, 0, None), None],
        "m_step_max_iter": [Interval(int, 1, None)],
        "m_step_tol": [Interval(float, 0, None, closed="neither")],
        "alpha_prior_mean": [Interval(float)],
        "beta_prior_mean": [Interval(float)],
        "class_prior": [None, Check(_is_distribution, "an array of positive probabilities summing to 1")],
    }

    def __init__(self, *, max_iter: int = 100, tol: float | None = 1e-5, m_step_max_iter: int = 25,
                 m_step_tol: float = 1e-2, alpha_prior_mean: float = 1.0, beta_prior_mean: float = 1.0,
                 class_prior: NDArray | None = None) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.m_step_max_iter = m_step_max_iter
        self.m_step_tol = m_step_tol
        self.alpha_prior_mean = alpha_prior_mean
        self.beta_prior_mean = beta_prior_mean
        self.class_prior = class_prior

    def fit(self, corpus: Corpus, *, known: NDArray | None = None, callback: ProgressCallback | None = None) -> GLAD:
        """Run EM on ``corpus``.

        ``known`` (class or -1 per token): clamped in every E-step. ``callback(iteration, objective)`` after
        every EM iteration. Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, known)
        n_workers, n_items, n_classes = corpus.n_workers, corpus.n_tokens, corpus.n_classes
        prior = np.full(n_classes, 1.0 / n_classes) if self.class_prior is None else np.asarray(
            self.class_prior, dtype=np.float64)
        if prior.shape != (n_classes,):
            raise ValueError(f"class_prior must have shape ({n_classes},), found {prior.shape}")
        log_prior = np.log(prior)
        a_mean, b_mean = float(self.alpha_prior_mean), float(self.beta_prior_mean)
        token, worker, label = corpus.token, corpus.worker, corpus.label
        cell = corpus.obs_cell
        e_args = {"token": token, "worker": worker, "label": label, "known": known}
        # int64 worker ids and item pointers: the M-step's CSR views then need no index conversion per call.
        m_args = {"token": token, "worker": worker.astype(np.int64), "n_workers": n_workers, "n_classes": n_classes,
                  "alpha_mean": a_mean, "log_beta_mean": b_mean,
                  "indptr": np.concatenate([[0], np.cumsum(np.bincount(token, minlength=n_items))])}
        params = np.concatenate([np.full(n_workers, a_mean), np.full(n_items, b_mean)])
        monitor = self._monitor(callback)
        converged = False
        for _ in range(int(self.max_iter)):
            post, ll = _e_step(params[:n_workers], params[n_workers:], log_prior, **e_args)
            objective = ll + _log_param_prior(params[:n_workers], params[n_workers:], alpha_mean=a_mean,
                                              log_beta_mean=b_mean)
            right_prob = post.T.ravel()[cell]  # q_i(o) of every answer (post.T is C-ordered)
            res = minimize(partial(_m_objective, right_prob=right_prob, **m_args), params, jac=True, method="CG",
                           tol=float(self.m_step_tol), options={"maxiter": int(self.m_step_max_iter)})
            params = res.x
            if monitor.report(objective):
                converged = True
                break
        # Final E-step so that proba_ matches the final parameters.
        post, _ = _e_step(params[:n_workers], params[n_workers:], log_prior, **e_args)

        alpha = params[:n_workers]
        present = corpus.worker_answers > 0
        counts = _expected_counts(post, token=token, key=_obs_key(corpus), n_workers=n_workers)
        rows = counts.sum(axis=2, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):  # empty rows are replaced on the same line
            confusion = np.where(rows > 0, counts / rows, 1.0 / n_classes)
        self.proba_ = post
        self.labels_ = post.argmax(axis=1).astype(np.int64)
        self.alpha_ = alpha
        self.beta_ = np.exp(params[n_workers:])
        self.skills_ = np.where(present, alpha, np.nan)
        self.worker_confusion_ = confusion
        self.class_prior_ = prior
        self._record_run(monitor.history, converged)
        return self
