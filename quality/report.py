"""The quality report: every worker and the aggregate against the experts, with intervals.

:func:`build_report_data` turns a corpus and an aggregate's labels into the report as plain JSON data in
the shape of :class:`~crowdqa.quality.report_model.QualityReport` (the typed models of
:mod:`crowdqa.quality.report_model` are its schema), :func:`build_report` into the typed model itself;
:func:`format_report` prints either as a terminal table and :func:`dump_report` writes either as JSON. The
command line writes the plain data and never imports pydantic; the service validates it into the model.

Rules
-----
* The reference is :func:`crowdqa.quality.references.reference_labels` (``"union"`` of the
  experts by default); a token no expert labelled is not compared with the experts.
* Tokens in ``clamped`` (expert labels the aggregator was given as known) are left out
  of the aggregate's comparison against the experts, so clamped tokens are never
  reported as if they were held out; span comparisons leave out every document with a
  clamped token. Workers and experts are still scored on them: their labels never came
  from the fit.
* ``token`` scores: positive = any non-``O`` label, over the tokens both sides cover.
  Span scores (:data:`SPAN_LEVELS`), on the decoded spans of the documents the experts labelled:
  ``span_location`` (same start and length, any type; the seed's ``span_strict``, the NLP Sandbox's
  location-only "strict"), ``span_location_relaxed`` (same start, length within +-2 characters, any type;
  was ``span_relaxed``), ``span_location_and_type`` (same start, length and type: conlleval's figure on
  BIO labels; was ``span_type``), ``span_overlap`` (a span that shares a character with one of the other
  side, any type; :func:`~crowdqa.quality.span_metrics.overlap_counts`) and ``span_per_type``
  (conlleval's per-type P/R/F1). ``headline`` names the score to lead with: conlleval's on BIO labels,
  ``token`` on inside/outside ones.
* Every score block carries ``tp, fp, fn``, Clopper-Pearson intervals for precision
  and recall, and a document-level bootstrap interval for F1 (``null`` for fewer than
  ``min_boot_docs`` documents, where resampling documents says nothing).
* ``agreement``: Cohen's kappa and pairwise F1 for every pair of experts, Cohen's kappa
  for every pair of crowd workers sharing ``min_pair_docs`` documents
  (:mod:`crowdqa.quality.pair_agreement`), Krippendorff's alpha over all annotators.
* A worker's ``vs_expert`` covers the documents both the worker and the experts
  labelled; an expert is compared with the reference built from the *other* experts
  (``null`` when there is no other expert, or when the reference is that expert);
  ``vs_aggregate`` covers all of the worker's documents. A crowd worker's ``span_vs_expert``
  (span labels only) is ``span_location`` of its labels against the reference, on the documents of its
  ``vs_expert``; experts have none (``null``).

Per-worker counts come from one ``bincount`` over the COO arrays for all workers at
once (span counts from one decoding of every (worker, document) pair, :func:`_worker_span_counts`),
and every worker's bootstrap is drawn in one pass
(:func:`crowdqa.quality.intervals.grouped_bootstrap_f1_bounds`), at a cost that follows the
workers' distinct per-document counts, not a loop over workers.
"""

from __future__ import annotations

import json
import math
import re
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus, run_indices
from crowdqa.aggregation.spans import decode_spans, span_bounds
from crowdqa.quality.agreement import krippendorff_alpha_corpus
from crowdqa.quality.intervals import clopper_pearson_bounds, grouped_bootstrap_f1_bounds
from crowdqa.quality.metrics import grouped_counts, grouped_outcomes, per_label_prf, prf_from_counts
from crowdqa.quality.pair_agreement import kappa_from_confusions, pair_confusions, pair_kappas
from crowdqa.quality.references import RULES, leave_one_out_references, reference_labels
from crowdqa.quality.span_metrics import (
    LEGACY_SPAN_KEYS,
    CharSpans,
    instance_counts,
    overlap_counts,
    per_type_counts,
)

if TYPE_CHECKING:  # the typed models (pydantic) are imported where a typed report is asked for, not here
    from crowdqa.quality.report_model import FitRecord, QualityReport

__all__ = ["build_report", "build_report_data", "fit_record_data", "dump_report", "format_report", "plain_json",
           "score_block", "TABLE_SORT_KEYS"]

LEVEL = 0.95


def _num(x: float) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _median(x: NDArray) -> float:
    """``np.median`` of a 1-D array without NaN, as it computes it (the mean of the middle one or two of a
    partition), without its NaN check, whose first call imports ``numpy.ma`` (0.04 s)."""
    half = x.shape[0] // 2
    if x.shape[0] % 2:
        return float(np.partition(x, half)[half])
    return float(np.mean(np.partition(x, [half - 1, half])[half - 1:half + 1]))


def _ci(low: float, high: float) -> list[float] | None:
    return [float(low), float(high)] if np.isfinite(low) and np.isfinite(high) else None


def score_block(
    doc_counts: NDArray, *, n_boot: int, rng: np.random.Generator | int, min_boot_docs: int = 3,
    tokens: int | None = None,
) -> dict | None:
    """One report score block from per-document counts.

    Parameters
    ----------
    doc_counts : ndarray of shape (n_docs, 3)
        ``tp, fp, fn`` of each compared document.
    n_boot : int
    rng : numpy Generator or int seed
    min_boot_docs : int, default=3
    tokens : int, optional
        Number of compared tokens, reported as is.

    Returns
    -------
    dict or None
        ``None`` when no document is compared.
    """
    doc_counts = np.asarray(doc_counts, dtype=np.int64).reshape(-1, 3)
    if doc_counts.shape[0] == 0:
        return None
    tp, fp, fn = (int(v) for v in doc_counts.sum(axis=0))
    p, r, f = prf_from_counts(tp, fp, fn)
    (p_lo, r_lo), (p_hi, r_hi) = clopper_pearson_bounds([tp, tp], [tp + fp, tp + fn], level=LEVEL)
    f_ci = None
    if doc_counts.shape[0] >= min_boot_docs and n_boot > 0:
        (low,), (high,) = grouped_bootstrap_f1_bounds(doc_counts, np.zeros(doc_counts.shape[0], dtype=np.int64),
                                                      n_groups=1, n_boot=n_boot, level=LEVEL, rng=rng)
        f_ci = _ci(low, high)
    out = {
        "precision": _num(p), "recall": _num(r), "f1": _num(f), "tp": tp, "fp": fp, "fn": fn,
        "precision_ci": _ci(p_lo, p_hi), "recall_ci": _ci(r_lo, r_hi), "f1_ci": f_ci,
        "documents": int(doc_counts.shape[0]),
    }
    if tokens is not None:
        out["tokens"] = int(tokens)
    return out


def _token_doc_counts(pred: NDArray, ref: NDArray, valid: NDArray, corpus: Corpus) -> tuple[NDArray, int]:
    """Per-document binary counts (only documents with a compared token) and the token count."""
    return _doc_counts(pred[valid] > 0, ref[valid] > 0, corpus.token_doc[valid], corpus.n_docs), int(
        np.count_nonzero(valid))


def _doc_counts(pred_pos: NDArray, ref_pos: NDArray, doc: NDArray, n_docs: int) -> NDArray[np.int64]:
    """Binary tp/fp/fn of the documents with a compared token (document order), from compared tokens."""
    counts = grouped_counts(pred_pos, ref_pos, doc, n_groups=n_docs)
    return counts[np.bincount(doc, minlength=n_docs) > 0]


#: The span levels of a report, each with its NLP Sandbox instance mode (None: the overlap match), and the keys
#: the seed named them by, still read in stored reports (:func:`span_levels`): ``span_strict`` ignored the
#: type, ``span_relaxed`` too, and ``span_type`` is conlleval's figure.
SPAN_LEVELS = (("span_location", "strict"), ("span_location_relaxed", "relaxed"),
               ("span_location_and_type", "type"), ("span_overlap", None))


def span_levels(agg: dict | None) -> dict[str, dict | None]:
    """The span score blocks of a report's ``aggregate_vs_expert`` by their names (:data:`SPAN_LEVELS`),
    reading the seed's keys (``span_strict``, ``span_relaxed``, ``span_type``) of a report stored before."""
    agg = agg or {}
    old = {new: agg[key] for key, new in LEGACY_SPAN_KEYS.items() if key in agg}
    return {key: agg.get(key, old.get(key)) for key, _ in SPAN_LEVELS if key in agg or key in old}


def headline_level(report: dict) -> str:
    """The score a span report leads with: its ``aggregate_vs_expert.headline``, or for a report stored before
    there was one, conlleval's (``span_location_and_type``) on BIO labels and ``token`` on inside/outside ones."""
    agg = report.get("aggregate_vs_expert") or {}
    if agg.get("headline"):
        return str(agg["headline"])
    return "span_location_and_type" if any(str(k).startswith("B-") for k in report.get("labels") or ()) else "token"


def _span_blocks(
    corpus: Corpus, pred: NDArray, ref: NDArray, docs: NDArray[np.bool_], *, n_boot: int, seed: int,
    min_boot_docs: int,
) -> dict:
    """The :data:`SPAN_LEVELS` blocks and the per-type scores (``span_per_type``) on the documents in ``docs``."""
    if not np.any(docs):
        return {**{key: None for key, _ in SPAN_LEVELS}, "span_per_type": {}}
    ps = decode_spans(pred, corpus)
    rs = decode_spans(ref, corpus)
    ps, rs = ps.select(docs[ps.doc]), rs.select(docs[rs.doc])
    out = {}
    for i, (key, mode) in enumerate(SPAN_LEVELS):
        if mode is None:
            c = overlap_counts(rs, ps, n_docs=corpus.n_docs)[docs]
        else:
            c = instance_counts(rs, ps, mode=mode, n_docs=corpus.n_docs)[docs]
        out[key] = score_block(c, n_boot=n_boot, rng=np.random.default_rng([seed, 1, i]), min_boot_docs=min_boot_docs)
    by_type = per_type_counts(rs, ps, n_types=len(corpus.entity_types) + 1)
    out["span_per_type"] = {}
    for t, name in enumerate(corpus.entity_types, start=1):
        tp, fp, fn = (int(v) for v in by_type[t])
        p, r, f = prf_from_counts(tp, fp, fn)
        out["span_per_type"][name] = {"precision": _num(p), "recall": _num(r), "f1": _num(f), "tp": tp, "fp": fp,
                                      "fn": fn}
    return out


def _accuracy_blocks(correct: NDArray, compared: NDArray) -> list[dict]:
    """Share of compared tokens (items) labelled as the reference, with its Clopper-Pearson interval, elementwise."""
    correct, compared = np.asarray(correct), np.asarray(compared)
    lo, hi = clopper_pearson_bounds(correct, compared, level=LEVEL)  # all at once
    has_ci = np.isfinite(lo) & np.isfinite(hi)
    return [{"value": c / n if n else None, "correct": c, "compared": n, "ci": [a, b] if ok else None}
            for c, n, a, b, ok in zip(correct.tolist(), compared.tolist(), lo.tolist(), hi.tolist(), has_ci.tolist(),
                                      strict=True)]


def _accuracy_block(correct: int, compared: int) -> dict:
    """:func:`_accuracy_blocks` of one count."""
    return _accuracy_blocks(np.array([int(correct)]), np.array([int(compared)]))[0]


def _worker_hits(corpus: Corpus, valid_e: NDArray, ref_e: NDArray, valid_a: NDArray, ref_a: NDArray
                 ) -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray]:
    """Each worker's labels equal to the expert reference ``ref_e`` and labels compared with it (over the rows
    in ``valid_e``), the same against the aggregate ``ref_a`` (``valid_a``), and all of the worker's labels.

    One bincount of (worker, outcome against the experts, outcome against the aggregate) codes; an outcome is
    0 = not compared, 1 = compared and wrong, 2 = right.
    """
    code = corpus.worker.astype(np.intp) * 9
    for valid, ref, weight in ((valid_e, ref_e, 3), (valid_a, ref_a, 1)):
        outcome = valid.astype(np.int8)
        outcome += valid & (corpus.label == ref)
        if weight > 1:
            outcome *= weight
        code += outcome
    by_outcome = np.bincount(code, minlength=9 * corpus.n_workers).reshape(corpus.n_workers, 3, 3)
    e, a = by_outcome.sum(axis=2), by_outcome.sum(axis=1)
    return e[:, 2], e[:, 1] + e[:, 2], a[:, 2], a[:, 1] + a[:, 2], e.sum(axis=1)


def _add_worker_accuracy(blocks: list[dict | None], correct: NDArray, compared: NDArray) -> None:
    """Put each worker's accuracy (``correct`` of ``compared`` labels, :func:`_worker_hits`) in its block."""
    if all(block is None for block in blocks):
        return
    for block, acc in zip(blocks, _accuracy_blocks(correct, compared), strict=True):
        if block is not None:
            block["accuracy"] = acc


def _id_rank(ids: tuple[str, ...]) -> NDArray[np.int64]:
    """Each annotator's rank among the annotator ids: a numbering that does not follow the upload's order."""
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.argsort(np.asarray(ids, dtype=str), kind="stable")] = np.arange(len(ids))
    return rank


def _worker_blocks(
    counts: NDArray | None, pair_worker: NDArray, n_tokens: NDArray | None, *, id_rank: NDArray, n_boot: int,
    seed: int, stream: int, min_boot_docs: int,
) -> list[dict | None]:
    """Score blocks for all workers from per-(worker, document) counts (rows in any order).

    ``counts`` None (categorical answers, scored by accuracy only): blocks of ``documents`` and ``tokens``.
    ``n_tokens`` None (span scores): blocks without ``tokens``.
    The bootstrap numbers the workers by ``id_rank`` (:func:`_id_rank`), so a worker's interval does not
    depend on the order of the upload's rows.
    """
    n_workers = id_rank.shape[0]
    n_docs = np.bincount(pair_worker, minlength=n_workers)
    if counts is None:
        return [None if n_docs[w] == 0 else {"documents": int(n_docs[w]), "tokens": int(n_tokens[w])}
                for w in range(n_workers)]
    totals = np.stack([np.bincount(pair_worker, weights=counts[:, j], minlength=n_workers) for j in range(3)],
                      axis=1).astype(np.int64)
    tp, fp, fn = totals.T
    p, r, f = prf_from_counts(tp, fp, fn)
    p_lo, p_hi = clopper_pearson_bounds(tp, tp + fp, level=LEVEL)
    r_lo, r_hi = clopper_pearson_bounds(tp, tp + fn, level=LEVEL)
    boot = (n_docs >= min_boot_docs) & (n_boot > 0)
    f_lo, f_hi = np.full(n_workers, np.nan), np.full(n_workers, np.nan)
    if np.any(boot):
        rows = boot[pair_worker]
        f_lo, f_hi = grouped_bootstrap_f1_bounds(counts[rows], id_rank[pair_worker[rows]], n_groups=n_workers,
                                                 n_boot=n_boot, level=LEVEL, rng=np.random.default_rng([seed, stream]))
        f_lo, f_hi = f_lo[id_rank], f_hi[id_rank]
    out: list[dict | None] = []
    for w in range(n_workers):
        if n_docs[w] == 0:
            out.append(None)
            continue
        f_ci = _ci(f_lo[w], f_hi[w]) if boot[w] else None
        block = {
            "precision": _num(p[w]), "recall": _num(r[w]), "f1": _num(f[w]),
            "tp": int(tp[w]), "fp": int(fp[w]), "fn": int(fn[w]),
            "precision_ci": _ci(p_lo[w], p_hi[w]), "recall_ci": _ci(r_lo[w], r_hi[w]), "f1_ci": f_ci,
            "documents": int(n_docs[w]),
        }
        if n_tokens is not None:
            block["tokens"] = int(n_tokens[w])
        out.append(block)
    return out


def _obs_pairs(corpus: Corpus) -> tuple[NDArray, NDArray]:
    """The (document, annotator) pair of every annotation, without sorting.

    Returns
    -------
    pair : ndarray of shape (n_obs,), int32 (int64 past 2**31 annotations)
        Pair index; pairs are ordered by (document, worker).
    pair_worker : ndarray of shape (n_pairs,)

    Notes
    -----
    Triplets are sorted by (token, worker) and an annotator present on a document
    labels all of its tokens (both checked by ``Corpus``), so each token of document ``d`` lists
    the document's ``n_annotators[d]`` annotators in the same order: the pair of annotation
    ``i`` on token ``t`` is ``pair_base[d] + i - obs_base[t]``, one ``repeat`` of a per-token
    offset; with no document longer than one token (categorical items) every annotation is its own pair.
    """
    if corpus.single_token_docs:
        return np.arange(corpus.n_obs, dtype=np.int64), corpus.worker.astype(np.int64)
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
    return pair, pair_worker.astype(np.int64)


def _pair_counts(
    corpus: Corpus, pairs: tuple[NDArray, NDArray], valid: NDArray, ref_pos: NDArray | None
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
    elif corpus.single_token_docs:  # every annotation is its own pair (_obs_pairs)
        used = valid
    else:
        used = np.bincount(pair[valid], minlength=n_pairs) > 0
    return counts, pair_worker[used]


def _worker_span_counts(
    corpus: Corpus, pairs: tuple[NDArray, NDArray], *, ref: NDArray, docs: NDArray[np.bool_], annotators: NDArray
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
    pairs : (ndarray of shape (n_obs,), ndarray of shape (n_pairs,))
        Each annotation's pair and each pair's annotator, from :func:`_obs_pairs`.
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
    its tokens (:func:`_worker_span_counts`)."""
    first, last, etype = span_bounds(labels, new_pair, corpus=corpus)
    return CharSpans(doc=seq_pair[first], start=corpus.token_start[seq_tok[first]].astype(np.int64),
                     end=corpus.token_end[seq_tok[last - 1]].astype(np.int64), type=etype)


def _check_labels(labels: NDArray, corpus: Corpus, name: str) -> NDArray[np.int64]:
    labels = np.asarray(labels)
    if labels.shape != (corpus.n_tokens,):
        raise ValueError(f"{name} must have shape ({corpus.n_tokens},), found {labels.shape}")
    if labels.size and (labels.min() < MISSING or labels.max() >= corpus.n_classes):
        raise ValueError(f"{name} must be in [-1, {corpus.n_classes}), found {int(labels.min())}..{int(labels.max())}")
    return labels.astype(np.int64)


def build_report(corpus: Corpus, labels: NDArray, *, fit: FitRecord | dict | None = None,
                 **options: Any) -> QualityReport:
    """:func:`build_report_data` as the typed model, :class:`~crowdqa.quality.report_model.QualityReport`.

    Takes the same arguments. ``fit`` is kept as the report's ``fit`` (the same object when a
    :class:`~crowdqa.quality.report_model.FitRecord` is given). The model is validated once, in pydantic's
    compiled core, from the plain report.
    """
    return _typed(build_report_data(corpus, labels, **options), fit)


def build_report_data(
    corpus: Corpus,
    labels: NDArray,
    *,
    method: str,
    experts_used_in_fit: bool,
    clamped: NDArray | None = None,
    heldout: NDArray | None = None,
    fit: FitRecord | dict | None = None,
    skills: NDArray | None = None,
    reference: str = "union",
    seed: int = 0,
    n_boot: int = 1000,
    min_boot_docs: int = 3,
    min_pair_docs: int = 3,
) -> dict:
    """Score the aggregate and every annotator against the experts (and annotators against the aggregate).

    The report comes as plain JSON data in the shape of
    :class:`~crowdqa.quality.report_model.QualityReport` (its fields in the model's order, its defaults
    filled in): exactly ``QualityReport.model_validate(data).model_dump(mode="json")``, without importing
    or running pydantic, so the command line writes it as is and the API validates it at its door
    (:func:`build_report` for the typed model).

    Parameters
    ----------
    corpus : Corpus
        The full corpus, crowd and experts.
    labels : ndarray of shape (n_tokens,)
        The aggregate's class indices; ``MISSING`` marks tokens the aggregate does not
        cover, which are left out of its comparisons (and documents with any such token
        out of its span comparisons).
    method : str
    experts_used_in_fit : bool
    clamped : ndarray of shape (n_tokens,) of bool, optional
        Tokens whose expert label was given to the aggregator; left out of the aggregate's
        comparison with the experts.
    heldout : ndarray of shape (n_tokens,), optional
        Held-out predictions (cross-fitting: each expert document predicted by a fit that
        never saw its expert labels). When given, the aggregate is scored against the
        experts on these instead of on ``labels`` outside ``clamped``.
    fit : FitRecord or dict, optional
        Fit record (iterations, converged, seconds, log_likelihood, ...); the report's ``fit`` is
        :func:`fit_record_data` of it (a new dict a caller may add stage seconds to).
    skills : ndarray of shape (n_workers,), optional
        The aggregator's score of every annotator (``skills_``; NaN: none), reported as
        each worker's ``skill`` (None without one).
    reference : str, default="union"
        Rule or expert id for :func:`crowdqa.quality.references.reference_labels`.
    seed : int, default=0
        Seeds every bootstrap (each score uses its own stream derived from it).
    n_boot : int, default=1000
    min_boot_docs : int, default=3
        Fewer compared documents than this give ``f1_ci = null``.
    min_pair_docs : int, default=3
        Crowd worker pairs sharing at least this many documents get a Cohen's kappa.

    Returns
    -------
    dict
        See the module notes and :mod:`crowdqa.quality.report_model`.
    """
    n_tokens = corpus.n_tokens
    agg = _check_labels(labels, corpus, "labels")
    if clamped is None:
        clamped = np.zeros(n_tokens, dtype=bool)
    clamped = np.asarray(clamped, dtype=bool)
    if clamped.shape != (n_tokens,):
        raise ValueError(f"clamped must have shape ({n_tokens},), found {clamped.shape}")
    ref = reference_labels(corpus, rule=reference)
    doc_has_ref = np.bincount(corpus.token_doc[ref != MISSING], minlength=corpus.n_docs) > 0
    # The aggregate is scored against the experts on held-out predictions when given
    # (cross-fitting), else on its own labels outside the clamped tokens.
    ev = agg if heldout is None else _check_labels(heldout, corpus, "heldout")
    excluded = clamped if heldout is None else np.zeros(n_tokens, dtype=bool)
    ev_ok = ev != MISSING
    expert_ok = (ref != MISSING) & ~excluded & ev_ok  # tokens the aggregate is compared with the experts on

    # ---- aggregate vs expert
    # Categorical answers (no outside class) are scored by accuracy, the confusion matrix and per-class
    # scores only (:func:`_categorical_view`): no P/R/F1 of a "positive" class, so no F1 bootstrap either.
    categorical = not corpus.has_outside
    agg_block = None
    if np.any(expert_ok):
        if categorical:
            n_tok = int(np.count_nonzero(expert_ok))
            token, spans = {"tokens": n_tok}, {}
        else:
            c, n_tok = _token_doc_counts(ev, ref, expert_ok, corpus)
            token = score_block(c, n_boot=n_boot, rng=np.random.default_rng([seed, 0]),
                                min_boot_docs=min_boot_docs, tokens=n_tok)
            doc_out = np.bincount(corpus.token_doc[excluded | ~ev_ok], minlength=corpus.n_docs) > 0
            spans = _span_blocks(corpus, np.maximum(ev, 0), np.maximum(ref, 0), doc_has_ref & ~doc_out,
                                 n_boot=n_boot, seed=seed, min_boot_docs=min_boot_docs)
        per_label = per_label_prf(ev, ref, n_classes=corpus.n_classes, mask=expert_ok, outside=corpus.has_outside)
        correct = int(np.count_nonzero(ev[expert_ok] == ref[expert_ok]))
        # Categorical answers have no outside class: every class is scored, class 0 included.
        first_class = 1 if corpus.has_outside else 0
        k = corpus.n_classes
        confusion = np.bincount(ev[expert_ok] * k + ref[expert_ok], minlength=k * k).reshape(k, k)
        agg_block = {
            "token": _score(token),
            # Rows = predicted (the aggregate), columns = actual (the expert reference), as
            # Azure's custom text analytics documents its confusion matrix.
            "token_confusion": {"labels": list(corpus.class_names), "rows": "predicted", "columns": "actual",
                                "matrix": confusion.tolist()},
            "accuracy": _accuracy_block(correct, n_tok),
            **{key: _score(block) for key, block in spans.items() if key != "span_per_type"},
            "span_per_type": spans.get("span_per_type", {}),
            # conlleval's figure leads for BIO labels (typed chunks); the token score for inside/outside ones.
            "headline": "span_location_and_type" if corpus.scheme == "bio" and not categorical else "token",
            "token_per_label": {
                corpus.class_names[k]: {
                    "precision": _num(per_label["precision"][k]), "recall": _num(per_label["recall"][k]),
                    "f1": _num(per_label["f1"][k]), "tp": int(per_label["tp"][k]),
                    "fp": int(per_label["fp"][k]), "fn": int(per_label["fn"][k]),
                }
                for k in range(first_class, corpus.n_classes)
            },
            "token_macro_f1": _num(per_label["macro"]["f1"]),
        }

    # ---- workers, all at once
    tok = corpus.token
    pairs = _obs_pairs(corpus)
    # Workers and experts are scored on every expert token, clamped or not: their labels
    # never came from the fit, so giving experts to the aggregator does not bias them.
    # Each annotation's reference (and below its aggregate) label in the labels' own small dtype: the gathers
    # over every annotation write a quarter of int64's memory.
    ref_tok = ref.astype(corpus.label.dtype)[tok]
    valid_e = ref_tok != MISSING
    agg_tok = agg.astype(corpus.label.dtype)[tok]
    valid_a = agg_tok != MISSING
    # compared: each worker's tokens on either side; n_tok_w: all of them
    correct_e, compared_e, correct_a, compared_a, n_tok_w = _worker_hits(corpus, valid_e, ref_tok, valid_a, agg_tok)
    ce, we = _pair_counts(corpus, pairs, valid_e, None if categorical else ref_tok > 0)
    id_rank = _id_rank(corpus.worker_ids)
    vs_expert = _worker_blocks(ce, we, compared_e, id_rank=id_rank, n_boot=n_boot, seed=seed, stream=2,
                               min_boot_docs=min_boot_docs)
    _add_worker_accuracy(vs_expert, correct_e, compared_e)
    # An expert is scored against the *other* experts (leave-one-out), never against a
    # reference that contains their own labels.
    experts = corpus.workers_with_role("expert")
    loo = leave_one_out_references(corpus, rule=reference) if reference in RULES else {}
    for w in experts.tolist():
        if reference not in RULES:
            if corpus.worker_ids[w] == reference:
                vs_expert[w] = None
            continue
        if w not in loo:  # no other expert labelled a token this one did
            vs_expert[w] = None
            continue
        tok_w, lab_w, ref_w = loo[w]
        c_w = _doc_counts(lab_w > 0, ref_w > 0, corpus.token_doc[tok_w], corpus.n_docs)
        n_tok = int(tok_w.shape[0])
        vs_expert[w] = ({"documents": int(c_w.shape[0]), "tokens": n_tok} if categorical else
                        score_block(c_w, n_boot=n_boot, rng=np.random.default_rng([seed, 4, int(id_rank[w])]),
                                    min_boot_docs=min_boot_docs, tokens=n_tok))
        vs_expert[w]["accuracy"] = _accuracy_block(int(np.count_nonzero(lab_w == ref_w)), n_tok)
    ca, wa = _pair_counts(corpus, pairs, valid_a, None if categorical else agg_tok > 0)
    vs_agg = _worker_blocks(ca, wa, compared_a, id_rank=id_rank, n_boot=n_boot, seed=seed, stream=3,
                            min_boot_docs=min_boot_docs)
    _add_worker_accuracy(vs_agg, correct_a, compared_a)
    # A crowd worker's strict spans against the experts, on the documents of its vs_expert (those with the
    # reference): all workers at once, each (worker, document) pair a pseudo-document.
    span_e: list[dict | None] = [None] * corpus.n_workers
    crowd = corpus.workers_with_role("crowd")
    if not categorical and np.any(doc_has_ref) and crowd.shape[0]:
        cs, ws = _worker_span_counts(corpus, pairs, ref=ref, docs=doc_has_ref, annotators=crowd)
        span_e = [_score(b) for b in _worker_blocks(cs, ws, None, id_rank=id_rank, n_boot=n_boot, seed=seed,
                                                     stream=5, min_boot_docs=min_boot_docs)]
    docs_w = np.bincount(pairs[1], minlength=corpus.n_workers)
    workers = [
        {"annotator": corpus.worker_ids[w], "role": corpus.worker_roles[w], "documents": int(docs_w[w]),
         "tokens": int(n_tok_w[w]), "vs_expert": vs_expert[w], "span_vs_expert": span_e[w],
         "vs_aggregate": vs_agg[w], "skill": None if skills is None else _num(float(skills[w])), "blocked": False}
        for w in range(corpus.n_workers)
    ]

    # ---- agreement
    # Expert pairs from their joint label counts (all pairs at once); F1 of a against b (positive = not class 0).
    pairs = []
    if experts.shape[0] > 1:
        pe = pair_confusions(corpus, annotators=experts, min_documents=1)
        pe_kappa = kappa_from_confusions(pe.confusion)
        pe_f1 = prf_from_counts(pe.confusion[:, 1:, 1:].sum(axis=(1, 2)), pe.confusion[:, 1:, 0].sum(axis=1),
                                pe.confusion[:, 0, 1:].sum(axis=1))[2]
        pairs = [{"a": corpus.worker_ids[a], "b": corpus.worker_ids[b], "tokens": int(cm.sum()), "kappa": _num(k),
                  "f1": _num(f)}
                 for a, b, cm, k, f in zip(pe.a.tolist(), pe.b.tolist(), pe.confusion, pe_kappa, pe_f1, strict=True)]
    alpha = krippendorff_alpha_corpus(corpus)
    pc = pair_kappas(corpus, annotators=crowd, min_documents=min_pair_docs)  # no K x K table per pair
    crowd_k = pc.kappa
    names = np.array(corpus.worker_ids, dtype=object)  # ids and kappas (nan -> None) as Python objects, by column
    crowd_pairs = [
        {"a": a, "b": b, "documents": d, "tokens": t, "kappa": k}
        for a, b, d, t, k in zip(names[pc.a].tolist(), names[pc.b].tolist(), pc.documents.tolist(),
                                 pc.tokens.tolist(),
                                 np.where(np.isnan(crowd_k), None, crowd_k).tolist(), strict=True)
    ]
    finite = crowd_k[np.isfinite(crowd_k)]
    report = {
        "method": method,
        # "categorical": answers without an outside class, scored first by accuracy; "spans": token labels
        # with an outside class "O", scored by P/R/F1 of the positive (non-O) tokens.
        "kind": "spans" if corpus.has_outside else "categorical",
        "labels": list(corpus.class_names),
        "experts_used_in_fit": bool(experts_used_in_fit),
        "aggregate_scored_on": (
            "held-out predictions (cross-fitting)" if heldout is not None
            else "tokens not clamped in the fit" if np.any(clamped) else "all expert tokens"
        ),
        "reference": reference,
        "counts": {
            "documents": int(corpus.n_docs), "tokens": int(n_tokens), "annotations": int(corpus.n_obs),
            "crowd_workers": int(crowd.shape[0]), "experts": int(experts.shape[0]),
            "expert_documents": int(np.count_nonzero(doc_has_ref)),
            "expert_documents_without_crowd": 0,  # set by the caller that left them out (the reader's merge)
            "clamped_tokens": int(np.count_nonzero(clamped)),
        },
        "aggregate_vs_expert": agg_block,
        "workers": workers,
        "blocked_workers": [],
        "agreement": {
            "expert_kappa": pairs,
            "krippendorff_alpha": _num(alpha),
            "crowd_kappa": crowd_pairs,
            "crowd_kappa_summary": {
                "min_documents": min_pair_docs, "pairs": len(crowd_pairs),
                "median": _num(_median(finite)) if finite.size else None,
                "mean": _num(float(np.mean(finite))) if finite.size else None,
            },
        },
        "fit": fit_record_data(fit),
        "bootstrap": {"n_boot": int(n_boot), "seed": int(seed), "level": LEVEL, "min_documents": int(min_boot_docs)},
        "report_seconds": None,
        "method_choice": None,
        "comparison": None,
    }
    return report if corpus.has_outside else _categorical_view(report)


def _typed(report: dict, fit: FitRecord | dict | None) -> QualityReport:
    """The plain report as its model: validated once, in pydantic's compiled core, which is faster than
    building the models one by one in Python (thousands of worker rows, maybe 10^5 crowd pairs)."""
    from crowdqa.quality.report_model import FitRecord, QualityReport

    typed = QualityReport.model_validate({**report, "fit": None})
    typed.fit = fit if isinstance(fit, FitRecord) or fit is None else FitRecord.model_validate(fit)
    return typed


def _score(block: dict | None) -> dict | None:
    """A score block with the model's optional ``tokens`` and ``accuracy`` (None when it has none), in its order."""
    if block is None:
        return None
    return {**block, "tokens": block.get("tokens"), "accuracy": block.get("accuracy")}


#: :class:`~crowdqa.quality.report_model.FitRecord`'s fields in its order, with the defaults of the optional
#: ones (a test holds them to the model).
_FIT_DEFAULTS: dict[str, Any] = {"iterations": None, "converged": None, "seconds": None, "log_likelihood": None,
                                 "params": {}, "skill": None, "warnings": [], "stages": {}, "cross_fit": None,
                                 "uncovered_tokens": None, "convergence_note": None}


def fit_record_data(fit: FitRecord | dict | None) -> dict | None:
    """A fit record as plain JSON data in :class:`~crowdqa.quality.report_model.FitRecord`'s shape: its fields
    in the model's order with their defaults, then any other keys as given; floats where the model has floats."""
    if fit is None:
        return None
    if not isinstance(fit, dict):
        return fit.model_dump(mode="json")
    missing = [k for k in ("iterations", "converged", "seconds", "log_likelihood") if k not in fit]
    if missing:
        raise ValueError(f"a fit record needs {', '.join(missing)}, found keys {sorted(fit)}")
    out = {key: plain_json(fit.get(key, default)) for key, default in _FIT_DEFAULTS.items()}
    out["seconds"] = _num(fit["seconds"])
    out["log_likelihood"] = [_num(x) for x in fit["log_likelihood"]]
    out["stages"] = {str(k): _num(v) for k, v in out["stages"].items()}
    if out["cross_fit"] is not None:
        out["cross_fit"] = {**out["cross_fit"], "seconds": _num(out["cross_fit"]["seconds"])}
    out.update((k, plain_json(v)) for k, v in fit.items() if k not in _FIT_DEFAULTS)
    return out


#: What a categorical report keeps of a score block: there is no outside class, so no "positive" label
#: for precision, recall and F1 to be about (issue 13: class 0 played "outside" and F1 read 1.0).
_CATEGORICAL_BLOCK = ("accuracy", "documents", "tokens")


def _categorical_view(report: dict) -> dict:
    """The report of categorical answers: accuracy everywhere, and per-class P/R/F1 named as such."""
    agg = report["aggregate_vs_expert"]
    if agg is not None:
        report["aggregate_vs_expert"] = {
            "accuracy": agg["accuracy"], "token_confusion": agg["token_confusion"],
            "per_class": agg["token_per_label"], "macro_f1": agg["token_macro_f1"],
            "items": (agg.get("token") or {}).get("tokens"),
        }
    for w in report["workers"]:
        for side in ("vs_expert", "vs_aggregate"):
            if w[side] is not None:
                w[side] = {k: w[side][k] for k in _CATEGORICAL_BLOCK if k in w[side]}
    return report


# ----------------------------------------------------------------------------- JSON file
def plain_json(value: Any) -> Any:
    """``value`` as plain JSON data: numpy scalars and arrays become Python numbers and lists, tuples and
    sets become lists, and non-finite floats (NaN, inf; not valid JSON) become None."""
    if isinstance(value, dict):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain_json(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain_json(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


#: One encoder for every row (``json.dumps`` with options builds a new one per call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


#: Rows of a list encoded and written at once (all of a large list in one call made strings of many MB, fresh
#: memory each, whose page faults cost more than the encoding saved).
_ROWS_AT_ONCE = 1024


def _compact(value: Any) -> str:
    """One value as compact JSON by the C encoder; the slow :func:`plain_json` walk only where it must."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError):  # a numpy value or a non-finite float inside: the slow walk
        return _ENCODER.encode(plain_json(value))


def dump_report(report: QualityReport | dict, fh: IO[str], *, _indent: str = "") -> None:
    """Write a report as JSON to ``fh``: nested blocks indented, each row of a list on one line.

    Every list of rows (workers, pair kappas) is encoded by the C encoder, one call per ``_ROWS_AT_ONCE``
    rows, and its rows put on lines of their own, so a report of 5,000 workers and 100,000 worker pairs
    takes a fraction of ``json.dump(..., indent=2)``'s time, and stays readable (one worker per line).
    NaN and inf become ``null``; numpy values become numbers.
    """
    if not isinstance(report, dict):  # the typed model
        report = report.model_dump(mode="json")
    inner = _indent + "  "
    fh.write("{")
    for i, (key, value) in enumerate(report.items()):
        fh.write(("," if i else "") + "\n" + inner + json.dumps(str(key), ensure_ascii=False) + ": ")
        if isinstance(value, dict) and value:
            dump_report(value, fh, _indent=inner)
        elif isinstance(value, list) and value and isinstance(value[0], dict | list):
            sep = ",\n" + inner + "  "
            fh.write("[\n" + inner + "  ")
            for at in range(0, len(value), _ROWS_AT_ONCE):  # small strings: no fresh memory for each one
                fh.write((sep if at else "") + _rows(value[at:at + _ROWS_AT_ONCE], sep))
            fh.write("\n" + inner + "]")
        else:
            fh.write(_compact(value))
    fh.write("\n" + _indent + "}" if report else "}")


def _rows(rows: list, sep: str) -> str:
    """The JSON of ``rows`` (dicts, or lists) joined by ``sep``, one C-encoder call for all of them.

    The list is encoded at once and ``sep`` put where one row ends and the next begins (``}, {``);
    that text occurs once per boundary unless a row holds it too (a string with ``}, {`` in it, or
    a nested list of rows), which the count shows: then each row is encoded on its own.
    """
    kind = dict if isinstance(rows[0], dict) else list
    if set(map(type, rows)) == {kind}:  # in C: a generator here costs a microsecond a row
        text = _compact(rows)[1:-1]
        close, open_ = ("}", "{") if kind is dict else ("]", "[")
        boundary = close + ", " + open_
        if text.count(boundary) == len(rows) - 1:
            return text.replace(boundary, close + sep + open_)
    return sep.join(map(_compact, rows))


# ----------------------------------------------------------------------------- terminal table
def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _fmt_ci(ci: list | None) -> str:
    return "" if not ci else f"[{ci[0]:.2f},{ci[1]:.2f}]"


def _row(name: str, b: dict | None, width: int) -> str:
    if b is None:
        return f"{name:<{width}}  (no overlap)"
    return (f"{name:<{width}}  P {_fmt(b['precision'])} {_fmt_ci(b['precision_ci']):<13} "
            f"R {_fmt(b['recall'])} {_fmt_ci(b['recall_ci']):<13} F1 {_fmt(b['f1'])} {_fmt_ci(b['f1_ci']):<13} "
            f"tp {b['tp']:>7} fp {b['fp']:>7} fn {b['fn']:>7}")


def _span_worker_rows(workers: list[dict], shown: list[int], width: int) -> list[str]:
    """Worker rows for span labels: token P/R/F1 against the experts, strict span F1 against the experts, and
    token P/R/F1 against the aggregate."""
    lines = [f"  {'annotator':<{width}}  {'role':<6} {'docs':>5} {'tokens':>7}  "
             f"{'P(exp)':>6} {'R(exp)':>6} {'F1(exp)':>7} {'F1 95% CI':<13} {'docs(exp)':>9} {'spanF1(exp)':>11}  "
             f"{'P(agg)':>6} {'R(agg)':>6} {'F1(agg)':>7}"]
    for i in shown:
        w = workers[i]
        e, a, s = w["vs_expert"] or {}, w["vs_aggregate"] or {}, w.get("span_vs_expert") or {}
        lines.append(
            f"  {w['annotator']:<{width}}  {w['role']:<6} {w['documents']:>5} {w['tokens']:>7}  "
            f"{_fmt(e.get('precision')):>6} {_fmt(e.get('recall')):>6} {_fmt(e.get('f1')):>7} "
            f"{_fmt_ci(e.get('f1_ci')):<13} {e.get('documents', 0):>9} {_fmt(s.get('f1')):>11}  "
            f"{_fmt(a.get('precision')):>6} {_fmt(a.get('recall')):>6} {_fmt(a.get('f1')):>7}"
        )
    return lines


def _categorical_worker_rows(workers: list[dict], shown: list[int], width: int) -> list[str]:
    """Worker rows for categorical answers: accuracy against the experts and against the aggregate."""
    lines = [f"  {'annotator':<{width}}  {'role':<6} {'items':>6}  {'Acc(exp)':>8} {'95% CI':<13} "
             f"{'items(exp)':>10}  {'Acc(agg)':>8}"]
    for i in shown:
        w = workers[i]
        e = (w["vs_expert"] or {}).get("accuracy") or {}
        a = (w["vs_aggregate"] or {}).get("accuracy") or {}
        lines.append(f"  {w['annotator']:<{width}}  {w['role']:<6} {w['tokens']:>6}  {_fmt(e.get('value')):>8} "
                     f"{_fmt_ci(e.get('ci')):<13} {e.get('compared', 0):>10}  {_fmt(a.get('value')):>8}")
    return lines


#: Sort keys of the terminal worker table: score keys order worst first (workers without a score last);
#: ``span_f1`` is a worker's strict span F1 against the experts (``span_vs_expert``).
TABLE_SORT_KEYS = ("f1", "precision", "recall", "span_f1", "accuracy", "documents", "annotator")
#: The keys a categorical report's table cannot be sorted by: it has no P/R/F1 (:func:`_categorical_view`).
_SPAN_ONLY_KEYS = ("f1", "precision", "recall", "span_f1")


def _id_key(annotator: str) -> tuple:
    """Natural order of annotator ids: digit runs by value (``"2"`` before ``"10"``), the rest as text."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", annotator))


def _table_order(workers: list[dict], sort: str | None, categorical: bool) -> tuple[list[int], str]:
    """Row order of the worker table by ``sort`` (default: F1, or accuracy for categorical answers), and what
    the scores are against: ``"experts"``, or ``"the aggregate"`` when no worker has a score against the
    experts (their ids match no crowd document, or there are none), so the table is still worst first.
    Ties, and ``sort="annotator"``, go by the annotator id in natural order (``1, 2, 10``)."""
    sort = sort or ("accuracy" if categorical else "f1")
    if sort not in TABLE_SORT_KEYS or (categorical and sort in _SPAN_ONLY_KEYS):
        allowed = [k for k in TABLE_SORT_KEYS if not (categorical and k in _SPAN_ONLY_KEYS)]
        raise ValueError(f"sort must be one of {', '.join(allowed)}" + (" for categorical answers" if categorical
                                                                       else "") + f", found {sort!r}")
    ids = [_id_key(w["annotator"]) for w in workers]
    if sort == "annotator":
        return sorted(range(len(workers)), key=lambda i: ids[i]), ""
    if sort == "documents":
        return sorted(range(len(workers)), key=lambda i: (-workers[i]["documents"], ids[i])), ""

    def score(i: int, against: str) -> float | None:
        if sort == "span_f1":
            return (workers[i].get("span_vs_expert") or {}).get("f1") if against == "vs_expert" else None
        block = workers[i][against] or {}
        return (block.get("accuracy") or {}).get("value") if sort == "accuracy" else block.get(sort)

    against = "vs_expert"
    if all(score(i, against) is None for i in range(len(workers))) and sort != "span_f1":
        against = "vs_aggregate"
    scores = [score(i, against) for i in range(len(workers))]
    order = sorted(range(len(workers)), key=lambda i: (scores[i] is None, scores[i] or 0.0, ids[i]))
    return order, "experts" if against == "vs_expert" else "the aggregate"


def format_report(report: QualityReport | dict, *, max_workers: int = 40, sort: str | None = None) -> str:
    """The report as a readable terminal table.

    Parameters
    ----------
    report : QualityReport or dict
        From :func:`build_report` (or its JSON).
    max_workers : int, default=40
        Worker rows shown.
    sort : str, optional
        Order of the worker rows, one of :data:`TABLE_SORT_KEYS`: a score puts the worst first (against the
        experts; workers without one last). Default ``"f1"``, or ``"accuracy"`` for categorical answers.

    Returns
    -------
    str
    """
    if not isinstance(report, dict):  # the typed model
        report = report.model_dump()
    lines = []
    fit = report.get("fit") or {}
    lines.append(f"method {report['method']}   reference: expert {report['reference']}   "
                 f"experts used in fit: {'yes' if report['experts_used_in_fit'] else 'no'}")
    if fit:
        conv = fit.get("converged")
        stop = "fixed schedule" if conv is None else f"converged {conv}"
        lines.append(f"fit: {fit.get('iterations', '-')} iterations, {stop}, "
                     f"{_fmt(fit.get('seconds'), 1)} s")
        if fit.get("convergence_note"):
            lines.append(f"warning: {fit['convergence_note']}")
    categorical = report.get("kind") == "categorical"  # one-token documents: say items, score accuracy
    counts = report.get("counts", {})
    if counts:
        if categorical:
            lines.append(f"{counts['documents']} items, {counts['crowd_workers']} crowd workers, "
                         f"{counts['experts']} experts on {counts['expert_documents']} items")
        else:
            lines.append(f"{counts['documents']} documents, {counts['tokens']} tokens, {counts['crowd_workers']} "
                         f"crowd workers, {counts['experts']} experts on {counts['expert_documents']} documents")
        if counts.get("expert_documents_without_crowd"):
            lines.append(f"note: {counts['expert_documents_without_crowd']} expert "
                         f"{'items' if categorical else 'documents'} matched no crowd "
                         f"{'item' if categorical else 'document'} and are left out")
    lines.append("")
    agg = report.get("aggregate_vs_expert")
    if categorical:
        lines.append("Aggregate vs experts (95% Clopper-Pearson intervals)")
    else:
        lines.append("Aggregate vs experts (95% intervals: Clopper-Pearson for P and R, document bootstrap for F1)")
    if agg is None:
        lines.append("  no expert labels overlap the aggregate")
    elif categorical:
        a = agg["accuracy"]
        lines.append(f"  accuracy {_fmt(a['value'])} {_fmt_ci(a['ci'])}  ({a['correct']} of {a['compared']} items)   "
                     f"macro F1 over the labels {_fmt(agg.get('macro_f1'))}")
    else:
        levels = {"token": agg.get("token"), **span_levels(agg)}
        head = headline_level(report)
        for key in sorted(levels, key=lambda k: k != head):  # the headline first, then the report's order
            mark = ""
            if key == head:
                mark = "   <- headline" + (" (conlleval)" if key == "span_location_and_type" else "")
            lines.append("  " + _row(key, levels[key], 22) + mark)
        per_type = agg.get("span_per_type") or {}
        if len(per_type) > 1:
            lines.append("  per type (location and type): " + ", ".join(
                f"{name} F1 {_fmt(b['f1'])} (tp {b['tp']} fp {b['fp']} fn {b['fn']})" for name, b in per_type.items()))
    lines.append("")
    workers = report.get("workers", [])
    order, against = _table_order(workers, sort, categorical)
    shown = order[:max_workers]
    width = max([len(workers[i]["annotator"]) for i in shown] + [9])
    by = sort or ("accuracy" if categorical else "f1")
    by += f" against {against}, worst first" if against else ""
    lines.append(f"Workers ({len(workers)}, by {by}; vs experts on shared documents, vs the aggregate on all their "
                 "documents)")
    rows = _categorical_worker_rows if categorical else _span_worker_rows
    lines += rows(workers, shown, width)
    if len(workers) > max_workers:
        lines.append(f"  ... {len(workers) - max_workers} more workers in the JSON report")
    lines.append("")
    ag = report.get("agreement", {})
    lines.append(f"Agreement: Krippendorff's alpha (nominal, all annotators) {_fmt(ag.get('krippendorff_alpha'))}")
    for p in ag.get("expert_kappa", []):
        lines.append(f"  {p['a']} vs {p['b']}: kappa {_fmt(p['kappa'])}, F1 {_fmt(p.get('f1'))} "
                     f"on {p['tokens']} tokens")
    cs = ag.get("crowd_kappa_summary")
    if cs and cs["pairs"]:
        lines.append(f"  crowd worker pairs sharing >= {cs['min_documents']} documents: {cs['pairs']}, "
                     f"Cohen's kappa median {_fmt(cs['median'])}, mean {_fmt(cs['mean'])}")
    return "\n".join(lines)
