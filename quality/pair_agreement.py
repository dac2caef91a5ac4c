"""Cohen's kappa for every pair of annotators who labelled the same documents, all pairs at once.

With ~2,000 crowd workers a loop over worker pairs with dense label arrays is out of
the question (and most pairs share nothing). The corpus layout gives the pairs that
do share documents directly: triplets are sorted by (token, worker) and an annotator
present on a document labels all of its tokens (under a span scheme; a corpus of the ``tags`` scheme, whose
annotators label any tokens, is scored as :meth:`~crowdqa.aggregation.corpus.Corpus.token_items`, where every
document is one token), so each document's annotations form
a (tokens x annotators) block. For every document with ``k`` annotators we take the
``k (k - 1) / 2`` column pairs of its block, number the worker pairs of all those
(document, pair) rows by one sort of their codes, and count the joint labels of their tokens
straight into the worker-pair matrices with one ``bincount`` per chunk of rows. When
only pairs sharing ``min_documents`` documents are wanted (a report's kappas), one sort
of the (document, pair) rows' pair codes (int32 up to 46,340 annotators) finds the
pairs that frequent, and a table of flags picks out their rows, so the many pairs of a
large crowd that share one document cost one sorted key each and never reach the token
count. One-token documents (categorical items) need no second visit: a row's joint label is its two
annotations' labels, taken with its code; with a small crowd (a table of every worker pair's cells no
larger than the rows) one ``bincount`` of the cell codes counts every pair, with no sort at all.
Kappa is then a vectorised function of the stacked matrices.

Edge convention: as in :mod:`crowdqa.quality.agreement`, kappa is ``nan`` when the expected
agreement is 1.

References
----------
.. [1] J. Cohen (1960). A coefficient of agreement for nominal scales. Educational and
   Psychological Measurement 20(1), 37-46. doi:10.1177/001316446002000104
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.quality.intervals import chunk_ranges

__all__ = ["PairConfusions", "PairKappas", "pair_confusions", "pair_kappas", "kappa_from_confusions"]


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
    corpus: Corpus, *, annotators: NDArray | None = None, min_documents: int = 1, chunk: int = 4_000_000,
    method: str = "auto",
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
    method : {"auto", "dense", "sparse"}, default="auto"
        How the kept pairs' tokens are counted: ``"dense"`` visits every token of every kept
        (document, pair) row; ``"sparse"`` only the annotations of a class other than 0 (with
        margins for the rest, :func:`_joint_sparse`), which costs far less when class 0 (``O``)
        is most of the labels of long documents. ``"auto"`` takes dense while it visits no more
        cells than there are annotations. Both give the same counts.

    Returns
    -------
    PairConfusions
        Pairs in order of ``(a, b)``.
    """
    k_cls = corpus.n_classes
    n_w = corpus.n_workers
    # Annotations are sorted by (token, worker) and an annotator present on a document labels all of its
    # tokens: document d's annotations are the (tokens x n_in_doc[d]) block starting at obs_base[d], and
    # its first row lists its annotators in worker order.
    n_in_doc, obs_base = corpus.doc_annotators, corpus.doc_obs_start[:-1]
    ks = np.flatnonzero(np.bincount(n_in_doc))
    groups = [(k, np.flatnonzero(n_in_doc == k)) for k in ks[ks >= 2].tolist()]
    z = np.zeros(0, dtype=np.int64)
    if not groups:
        return PairConfusions(z, z, np.zeros((0, k_cls, k_cls), dtype=np.int64), z)
    chosen = None
    if annotators is not None:
        chosen = np.zeros(n_w, dtype=bool)
        chosen[np.asarray(annotators, dtype=np.int64)] = True
        chosen = None if chosen.all() else chosen

    one_token = corpus.single_token_docs
    n_rows = sum(docs_k.shape[0] * (k * (k - 1) // 2) for k, docs_k in groups)
    if one_token and n_w * n_w * k_cls * k_cls <= max(n_rows, 1 << 22):
        return _one_token_table(corpus, groups, obs_base, chosen, min_documents)

    # Pass 1: the worker-pair code of every (document, pair) row; the pairs sharing enough documents, in
    # (a, b) order, from one sort of the codes; each row's pair number. One-token documents (categorical
    # items): a row's joint label is taken with its code, so the kept rows are counted with one bincount.
    code, joint = _row_codes(corpus, groups, obs_base, chosen, with_labels=one_token)
    uniq, n_docs = _frequent_codes(code[code >= 0] if chosen is not None else code, min_documents)
    kept_rows, kept_ids = _code_numbers(code, uniq, n_w * n_w)
    del code
    uniq, n_docs = uniq.astype(np.int64), n_docs.astype(np.int64)
    shape = (uniq.shape[0], k_cls, k_cls)
    if one_token:
        cell = kept_ids * (k_cls * k_cls)
        cell += joint[kept_rows]
        total = np.bincount(cell, minlength=shape[0] * k_cls * k_cls).reshape(shape)
        return PairConfusions(uniq // n_w, uniq % n_w, total, n_docs)

    kept = _kept_by_group(groups, kept_rows, kept_ids)
    del kept_rows, kept_ids
    dense_cells = sum(int(corpus.doc_lengths[doc].sum()) for _, doc, _, _ in kept)
    if method == "dense" or (method == "auto" and dense_cells <= corpus.n_obs):
        total = _joint_dense(corpus, kept, obs_base, shape, chunk)
    else:
        total = _joint_sparse(corpus, kept, obs_base, n_in_doc, uniq, shape, method=method)
    return PairConfusions(uniq // n_w, uniq % n_w, total, n_docs)


def _row_codes(corpus: Corpus, groups: list, obs_base: NDArray, chosen: NDArray | None, *, with_labels: bool
               ) -> tuple[NDArray, NDArray | None]:
    """The worker-pair code ``a * n_workers + b`` of every (document, pair) row of ``groups`` (int32, half the
    memory and sort time, when it fits; -1: a pair with an annotator not ``chosen``), and with ``with_labels``
    (one-token documents) each row's joint label ``label_a * n_classes + label_b``."""
    n_w, k_cls = corpus.n_workers, corpus.n_classes
    code_dtype = np.int32 if n_w * n_w < np.iinfo(np.int32).max else np.int64
    codes, joint = [], []
    for ia, ib in _row_pairs(groups, obs_base):
        wa = corpus.worker[ia].astype(code_dtype)
        wb = corpus.worker[ib].astype(code_dtype)
        code = wa * code_dtype(n_w) + wb
        if chosen is not None:
            code[~(chosen[wa] & chosen[wb])] = -1
        codes.append(code)
        if with_labels:
            joint.append(corpus.label[ia].astype(np.intp) * k_cls + corpus.label[ib])
    code = np.concatenate(codes) if len(codes) > 1 else codes[0]
    if not with_labels:
        return code, None
    return code, np.concatenate(joint) if len(joint) > 1 else joint[0]


def _kept_by_group(groups: list, kept_rows: NDArray, kept_ids: NDArray) -> list[tuple]:
    """The kept (document, pair) rows of each group ``(k, docs_k)``: ``(k, documents, pair columns, pair
    numbers)``, from the kept rows' numbers over all groups (row = local document * n_cols + pair column)."""
    kept, row0 = [], 0
    for k, docs_k in groups:
        n_cols = k * (k - 1) // 2
        end = row0 + docs_k.shape[0] * n_cols
        a, b = np.searchsorted(kept_rows, [row0, end])
        rows = kept_rows[a:b] - row0
        kept.append((k, docs_k[rows // n_cols], rows % n_cols, kept_ids[a:b]))
        row0 = end
    return kept


def _row_pairs(groups: list, obs_base: NDArray) -> Iterator[tuple[NDArray, NDArray]]:
    """For each group ``(k, docs_k)`` of documents with ``k`` annotators, the annotations of both sides of
    every (document, pair) row on the documents' first tokens: ``ia[r]``, ``ib[r]`` of row
    ``r = local document * k (k - 1) / 2 + pair column``, the pair columns those of ``np.triu_indices(k, 1)``."""
    for k, docs_k in groups:
        pi, pj = np.triu_indices(k, 1)
        first_row = obs_base[docs_k][:, None]
        yield (first_row + pi).ravel(), (first_row + pj).ravel()


def _one_token_table(corpus: Corpus, groups: list, obs_base: NDArray, chosen: NDArray | None,
                     min_documents: int) -> PairConfusions:
    """:func:`pair_confusions` of one-token documents (categorical items) whose table of every
    (worker pair, joint label) cell is no larger than the rows (or 4M cells).

    A row's joint label is its two annotations' labels, so one ``bincount`` of the cell codes
    ``((a * n_workers + b) * n_classes + label_a) * n_classes + label_b`` counts every pair at once;
    a pair's documents are its cells' sum. No sort and no second visit of the rows.
    """
    n_w, k_cls = corpus.n_workers, corpus.n_classes
    n_cells = n_w * n_w * k_cls * k_cls
    table = None  # n_cells + 1 counts, the last slot: rows of a pair left out
    for ia, ib in _row_pairs(groups, obs_base):
        wa, wb = corpus.worker[ia], corpus.worker[ib]
        cell = wa.astype(np.intp) * n_w
        cell += wb
        cell *= k_cls
        cell += corpus.label[ia]
        cell *= k_cls
        cell += corpus.label[ib]
        if chosen is not None:
            cell[~(chosen[wa] & chosen[wb])] = n_cells
        counts = np.bincount(cell, minlength=n_cells + 1)
        table = counts if table is None else table + counts
    table = table[:n_cells].reshape(n_w * n_w, k_cls, k_cls)
    docs = table.sum(axis=(1, 2))
    uniq = np.flatnonzero(docs >= max(int(min_documents), 1))
    return PairConfusions(uniq // n_w, uniq % n_w, table[uniq], docs[uniq])


def _joint_dense(corpus: Corpus, kept: list, obs_base: NDArray, shape: tuple, chunk: int) -> NDArray[np.int64]:
    """Joint label counts of the kept rows, token by token: one cell per (token, kept row)."""
    k_cls = corpus.n_classes
    kk = k_cls * k_cls
    total = np.zeros(shape[0] * kk, dtype=np.int64)
    for k, doc, col, ids in kept:
        pi, pj = np.triu_indices(k, 1)
        lens = corpus.doc_lengths[doc]
        for a, b in chunk_ranges(lens, chunk):
            ln = lens[a:b]
            at = np.repeat(np.arange(a, b), ln)
            t_local = np.arange(at.shape[0]) - np.repeat(np.cumsum(ln) - ln, ln)
            base = obs_base[doc[at]] + t_local * k
            cell = ids[at] * kk + corpus.label[base + pi[col[at]]] * k_cls + corpus.label[base + pj[col[at]]]
            total += np.bincount(cell, minlength=total.shape[0])
    return total.reshape(shape)


def _joint_sparse(
    corpus: Corpus, kept: list, obs_base: NDArray, n_in_doc: NDArray, uniq: NDArray, shape: tuple, *, method: str
) -> NDArray[np.int64]:
    """Joint label counts of the kept pairs from the annotations whose class is not 0, plus margins.

    With class 0 the common one (``O`` of span labels), a pair's cells with both classes > 0 come from
    the tokens where both annotators chose a class > 0 (each token's pairs of such annotations, matched
    to the kept pairs by code); the rest follow from the margins, the per-(document, annotator) counts of
    each class > 0 summed over the pair's documents, and the pair's tokens:
    ``n[i, 0] = r_i - sum_j>0 n[i, j]``, ``n[0, j] = c_j - sum_i>0 n[i, j]``, ``n[0, 0]`` the remainder.
    The cost follows the annotations of class > 0, not tokens times pairs.
    """
    k_cls = corpus.n_classes
    n_w = corpus.n_workers
    nz = np.flatnonzero(corpus.label > 0)
    t_nz, lab_nz = corpus.token[nz], corpus.label[nz].astype(np.int64)
    # Margins: counts of each class > 0 of every (document, annotator), numbered pair_base[d] + position.
    d_nz = corpus.token_doc[t_nz]
    pair_base = np.cumsum(n_in_doc) - n_in_doc
    dw = pair_base[d_nz] + (nz - obs_base[d_nz]) % n_in_doc[d_nz]
    dw_counts = np.bincount(dw * k_cls + lab_nz, minlength=int(n_in_doc.sum()) * k_cls).reshape(-1, k_cls)
    row_m = np.zeros((shape[0], k_cls), dtype=np.int64)
    col_m = np.zeros((shape[0], k_cls), dtype=np.int64)
    n_tok = np.zeros(shape[0], dtype=np.int64)
    for k, doc, col, ids in kept:
        pi, pj = np.triu_indices(k, 1)
        np.add.at(row_m, ids, dw_counts[pair_base[doc] + pi[col]])
        np.add.at(col_m, ids, dw_counts[pair_base[doc] + pj[col]])
        n_tok += np.bincount(ids, weights=corpus.doc_lengths[doc], minlength=shape[0]).astype(np.int64)
    # Both classes > 0: the pairs of class > 0 annotations on each token (sorted by worker within it).
    joint = np.zeros(shape[0] * k_cls * k_cls, dtype=np.int64)
    per_token = np.bincount(t_nz, minlength=corpus.n_tokens)
    start = np.cumsum(per_token) - per_token
    w_nz = corpus.worker[nz].astype(np.int64)
    sizes = np.flatnonzero(np.bincount(per_token)) if per_token.size else per_token
    for m in sizes[sizes >= 2].tolist():
        at = start[per_token == m][:, None]
        pi, pj = np.triu_indices(m, 1)
        ua, ub = (at + pi).ravel(), (at + pj).ravel()
        at, pid = _code_numbers(w_nz[ua] * n_w + w_nz[ub], uniq, n_w * n_w)
        cell = (pid * k_cls + lab_nz[ua[at]]) * k_cls + lab_nz[ub[at]]
        joint += np.bincount(cell, minlength=joint.shape[0])
    total = joint.reshape(shape)
    both = total[:, 1:, 1:]
    total[:, 1:, 0] = row_m[:, 1:] - both.sum(axis=2)
    total[:, 0, 1:] = col_m[:, 1:] - both.sum(axis=1)
    total[:, 0, 0] = n_tok - row_m[:, 1:].sum(axis=1) - total[:, 0, 1:].sum(axis=1)
    return total


def _frequent_codes(code: NDArray, min_count: int) -> tuple[NDArray, NDArray[np.int64]]:
    """The distinct codes occurring ``min_count`` times or more, sorted, and how often each occurs.

    One sort of the codes (numpy sorts int32 keys several times faster than ``unique``'s int64
    sort with its inverse); a code occurring ``min_count`` times fills a window
    ``s[i:i + min_count]`` of the sorted codes with equal ends, and only those codes are counted.
    """
    s = np.sort(code)
    m = max(int(min_count), 1)
    if s.shape[0] < m:
        return s[:0], np.zeros(0, dtype=np.int64)
    cand = s[:s.shape[0] - m + 1][s[m - 1:] == s[:s.shape[0] - m + 1]] if m > 1 else s
    uniq = cand[np.concatenate([[True], cand[1:] != cand[:-1]])] if cand.shape[0] else cand
    return uniq, np.searchsorted(s, uniq, side="right") - np.searchsorted(s, uniq, side="left")


def _code_numbers(code: NDArray, uniq: NDArray, n_codes: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The rows whose ``code`` is in the sorted ``uniq`` (ascending; negative codes never are), and the
    position of each one's code in ``uniq``.

    A code space no larger than the rows (or 4M codes, 16 MiB) gets a table of every code's position,
    one gather per row: a small crowd keeps most of its pairs (500 annotators over 1M items: all 125k
    pairs, 3M rows), where a binary search of every row took 0.5 s. A larger space gets a bit table
    of the ``n_codes`` codes (3 MiB for 5,000 annotators, so its random reads stay in cache), which
    finds the few rows whose pair was kept without a binary search of every row (the many pairs of a
    big crowd sharing one document); a code space too large for either (beyond two bytes per row, or
    8 MiB) falls back to searching every row. Only the found rows are returned, so no array of every
    row's number is written.
    """
    if uniq.shape[0] == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    if n_codes <= max(code.shape[0], 1 << 22):
        position = np.full(n_codes + 1, -1, dtype=np.int32 if uniq.shape[0] < 1 << 31 else np.int64)
        position[uniq] = np.arange(uniq.shape[0])
        found = position[np.where(code >= 0, code, n_codes)]  # a negative code reads the last slot, -1
        rows = np.flatnonzero(found >= 0)
        return rows, found[rows].astype(np.intp)
    if n_codes <= 8 * max(2 * code.shape[0], 1 << 23):
        bits = np.zeros((n_codes >> 3) + 1, dtype=np.uint8)
        np.bitwise_or.at(bits, uniq >> 3, np.left_shift(1, uniq & 7).astype(np.uint8))
        valid = code >= 0
        c = np.where(valid, code, 0)  # code 0 may be a kept pair: negative codes are masked below
        hit = (bits[c >> 3] & np.left_shift(np.uint8(1), (c & 7).astype(np.uint8))) != 0
        rows = np.flatnonzero(hit & valid)
    else:
        rows = np.flatnonzero(code >= 0)
        at = np.minimum(np.searchsorted(uniq, code[rows]), uniq.shape[0] - 1)
        rows = rows[uniq[at] == code[rows]]
    return rows, np.searchsorted(uniq, code[rows])


@dataclass(frozen=True)
class PairKappas:
    """Cohen's kappa of annotator pairs that share documents, with what it was computed from.

    Attributes
    ----------
    a, b : ndarray of shape (n_pairs,)
        Annotator indices, ``a < b``.
    kappa : ndarray of shape (n_pairs,)
        ``nan`` where the expected agreement is 1.
    tokens, documents : ndarray of shape (n_pairs,)
        Tokens and documents both labelled.
    """

    a: NDArray[np.int64]
    b: NDArray[np.int64]
    kappa: NDArray[np.float64]
    tokens: NDArray[np.int64]
    documents: NDArray[np.int64]


#: Largest number of joint-count cells (pairs x classes x classes) :func:`pair_kappas` counts in one pass.
KAPPA_CELLS = 1 << 24


def pair_kappas(corpus: Corpus, *, annotators: NDArray | None = None, min_documents: int = 1,
                max_cells: int = KAPPA_CELLS) -> PairKappas:
    """Cohen's kappa of every annotator pair sharing ``min_documents`` documents, in bounded memory.

    Kappa needs of each pair's confusion only its diagonal and its two margins. While every pair's
    K x K table fits in ``max_cells`` it is :func:`pair_confusions` and :func:`kappa_from_confusions`;
    with many classes (1,225 pairs of 50 annotators x 1,000 classes are 9.1 GiB of tables) the classes
    are taken in blocks: each pass keeps one block's classes and merges all the others into one, so it
    counts (block + 1)^2 cells per pair, and its block's diagonal cells and margins are exact.
    """
    k_cls = corpus.n_classes
    n_ann = corpus.n_workers if annotators is None else int(np.asarray(annotators).size)
    most_pairs = max(n_ann * (n_ann - 1) // 2, 1)
    if most_pairs * k_cls * k_cls <= max_cells:
        pc = pair_confusions(corpus, annotators=annotators, min_documents=min_documents)
        return PairKappas(pc.a, pc.b, kappa_from_confusions(pc.confusion),
                          pc.confusion.sum(axis=(1, 2)), pc.documents)
    block = max(int(np.sqrt(max_cells / most_pairs)) - 1, 1)
    agree = rows = None
    for k0 in range(0, k_cls, block):
        k1 = min(k0 + block, k_cls)
        keep = np.zeros(k_cls, dtype=np.int16)  # 0: every class outside the block; the block's as 1..
        keep[k0:k1] = np.arange(1, k1 - k0 + 1, dtype=np.int16)
        merged = replace(corpus, label=keep[corpus.label],
                         class_names=("", *(f"{k}" for k in range(k0, k1))))
        pc = pair_confusions(merged, annotators=annotators, min_documents=min_documents)
        if agree is None:
            agree, rows = np.zeros(pc.a.size, dtype=np.int64), np.zeros(pc.a.size, dtype=np.float64)
            first, tokens = pc, pc.confusion.sum(axis=(1, 2))
        inner = pc.confusion[:, 1:, 1:]
        agree += np.trace(inner, axis1=1, axis2=2)
        rows += np.einsum("pi,pi->p", inner.sum(axis=2) + pc.confusion[:, 1:, 0],
                          inner.sum(axis=1) + pc.confusion[:, 0, 1:])
    n = tokens.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_e = rows / (n * n)
        kappa = (agree / n - p_e) / (1.0 - p_e)
    kappa = np.where((n > 0) & ~np.isclose(p_e, 1.0, rtol=0.0, atol=1e-15), kappa, np.nan)
    return PairKappas(first.a, first.b, kappa, tokens, first.documents)


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
