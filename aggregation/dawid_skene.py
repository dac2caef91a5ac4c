"""Dawid-Skene EM: one confusion matrix (or one accuracy) per annotator.

The math lives in pure module-level functions over the corpus's COO arrays (the E-step
:func:`~crowdqa.aggregation._confusion.e_step` and the confusion tallies, shared with IBCC and
GLAD in :mod:`crowdqa.aggregation._confusion`; :func:`_m_step`, :func:`_log_param_prior`);
:class:`DawidSkene` only coordinates the EM loop. Every scatter is one ``np.bincount`` over all
annotations at once, keyed by a combined integer (``worker * n_classes + label``),
so no ``(n_obs, n_classes, n_classes)`` array is ever built and there is no Python
loop over tokens, annotations or annotators -- only over the ``n_classes`` columns.

Posteriors are kept as the transpose of a C-ordered ``(n_classes, n_tokens)``
buffer: the user-facing shape is ``(n_tokens, n_classes)``, but every column
``posterior[:, t]`` is contiguous, which is what the gathers and scatters read.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import BaseAggregator, ProgressCallback, one_blas_thread, one_hot_columns
from crowdqa.aggregation._bio import bio_decode
from crowdqa.aggregation._confusion import confusion_rows, e_step, expected_counts, obs_key
from crowdqa.aggregation._params import ITERATIONS, RANDOM_STATE, InstanceOf, Interval, Options
from crowdqa.aggregation._votes import vote_counts
from crowdqa.aggregation.corpus import Corpus

__all__ = ["DawidSkene"]

_MODELS = ("full", "one-coin")
_INITS = ("vote", "random")
# Floor for log(0): a probability of exactly 0 (possible only with alpha=0) becomes
# log(tiny) ~ -708 rather than -inf, so a token never gets -inf for every class.
_LOG_TINY = float(np.log(np.finfo(np.float64).tiny))


def _safe_log(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(p)`` with ``log(0)`` floored at ``log(np.finfo(float).tiny)``."""
    with np.errstate(divide="ignore"):  # log(0) -> -inf, replaced by the floor just below
        out = np.log(p)
    return np.maximum(out, _LOG_TINY, out=out)


def _m_step(
    posterior: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    key: NDArray[np.intp],
    n_workers: int,
    alpha: float,
    model: str = "full",
    unlabelled: NDArray[np.intp] | None = None,
    scratch: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""Closed-form MAP estimates of the class prior and the confusion matrices.

    With expected counts :math:`n_{w,t,o} = \sum_{(i,w,o)} q_i(t)`:

    * ``model="full"``: :math:`\theta_{w,t,o} = (n_{w,t,o} + \alpha) / \sum_{o'} (n_{w,t,o'} + \alpha)`
      (a Dirichlet(:math:`\alpha + 1`) prior on each row);
    * ``model="one-coin"``: :math:`\theta_{w,t,t} = a_w`, :math:`\theta_{w,t,o \neq t} = (1 - a_w) / (K - 1)`
      with :math:`a_w = (\sum_t n_{w,t,t} + \alpha) / (\sum_{t,o} n_{w,t,o} + 2\alpha)` (a Beta prior);
    * :math:`\pi_t = (\sum_i q_i(t) + \alpha) / (n + K\alpha)` over the ``n`` labelled tokens.

    A confusion row with no data and ``alpha == 0`` is uniform.

    Parameters
    ----------
    posterior : ndarray of shape (n_tokens, n_classes)
    token, key : ndarray of shape (n_obs,)
        As in :func:`~crowdqa.aggregation._confusion.e_step`.
    n_workers : int
    alpha : float
        Additive smoothing (pseudo-count) for every confusion cell and prior class.
    model : {"full", "one-coin"}
    unlabelled : ndarray of int, optional
        Indices of the tokens nobody labelled; they do not inform the prior.
    scratch : ndarray of shape (n_obs,), optional
        As in :func:`~crowdqa.aggregation._confusion.e_step`.

    Returns
    -------
    prior : ndarray of shape (n_classes,)
    confusion : ndarray of shape (n_workers, n_classes, n_classes)
    """
    n_classes = posterior.shape[1]
    counts = expected_counts(posterior, token=token, key=key, n_workers=n_workers, scratch=scratch)
    if model == "full":
        conf = confusion_rows(counts + alpha)  # rows without data (alpha=0): uniform
    else:  # "one-coin" (the estimator checked its parameters)
        agree = np.trace(counts, axis1=1, axis2=2)
        seen = counts.sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):  # workers with no annotations (alpha=0)
            acc = np.where(seen + 2 * alpha > 0, (agree + alpha) / (seen + 2 * alpha), 1.0 / n_classes)
        off = (1.0 - acc) / max(n_classes - 1, 1)
        conf = np.broadcast_to(off[:, None, None], (n_workers, n_classes, n_classes)).copy()
        diag = np.arange(n_classes)
        conf[:, diag, diag] = acc[:, None]

    mass = posterior.sum(axis=0) + alpha
    if unlabelled is not None and unlabelled.size:
        mass -= posterior[unlabelled].sum(axis=0)
    prior = mass / mass.sum() if mass.sum() > 0 else np.full(n_classes, 1.0 / n_classes)
    return prior, conf


def _log_param_prior(prior: NDArray, confusion: NDArray, *, alpha: float, model: str) -> float:
    """Log-density (up to a constant) of the smoothing prior whose MAP estimate :func:`_m_step` returns.

    Adding it to the data log-likelihood gives the objective EM increases monotonically.
    """
    if alpha == 0:
        return 0.0
    out = alpha * float(_safe_log(prior).sum())
    if model == "full":
        return out + alpha * float(_safe_log(confusion).sum())
    n_classes = confusion.shape[1]
    acc = confusion[:, 0, 0]
    return out + alpha * float((_safe_log(acc) + _safe_log(1.0 - acc)).sum()) if n_classes > 1 else out


def _init_posterior(
    corpus: Corpus, *, init: str, rng: np.random.Generator, known: NDArray[np.int64] | None
) -> NDArray[np.float64]:
    """Initial posteriors, ndarray of shape (n_tokens, n_classes): vote fractions or random rows."""
    n_tokens, n_classes = corpus.n_tokens, corpus.n_classes
    if init == "vote":
        buf, _ = vote_counts(corpus)  # (n_classes, n_tokens)
        total = buf.sum(axis=0)
        buf[:, total == 0] = 1.0  # tokens nobody labelled: uniform (they do not inform the M-step)
        buf /= buf.sum(axis=0)
    else:  # "random" (the estimator checked its parameters)
        buf = rng.dirichlet(np.ones(n_classes), size=n_tokens).T.copy()
    if known is not None:
        idx = np.flatnonzero(known >= 0)
        one_hot_columns(buf, idx, known[idx])
    return buf.T


def _supervised_start(
    conf: NDArray[np.float64],
    known: NDArray[np.int64],
    *,
    token: NDArray[np.int64],
    key: NDArray[np.intp],
    n_workers: int,
    alpha: float,
    model: str,
) -> NDArray[np.float64]:
    """Initial confusion rows estimated from the known tokens alone, where an annotator has any.

    Vote fractions on the unknown tokens would otherwise outweigh a small expert set
    and start EM in the majority's basin (e.g. colluding workers who flip answers).
    Rows (``model="full"``: per annotator and true class; ``"one-coin"``: per annotator)
    with no known token keep their vote-based estimate ``conf``.

    Returns
    -------
    confusion : ndarray of shape (n_workers, n_classes, n_classes)
    """
    n_classes = conf.shape[1]
    onehot = np.zeros((n_classes, known.shape[0]))  # unknown tokens contribute nothing
    idx = np.flatnonzero(known >= 0)
    one_hot_columns(onehot, idx, known[idx])
    mass = expected_counts(onehot.T, token=token, key=key, n_workers=n_workers).sum(axis=2)  # (w, t)
    _, conf_known = _m_step(onehot.T, token=token, key=key, n_workers=n_workers, alpha=alpha, model=model)
    has = mass > 0 if model == "full" else np.broadcast_to(mass.sum(axis=1, keepdims=True) > 0, mass.shape)
    return np.where(has[:, :, None], conf_known, conf)


class DawidSkene(BaseAggregator):
    r"""Dawid-Skene EM with one confusion matrix (or one accuracy) per annotator.

    Each token :math:`i` has a latent true class :math:`z_i \sim \pi`; annotator
    :math:`w` answers :math:`o` with probability :math:`\theta_{w,z_i,o}`,
    independently given :math:`z_i`. EM starts from the vote fractions, alternates a
    log-space E-step (posterior :math:`q_i` of each token) with a closed-form MAP
    M-step (Dirichlet smoothing ``alpha``), and stops when the relative change of
    the objective is below ``tol``.

    Parameters
    ----------
    max_iter : int, default=100
        Cap on EM iterations.
    tol : float or None, default=1e-6
        Stop when ``|L_t - L_{t-1}| / max(|L_t|, 1) < tol``; ``None`` runs exactly
        ``max_iter`` iterations with no convergence test and no warning.
    alpha : float, default=0.01
        Dirichlet pseudo-count added to each confusion cell and prior class (MAP
        estimate), so an annotator who never saw a class gets no zero probability.
    model : {"full", "one-coin"}, default="full"
        ``"full"``: a K x K confusion matrix per annotator. ``"one-coin"``: one
        accuracy :math:`a_w` per annotator, errors spread evenly over the other classes.
    init : {"vote", "random"}, default="vote"
        Initial posteriors: (unweighted) vote fractions, or random rows drawn from
        ``random_state``.
    random_state : int, numpy.random.Generator or None, default=None
        Used only by ``init="random"``.
    warm_start : bool, default=False
        When the estimator is already fitted, start EM from its parameters instead of ``init``
        (scikit-learn's ``warm_start``): the class prior, and each annotator's confusion matrix
        found by id, an annotator not seen before the label-weighted crowd average
        (:func:`crowdqa.aggregation.batches.carry_workers`). This is how a new batch keeps the
        history of the annotators seen in an earlier one.

    Attributes
    ----------
    labels_ : ndarray of shape (n_tokens,)
        Argmax of ``proba_`` (ties to the lowest class index); on a BIO corpus, each
        document's most probable *valid* BIO sequence under ``proba_``
        (:func:`crowdqa.aggregation._bio.bio_decode`), so that no span is split or cut
        by a token whose argmax breaks BIO.
    proba_ : ndarray of shape (n_tokens, n_classes)
        Posteriors :math:`q_i`. Tokens nobody labelled get ``class_prior_``; tokens
        in ``true_labels`` are one-hot.
    worker_confusion_ : ndarray of shape (n_workers, n_classes, n_classes)
        ``worker_confusion_[w, t, o]`` is P(worker w answers o | true class t).
    class_prior_ : ndarray of shape (n_classes,)
    log_likelihood_ : list of float
        EM objective per iteration: log-likelihood of the parameters entering the
        iteration, plus the log smoothing prior when ``alpha > 0``.
    n_iter_ : int
    converged_ : bool
    worker_ids_ : tuple of str, length n_workers
        The annotators of the fit, by id (what a later batch is matched on).
    worker_labels_ : ndarray of shape (n_workers,)
        Labels each annotator gave in the fit.

    Notes
    -----
    E-step (:math:`\pi` = ``class_prior_``, :math:`\theta` = ``worker_confusion_``):
    :math:`\log q_i(t) = \log\pi_t + \sum_{(i,w,o)} \log\theta_{w,t,o} - \log Z_i`.
    M-step: :math:`\theta_{w,t,o} \propto \alpha + \sum_{(i,w,o)} q_i(t)`,
    :math:`\pi_t \propto \alpha + \sum_i q_i(t)`.

    Semi-supervised fitting (``true_labels``) clamps :math:`q_i` to the known class in
    every E-step, so tokens with expert labels teach the confusion matrices. The
    initial confusion rows of annotators who labelled known tokens are estimated
    from those tokens alone (:func:`_supervised_start`), so a small expert set is
    not outvoted by the vote fractions at the start.

    With ``alpha=0`` this is crowd-kit's ``DawidSkene`` up to its clipping of
    probabilities at 1e-10: after ``max_iter=n``, ``worker_confusion_`` equals its
    ``errors_`` after ``n_iter=n`` and ``proba_`` (final E-step) its ``probas_`` after
    ``n_iter=n + 1`` (tested to 1e-6). The one-coin model is Karger, Oh & Shah's
    "one-coin" worker, fitted by the same EM (as crowd-kit's ``OneCoinDawidSkene``).

    References
    ----------
    .. [1] A. P. Dawid, A. M. Skene (1979). Maximum likelihood estimation of
       observer error-rates using the EM algorithm. JRSS C 28(1), 20-28.
       doi:10.2307/2346806
    .. [2] D. R. Karger, S. Oh, D. Shah (2011). Iterative learning for reliable
       crowdsourcing systems. NeurIPS 24.

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[0, 0, 0, 1, 1, 1], worker=[0, 1, 2, 0, 1, 2],
    ...     label=[1, 1, 0, 0, 0, 1], doc_lengths=[1, 1], token_start=[0, 0], token_end=[1, 1],
    ...     doc_ids=["a", "b"], texts=["a", "b"], worker_ids=["u", "v", "w"],
    ...     worker_roles=["crowd"] * 3, class_names=["O", "yes"])
    >>> DawidSkene().fit(c).labels_
    array([1, 0])
    """

    #: Fitted attributes a new batch is aggregated with (:mod:`crowdqa.aggregation.batches`).
    _carried_attributes: ClassVar[tuple[str, ...]] = ("class_prior_", "worker_confusion_", "worker_ids_",
                                                      "worker_labels_")
    _parameter_constraints: ClassVar[dict[str, list]] = {
        "max_iter": [ITERATIONS],
        "tol": [Interval(float, 0, None), None],
        "alpha": [Interval(float, 0, None)],
        "model": [Options(_MODELS)],
        "init": [Options(_INITS)],
        "random_state": RANDOM_STATE,
        "warm_start": [InstanceOf((bool,), "True or False")],
    }

    def __init__(
        self,
        *,
        max_iter: int = 100,
        tol: float | None = 1e-6,
        alpha: float = 0.01,
        model: str = "full",
        init: str = "vote",
        random_state: int | np.random.Generator | None = None,
        warm_start: bool = False,
    ) -> None:
        self.max_iter = max_iter
        self.tol = tol
        self.alpha = alpha
        self.model = model
        self.init = init
        self.random_state = random_state
        self.warm_start = warm_start

    @one_blas_thread
    def fit(
        self, corpus: Corpus, *, true_labels: NDArray | None = None, callback: ProgressCallback | None = None
    ) -> DawidSkene:
        """Run EM on ``corpus``.

        Parameters
        ----------
        corpus : Corpus
        true_labels : ndarray of shape (n_tokens,), optional
            Known class index of a token, -1 = unknown; clamped in every E-step.
        callback : callable, optional
            ``callback(iteration, log_likelihood)`` after every EM iteration.

        Returns
        -------
        self : DawidSkene
        """
        known = self._start_fit(corpus, true_labels)
        rng = np.random.default_rng(self.random_state)

        token = corpus.token
        key = obs_key(corpus)
        # Tokens with neither annotations nor a known class carry no information about the prior.
        empty = np.diff(corpus.token_obs_start) == 0
        unlabelled = np.flatnonzero(empty if known is None else empty & (known < 0))
        # One buffer per annotation for the gathers of every E- and M-step: a fresh array of that size for each
        # class of each step was new memory every time, which the kernel must map and zero.
        scratch = np.empty(corpus.n_obs)
        e_args = {"token": token, "key": key, "n_tokens": corpus.n_tokens, "known": known, "scratch": scratch}
        m_args = {
            "token": token, "key": key, "n_workers": corpus.n_workers,
            "alpha": float(self.alpha), "model": self.model, "unlabelled": unlabelled, "scratch": scratch,
        }

        if self.warm_start and self._has_carried_attributes():
            prior, conf = self._carried(corpus)  # the earlier fit's parameters, annotators matched by id
        else:
            posterior = _init_posterior(corpus, init=self.init, rng=rng, known=known)
            prior, conf = _m_step(posterior, **m_args)
        if known is not None and np.any(known >= 0):
            conf = _supervised_start(conf, known, token=token, key=key, n_workers=corpus.n_workers,
                                     alpha=float(self.alpha), model=self.model)
        monitor = self._monitor(callback)
        converged = False
        for _ in range(int(self.max_iter)):
            posterior, ll = e_step(_safe_log(prior), _safe_log(conf), **e_args)
            objective = ll + _log_param_prior(prior, conf, alpha=float(self.alpha), model=self.model)
            prior, conf = _m_step(posterior, **m_args)
            if monitor.report(objective):
                converged = True
                break
        # Final E-step so that proba_ matches the final parameters.
        posterior, _ = e_step(_safe_log(prior), _safe_log(conf), **e_args)

        self.proba_ = np.ascontiguousarray(posterior)
        self.labels_ = bio_decode(self.proba_, corpus)
        self.worker_confusion_ = conf
        self.class_prior_ = prior
        self._record_run(monitor.history, converged)
        self.worker_ids_ = tuple(corpus.worker_ids)
        self.worker_labels_ = np.bincount(corpus.worker, minlength=corpus.n_workers)
        return self

    def _carried(self, corpus: Corpus) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The fitted class prior and confusion matrices carried to ``corpus``'s annotators."""
        from crowdqa.aggregation.batches import carry_workers

        if corpus.n_classes != self.class_prior_.shape[0]:
            raise ValueError(f"the corpus has {corpus.n_classes} classes, the fitted model "
                             f"{self.class_prior_.shape[0]}")
        conf, _ = carry_workers(self.worker_ids_, self.worker_confusion_, self.worker_labels_, corpus.worker_ids)
        return self.class_prior_, conf

    def _predict_batch(self, corpus: Corpus) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Labels and posteriors of ``corpus``'s tokens under the fitted parameters (one E-step, nothing refitted;
        valid BIO on a BIO corpus, as ``labels_``)."""
        prior, conf = self._carried(corpus)
        post, _ = e_step(_safe_log(prior), _safe_log(conf), token=corpus.token, key=obs_key(corpus),
                          n_tokens=corpus.n_tokens, known=None)
        return bio_decode(post, corpus), post
