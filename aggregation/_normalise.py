"""Normalisers: posteriors from log joint probabilities, class-major.

Shared by the E-steps of Dawid-Skene and IBCC (:func:`crowdqa.aggregation._confusion.e_step`),
GLAD and HMM-Crowd's Dawid-Skene initialiser.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import one_hot_columns

__all__ = ["normalise"]


def normalise(joint: NDArray[np.float64], known: NDArray[np.int64] | None = None
              ) -> tuple[NDArray[np.float64], float]:
    r"""Posteriors from log joint probabilities, in place, and the log-likelihood.

    Class-major, so that every step runs along contiguous rows: reductions over the few
    classes are elementwise operations between rows, where a reduction along a short last
    axis of an (n_items, n_classes) array is many times slower.

    Parameters
    ----------
    joint : ndarray of shape (n_classes, n_items)
        :math:`\log p(y_i, z_i = k)`; overwritten with the posteriors.
    known : ndarray of shape (n_items,), optional
        Known class of an item or -1. Known items get a one-hot posterior, and add
        their joint log-probability :math:`\log p(y_i, z_i = k)` to the log-likelihood.

    Returns
    -------
    posterior : ndarray of shape (n_classes, n_items)
        ``joint``, normalised: columns sum to 1.
    log_likelihood : float
        :math:`\sum_i \log Z_i` over the unknown items plus the joint log-probability of the known ones.
    """
    if known is not None:
        idx = np.flatnonzero(known >= 0)
        ll_known = float(joint[known[idx], idx].sum())
    top = joint.max(axis=0)
    np.subtract(joint, top, out=joint)
    with np.errstate(under="ignore"):  # exp of very negative log-odds underflows to 0 by design
        np.exp(joint, out=joint)
    total = joint.sum(axis=0)
    joint /= total
    log_z = top + np.log(total)
    if known is None:
        return joint, float(log_z.sum())
    one_hot_columns(joint, idx, known[idx])
    return joint, float(log_z[known < 0].sum()) + ll_known
