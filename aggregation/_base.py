"""The contract shared by every aggregator, and the EM convergence record.

Aggregators follow scikit-learn's estimator conventions: parameters are stored by
``__init__`` as given (keyword-only, no validation); ``fit(corpus, *, known=None)``
learns and returns ``self``; fitted attributes end in ``_`` and exist only after fit.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from aggregation.corpus import Corpus

__all__ = ["BaseAggregator", "ConvergenceWarning", "ProgressCallback", "check_known", "ConvergenceMonitor"]

logger = logging.getLogger(__name__)

#: ``callback(iteration, log_likelihood)``; called once per EM iteration by ``fit``.
ProgressCallback = Callable[[int, float], None]


class ConvergenceWarning(UserWarning):
    """EM stopped at ``max_iter`` before the objective changed by less than ``tol``."""


def check_known(known: NDArray | None, corpus: Corpus) -> NDArray[np.int64] | None:
    """Validate ``known``: ndarray of shape (n_tokens,), a class index or -1 (unknown).

    Tokens with a known true label (typically the experts' labels) are clamped to it
    in every E-step, so they teach the worker models.
    """
    if known is None:
        return None
    k = np.asarray(known)
    if k.shape != (corpus.n_tokens,):
        raise ValueError(f"known must have shape ({corpus.n_tokens},), found {k.shape}")
    if not np.issubdtype(k.dtype, np.integer):
        raise ValueError(f"known must hold integer class indices (-1 = unknown), found dtype {k.dtype}")
    bad = (k < -1) | (k >= corpus.n_classes)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"known must be -1 or in [0, {corpus.n_classes}), found {int(k[i])} at token {i}")
    return k.astype(np.int64)


@dataclass
class ConvergenceMonitor:
    """Record the EM objective and decide when to stop (hmmlearn's ConvergenceMonitor).

    Stops when the relative change ``|L_t - L_{t-1}| / max(|L_t|, 1)`` is below ``tol``;
    ``tol=None`` makes no convergence test (a fixed number of iterations, no warning).
    A decrease larger than ``sqrt(eps)`` (relative) is logged: EM must not go down.
    """

    tol: float | None
    max_iter: int
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

    def warn_if_not_converged(self, converged: bool, name: str) -> None:
        if not converged and self.tol is not None:
            warnings.warn(
                f"{name} stopped after max_iter={self.max_iter} iterations without converging "
                f"(tol={self.tol}); raise max_iter or tol.",
                ConvergenceWarning,
                stacklevel=3,
            )


class BaseAggregator:
    """Base class: ``fit_predict``, ``predict``, ``predict_proba`` and ``get_params``.

    Subclasses implement ``fit(corpus, *, known=None, callback=None)`` setting at least
    ``labels_`` (ndarray of shape (n_tokens,)) and ``proba_`` (ndarray of shape
    (n_tokens, n_classes)).
    """

    def fit(self, corpus: Corpus, *, known: NDArray | None = None, callback: ProgressCallback | None = None):
        raise NotImplementedError

    def fit_predict(
        self, corpus: Corpus, *, known: NDArray | None = None, callback: ProgressCallback | None = None
    ) -> NDArray[np.int64]:
        """Fit and return ``labels_``."""
        return self.fit(corpus, known=known, callback=callback).labels_

    def _check_fitted(self) -> None:
        if not hasattr(self, "labels_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet; call fit(corpus) first")

    def predict(self) -> NDArray[np.int64]:
        """The fitted labels: ndarray of shape (n_tokens,)."""
        self._check_fitted()
        return self.labels_

    def predict_proba(self) -> NDArray[np.float64]:
        """The fitted posteriors: ndarray of shape (n_tokens, n_classes)."""
        self._check_fitted()
        return self.proba_

    def get_params(self) -> dict:
        """The ``__init__`` parameters, as given."""
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {n: getattr(self, n) for n in names}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
