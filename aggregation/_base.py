"""The contract shared by every aggregator, and the EM convergence record.

Aggregators follow scikit-learn's estimator conventions: parameters are stored by
``__init__`` as given (keyword-only, no validation), checked against the class's
``_parameter_constraints`` when ``fit`` starts (or at request time, through
:func:`crowdqa.aggregation.registry.validate_params`); ``get_params``/``set_params`` make
``sklearn.base.clone`` work; ``fit(corpus, *, true_labels=None)`` learns and returns ``self``;
fitted attributes end in ``_`` and exist only after fit (before it, results raise
``sklearn.exceptions.NotFittedError``).
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._params import check_params
from crowdqa.aggregation.corpus import Corpus

__all__ = ["BaseAggregator", "ConvergenceWarning", "ProgressCallback", "check_true_labels", "ConvergenceMonitor",
           "one_blas_thread", "one_hot_columns"]

logger = logging.getLogger(__name__)

#: ``callback(iteration, log_likelihood)``; called once per EM iteration by ``fit``, between two iterations. It is
#: also where a caller stops a fit: what it raises leaves ``fit`` at once (a job's stop check,
#: :func:`crowdqa.jobs.pipeline.run_pipeline`'s ``checkpoint``).
ProgressCallback = Callable[[int, float], None]


class ConvergenceWarning(UserWarning):
    """EM stopped at ``max_iter`` before the objective changed by less than ``tol``."""


def check_true_labels(true_labels: NDArray | None, corpus: Corpus) -> NDArray[np.int64] | None:
    """Validate ``true_labels``: ndarray of shape (n_tokens,), each token's class index, or -1 where it is not known.

    Tokens with a known true label (typically the experts' labels) are clamped to it
    in every E-step, so they teach the worker models.
    """
    if true_labels is None:
        return None
    k = np.asarray(true_labels)
    if k.shape != (corpus.n_tokens,):
        raise ValueError(f"true_labels must have shape ({corpus.n_tokens},), found {k.shape}")
    if not np.issubdtype(k.dtype, np.integer):
        raise ValueError(f"true_labels must hold integer class indices (-1 = unknown), found dtype {k.dtype}")
    if k.size and (k.min() < -1 or k.max() >= corpus.n_classes):  # two reductions, no mask unless one is out
        i = int(np.flatnonzero((k < -1) | (k >= corpus.n_classes))[0])
        raise ValueError(f"true_labels must be -1 or in [0, {corpus.n_classes}), found {int(k[i])} at token {i}")
    # int64 already: a read-only view, not a copy (a copy is fresh memory whose pages the kernel must map, a
    # real share of a vote's time); no fit writes into true_labels, and the view makes sure of it
    out = k.astype(np.int64, copy=False).view()
    out.flags.writeable = False
    return out


def one_hot_columns(table: NDArray[np.float64], columns: NDArray[np.intp], classes: NDArray[np.int64]) -> None:
    """Set ``table[:, columns]`` to the one-hot vectors of ``classes``, in place: how a class-major table of
    posteriors or vote fractions (n_classes, n_tokens) takes the known tokens' classes.

    A class row at a time, each one elementwise assignment (cheaper than one 2-d fancy index).
    """
    for k in range(table.shape[0]):
        table[k, columns] = classes == k


@dataclass
class ConvergenceMonitor:
    """Record the EM objective and decide when to stop (hmmlearn's ConvergenceMonitor).

    Stops when the relative change ``|L_t - L_{t-1}| / max(|L_t|, 1)`` is below ``tol``;
    ``tol=None`` makes no convergence test (a fixed number of iterations, no warning).
    A decrease larger than ``sqrt(eps)`` (relative) is logged: EM must not go down.
    """

    tol: float | None
    callback: ProgressCallback | None = None

    def __post_init__(self) -> None:
        self.history: list[float] = []

    def report(self, log_likelihood: float) -> bool:
        """Append the objective; return True when converged."""
        prev = self.history[-1] if self.history else None
        self.history.append(float(log_likelihood))
        if self.callback is not None:
            self.callback(len(self.history), float(log_likelihood))
        if prev is None:
            return False
        scale = max(abs(log_likelihood), 1.0)
        if prev - log_likelihood > math.sqrt(np.finfo(float).eps) * scale:
            logger.warning("EM objective decreased from %.10g to %.10g (a bug)", prev, log_likelihood)
        return self.tol is not None and abs(log_likelihood - prev) / scale < self.tol


def _last_change(history: list[float], tol: float) -> str:
    """The last step's relative change of the objective against ``tol``, in words (the convergence test's terms)."""
    if len(history) < 2:
        return f"one iteration gives no change of the objective to test against tol={tol}"
    change = abs(history[-1] - history[-2]) / max(abs(history[-1]), 1.0)
    return f"the last of them still changed the objective by {change:.1e} (relative; tol={tol})"


#: ``(len(sys.modules), ThreadpoolController)`` of the last fit (see :func:`_blas_controller`).
_BLAS_CONTROLLER: list[tuple[int, Any]] = []


def _blas_controller() -> Any:
    """threadpoolctl's view of the loaded BLAS libraries, found again only when a module was imported since.

    Finding them walks every shared object of the process (``dl_iterate_phdr``): 4 ms per
    call measured, as much as a whole weighted vote of 300k labels, and ``threadpool_limits``
    does it on every call. A BLAS library is loaded by importing an extension module (numpy's
    and scipy's OpenBLAS), so an unchanged ``sys.modules`` means an unchanged set of libraries.
    """
    from threadpoolctl import ThreadpoolController  # imported on the first fit, not with the package

    n_modules = len(sys.modules)
    if not _BLAS_CONTROLLER or _BLAS_CONTROLLER[0][0] != n_modules:
        _BLAS_CONTROLLER[:] = [(n_modules, ThreadpoolController())]
    return _BLAS_CONTROLLER[0][1]


def one_blas_thread(fit: Callable) -> Callable:
    """Decorate an aggregator's ``fit``: run it with the BLAS libraries limited to one thread (threadpoolctl),
    then restore the process's setting. Every aggregator's ``fit`` carries it (a test checks them all).

    Why one thread: the aggregators' BLAS work is vector operations (the dot products and updates of
    scipy's optimisers in GLAD) and products with tiny ``(n_classes, n_classes)``
    matrices: memory-bound, so extra threads cannot speed it up, while OpenBLAS's threads
    wait for cores by spinning. On a shared 2-core machine one ``np.dot`` of 300k numbers
    took 16x longer with OpenBLAS's two threads than with one (measured), so every fit
    runs with one, whatever the process's default (which other code keeps). The limit is
    process-wide, as every BLAS setting is: code in other threads runs with one BLAS thread
    while a fit runs.
    """

    @functools.wraps(fit)
    def wrapper(self: BaseAggregator, *args: Any, **kwargs: Any) -> Any:
        with _blas_controller().limit(limits=1, user_api="blas"):
            return fit(self, *args, **kwargs)

    wrapper.one_blas_thread = True  # type: ignore[attr-defined]
    return wrapper


class BaseAggregator:
    """Base class: scikit-learn's estimator contract for aggregators.

    Subclasses store their keyword-only ``__init__`` parameters as given, declare what
    each may be in ``_parameter_constraints`` (see :mod:`crowdqa.aggregation._params`), call
    :meth:`_start_fit` first thing in ``fit(corpus, *, true_labels=None, callback=None)``
    (iterative ones then run a :meth:`_monitor` and end with :meth:`_record_run`) and
    set at least ``labels_`` (ndarray of shape (n_tokens,)) and ``proba_`` (ndarray of
    shape (n_tokens, n_classes)).

    ``get_params``/``set_params`` follow scikit-learn's semantics, so
    :func:`sklearn.base.clone` works; reading results before ``fit`` raises
    :class:`sklearn.exceptions.NotFittedError` (a ``ValueError``), as do
    ``check_is_fitted`` and the other scikit-learn utilities that read
    ``__sklearn_tags__``. scikit-learn is imported only when one of those is used, so
    importing an aggregator stays cheap. Every subclass decorates its ``fit`` with
    :func:`one_blas_thread` (one BLAS thread while it runs).
    """

    #: parameter name -> list of accepted kinds of value (see :func:`crowdqa.aggregation._params.check_params`).
    _parameter_constraints: ClassVar[dict[str, list]] = {}
    #: The fewest and the most classes the model is defined for (None: no upper bound).
    _n_classes_range: ClassVar[tuple[int, int | None]] = (1, None)
    #: The fitted attributes a model carries to a new batch (a warm start or a prediction with fixed parameters,
    #: :mod:`crowdqa.aggregation.batches`); empty for a model that cannot.
    _carried_attributes: ClassVar[tuple[str, ...]] = ()
    #: What ``skills_`` (one score per annotator, reported as each worker's ``skill``) measures;
    #: None for models without one.
    skill_description: ClassVar[str | None] = None

    def fit(self, corpus: Corpus, *, true_labels: NDArray | None = None, callback: ProgressCallback | None = None):
        """Learn from ``corpus`` and set the fitted attributes (every aggregator's ``fit`` takes these).

        Parameters
        ----------
        corpus : Corpus
        true_labels : ndarray of shape (n_tokens,), optional
            Known class of a token, -1 where unknown (typically the experts' labels). How
            a model uses it (clamped in every E-step, or only kept in the output) is in
            its ``fit``'s docstring.
        callback : callable, optional
            ``callback(iteration, value)`` after each iteration of an iterative fit
            (``value``: the objective, or the model's progress measure).

        Returns
        -------
        self
        """
        raise NotImplementedError

    def fit_predict(
        self, corpus: Corpus, *, true_labels: NDArray | None = None, callback: ProgressCallback | None = None
    ) -> NDArray[np.int64]:
        """Fit and return ``labels_``."""
        return self.fit(corpus, true_labels=true_labels, callback=callback).labels_

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "labels_")

    def __sklearn_tags__(self) -> Any:
        from sklearn.utils import Tags, TargetTags

        # Unsupervised in scikit-learn's sense: fit takes a corpus, never a target y.
        return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    def _check_fitted(self) -> None:
        if not self.__sklearn_is_fitted__():
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(corpus) first")

    def predict(self, corpus: Corpus | None = None) -> NDArray[np.int64]:
        """The fitted labels, or with ``corpus`` (a new batch) its labels under the fitted (frozen) parameters.

        Annotators are matched by id; one not seen in the fit gets the crowd average
        (:mod:`crowdqa.aggregation.batches`). Returns an ndarray of shape (n_tokens,).
        """
        return self.predict_with_proba(corpus)[0]

    def predict_proba(self, corpus: Corpus | None = None) -> NDArray[np.float64]:
        """The fitted posteriors, or with ``corpus`` (a new batch) its posteriors under the fitted parameters.

        Returns an ndarray of shape (n_tokens, n_classes). ValueError for a model that cannot predict a
        batch it was not fitted on.
        """
        return self.predict_with_proba(corpus)[1]

    def predict_with_proba(self, corpus: Corpus | None = None) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """:meth:`predict` and :meth:`predict_proba` from one pass over ``corpus``.

        For a new batch the two methods each run the model's E-step (HMM-Crowd: forward-backward and
        the decoder); a caller that needs both labels and posteriors calls this once instead.

        Returns
        -------
        labels : ndarray of shape (n_tokens,)
        proba : ndarray of shape (n_tokens, n_classes)
        """
        if corpus is None or not self._has_carried_attributes():
            self._check_fitted()
        if corpus is None:
            return self.labels_, self.proba_
        return self._predict_batch(corpus)

    def _predict_batch(self, corpus: Corpus) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Labels and posteriors of a new batch under the fitted parameters (models with ``_carried_attributes``)."""
        raise ValueError(f"{type(self).__name__} cannot aggregate a new batch with frozen parameters; "
                         "refit it on the batch")

    def _has_carried_attributes(self) -> bool:
        """Whether the fitted attributes a new batch needs (``_carried_attributes``) are set, by a fit or restored."""
        names = getattr(type(self), "_carried_attributes", ())
        return bool(names) and all(hasattr(self, n) for n in names)

    @classmethod
    def _get_param_names(cls) -> list[str]:
        """The ``__init__`` parameter names, in signature order (keyword-only; no ``*args``)."""
        params = inspect.signature(cls.__init__).parameters.values()
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            raise TypeError(f"{cls.__name__}.__init__ must not take *args (scikit-learn convention)")
        return [p.name for p in params if p.name != "self" and p.kind is not p.VAR_KEYWORD]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The ``__init__`` parameters, as given.

        Parameters
        ----------
        deep : bool, default=True
            Also list the parameters of parameters that are estimators, as ``name__param``.

        Returns
        -------
        params : dict of str to object
        """
        out: dict[str, Any] = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> Self:
        """Set parameters (``name`` or ``name__param`` of a nested estimator); not validated until ``fit``.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For a name that is not an ``__init__`` parameter.
        """
        valid = self.get_params(deep=True)
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                accepted = self._get_param_names()
                raise ValueError(f"{type(self).__name__} takes parameters {accepted}, found unknown parameter {name!r}")
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub_params in nested.items():
            valid[name].set_params(**sub_params)
        return self

    def _start_fit(self, corpus: Corpus, true_labels: NDArray | None) -> NDArray[np.int64] | None:
        """What every ``fit`` does first: check the parameters, the number of classes and ``true_labels``.

        Returns
        -------
        known : ndarray of shape (n_tokens,) or None
            ``true_labels`` checked, as int64 (see :func:`check_true_labels`): what the fit clamps.

        Raises
        ------
        ValueError
            Naming the first bad parameter, a class count the model is not defined for, or a bad ``true_labels``.
        """
        self._validate_params()
        low, high = self._n_classes_range
        if not low <= corpus.n_classes <= (corpus.n_classes if high is None else high):
            allowed = f"{low}" if low == high else f"at least {low}" if high is None else f"{low} to {high}"
            raise ValueError(f"{type(self).__name__} needs {allowed} classes, found {corpus.n_classes}")
        return check_true_labels(true_labels, corpus)

    def _monitor(self, callback: ProgressCallback | None = None) -> ConvergenceMonitor:
        """A convergence record for one run of the fit's loop, with the ``tol`` parameter."""
        return ConvergenceMonitor(tol=self.tol, callback=callback)

    def _record_run(self, history: list[float], converged: bool, *, max_iter: int | None = None,
                    last_change: str | None = None) -> None:
        """Set ``log_likelihood_``, ``n_iter_`` and ``converged_``; warn if a loop with a ``tol`` did not converge.

        ``max_iter``: the cap the loop ran with, where it is resolved from the parameter (default: the parameter).
        ``last_change``: what the last iteration changed, in words, for a loop whose test is not
        :class:`ConvergenceMonitor`'s relative change of ``history`` (the default reads it from ``history``).
        The warning says what stopping there means, for the job's progress and the report.
        """
        if not converged and self.tol is not None:
            cap = self.max_iter if max_iter is None else max_iter
            warnings.warn(f"{type(self).__name__} stopped after max_iter={cap} iterations without converging: "
                          f"{last_change or _last_change(history, self.tol)}, so its labels and worker scores may "
                          "still change with more iterations; raise max_iter (or tol) to let the fit settle.",
                          ConvergenceWarning, stacklevel=3)
        self.log_likelihood_ = history
        self.n_iter_ = len(history)
        self.converged_ = bool(converged)

    def _validate_params(self) -> None:
        """Check the parameters against ``_parameter_constraints``; ValueError naming the first bad one."""
        check_params(self._parameter_constraints, self.get_params(deep=False))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"
