"""Cohen's kappa for every pair of annotators who labelled the same documents, all pairs at once.

With ~2,000 crowd workers a loop over worker pairs with dense label arrays is out of
the question (and most pairs share nothing). The corpus layout gives the pairs that
do share documents directly: triplets are sorted by (token, worker) and an annotator
present on a document labels all of its tokens, so each document's annotations form
a (tokens x annotators) block. For every document with ``k`` annotators we take the
``k (k - 1) / 2`` column pairs of its block, number the worker pairs of all those
(document, pair) rows with one ``unique``, and count the joint labels of their tokens
straight into the worker-pair matrices with one ``bincount`` per chunk of documents
with the same ``k``. Kappa is then a vectorised function of
the stacked matrices.

Edge convention: as in :mod:`crowdqa.quality.agreement`, kappa is ``nan`` when the expected
agreement is 1.

References
----------
.. [1] J. Cohen (1960). A coefficient of agreement for nominal scales. Educational and
   Psychological Measurement 20(1), 37-46. doi:10.1177/001316446002000104
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus

__all__ = ["PairConfusions", "pair_confusions", "kappa_from_confusions"]


@dataclass(frozen=True)
class PairConfusions:
    """Joint label counts of annotator pairs that share documents.

    Attributes
    ----------
    a, b : ndarray of shape (n_pairs,)
        Annotator indices, ``a < b``.
    confusion : ndarray of shape (n_pairs, n_classes, n_classes)
        ``confusion[p, i, j]`` tokens that ``a`` labelled ``i`` and ``b`` labelled ``j``.
    documents : ndarray of shape (n_pairs,)
        Documents both labelled.
    """

    a: NDArray[np.int64]
    b: NDArray[np.int64]
    confusion: NDArray[np.int64]
    documents: NDArray[np.int64]


def pair_confusions(corpus: Corpus, *, chunk: int = 4_000_000) -> PairConfusions:
    """Confusion matrices of every annotator pair that labelled a common document.

    Parameters
    ----------
    corpus : Corpus
        Select the annotators first (``corpus.select_role("crowd")``) to restrict the pairs.
    chunk : int, default=4_000_000
        Largest number of (token, pair) cells materialised at once.

    Returns
    -------
    PairConfusions
    """
    k_cls = corpus.n_classes
    kk = k_cls * k_cls
    obs_doc = corpus.obs_doc
    at_first = corpus.token == corpus.doc_start[obs_doc]
    n_in_doc = np.bincount(obs_doc[at_first], minlength=corpus.n_docs)
    doc_workers_base = np.concatenate([[0], np.cumsum(n_in_doc)[:-1]])
    first_workers = corpus.worker[at_first].astype(np.int64)  # grouped by document, sorted by worker
    obs_base = np.searchsorted(corpus.token, corpus.doc_start[:-1])
    label = corpus.label.astype(np.int64)
    groups = [(k, np.flatnonzero(n_in_doc == k)) for k in np.unique(n_in_doc[n_in_doc >= 2]).tolist()]
    if not groups:
        z = np.zeros(0, dtype=np.int64)
        return PairConfusions(z, z, np.zeros((0, k_cls, k_cls), dtype=np.int64), z)

    # Pass 1: the worker pair of every (document, pair) row, numbered by one unique over all of them.
    keys = []
    for k, docs_k in groups:
        pi, pj = np.triu_indices(k, 1)
        wbase = doc_workers_base[docs_k][:, None]
        wa, wb = first_workers[wbase + pi[None, :]], first_workers[wbase + pj[None, :]]
        keys.append((wa * corpus.n_workers + wb).ravel())
    uniq, inv = np.unique(np.concatenate(keys), return_inverse=True)
    n_docs = np.bincount(inv, minlength=uniq.shape[0]).astype(np.int64)
    # Pass 2: joint labels of every token of those rows, counted straight into the worker-pair matrices.
    total = np.zeros(uniq.shape[0] * kk, dtype=np.int64)
    row0 = 0
    for k, docs_k in groups:
        pi, pj = np.triu_indices(k, 1)
        n_pairs = pi.shape[0]
        pair_of = inv[row0:row0 + docs_k.shape[0] * n_pairs].reshape(-1, n_pairs)  # (docs of group, pairs)
        row0 += docs_k.shape[0] * n_pairs
        lengths = corpus.doc_lengths[docs_k]
        max_docs = max(1, chunk // max(1, int(lengths.max()) * n_pairs))
        for s in range(0, docs_k.shape[0], max_docs):
            sel = np.arange(s, min(s + max_docs, docs_k.shape[0]))
            lens = lengths[sel]
            row_doc = np.repeat(sel, lens)  # index into docs_k
            t_local = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
            base = obs_base[docs_k[row_doc]] + t_local * k  # (n_rows,)
            la = label[base[:, None] + pi[None, :]]
            lb = label[base[:, None] + pj[None, :]]
            cell = (pair_of[row_doc] * kk + la * k_cls + lb).ravel()
            total += np.bincount(cell, minlength=total.shape[0])
    return PairConfusions(uniq // corpus.n_workers, uniq % corpus.n_workers, total.reshape(-1, k_cls, k_cls), n_docs)


def kappa_from_confusions(confusion: NDArray) -> NDArray[np.float64]:
    """Cohen's kappa of each stacked confusion matrix.

    Parameters
    ----------
    confusion : ndarray of shape (n_pairs, n_classes, n_classes)

    Returns
    -------
    ndarray of shape (n_pairs,)
        ``nan`` where the expected agreement is 1 or the matrix is empty.
    """
    c = np.asarray(confusion, dtype=np.float64)
    n = c.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_o = np.trace(c, axis1=1, axis2=2) / n
        p_e = np.einsum("pi,pi->p", c.sum(axis=2), c.sum(axis=1)) / (n * n)
        kappa = (p_o - p_e) / (1.0 - p_e)
    return np.where((n > 0) & ~np.isclose(p_e, 1.0, rtol=0.0, atol=1e-15), kappa, np.nan)
