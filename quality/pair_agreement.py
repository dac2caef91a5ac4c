"""Cohen's kappa for every pair of annotators who labelled the same documents, all pairs at once.

With ~2,000 crowd workers a loop over worker pairs with dense label arrays is out of
the question (and most pairs share nothing). The corpus layout gives the pairs that
do share documents directly: triplets are sorted by (token, worker) and an annotator
present on a document labels all of its tokens, so each document's annotations form
a (tokens x annotators) block. For every document with ``k`` annotators we take the
``k (k - 1) / 2`` column pairs of its block, number the worker pairs of all those
(document, pair) rows with one ``unique``, and count the joint labels of their tokens
straight into the worker-pair matrices with one ``bincount`` per chunk of rows. When
only pairs sharing ``min_documents`` documents are wanted (a report's kappas), one
``bincount`` over hashed pair keys first drops the rows whose pair cannot be that
frequent, so the many pairs of a large crowd that share one document cost one hash
each. Kappa is then a vectorised function of the stacked matrices.

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
from crowdqa.quality.intervals import _chunks

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


def pair_confusions(
    corpus: Corpus, *, annotators: NDArray | None = None, min_documents: int = 1, chunk: int = 4_000_000
) -> PairConfusions:
    """Confusion matrices of every annotator pair that labelled at least ``min_documents`` common documents.

    Parameters
    ----------
    corpus : Corpus
    annotators : ndarray of int, optional
        Only pairs of these annotator indices (e.g. ``corpus.workers_with_role("crowd")``);
        default all.
    min_documents : int, default=1
        Pairs sharing fewer documents are left out before their tokens are counted, so a
        report that only keeps pairs sharing a few documents does not count the (many) pairs
        that share one.
    chunk : int, default=4_000_000
        Largest number of (token, pair) cells materialised at once.

    Returns
    -------
    PairConfusions
        Pairs in order of ``(a, b)``.
    """
    k_cls = corpus.n_classes
    kk = k_cls * k_cls
    obs_doc = corpus.obs_doc
    at_first = corpus.token == corpus.doc_start[obs_doc]
    n_in_doc = np.bincount(obs_doc[at_first], minlength=corpus.n_docs)
    doc_workers_base = np.concatenate([[0], np.cumsum(n_in_doc)[:-1]])
    first_workers = corpus.worker[at_first].astype(np.int64)  # grouped by document, sorted by worker
    obs_base = np.searchsorted(corpus.token, corpus.doc_start[:-1])
    groups = [(k, np.flatnonzero(n_in_doc == k)) for k in np.unique(n_in_doc[n_in_doc >= 2]).tolist()]
    z = np.zeros(0, dtype=np.int64)
    if not groups:
        return PairConfusions(z, z, np.zeros((0, k_cls, k_cls), dtype=np.int64), z)

    # Pass 1: the worker pair of every (document, pair) row; the pairs sharing enough documents, numbered in
    # (a, b) order, and each row's pair number (-1: a pair left out).
    keys = []
    for k, docs_k in groups:
        pi, pj = np.triu_indices(k, 1)
        wbase = doc_workers_base[docs_k][:, None]
        wa, wb = first_workers[wbase + pi[None, :]], first_workers[wbase + pj[None, :]]
        keys.append((wa * corpus.n_workers + wb).ravel())
    key = np.concatenate(keys)
    del keys
    candidate = _maybe_frequent(key, min_documents)
    if annotators is not None:
        chosen = np.zeros(corpus.n_workers, dtype=bool)
        chosen[np.asarray(annotators, dtype=np.int64)] = True
        candidate &= chosen[key // corpus.n_workers] & chosen[key % corpus.n_workers]
    uniq, inv, n_docs = np.unique(key[candidate], return_inverse=True, return_counts=True)
    kept = n_docs >= min_documents
    number = np.where(kept, np.cumsum(kept) - 1, -1)
    pair_id = np.full(key.shape[0], -1, dtype=np.int64)
    pair_id[candidate] = number[inv.ravel()]
    del key, candidate, inv
    uniq, n_docs = uniq[kept], n_docs[kept].astype(np.int64)

    # Pass 2: joint labels of every token of the kept rows, counted straight into the worker-pair matrices.
    total = np.zeros(uniq.shape[0] * kk, dtype=np.int64)
    row0 = 0
    for k, docs_k in groups:
        pi, pj = np.triu_indices(k, 1)
        n_rows = docs_k.shape[0] * pi.shape[0]
        ids = pair_id[row0:row0 + n_rows]
        row0 += n_rows
        rows = np.flatnonzero(ids >= 0)  # row = local document * n_pairs + pair column
        doc = docs_k[rows // pi.shape[0]]
        col = rows % pi.shape[0]
        lens = corpus.doc_lengths[doc]
        for a, b in _chunks(lens, chunk):
            ln = lens[a:b]
            at = np.repeat(np.arange(a, b), ln)
            t_local = np.arange(at.shape[0]) - np.repeat(np.cumsum(ln) - ln, ln)
            base = obs_base[doc[at]] + t_local * k
            cell = ids[rows[at]] * kk + corpus.label[base + pi[col[at]]] * k_cls + corpus.label[base + pj[col[at]]]
            total += np.bincount(cell, minlength=total.shape[0])
    return PairConfusions(uniq // corpus.n_workers, uniq % corpus.n_workers, total.reshape(-1, k_cls, k_cls), n_docs)


def _maybe_frequent(key: NDArray[np.int64], min_count: int) -> NDArray[np.bool_]:
    """Entries whose key may occur ``min_count`` times or more: a superset, by one count per hashed bucket.

    Every occurrence of a key falls into one bucket of at least as many entries, so no frequent
    key is missed; the exact count over the candidates (a ``unique``) then sorts them out. Keys
    occurring once, most pairs of a big crowd, rarely share a bucket with two others.
    """
    if min_count <= 1:
        return np.ones(key.shape[0], dtype=bool)
    bits = max(1, int(key.shape[0]).bit_length() + 1)  # about two buckets per entry
    with np.errstate(over="ignore"):  # Fibonacci hashing: the top bits of key * 2**64 / golden ratio
        bucket = (key.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - bits)
    bucket = bucket.astype(np.int64)
    return np.bincount(bucket, minlength=1 << bits)[bucket] >= min_count



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
