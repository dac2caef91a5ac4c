r"""IBCC, the Bayesian Dawid-Skene model, by variational inference (Kim & Ghahramani, AISTATS 2012).

The E-step and the expected counts are Dawid-Skene's (:mod:`crowdqa.aggregation._confusion`,
one ``np.bincount`` per class over all annotations), applied to the expected log
parameters :math:`E[\log\pi]`, :math:`E[\log\kappa]` of Dirichlet posteriors; the
M-step adds the counts to the prior pseudo-counts.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import digamma, gammaln, logsumexp

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_blas_thread
from crowdqa.aggregation._bio import bio_decode
from crowdqa.aggregation._confusion import e_step, expected_counts, obs_key
from crowdqa.aggregation._params import ITERATIONS, Interval
from crowdqa.aggregation.corpus import Corpus

__all__ = ["IBCC", "dirichlet_kl"]


def dirichlet_kl(post: NDArray[np.float64], prior: float | NDArray[np.float64]) -> float:
    r"""Summed :math:`KL(\mathrm{Dir}(a) \| \mathrm{Dir}(b))` of the rows (last axis) of ``post`` and ``prior``.

    :math:`\log\Gamma(a_0) - \sum\log\Gamma(a_k) - \log\Gamma(b_0) + \sum\log\Gamma(b_k) +
    \sum (a_k - b_k)(\psi(a_k) - \psi(a_0))`.
    """
    prior = np.broadcast_to(prior, post.shape)
    a0, b0 = post.sum(axis=-1), prior.sum(axis=-1)
    return float(np.sum(gammaln(a0) - gammaln(b0) - gammaln(post).sum(axis=-1) + gammaln(prior).sum(axis=-1)
                        + ((post - prior) * (digamma(post) - digamma(a0)[..., None])).sum(axis=-1)))


def _expected_log(params: NDArray[np.float64]) -> NDArray[np.float64]:
    r""":math:`E[\log p_k] = \psi(a_k) - \psi(\sum_j a_j)` under :math:`\mathrm{Dir}(a)`, along the last axis."""
    return digamma(params) - digamma(params.sum(axis=-1, keepdims=True))


class IBCC(BaseAggregator):
    r"""Independent Bayesian Classifier Combination: Dawid-Skene with Dirichlet priors, by variational Bayes.

    Generative model (Kim & Ghahramani 2012): class proportions
    :math:`\kappa \sim \mathrm{Dir}(\nu_0)`; for every worker :math:`w` and true class
    :math:`t`, a confusion row :math:`\pi_{w,t} \sim \mathrm{Dir}(\alpha_{0,t})`; item
    :math:`i` has :math:`z_i \sim \mathrm{Cat}(\kappa)` and worker :math:`w` answers
    :math:`c_{iw} \sim \mathrm{Cat}(\pi_{w,z_i})`. The mean-field posterior
    :math:`q(z)q(\kappa)q(\pi)` is found by coordinate ascent:

    * **E-step**: :math:`\log q_i(t) = E[\log\kappa_t] + \sum_{(i,w,c)} E[\log\pi_{w,t,c}] - \log Z_i`,
      with :math:`E[\log\pi_{w,t,c}] = \psi(\alpha_{w,t,c}) - \psi(\sum_{c'}\alpha_{w,t,c'})`;
    * **M-step**: :math:`\alpha_{w,t,c} = \alpha_{0,t,c} + \sum_{(i,w,c)} q_i(t)`,
      :math:`\nu_t = \nu_{0,t} + \sum_i q_i(t)`.

    The objective is the evidence lower bound
    :math:`\mathcal{L} = \sum_i \log Z_i - KL(q(\pi)\|p(\pi)) - KL(q(\kappa)\|p(\kappa))`,
    which every step increases. A worker with few labels keeps a confusion matrix
    near the prior mean, so sparse workers shrink toward the prior instead of getting
    the extreme estimates of maximum likelihood.

    Parameters
    ----------
    max_iter : int, default=500
        Cap on iterations (pyIBCC's ``max_iterations``).
    tol : float or None, default=1e-6
        Stop when the relative change of the bound is below ``tol``; None runs
        ``max_iter`` iterations.
    diagonal_prior : float, default=2.0
        :math:`\alpha_{0,t,t}`: prior pseudo-count of a right answer.
    off_diagonal_prior : float, default=1.0
        :math:`\alpha_{0,t,c}`, :math:`c \ne t`. With the default pair each row sums to
        :math:`K + 1`: a weak belief that workers are better than chance (pyIBCC's
        example configuration, whose README suggests rows summing to between
        :math:`K` and :math:`2K`).
    class_prior_strength : float, default=100.0
        :math:`\sum_t \nu_{0,t}`, spread evenly over the classes (pyIBCC's README: "a good
        choice is to try values where the sum of elements of nu0 = 100").

    Attributes
    ----------
    labels_ : ndarray of shape (n_items,)
        Argmax of ``proba_`` (ties to the lowest class index); on a BIO corpus, each
        document's most probable valid BIO sequence under ``proba_``
        (:func:`crowdqa.aggregation._bio.bio_decode`).
    proba_ : ndarray of shape (n_items, n_classes)
        :math:`q_i` after the final E-step; one-hot on ``true_labels`` items;
        ``class_prior_`` on items nobody labelled.
    alpha_ : ndarray of shape (n_workers, n_classes, n_classes)
        Posterior Dirichlet parameters of the confusion rows.
    nu_ : ndarray of shape (n_classes,)
        Posterior Dirichlet parameters of the class proportions.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        Posterior mean :math:`E[\pi_{w,t,c}]`.
    class_prior_ : ndarray of shape (n_classes,)
        Posterior mean :math:`E[\kappa]`.
    skills_ : ndarray of shape (n_workers,)
        Expected accuracy :math:`\sum_t E[\kappa_t] E[\pi_{w,t,t}]` (NaN: no labels).
    log_likelihood_ : list of float
        The evidence lower bound per iteration.
    n_iter_ : int
    converged_ : bool

    Notes
    -----
    ``true_labels`` clamps :math:`q_i` to the known class in every E-step (training labels,
    as in pyIBCC's semi-supervised mode). Iterations start from the priors' expected
    log parameters (pyIBCC), so the first E-step is a vote weighted by the prior.

    crowd-kit 1.4.2 has no Bayesian Dawid-Skene; the tests check the bound against the
    exact log evidence and the posteriors against exact ones by enumeration on tiny
    corpora, and the accuracy against :class:`~crowdqa.aggregation.dawid_skene.DawidSkene`.

    References
    ----------
    .. [1] H.-C. Kim, Z. Ghahramani (2012). Bayesian classifier combination. AISTATS
       2012, PMLR 22, 619-627. https://proceedings.mlr.press/v22/kim12.html
    .. [2] E. Simpson, S. Roberts, I. Psorakis, A. Smith (2013). Dynamic Bayesian
       combination of multiple imperfect classifiers. In Decision Making and
       Imperfection, Springer, 1-35. doi:10.1007/978-3-642-36406-8_1

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1, 2, 2], worker=[0, 1, 2, 0, 1, 2, 0, 1],
    ...     label=[1, 1, 0, 0, 0, 1, 1, 1], doc_lengths=[1, 1, 1], token_start=[0, 0, 0],
    ...     token_end=[1, 1, 1], doc_ids=["a", "b", "c"], texts=["a", "b", "c"],
    ...     worker_ids=["u", "v", "w"], worker_roles=["crowd"] * 3, class_names=["no", "yes"])
    >>> model = IBCC().fit(c)
    >>> model.labels_
    array([1, 0, 1])
    >>> model.skills_.round(2)
    array([0.76, 0.76, 0.51])
    """

    skill_description: ClassVar[str | None] = "expected accuracy under the posterior confusion matrix"

    _parameter_constraints: ClassVar[dict[str, list]] = {
        "max_iter": [ITERATIONS],
        "tol": [Interval(float, 0, None), None],
        "diagonal_prior": [Interval(float, 0, None, closed="neither")],
        "off_diagonal_prior": [Interval(float, 0, None, closed="neither")],
        "class_prior_strength": [Interval(float, 0, None, closed="neither")],
    }

    def __init__(self, *, max_iter: int = 500, tol: float | None = 1e-6, diagonal_prior: float = 2.0,
                 off_diagonal_prior: float = 1.0, class_prior_strength: float = 100.0) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.diagonal_prior = diagonal_prior
        self.off_diagonal_prior = off_diagonal_prior
        self.class_prior_strength = class_prior_strength

    @one_blas_thread
    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None,
            callback: ProgressCallback | None = None) -> IBCC:
        """Run the variational updates on ``corpus``.

        ``true_labels`` (class or -1 per token): clamped in every E-step. ``callback(iteration, bound)`` after every
        iteration. Parameters and return value: :meth:`BaseAggregator.fit
        <crowdqa.aggregation._base.BaseAggregator.fit>`.
        """
        known = self._start_fit(corpus, true_labels)
        n_workers, n_classes, n_items = corpus.n_workers, corpus.n_classes, corpus.n_tokens
        alpha0 = np.full((n_classes, n_classes), float(self.off_diagonal_prior))
        np.fill_diagonal(alpha0, float(self.diagonal_prior))
        nu0 = np.full(n_classes, float(self.class_prior_strength) / n_classes)
        token, key = corpus.token, obs_key(corpus)
        labelled = np.diff(corpus.token_obs_start) > 0
        if known is not None:
            labelled |= known >= 0
        # Items with neither labels nor a known class are left out of the model (their
        # posterior is the predictive E[kappa]); their log Z_i is removed from the bound.
        n_blank = int(np.count_nonzero(~labelled))
        scratch = np.empty(corpus.n_obs)  # the gathers of every step, in one buffer (see DawidSkene.fit)
        e_args = {"token": token, "key": key, "n_tokens": n_items, "known": known, "scratch": scratch}

        alpha = np.broadcast_to(alpha0, (n_workers, n_classes, n_classes)).copy()
        nu = nu0.copy()
        monitor = self._monitor(callback)
        converged = False
        for _ in range(int(self.max_iter)):
            log_kappa = _expected_log(nu)
            post, ll = e_step(log_kappa, _expected_log(alpha), **e_args)
            bound = (ll - n_blank * float(logsumexp(log_kappa))
                     - dirichlet_kl(alpha, alpha0) - dirichlet_kl(nu, nu0))
            alpha = alpha0 + expected_counts(post, token=token, key=key, n_workers=n_workers, scratch=scratch)
            nu = nu0 + post[labelled].sum(axis=0)
            if monitor.report(bound):
                converged = True
                break
        # Final E-step so that proba_ matches the final posteriors of the parameters.
        post, _ = e_step(_expected_log(nu), _expected_log(alpha), **e_args)
        post = np.ascontiguousarray(post)
        kappa = nu / nu.sum()
        post[~labelled] = kappa
        confusion = alpha / alpha.sum(axis=2, keepdims=True)
        present = corpus.worker_answers > 0
        accuracy = np.einsum("t,wtt->w", kappa, confusion)
        self.proba_ = post
        self.labels_ = bio_decode(post, corpus)
        self.alpha_ = alpha
        self.nu_ = nu
        self.worker_confusion_ = confusion
        self.class_prior_ = kappa
        self.skills_ = np.where(present, accuracy, np.nan)
        self._record_run(monitor.history, converged)
        return self
