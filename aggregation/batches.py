"""A new batch aggregated with an earlier fit: annotators keep their history.

An earlier fit knows each annotator it saw by id (``worker_ids_``) with a confusion matrix
(``worker_confusion_``) and how many labels it learned that from (``worker_labels_``). A new
batch brings some of the same annotators and some new ones. :func:`carry_workers` gives
every annotator of the new batch its earlier matrix, and an annotator never seen before the
*crowd average*: the earlier matrices averaged with weights equal to the annotators' label
counts, i.e. the confusion matrix of a label drawn at random from the earlier batch. That is
the population-level estimate a hierarchical model would shrink a new annotator to
(Kim & Ghahramani's community prior, AISTATS 2012, with one community), and the only
estimate the earlier fit holds for an annotator it has no data on.

Two uses, both scikit-learn conventions for reusing a fitted estimator on new data:

* frozen: ``predict_proba(corpus)`` / ``predict(corpus)`` run one E-step with the carried
  parameters and change nothing (scikit-learn's ``predict(X)``);
* warm start: with ``warm_start=True`` (scikit-learn's parameter of the same name, e.g.
  ``GaussianMixture``), ``fit(corpus)`` starts EM from the carried parameters instead of
  vote fractions, so annotators seen before keep their history as the start of EM.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["carry_workers", "fitted_state", "restore_state", "supports_batches"]


def carry_workers(
    worker_ids: tuple[str, ...] | list[str],
    confusion: NDArray,
    labels: NDArray,
    new_ids: tuple[str, ...] | list[str],
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Confusion matrices of the annotators ``new_ids`` from an earlier fit.

    Parameters
    ----------
    worker_ids : sequence of str, length n_workers
        The earlier fit's annotators.
    confusion : ndarray of shape (n_workers, n_classes, n_classes)
        Their confusion matrices (rows sum to 1).
    labels : ndarray of shape (n_workers,)
        How many labels each gave in the earlier fit (the weights of the crowd average).
    new_ids : sequence of str, length n_new
        The annotators of the new batch.

    Returns
    -------
    confusion : ndarray of shape (n_new, n_classes, n_classes)
        The earlier matrix of an annotator seen before, else the label-weighted average of
        the earlier matrices (the plain average when no earlier annotator gave a label).
    seen : ndarray of shape (n_new,), bool

    Examples
    --------
    >>> conf = np.array([[[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]]])
    >>> new, seen = carry_workers(["a", "b"], conf, np.array([3, 1]), ["b", "c"])
    >>> seen.tolist(), new[1].round(3).tolist()
    ([True, False], [[0.8, 0.2], [0.275, 0.725]])
    """
    confusion = np.asarray(confusion, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    if confusion.ndim != 3 or confusion.shape[0] != len(worker_ids) or labels.shape != (len(worker_ids),):
        raise ValueError(f"confusion must have shape ({len(worker_ids)}, K, K) and labels ({len(worker_ids)},), "
                         f"found {confusion.shape} and {labels.shape}")
    if not len(worker_ids):
        raise ValueError("the earlier fit has no annotators to carry")
    index = {w: i for i, w in enumerate(worker_ids)}
    where = np.fromiter((index.get(w, -1) for w in new_ids), dtype=np.int64, count=len(new_ids))
    seen = where >= 0
    weights = labels if labels.sum() > 0 else np.ones_like(labels)
    average = np.tensordot(weights / weights.sum(), confusion, axes=1)
    out = np.where(seen[:, None, None], confusion[np.maximum(where, 0)], average[None])
    return out, seen


def supports_batches(estimator: object) -> bool:
    """Whether the estimator can carry its fit to a new batch (it lists the attributes in ``_carried_attributes``)."""
    return bool(getattr(type(estimator), "_carried_attributes", ()))


def fitted_state(estimator: object) -> dict[str, NDArray]:
    """The fitted attributes a later batch needs, as plain arrays (annotator ids as a string array).

    Parameters
    ----------
    estimator : a fitted aggregator listing them in ``_carried_attributes``

    Returns
    -------
    dict of str to ndarray
        Saved with ``numpy.savez`` and read back without pickle.
    """
    names = getattr(type(estimator), "_carried_attributes", ())
    if not names:
        raise ValueError(f"{type(estimator).__name__} cannot carry its fit to a new batch")
    missing = [n for n in names if not hasattr(estimator, n)]
    if missing:
        raise ValueError(f"{type(estimator).__name__} is not fitted (no {missing[0]})")
    # Tuples of ids or words become string arrays (an empty one too), read back as tuples.
    return {n: np.asarray(v, dtype=str) if isinstance(v := getattr(estimator, n), tuple) else np.asarray(v)
            for n in names}


def restore_state(estimator: object, state: dict[str, NDArray]) -> object:
    """Set the fitted attributes of ``estimator`` from :func:`fitted_state`'s arrays; return it.

    Raises ValueError for an estimator that keeps no such state or a state missing one of them.
    """
    names = getattr(type(estimator), "_carried_attributes", ())
    if not names:
        raise ValueError(f"{type(estimator).__name__} cannot carry a fit to a new batch")
    missing = [n for n in names if n not in state]
    if missing:
        raise ValueError(f"the stored model has no {missing[0]}: it was fitted by another method")
    for n in names:
        value = state[n]
        setattr(estimator, n, tuple(str(w) for w in value.tolist()) if value.dtype.kind == "U" else np.array(value))
    return estimator
