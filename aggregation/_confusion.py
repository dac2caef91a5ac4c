r"""Confusion tallies: each annotator's answers counted against true classes, and the posterior they give.

Every tally is one ``np.bincount`` over all annotations at once, keyed by a combined integer
(:func:`obs_key`: ``worker * n_classes + label``), so no ``(n_obs, n_classes, n_classes)`` array is
ever built and there is no Python loop over tokens, annotations or annotators, only over the
``n_classes`` true classes. Shared by Dawid-Skene (its E-step and M-step), IBCC (the same E-step
at expected log parameters), GLAD, KOS, MMSR and the majority votes (the fitted
``worker_confusion_``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._normalise import normalise
from crowdqa.aggregation.corpus import BLOCK_OBS, Corpus

__all__ = ["confusion_rows", "e_step", "empirical_confusion", "expected_counts", "obs_key"]


def obs_key(corpus: Corpus) -> NDArray[np.intp]:
    """Combined key ``worker * n_classes + label`` of each annotation: ndarray of shape (n_obs,)."""
    return corpus.worker.astype(np.intp) * corpus.n_classes + corpus.label.astype(np.intp)


def empirical_confusion(corpus: Corpus, labels: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each annotator's answers tallied against ``labels``: ndarray of shape (n_workers, n_classes, n_classes).

    ``[w, t, o]`` is the fraction of the tokens labelled ``t`` on which ``w`` answered ``o``;
    a row with no tokens is uniform.
    """
    n_workers, n_classes = corpus.n_workers, corpus.n_classes
    size = n_workers * n_classes * n_classes
    counts = np.zeros(size, dtype=np.int64)
    step = max(BLOCK_OBS, size)  # blocks no smaller than the table, so adding up the tables costs less than the keys
    for o0 in range(0, corpus.n_obs, step):
        key = corpus.worker[o0:o0 + step].astype(np.intp)  # ((worker * K) + label_t) * K + label_o, in place
        key *= n_classes
        key += labels.take(corpus.token[o0:o0 + step])
        key *= n_classes
        key += corpus.label[o0:o0 + step]
        counts += np.bincount(key, minlength=size)
    return confusion_rows(counts.reshape(n_workers, n_classes, n_classes).astype(np.float64))


def confusion_rows(counts: NDArray[np.float64]) -> NDArray[np.float64]:
    """Confusion counts, ndarray of shape (n_workers, n_classes, n_classes), as rows that sum to 1 (empty: uniform)."""
    rows = counts.sum(axis=2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # empty rows are replaced on the same line
        return np.where(rows > 0, counts / rows, 1.0 / counts.shape[2])


def expected_counts(
    posterior: NDArray[np.float64], *, token: NDArray[np.int64], key: NDArray[np.intp], n_workers: int,
    scratch: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    r"""Expected confusion counts :math:`n_{w,t,o} = \sum_{(i,w,o)} q_i(t)`.

    Returns an ndarray of shape (n_workers, n_classes, n_classes).

    One ``bincount`` per true class over the combined key ``worker * n_classes + label``; ``scratch``
    (n_obs,): where each class's posteriors are gathered per annotation (as in :func:`e_step`).
    """
    n_classes = posterior.shape[1]
    counts = np.empty((n_classes, n_workers * n_classes))  # counts[t, w * K + o] = n_{w,t,o}
    for t in range(n_classes):
        weights = posterior[:, t].take(token, out=scratch, mode="clip")
        counts[t] = np.bincount(key, weights=weights, minlength=n_workers * n_classes)
    return counts.reshape(n_classes, n_workers, n_classes).transpose(1, 0, 2)


def e_step(
    log_prior: NDArray[np.float64],
    log_confusion: NDArray[np.float64],
    *,
    token: NDArray[np.int64],
    key: NDArray[np.intp],
    n_tokens: int,
    known: NDArray[np.int64] | None = None,
    scratch: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], float]:
    r"""Posterior of every token's true class, and the log-likelihood, at given parameters.

    The E-step of Dawid and Skene (1979, JRSS C 28(1), 20-28, doi:10.2307/2346806); IBCC runs it at
    the expected log parameters of its Dirichlet posteriors.
    :math:`\log q_i(t) = \log\pi_t + \sum_{(i,w,o)} \log\theta_{w,t,o} - \log Z_i`.

    Parameters
    ----------
    log_prior : ndarray of shape (n_classes,)
        :math:`\log\pi`.
    log_confusion : ndarray of shape (n_workers, n_classes, n_classes)
        :math:`\log\theta_{w,t,o}` (row ``t`` = true class, column ``o`` = answer).
    token : ndarray of shape (n_obs,)
        Token of each annotation.
    key : ndarray of shape (n_obs,)
        ``worker * n_classes + label`` of each annotation (see :func:`obs_key`).
    n_tokens : int
    known : ndarray of shape (n_tokens,), optional
        Known class of a token or -1. Known tokens get a one-hot posterior, and add
        their joint log-probability :math:`\log p(y_i, z_i = k)` to the objective.
    scratch : ndarray of shape (n_obs,), optional
        Where the per-annotation log-probabilities of each class are gathered: a fit passes one
        buffer to every E- and M-step (see :class:`~crowdqa.aggregation.dawid_skene.DawidSkene`); without
        it, each gather is a new array.

    Returns
    -------
    posterior : ndarray of shape (n_tokens, n_classes)
        Rows sum to 1 (the transpose of a C-ordered buffer: columns are contiguous).
        Tokens nobody labelled get the prior.
    log_likelihood : float
        :math:`\sum_i \log Z_i` over unknown tokens plus the joint log-probability
        of the known ones.
    """
    n_workers, n_classes, _ = log_confusion.shape
    # table[t, w * K + o] = log theta[w, t, o]: one small contiguous row per true class.
    table = np.ascontiguousarray(log_confusion.transpose(1, 0, 2).reshape(n_classes, n_workers * n_classes))
    joint = np.empty((n_classes, n_tokens))
    for t in range(n_classes):  # loop over classes only; each line is vectorised over all annotations
        joint[t] = np.bincount(token, weights=table[t].take(key, out=scratch, mode="clip"), minlength=n_tokens)
    joint += log_prior[:, None]
    post, ll = normalise(joint, known)
    return post.T, ll
