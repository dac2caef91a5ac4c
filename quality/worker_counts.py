"""Every worker's counts at once: hits against a reference, and counts per (annotator, document) pair.

:func:`worker_hits` counts each worker's labels equal to the expert reference and to the aggregate in one
bincount. The (annotator, document) pair is the unit a worker's per-document counts and span scores are
taken over: :func:`obs_pairs` numbers the pair of every annotation without sorting, :func:`pair_counts` counts each
pair's binary outcomes against a reference in one bincount, and :func:`worker_span_counts` decodes and
matches every pair's spans at once, each pair a pseudo-document. All work over the corpus's COO arrays,
never a loop per worker or document.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus, run_indices
from crowdqa.aggregation.spans import span_bounds
from crowdqa.quality.metrics import grouped_outcomes
from crowdqa.quality.span_metrics import CharSpans, instance_counts

__all__ = ["WorkerHits", "worker_hits", "AnnotationPairs", "obs_pairs", "pair_counts", "worker_span_counts",
           "documents_per_worker"]


class WorkerHits(NamedTuple):
    """Each worker's labels equal to a reference and labels compared with it, against the experts and against
    the aggregate, and all of its labels (arrays of shape (n_workers,))."""

    correct_vs_expert: NDArray[np.int64]
    compared_vs_expert: NDArray[np.int64]
    correct_vs_aggregate: NDArray[np.int64]
    compared_vs_aggregate: NDArray[np.int64]
    labels: NDArray[np.int64]


def worker_hits(corpus: Corpus, *, valid_expert: NDArray, ref_expert: NDArray, valid_aggregate: NDArray,
                ref_aggregate: NDArray) -> WorkerHits:
    """Each worker's labels equal to the expert reference ``ref_expert`` and labels compared with it (over the
    annotations in ``valid_expert``), the same against the aggregate, and all of the worker's labels.

    One bincount of (worker, outcome against the experts, outcome against the aggregate) codes; an outcome is
    0 = not compared, 1 = compared and wrong, 2 = right.
    """
    code = corpus.worker.astype(np.intp) * 9
    for valid, ref, weight in ((valid_expert, ref_expert, 3), (valid_aggregate, ref_aggregate, 1)):
        outcome = valid.astype(np.int8)
        outcome += valid & (corpus.label == ref)
        if weight > 1:
            outcome *= weight
        code += outcome
    by_outcome = np.bincount(code, minlength=9 * corpus.n_workers).reshape(corpus.n_workers, 3, 3)
    expert, aggregate = by_outcome.sum(axis=2), by_outcome.sum(axis=1)
    return WorkerHits(expert[:, 2], expert[:, 1] + expert[:, 2], aggregate[:, 2], aggregate[:, 1] + aggregate[:, 2],
                      expert.sum(axis=1))


def documents_per_worker(corpus: Corpus) -> NDArray[np.int64]:
    """How many documents each annotator labelled at least one token of, shape (n_workers,).

    Unlike :func:`obs_pairs` it does not assume an annotator labels every token of a document it is on, so it
    holds for partial labelling (the ``tags`` scheme): the distinct (document, annotator) codes of the annotations,
    counted per annotator.
    """
    code = corpus.token_doc[corpus.token].astype(np.int64) * corpus.n_workers + corpus.worker
    pairs = np.unique(code)
    return np.bincount(pairs % corpus.n_workers, minlength=corpus.n_workers).astype(np.int64)


class AnnotationPairs(NamedTuple):
    """The (document, annotator) pair of every annotation (:func:`obs_pairs`)."""

    #: ndarray of shape (n_obs,): each annotation's pair; pairs are ordered by (document, annotator).
    pair: NDArray
    #: ndarray of shape (n_pairs,): each pair's annotator.
    pair_worker: NDArray


def obs_pairs(corpus: Corpus) -> AnnotationPairs:
    """The (document, annotator) pair of every annotation, without sorting.

    Returns
    -------
    AnnotationPairs
        ``pair`` int32 (int64 past 2**31 annotations); pairs are ordered by (document, worker).

    Notes
    -----
    Triplets are sorted by (token, worker) and an annotator present on a document
    labels all of its tokens (both checked by ``Corpus`` under a span scheme; the report scores a ``tags`` corpus as
    its :meth:`~crowdqa.aggregation.corpus.Corpus.token_items`), so each token of document ``d`` lists
    the document's ``n_annotators[d]`` annotators in the same order: the pair of annotation
    ``i`` on token ``t`` is ``pair_base[d] + i - obs_base[t]``, one ``repeat`` of a per-token
    offset; with no document longer than one token (categorical items) every annotation is its own pair.
    """
    if corpus.single_token_docs:
        return AnnotationPairs(np.arange(corpus.n_obs, dtype=np.int64), corpus.worker.astype(np.int64))
    obs_start = corpus.token_obs_start  # the corpus's check counted each token's annotations already
    per_token, obs_base = np.diff(obs_start), obs_start[:-1]  # obs_base: first annotation of each token
    n_in_doc = corpus.doc_annotators
    pair_base = np.cumsum(n_in_doc) - n_in_doc
    # The first token of a document lists its annotators.
    pair_worker = corpus.worker[run_indices(corpus.doc_obs_start[:-1], n_in_doc)]
    # int32 while the annotations fit: half the fresh memory of an array over every annotation.
    dtype = np.int32 if corpus.n_obs < np.iinfo(np.int32).max else np.int64
    pair = np.arange(corpus.n_obs, dtype=dtype)
    pair -= np.repeat((obs_base - pair_base[corpus.token_doc]).astype(dtype), per_token)
    return AnnotationPairs(pair, pair_worker.astype(np.int64))


def pair_counts(
    corpus: Corpus, pairs: AnnotationPairs, valid: NDArray, ref_pos: NDArray | None
) -> tuple[NDArray | None, NDArray]:
    """Counts per (worker, document) pair over the valid annotations, and their workers.

    ``ref_pos`` None: no counts (None), only which pairs are compared.
    """
    pair, pair_worker = pairs
    n_pairs = pair_worker.shape[0]
    counts = None
    if ref_pos is not None:  # one bincount gives the counts and which pairs have a compared token
        outcomes = grouped_outcomes(corpus.label > 0, ref_pos, pair, n_groups=n_pairs, mask=valid)
        used = outcomes.any(axis=1)
        counts = outcomes[used][:, [3, 2, 1]]
    elif corpus.single_token_docs:  # every annotation is its own pair (:func:`obs_pairs`)
        used = valid
    else:
        used = np.bincount(pair[valid], minlength=n_pairs) > 0
    return counts, pair_worker[used]


def worker_span_counts(
    corpus: Corpus, pairs: AnnotationPairs, *, ref: NDArray, docs: NDArray[np.bool_], annotators: NDArray
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Strict span ``tp, fp, fn`` of every (annotator, document) pair on the documents in ``docs`` against
    ``ref``, for the ``annotators`` given, all pairs at once.

    Each pair is a pseudo-document: the annotator's labels of the document's tokens, pairs laid end to end
    in pair order (document, then annotator). Its labels and the reference's on the same tokens are decoded
    once each (:func:`crowdqa.aggregation.spans.span_bounds`, a span never crossing a pair) and matched by
    :func:`crowdqa.quality.span_metrics.instance_counts` with the pairs as documents: the counts of decoding
    each annotator's labels alone and matching them with the reference's spans of each document.

    Parameters
    ----------
    pairs : AnnotationPairs
        Each annotation's pair and each pair's annotator, from :func:`obs_pairs`.
    ref : ndarray of shape (n_tokens,)
        Reference class indices; ``MISSING`` counts as ``O``.
    docs : ndarray of shape (n_docs,) of bool
    annotators : ndarray of shape (n_annotators,)

    Returns
    -------
    counts : ndarray of shape (n_scored_pairs, 3)
        ``tp, fp, fn`` of each pair with an annotator in ``annotators`` on a document in ``docs``.
    worker : ndarray of shape (n_scored_pairs,)
        The annotator of each of these pairs.

    Notes
    -----
    Only the annotations on the documents in ``docs`` are read (one run of rows per document,
    :attr:`Corpus.doc_obs_start`), and no row is sorted: a row on token ``t`` of document ``d``
    goes to position ``t - doc_start[d]`` of its pair's pseudo-document.
    """
    pair, pair_worker = pairs
    d = np.flatnonzero(docs)
    lo = corpus.doc_obs_start[d]
    n = corpus.doc_obs_start[d + 1] - lo
    rows = run_indices(lo, n)
    scored = np.zeros(corpus.n_workers, dtype=bool)
    scored[annotators] = True
    rows = rows[scored[corpus.worker[rows]]]
    # The pairs these rows make, numbered 0, 1, ... in pair order.
    used = np.zeros(pair_worker.shape[0], dtype=bool)
    used[pair[rows]] = True
    p = (np.cumsum(used) - 1)[pair[rows]]
    n_pairs = int(np.count_nonzero(used))
    tok = corpus.token[rows]
    doc = corpus.token_doc[tok]
    p_len = np.zeros(n_pairs, dtype=np.int64)
    p_len[p] = corpus.doc_lengths[doc]
    p_base = np.cumsum(p_len) - p_len
    # Pseudo-document order: an annotator labels every token of a document it is on, so the positions
    # are 0 .. n_rows - 1, each once.
    pos = p_base[p] + (tok - corpus.doc_start[doc])
    seq_tok = np.empty_like(tok)
    seq_tok[pos] = tok
    seq_lab = np.empty(pos.shape[0], dtype=corpus.label.dtype)
    seq_lab[pos] = corpus.label[rows]
    new_pair = np.zeros(pos.shape[0], dtype=bool)
    new_pair[p_base] = True
    seq_pair = np.repeat(np.arange(n_pairs, dtype=np.int64), p_len)
    gold, pred = (_pair_spans(corpus, lab, new_pair=new_pair, seq_tok=seq_tok, seq_pair=seq_pair)
                  for lab in (ref[seq_tok], seq_lab))
    counts = instance_counts(gold, pred, mode="strict", n_docs=n_pairs)
    return counts, pair_worker[used]


def _pair_spans(corpus: Corpus, labels: NDArray, *, new_pair: NDArray, seq_tok: NDArray, seq_pair: NDArray
                ) -> CharSpans:
    """The spans of pseudo-document labels, each in its pair (as its document) with the character offsets of
    its tokens (:func:`worker_span_counts`)."""
    first, last, etype = span_bounds(labels, new_pair, corpus=corpus)
    return CharSpans(doc=seq_pair[first], start=corpus.token_start[seq_tok[first]].astype(np.int64),
                     end=corpus.token_end[seq_tok[last - 1]].astype(np.int64), type=etype)


