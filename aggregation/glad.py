r"""GLAD: worker ability and item difficulty, fitted by EM with a gradient M-step (Whitehill et al., NIPS 2009).

The math lives in pure functions over the corpus's COO arrays (:func:`_e_step`,
:func:`_m_objective`, :func:`_newton_sweep`); :class:`GLAD` coordinates the EM loop. Every
sum over annotations is one ``np.bincount``. The default M-step is one Newton step on the
abilities and one on the log inverse difficulties per EM iteration (ECM, Meng & Rubin 1993),
each vectorized over all workers or items and guarded so that it never lowers the EM
objective; ``m_step="cg"`` hands the objective and its gradient to
``scipy.optimize.minimize`` (conjugate gradient, as the authors' code and crowd-kit).
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_blas_thread
from crowdqa.aggregation._confusion import confusion_rows, expected_counts, obs_key
from crowdqa.aggregation._normalise import normalise
from crowdqa.aggregation._params import INNER_ITERATIONS, ITERATIONS, Check, Interval, Options
from crowdqa.aggregation.corpus import Corpus

__all__ = ["GLAD"]

_HALF_LOG_2PI = 0.5 * float(np.log(2 * np.pi))


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
    x = alpha[worker] * np.exp(log_beta)[token]
    cell = label.astype(np.intp) * log_beta.shape[0] + token  # the answered cell of the class-major joint
    post, ll = _posterior(x, log_expit(x), log_prior, token=token, cell=cell, n_items=log_beta.shape[0], known=known)
    return post.T, ll


def _posterior(
    x: NDArray[np.float64],
    log_sigma: NDArray[np.float64],
    log_prior: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    cell: NDArray[np.intp],
    n_items: int,
    known: NDArray[np.int64] | None,
) -> tuple[NDArray[np.float64], float]:
    r"""The E-step from :math:`x_{iw} = \alpha_w\beta_i` and :math:`\log\sigma(x_{iw})` of every answer.

    Parameters
    ----------
    x, log_sigma : ndarray of shape (n_obs,)
    log_prior : ndarray of shape (n_classes,)
    token : ndarray of shape (n_obs,)
    cell : ndarray of shape (n_obs,)
        ``label * n_items + token`` (:attr:`Corpus.obs_cell`).
    n_items : int
    known : ndarray of shape (n_items,) or None

    Returns
    -------
    posterior : ndarray of shape (n_classes, n_items)
        Class-major.
    log_likelihood : float
    """
    n_classes = log_prior.shape[0]
    log_k1 = np.log(n_classes - 1)
    wrong = log_sigma - x - log_k1  # log(1 - sigma(x)) - log(K - 1), with log(1 - sigma(x)) = log sigma(x) - x
    # Every answer counts as wrong for every class; the answered class gets right - wrong = x + log(K - 1) on top.
    joint = np.bincount(cell, weights=x + log_k1, minlength=n_classes * n_items).reshape(n_classes, n_items)
    joint += np.bincount(token, weights=wrong, minlength=n_items) + log_prior[:, None]
    return normalise(joint, known)


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


def _ability_step(
    alpha: NDArray[np.float64],
    beta: NDArray[np.float64],
    sigma: NDArray[np.float64],
    right_prob: NDArray[np.float64],
    *,
    worker: NDArray[np.intp],
    alpha_mean: float,
) -> tuple[NDArray[np.float64], float]:
    r"""One Newton step on every ability :math:`\alpha_w` at fixed difficulties; it never lowers :math:`Q`.

    With :math:`\beta` fixed, :math:`Q` is a sum of one concave function per worker,
    :math:`Q_w(\alpha_w) = \sum_{(i,w,o)} f_{iw}(\alpha_w\beta_i) - (\alpha_w - \mu_\alpha)^2/2`
    with :math:`f'' = -\sigma(1-\sigma) \in [-1/4, 0]`, so
    :math:`-Q_w'' \le H_w = \sum_i \beta_i^2/4 + 1` everywhere. The step
    :math:`g_w / \max(h_w, H_w/2)` (:math:`g_w, h_w`: gradient and minus the curvature at the
    current point, i.e. Newton's step unless it is longer than :math:`2g_w/H_w`) then gains at least
    :math:`g_w d_w - H_w d_w^2/2 \ge 0` (Böhning & Lindsay 1988's quadratic bound).

    Parameters
    ----------
    alpha : ndarray of shape (n_workers,)
    beta : ndarray of shape (n_obs,)
        :math:`\beta_i` of every answer's item.
    sigma : ndarray of shape (n_obs,)
        :math:`\sigma(\alpha_w\beta_i)` at the current point.
    right_prob : ndarray of shape (n_obs,)
    worker : ndarray of shape (n_obs,)
    alpha_mean : float

    Returns
    -------
    alpha : ndarray of shape (n_workers,)
    max_gradient : float
        :math:`\max_w |g_w|` before the step.
    """
    n_workers = alpha.shape[0]
    beta2 = beta * beta
    grad = np.bincount(worker, weights=(right_prob - sigma) * beta, minlength=n_workers) - (alpha - alpha_mean)
    curv = np.bincount(worker, weights=sigma * (1.0 - sigma) * beta2, minlength=n_workers) + 1.0
    half_bound = np.bincount(worker, weights=beta2, minlength=n_workers) * 0.125 + 0.5
    return alpha + grad / np.maximum(curv, half_bound), float(np.abs(grad).max(initial=0.0))


def _difficulty_step(
    log_beta: NDArray[np.float64],
    x: NDArray[np.float64],
    right_prob: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    log_beta_mean: float,
    max_halvings: int = 30,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
    r"""One Newton step on every :math:`\log\beta_i` at fixed abilities, halved per item until :math:`Q_i` rises.

    With :math:`\alpha` fixed, :math:`Q` is a sum of one function per item,
    :math:`Q_i(\ell) = \sum_{(i,w,o)} f_{iw}(\alpha_w e^{\ell}) - (\ell - \mu_\beta)^2/2`, not concave
    in general. Its curvature is :math:`-F_i + G_i` with the Fisher term
    :math:`F_i = \sum \sigma(1-\sigma)x^2 + 1` and :math:`G_i = \sum (r - \sigma)x`; the step divides the
    gradient by :math:`F_i + \max(0, -G_i)` (the exact curvature where it is the larger, Fisher's where
    the exact one is smaller or of the wrong sign), and an item whose :math:`Q_i` would drop halves
    its step (at most ``max_halvings`` times, then keeps its value).

    Parameters
    ----------
    log_beta : ndarray of shape (n_items,)
    x : ndarray of shape (n_obs,)
        :math:`\alpha_w\beta_i` of every answer at the current point.
    right_prob : ndarray of shape (n_obs,)
    token : ndarray of shape (n_obs,)
    log_beta_mean : float
    max_halvings : int, default=30

    Returns
    -------
    log_beta : ndarray of shape (n_items,)
    x, log_sigma : ndarray of shape (n_obs,)
        :math:`x` and :math:`\log\sigma(x)` at the new point.
    max_gradient : float
        :math:`\max_i |g_i|` before the step.
    """
    n_items = log_beta.shape[0]
    log_sigma, sigma = _log_sigmoid(x)
    dx = (right_prob - sigma) * x
    fit_grad = np.bincount(token, weights=dx, minlength=n_items)
    grad = fit_grad - (log_beta - log_beta_mean)
    curv = np.bincount(token, weights=sigma * (1.0 - sigma) * x * x, minlength=n_items) + 1.0
    curv += np.maximum(0.0, -fit_grad)
    step = grad / curv

    def gain(step: NDArray, x_new: NDArray, log_sigma_new: NDArray, obs: NDArray | slice) -> NDArray:
        """Q_i(new) - Q_i(old) of every item, from the answers ``obs`` (all of them, or the halved items')."""
        fit = (log_sigma_new - log_sigma[obs]) - (1.0 - right_prob[obs]) * (x_new - x[obs])
        centred = log_beta - log_beta_mean
        return np.bincount(token[obs], weights=fit, minlength=n_items) - step * (centred + 0.5 * step)

    x_new = x * np.exp(step)[token]
    log_sigma_new = log_expit(x_new)
    change = gain(step, x_new, log_sigma_new, slice(None))
    worse = change < 0
    obs = np.zeros(0, dtype=np.intp)
    if worse.any():  # only the answers of the items whose Q_i dropped are evaluated again
        obs = np.flatnonzero(worse[token])
        # A drop within the rounding error of the sums (an item that has converged) is no drop.
        size = np.abs(log_sigma[obs]) + np.abs(log_sigma_new[obs]) + np.abs(x[obs]) + np.abs(x_new[obs])
        noise = np.bincount(token[obs], weights=size, minlength=n_items) + (log_beta - log_beta_mean) ** 2 + 1.0
        worse &= change < -16 * np.finfo(np.float64).eps * noise
        obs = obs[worse[token[obs]]]
    if obs.size:
        for _ in range(max_halvings):
            step = np.where(worse, 0.5 * step, step)
            x_obs = x[obs] * np.exp(step[token[obs]])
            ls_obs = log_expit(x_obs)
            x_new[obs], log_sigma_new[obs] = x_obs, ls_obs
            worse &= gain(step, x_obs, ls_obs, obs) < 0
            if not worse.any():
                break
        else:  # still no gain: those items keep their value
            step[worse] = 0.0
            keep = obs[worse[token[obs]]]
            x_new[keep], log_sigma_new[keep] = x[keep], log_sigma[keep]
    return log_beta + step, x_new, log_sigma_new, float(np.abs(grad).max(initial=0.0))


def _newton_sweep(
    alpha: NDArray[np.float64],
    log_beta: NDArray[np.float64],
    x: NDArray[np.float64],
    right_prob: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    worker: NDArray[np.intp],
    alpha_mean: float,
    log_beta_mean: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], float]:
    r"""One conditional maximisation step of each block: the abilities (:func:`_ability_step`), then the difficulties.

    Each step is Newton's on a sum of one-dimensional functions (one per worker, one per item),
    so both are vectorized; neither lowers :math:`Q` (:func:`_m_objective`), so EM with this
    M-step is a generalised EM (ECM, Meng & Rubin 1993) and its objective never decreases.

    Parameters
    ----------
    alpha : ndarray of shape (n_workers,)
    log_beta : ndarray of shape (n_items,)
    x : ndarray of shape (n_obs,)
        :math:`\alpha_w\beta_i` at (``alpha``, ``log_beta``).
    right_prob : ndarray of shape (n_obs,)
        :math:`r_{iw} = q_i(o)`.
    token, worker : ndarray of shape (n_obs,)
    alpha_mean, log_beta_mean : float

    Returns
    -------
    alpha, log_beta : ndarray
        The new point.
    x, log_sigma : ndarray of shape (n_obs,)
        :math:`x` and :math:`\log\sigma(x)` there (the next E-step's input).
    max_gradient : float
        The largest gradient component met before the steps.
    """
    beta = np.exp(log_beta)[token]
    alpha, g_alpha = _ability_step(alpha, beta, expit(x), right_prob, worker=worker, alpha_mean=alpha_mean)
    log_beta, x, log_sigma, g_beta = _difficulty_step(log_beta, alpha[worker] * beta, right_prob, token=token,
                                                      log_beta_mean=log_beta_mean)
    return alpha, log_beta, x, log_sigma, max(g_alpha, g_beta)


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
    * **M-step**: increase :math:`Q(\alpha, \log\beta)`, the expected complete-data
      log-likelihood plus the log priors (:func:`_m_objective` gives :math:`Q` and its
      gradient), from the current values. The paper does it by gradient ascent. Default
      (``m_step="newton"``): one Newton step on every :math:`\alpha_w` at fixed
      :math:`\beta`, then one on every :math:`\log\beta_i` at the new :math:`\alpha`
      (:func:`_newton_sweep`): :math:`Q` is a sum of one-dimensional functions within
      each block, so each step is a handful of ``bincount`` sums, and each is guarded so that
      it never lowers :math:`Q`. That is the ECM algorithm (Meng & Rubin 1993): EM's
      monotone objective and fixed points, with one conditional maximisation step per block
      per iteration. ``m_step="cg"``: conjugate gradient (``scipy.optimize.minimize``), as the
      authors' code (GSL's Polak-Ribière, 25 iterations at most) and crowd-kit; each CG
      iteration evaluates :math:`Q` over every answer one or more times, which made it 7-14x
      slower per fit than the Newton steps (measured at 30k and 300k labels) for the same
      fixed point. A partial M-step still increases the objective (generalised EM).

    Parameters
    ----------
    max_iter : int, default=100
        Cap on EM iterations.
    tol : float or None, default=1e-5
        Stop when the relative change of the objective (log-likelihood plus log
        priors) is below ``tol``; None runs ``max_iter`` iterations.
    m_step : {"newton", "cg"}, default="newton"
        The M-step's optimiser (see above).
    m_step_max_iter : int or None, default=None
        Newton sweeps (both blocks) or conjugate-gradient iterations per M-step; None is
        1 sweep for ``"newton"`` (ECM) and 25 iterations for ``"cg"`` (the authors' code).
    m_step_tol : float, default=1e-2
        Gradient tolerance of the M-step: sweeps stop once no component of the gradient
        of :math:`Q` exceeds it (``"cg"``: ``scipy.optimize.minimize``'s ``tol``).
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
        :math:`q_i` after the final E-step; one-hot on ``true_labels`` items.
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
    ``true_labels`` clamps :math:`q_i` to the known class in every E-step, so those items
    teach the abilities (the paper's use of gold items).

    Defaults are crowd-kit 1.4.2's (``GLAD``): the same priors, starting point and fixed
    uniform class prior; ``m_step="cg"`` also has its M-step budget and reproduces its
    iterations (tested). It differs in bookkeeping only: crowd-kit
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
    .. [2] X.-L. Meng, D. B. Rubin (1993). Maximum likelihood estimation via the ECM
       algorithm: a general framework. Biometrika 80(2), 267-278. doi:10.1093/biomet/80.2.267
    .. [3] D. Böhning, B. G. Lindsay (1988). Monotonicity of quadratic-approximation
       algorithms. Ann. Inst. Stat. Math. 40(4), 641-663. doi:10.1007/BF00049423

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
        "max_iter": [ITERATIONS],
        "tol": [Interval(float, 0, None), None],
        "m_step": [Options(("newton", "cg"))],
        "m_step_max_iter": [INNER_ITERATIONS, None],
        "m_step_tol": [Interval(float, 0, None, closed="neither")],
        "alpha_prior_mean": [Interval(float)],
        "beta_prior_mean": [Interval(float)],
        "class_prior": [None, Check(_is_distribution, "an array of positive probabilities summing to 1")],
    }

    def __init__(self, *, max_iter: int = 100, tol: float | None = 1e-5, m_step: str = "newton",
                 m_step_max_iter: int | None = None, m_step_tol: float = 1e-2, alpha_prior_mean: float = 1.0,
                 beta_prior_mean: float = 1.0, class_prior: NDArray | None = None) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.m_step = m_step
        self.m_step_max_iter = m_step_max_iter
        self.m_step_tol = m_step_tol
        self.alpha_prior_mean = alpha_prior_mean
        self.beta_prior_mean = beta_prior_mean
        self.class_prior = class_prior

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None,
            callback: ProgressCallback | None = None) -> GLAD:
        """Run EM on ``corpus``.

        ``true_labels`` (class or -1 per token): clamped in every E-step. ``callback(iteration, objective)`` after
        every EM iteration. Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, true_labels)
        n_workers, n_items, n_classes = corpus.n_workers, corpus.n_tokens, corpus.n_classes
        prior = np.full(n_classes, 1.0 / n_classes) if self.class_prior is None else np.asarray(
            self.class_prior, dtype=np.float64)
        if prior.shape != (n_classes,):
            raise ValueError(f"class_prior must have shape ({n_classes},), found {prior.shape}")
        log_prior = np.log(prior)
        a_mean, b_mean = float(self.alpha_prior_mean), float(self.beta_prior_mean)
        token, worker, cell = corpus.token, corpus.worker_index, corpus.obs_cell
        newton = self.m_step == "newton"
        m_iter = int(self.m_step_max_iter or (1 if newton else 25))
        alpha, log_beta = np.full(n_workers, a_mean), np.full(n_items, b_mean)
        x = alpha[worker] * np.exp(log_beta)[token]
        log_sigma = log_expit(x)
        if not newton:
            # int64 worker ids and item pointers: the M-step's CSR views then need no index conversion per call.
            m_args = {"token": token, "worker": worker.astype(np.int64), "n_workers": n_workers,
                      "n_classes": n_classes, "alpha_mean": a_mean, "log_beta_mean": b_mean,
                      "indptr": corpus.token_obs_start}
        monitor = self._monitor(callback)
        converged = False
        for _ in range(int(self.max_iter)):
            post, ll = _posterior(x, log_sigma, log_prior, token=token, cell=cell, n_items=n_items, known=known)
            objective = ll + _log_param_prior(alpha, log_beta, alpha_mean=a_mean, log_beta_mean=b_mean)
            right_prob = post.ravel()[cell]  # q_i(o) of every answer (post is class-major, C-ordered)
            if newton:
                for _ in range(m_iter):
                    alpha, log_beta, x, log_sigma, max_grad = _newton_sweep(
                        alpha, log_beta, x, right_prob, token=token, worker=worker, alpha_mean=a_mean,
                        log_beta_mean=b_mean)
                    if max_grad < float(self.m_step_tol):
                        break
            else:
                res = minimize(partial(_m_objective, right_prob=right_prob, **m_args),
                               np.concatenate([alpha, log_beta]), jac=True, method="CG", tol=float(self.m_step_tol),
                               options={"maxiter": m_iter})
                alpha, log_beta = res.x[:n_workers], res.x[n_workers:]
                x = alpha[worker] * np.exp(log_beta)[token]
                log_sigma = log_expit(x)
            if monitor.report(objective):
                converged = True
                break
        # Final E-step so that proba_ matches the final parameters.
        post, _ = _posterior(x, log_sigma, log_prior, token=token, cell=cell, n_items=n_items, known=known)
        post = post.T

        present = corpus.worker_answers > 0
        confusion = confusion_rows(expected_counts(post, token=token, key=obs_key(corpus), n_workers=n_workers))
        self.proba_ = post
        self.labels_ = post.argmax(axis=1).astype(np.int64)
        self.alpha_ = alpha
        self.beta_ = np.exp(log_beta)
        self.skills_ = np.where(present, alpha, np.nan)
        self.worker_confusion_ = confusion
        self.class_prior_ = prior
        self._record_run(monitor.history, converged)
        return self
