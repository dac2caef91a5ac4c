"""The quality report: every worker and the aggregate against the experts, with intervals.

:func:`build_report_data` turns a corpus and an aggregate's labels into the report as plain JSON data in
the shape of :class:`~crowdqa.quality.report_model.QualityReport` (the typed models of
:mod:`crowdqa.quality.report_model` are its schema), :func:`build_report` into the typed model itself;
:func:`~crowdqa.quality.report_table.format_report` prints either as a terminal table and
:func:`~crowdqa.quality.report_json.dump_report` writes either as JSON. The
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
once (span counts from one decoding of every (worker, document) pair,
:func:`crowdqa.quality.worker_counts.worker_span_counts`), and every worker's bootstrap is drawn in one pass
(:func:`crowdqa.quality.score_blocks.worker_blocks`), at a cost that follows the
workers' distinct per-document counts, not a loop over workers.

Its parts, one module each: :mod:`~crowdqa.quality.score_blocks`, :mod:`~crowdqa.quality.worker_counts`,
:mod:`~crowdqa.quality.report_agreement`, :mod:`~crowdqa.quality.report_schema` (the models' fields without
pydantic), :mod:`~crowdqa.quality.report_json`, :mod:`~crowdqa.quality.report_table`. This module builds the
report in named steps (:func:`_references`, :func:`_aggregate_vs_expert`, :func:`_worker_sides`); each
bootstrap draws from its own :class:`Stream` of the seed.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.quality.json_data import plain_json
from crowdqa.quality.metrics import per_label_prf
from crowdqa.quality.references import RULES, leave_one_out_references, reference_labels
from crowdqa.quality.report_agreement import agreement_block
from crowdqa.quality.report_json import dump_report
from crowdqa.quality.report_schema import REQUIRED, fields, record, records
from crowdqa.quality.report_table import TABLE_SORT_KEYS, format_report
from crowdqa.quality.score_blocks import (
    LEVEL,
    SPAN_LEVELS,
    accuracy_block,
    add_worker_accuracy,
    doc_counts,
    finite_or_none,
    headline_level,
    id_rank,
    per_label_score,
    score_block,
    span_blocks,
    span_levels,
    token_doc_counts,
    worker_blocks,
)
from crowdqa.quality.tag_scores import tag_blocks
from crowdqa.quality.worker_counts import (
    AnnotationPairs,
    documents_per_worker,
    obs_pairs,
    pair_counts,
    worker_hits,
    worker_span_counts,
)
from crowdqa.quality.worker_quality import VerdictRules, posterior_draws, worker_quality_blocks

if TYPE_CHECKING:  # the typed models (pydantic) are imported where a typed report is asked for, not here
    from crowdqa.quality.report_model import FitRecord, QualityReport

# The report's public names; the writer, the table and the score blocks live in their own modules.
__all__ = ["build_report", "build_report_data", "fit_record_data", "Stream", "dump_report", "format_report",
           "score_block", "span_levels", "headline_level", "TABLE_SORT_KEYS"]


class Stream(IntEnum):
    """The bootstrap streams of a report: a score's resamples draw from ``default_rng([seed, stream, ...])``.

    The numbers are the streams every report has used, so a seed gives the intervals it always gave.
    """

    AGGREGATE_TOKENS = 0  #: The aggregate's token score.
    AGGREGATE_SPANS = 1  #: The aggregate's span levels, ``[seed, 1, i]`` for the i-th of :data:`SPAN_LEVELS`.
    WORKERS_VS_EXPERT = 2  #: Every worker against the experts (one stream for all, workers numbered by id).
    WORKERS_VS_AGGREGATE = 3  #: Every worker against the aggregate.
    EXPERT_VS_OTHERS = 4  #: An expert against the other experts, ``[seed, 4, rank]`` by the rank of its id.
    WORKER_SPANS_VS_EXPERT = 5  #: Every crowd worker's spans against the experts.
    WORKER_QUALITY = 6  #: Every worker's spammer score (:mod:`crowdqa.quality.worker_quality`).


def _seed(seed: int, stream: Stream, *more: int) -> list[int]:
    """The seed sequence of one bootstrap stream."""
    return [int(seed), int(stream), *(int(m) for m in more)]


class References(NamedTuple):
    """What the aggregate and the workers are compared with (:func:`_references`); arrays of shape (n_tokens,)."""

    #: The aggregate's class indices (``MISSING``: not covered).
    aggregate: NDArray[np.int64]
    #: The expert reference (``MISSING``: no expert labelled the token).
    expert: NDArray[np.int64]
    #: What the aggregate is scored on against the experts: held-out predictions, or its own labels.
    scored: NDArray[np.int64]
    #: Tokens left out of that comparison (clamped in the fit, unless held-out predictions are given).
    excluded: NDArray[np.bool_]
    #: Tokens the aggregate is compared with the experts on.
    compared: NDArray[np.bool_]
    #: Tokens whose expert label was given to the fit.
    clamped: NDArray[np.bool_]
    #: Documents with an expert label, shape (n_docs,).
    expert_docs: NDArray[np.bool_]
    #: The report's ``aggregate_scored_on``: held-out predictions, tokens not clamped, or all expert tokens.
    scored_on: str


class WorkerSides(NamedTuple):
    """Every annotator's score blocks (:func:`_worker_sides`), lists of length n_workers (None: no overlap)."""

    vs_expert: list[dict | None]
    vs_aggregate: list[dict | None]
    span_vs_expert: list[dict | None]
    #: Each annotator's documents and labels (tokens), arrays of shape (n_workers,).
    documents: NDArray[np.int64]
    tokens: NDArray[np.int64]


class _Bootstrap(NamedTuple):
    """The settings every bootstrap of one report shares."""

    n_boot: int
    seed: int
    min_docs: int


def build_report(corpus: Corpus, labels: NDArray, *, fit: FitRecord | dict | None = None,
                 **options: Any) -> QualityReport:
    """:func:`build_report_data` as the typed model, :class:`~crowdqa.quality.report_model.QualityReport`.

    Takes the same arguments. ``fit`` is kept as the report's ``fit`` (the same object when a
    :class:`~crowdqa.quality.report_model.FitRecord` is given). The model is validated once, in pydantic's
    compiled core, from the plain report.
    """
    return _typed(build_report_data(corpus, labels, **options), fit)


def build_report_data(
    corpus: Corpus, labels: NDArray, *, method: str, experts_used_in_fit: bool, clamped: NDArray | None = None,
    heldout: NDArray | None = None, fit: FitRecord | dict | None = None, skills: NDArray | None = None,
    model_confusion: NDArray | None = None, verdict_rules: VerdictRules | None = None, reference: str = "union",
    seed: int = 0, n_boot: int = 1000, min_boot_docs: int = 3, min_pair_docs: int = 3,
) -> dict:
    """Score the aggregate and every annotator against the experts (and annotators against the aggregate).

    The report comes as plain JSON data in the shape of :class:`~crowdqa.quality.report_model.QualityReport` (its
    fields in the model's order, its defaults filled in, :mod:`crowdqa.quality.report_schema`): exactly
    ``QualityReport.model_validate(data).model_dump(mode="json")``, without importing or running pydantic, so the
    command line writes it as is and the API validates it where it takes it in (:func:`build_report` for the
    typed model).

    Parameters
    ----------
    corpus : Corpus
        The full corpus, crowd and experts.
    labels : ndarray of shape (n_tokens,)
        The aggregate's class indices; ``MISSING`` marks tokens the aggregate does not cover, which are left out
        of its comparisons (and documents with any such token out of its span comparisons).
    method : str
    experts_used_in_fit : bool
    clamped : ndarray of shape (n_tokens,) of bool, optional
        Tokens whose expert label was given to the aggregator; left out of the aggregate's comparison.
    heldout : ndarray of shape (n_tokens,), optional
        Held-out predictions (cross-fitting: each expert document predicted by a fit that never saw its expert
        labels). When given, the aggregate is scored against the experts on these, not on ``labels``.
    fit : FitRecord or dict, optional
        Fit record (iterations, converged, seconds, log_likelihood, ...); the report's ``fit`` is
        :func:`fit_record_data` of it (a new dict a caller may add stage seconds to).
    skills : ndarray of shape (n_workers,), optional
        The aggregator's score of every annotator (``skills_``; NaN: none), reported as
        each worker's ``skill`` (None without one).
    model_confusion : ndarray of shape (n_workers, n_classes, n_classes), optional
        The aggregator's ``worker_confusion_`` (NaN for an annotator it has no estimate of), reported in each
        worker's ``quality`` (:mod:`crowdqa.quality.worker_quality`).
    verdict_rules : VerdictRules, optional
        The rules of the workers' verdicts; default :class:`~crowdqa.quality.worker_quality.VerdictRules()`.
    reference : str, default="union"
        Rule or expert id for :func:`crowdqa.quality.references.reference_labels`.
    seed : int, default=0
        Seeds every bootstrap (each score uses its own :class:`Stream` of it).
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
    # Tags are scored per token: every token an item, as a categorical answer (Corpus.token_items).
    sentences, tags = corpus, corpus.scheme == "tags"
    corpus = corpus.token_items() if tags else corpus
    refs = _references(corpus, labels, clamped=clamped, heldout=heldout, reference=reference)
    boot = _Bootstrap(n_boot=n_boot, seed=seed, min_docs=min_boot_docs)
    rules = verdict_rules or VerdictRules()
    aggregate, counts = _aggregate_vs_expert(corpus, refs, boot=boot), _counts(corpus, refs)
    sides = _worker_sides(corpus, refs, reference=reference, boot=boot, sentences=sentences if tags else None)
    if tags:
        aggregate, counts = _tag_scores(sentences, refs, aggregate, counts, boot=boot)
    return record("QualityReport", {
        # "categorical": answers without an outside class, scored by accuracy; "spans": token labels with an
        # outside class "O", scored by P/R/F1 of the positive (non-O) tokens; "tags": as answers, and per tag.
        "method": method, "kind": "tags" if tags else "spans" if corpus.has_outside else "categorical",
        "labels": list(corpus.class_names), "experts_used_in_fit": bool(experts_used_in_fit),
        "aggregate_scored_on": refs.scored_on, "reference": reference, "counts": counts,
        "aggregate_vs_expert": aggregate,
        "workers": _worker_entries(corpus, sides, skills,
                                   _worker_quality(corpus, refs, model_confusion, rules=rules, boot=boot)),
        "agreement": agreement_block(corpus, min_pair_docs=min_pair_docs),
        "fit": fit_record_data(fit),
        "bootstrap": record("Bootstrap", {"n_boot": int(n_boot), "seed": int(seed), "level": LEVEL,
                                          "min_documents": int(min_boot_docs)}),
        "verdict_rules": record("VerdictRulesRecord", {**rules.as_record(), "posterior_draws": _draws(corpus, boot)}),
    })


def _worker_quality(corpus: Corpus, refs: References, model_confusion: NDArray | None, *, rules: VerdictRules,
                    boot: _Bootstrap) -> list[dict | None]:
    """Step 5: every annotator's confusion, spammer score, label bias and verdict
    (:mod:`crowdqa.quality.worker_quality`); ``model_confusion`` is checked to be of shape (n_workers, n_classes,
    n_classes)."""
    if model_confusion is not None:
        model_confusion = np.asarray(model_confusion, dtype=np.float64)
        shape = (corpus.n_workers, corpus.n_classes, corpus.n_classes)
        if model_confusion.shape != shape:
            raise ValueError(f"model_confusion must have shape {shape}, found {model_confusion.shape}")
    return worker_quality_blocks(corpus, expert=refs.expert, aggregate=refs.aggregate,
                                 model_confusion=model_confusion, rules=rules, n_draws=_draws(corpus, boot),
                                 level=LEVEL, seed=_seed(boot.seed, Stream.WORKER_QUALITY))


def _draws(corpus: Corpus, boot: _Bootstrap) -> int:
    """The posterior draws of every worker's spammer score interval (:func:`posterior_draws`)."""
    return posterior_draws(boot.n_boot, n_workers=int(corpus.workers_with_role("crowd").shape[0]),
                           n_classes=corpus.n_classes)


def _check_labels(labels: NDArray, corpus: Corpus, name: str) -> NDArray[np.int64]:
    labels = np.asarray(labels)
    if labels.shape != (corpus.n_tokens,):
        raise ValueError(f"{name} must have shape ({corpus.n_tokens},), found {labels.shape}")
    if labels.size and (labels.min() < MISSING or labels.max() >= corpus.n_classes):
        raise ValueError(f"{name} must be in [-1, {corpus.n_classes}), found {int(labels.min())}..{int(labels.max())}")
    return labels.astype(np.int64)


def _references(corpus: Corpus, labels: NDArray, *, clamped: NDArray | None, heldout: NDArray | None,
                reference: str) -> References:
    """Step 1: the expert reference, and what of the aggregate is compared with it.

    The aggregate is scored against the experts on held-out predictions when given (cross-fitting), else on
    its own labels outside the clamped tokens.
    """
    n_tokens = corpus.n_tokens
    aggregate = _check_labels(labels, corpus, "labels")
    clamped = np.zeros(n_tokens, dtype=bool) if clamped is None else np.asarray(clamped, dtype=bool)
    if clamped.shape != (n_tokens,):
        raise ValueError(f"clamped must have shape ({n_tokens},), found {clamped.shape}")
    expert = reference_labels(corpus, rule=reference)
    scored = aggregate if heldout is None else _check_labels(heldout, corpus, "heldout")
    excluded = clamped if heldout is None else np.zeros(n_tokens, dtype=bool)
    return References(
        aggregate=aggregate, expert=expert, scored=scored, excluded=excluded,
        compared=(expert != MISSING) & ~excluded & (scored != MISSING), clamped=clamped,
        expert_docs=np.bincount(corpus.token_doc[expert != MISSING], minlength=corpus.n_docs) > 0,
        scored_on="held-out predictions (cross-fitting)" if heldout is not None
        else "tokens not clamped in the fit" if np.any(clamped) else "all expert tokens")


def _aggregate_vs_expert(corpus: Corpus, refs: References, *, boot: _Bootstrap) -> dict | None:
    """Step 2: the aggregate against the experts (``AggregateScores``, or ``CategoricalAggregateScores`` for
    answers without an outside class: accuracy, the confusion matrix and per-class scores, no P/R/F1 of a
    "positive" class), None when no token is compared."""
    ok = refs.compared
    if not np.any(ok):
        return None
    scored, expert = refs.scored[ok], refs.expert[ok]
    n_compared = int(np.count_nonzero(ok))
    per_label = per_label_prf(refs.scored, refs.expert, n_classes=corpus.n_classes, mask=ok,
                              outside=corpus.has_outside)
    k = corpus.n_classes
    confusion = np.bincount(scored * k + expert, minlength=k * k).reshape(k, k)
    common = {
        "accuracy": accuracy_block(int(np.count_nonzero(scored == expert)), n_compared),
        # Rows = predicted (the aggregate), columns = actual (the expert reference), as Azure's custom text
        # analytics documents its confusion matrix.
        "token_confusion": record("Confusion", {"labels": list(corpus.class_names), "matrix": confusion.tolist()}),
    }
    first = 1 if corpus.has_outside else 0  # categorical answers have no outside class: class 0 is scored too
    by_label = {corpus.class_names[c]: per_label_score(per_label, c) for c in range(first, k)}
    macro_f1 = finite_or_none(per_label["macro"]["f1"])
    if not corpus.has_outside:
        return record("CategoricalAggregateScores", {**common, "per_class": by_label, "macro_f1": macro_f1,
                                                     "items": n_compared})
    token_counts, _ = token_doc_counts(refs.scored, refs.expert, ok, corpus)
    token = score_block(token_counts, n_boot=boot.n_boot, rng=np.random.default_rng(
        _seed(boot.seed, Stream.AGGREGATE_TOKENS)), min_boot_docs=boot.min_docs, tokens=n_compared)
    doc_out = np.bincount(corpus.token_doc[refs.excluded | (refs.scored == MISSING)], minlength=corpus.n_docs) > 0
    levels, per_type = span_blocks(
        corpus, np.maximum(refs.scored, 0), np.maximum(refs.expert, 0), refs.expert_docs & ~doc_out,
        n_boot=boot.n_boot, seeds=[_seed(boot.seed, Stream.AGGREGATE_SPANS, i) for i in range(len(SPAN_LEVELS))],
        min_boot_docs=boot.min_docs)
    return record("AggregateScores", {
        "token": token, **common, **levels, "span_per_type": per_type,
        # conlleval's figure leads for BIO labels (typed chunks); the token score for inside/outside ones.
        "headline": "span_location_and_type" if corpus.scheme == "bio" else "token",
        "token_per_label": by_label, "token_macro_f1": macro_f1,
    })


def _tag_scores(sentences: Corpus, refs: References, aggregate: dict | None, counts: dict, *, boot: _Bootstrap
                ) -> tuple[dict | None, dict]:
    """Step 2 for tags: the per-token scores with the per-tag, micro and macro scores added (``TagAggregateScores``,
    intervals resampling the sentences), and the counts of documents as sentences (the items are their tokens)."""
    counts = {**counts, "documents": sentences.n_docs, "expert_documents": int(np.count_nonzero(
        np.bincount(sentences.token_doc[refs.expert != MISSING], minlength=sentences.n_docs)))}
    if aggregate is None:
        return None, counts
    ok = refs.compared
    return record("TagAggregateScores", {**aggregate, **tag_blocks(
        refs.scored[ok], refs.expert[ok], doc=sentences.token_doc[ok], n_docs=sentences.n_docs,
        class_names=sentences.class_names, n_boot=boot.n_boot, seed=_seed(boot.seed, Stream.AGGREGATE_TOKENS),
        min_boot_docs=boot.min_docs)}), counts


def _worker_sides(corpus: Corpus, refs: References, *, reference: str, boot: _Bootstrap,
                  sentences: Corpus | None = None) -> WorkerSides:
    """Step 3: every annotator against the experts and against the aggregate, all at once.

    Workers and experts are scored on every expert token, clamped or not: their labels never came from the
    fit, so giving experts to the aggregator does not bias them. An expert is scored against the *other*
    experts (:func:`_expert_vs_others`). ``sentences``: the tags corpus whose tokens ``corpus`` scores as items.
    """
    categorical = not corpus.has_outside
    pairs = obs_pairs(corpus)
    # Each annotation's reference and aggregate label in the labels' own small dtype: the gathers over every
    # annotation write a quarter of int64's memory.
    expert_obs = refs.expert.astype(corpus.label.dtype)[corpus.token]
    aggregate_obs = refs.aggregate.astype(corpus.label.dtype)[corpus.token]
    valid_expert, valid_aggregate = expert_obs != MISSING, aggregate_obs != MISSING
    hits = worker_hits(corpus, valid_expert=valid_expert, ref_expert=expert_obs, valid_aggregate=valid_aggregate,
                       ref_aggregate=aggregate_obs)
    ranks = id_rank(corpus.worker_ids)
    sides = []
    for valid, ref_obs, compared, correct, stream in (
            (valid_expert, expert_obs, hits.compared_vs_expert, hits.correct_vs_expert, Stream.WORKERS_VS_EXPERT),
            (valid_aggregate, aggregate_obs, hits.compared_vs_aggregate, hits.correct_vs_aggregate,
             Stream.WORKERS_VS_AGGREGATE)):
        counts, pair_worker = pair_counts(corpus, pairs, valid, None if categorical else ref_obs > 0)
        blocks = worker_blocks(counts, pair_worker, compared, ranks=ranks, n_boot=boot.n_boot,
                               seed=_seed(boot.seed, stream), min_boot_docs=boot.min_docs)
        add_worker_accuracy(blocks, correct, compared)
        sides.append(blocks)
    vs_expert, vs_aggregate = sides
    _expert_vs_others(corpus, vs_expert, reference=reference, ranks=ranks, boot=boot)
    return WorkerSides(vs_expert=vs_expert, vs_aggregate=vs_aggregate,
                       span_vs_expert=_span_vs_expert(corpus, refs, pairs, ranks=ranks, boot=boot),
                       # Tags: a worker's documents are the sentences it labelled a token of, not the items.
                       documents=(np.bincount(pairs.pair_worker, minlength=corpus.n_workers) if sentences is None
                                  else documents_per_worker(sentences)), tokens=hits.labels)


def _expert_vs_others(corpus: Corpus, vs_expert: list[dict | None], *, reference: str, ranks: NDArray,
                      boot: _Bootstrap) -> None:
    """Put each expert's block against the reference of the *other* experts (leave-one-out) in ``vs_expert``:
    never against a reference that holds its own labels (None when the reference is that expert, or when no
    other expert labelled a token it did)."""
    experts = corpus.workers_with_role("expert").tolist()
    if reference not in RULES:
        for w in experts:
            if corpus.worker_ids[w] == reference:
                vs_expert[w] = None
        return
    others = leave_one_out_references(corpus, rule=reference)
    for w in experts:
        if w not in others:
            vs_expert[w] = None
            continue
        tokens, own, ref = others[w]
        counts = doc_counts(own > 0, ref > 0, corpus.token_doc[tokens], corpus.n_docs)
        n_tokens = int(tokens.shape[0])
        if corpus.has_outside:
            block = score_block(counts, n_boot=boot.n_boot, min_boot_docs=boot.min_docs, tokens=n_tokens,
                                rng=np.random.default_rng(_seed(boot.seed, Stream.EXPERT_VS_OTHERS, ranks[w])))
        else:
            block = record("CategoricalScore", {"documents": int(counts.shape[0]), "tokens": n_tokens})
        block["accuracy"] = accuracy_block(int(np.count_nonzero(own == ref)), n_tokens)
        vs_expert[w] = block


def _span_vs_expert(corpus: Corpus, refs: References, pairs: AnnotationPairs, *, ranks: NDArray,
                    boot: _Bootstrap) -> list[dict | None]:
    """A crowd worker's strict spans against the experts, on the documents of its ``vs_expert`` (those with
    the reference): all workers at once, each (worker, document) pair a pseudo-document."""
    crowd = corpus.workers_with_role("crowd")
    if not corpus.has_outside or not np.any(refs.expert_docs) or crowd.shape[0] == 0:
        return [None] * corpus.n_workers
    counts, pair_worker = worker_span_counts(corpus, pairs, ref=refs.expert, docs=refs.expert_docs,
                                             annotators=crowd)
    return worker_blocks(counts, pair_worker, None, ranks=ranks, n_boot=boot.n_boot,
                         seed=_seed(boot.seed, Stream.WORKER_SPANS_VS_EXPERT), min_boot_docs=boot.min_docs)


def _counts(corpus: Corpus, refs: References) -> dict:
    """What the report is about (``Counts``); ``expert_documents_without_crowd`` is set by the caller that left
    them out (the reader's merge)."""
    return record("Counts", {
        "documents": int(corpus.n_docs), "tokens": int(corpus.n_tokens), "annotations": int(corpus.n_obs),
        "crowd_workers": int(corpus.workers_with_role("crowd").shape[0]),
        "experts": int(corpus.workers_with_role("expert").shape[0]),
        "expert_documents": int(np.count_nonzero(refs.expert_docs)),
        "clamped_tokens": int(np.count_nonzero(refs.clamped)),
    })


def _worker_entries(corpus: Corpus, sides: WorkerSides, skills: NDArray | None,
                    quality: list[dict | None]) -> list[dict]:
    """Step 4: one ``WorkerReport`` per annotator, in the corpus's order."""
    return records("WorkerReport", {
        "annotator": list(corpus.worker_ids), "role": list(corpus.worker_roles),
        "documents": sides.documents.tolist(), "tokens": sides.tokens.tolist(), "vs_expert": sides.vs_expert,
        "span_vs_expert": sides.span_vs_expert, "vs_aggregate": sides.vs_aggregate,
        "skill": [None] * corpus.n_workers if skills is None else [finite_or_none(float(s)) for s in skills],
        "blocked": [False] * corpus.n_workers, "quality": quality,
    })


def _typed(report: dict, fit: FitRecord | dict | None) -> QualityReport:
    """The plain report as its model: validated once, in pydantic's compiled core, which is faster than
    building the models one by one in Python (thousands of worker rows, maybe 10^5 crowd pairs)."""
    from crowdqa.quality.report_model import FitRecord, QualityReport

    typed = QualityReport.model_validate({**report, "fit": None})
    typed.fit = fit if isinstance(fit, FitRecord) or fit is None else FitRecord.model_validate(fit)
    return typed


def fit_record_data(fit: FitRecord | dict | None) -> dict | None:
    """A fit record as plain JSON data in :class:`~crowdqa.quality.report_model.FitRecord`'s shape: its fields
    in the model's order with their defaults, then any other keys as given; floats where the model has floats."""
    if fit is None:
        return None
    if not isinstance(fit, dict):
        return fit.model_dump(mode="json")
    missing = [k for k, default in fields("FitRecord").items() if default is REQUIRED and k not in fit]
    if missing:
        raise ValueError(f"a fit record needs {', '.join(missing)}, found keys {sorted(fit)}")
    out = record("FitRecord", {k: plain_json(v) for k, v in fit.items()}, extra=True)
    out["seconds"] = finite_or_none(fit["seconds"])
    out["log_likelihood"] = [finite_or_none(x) for x in fit["log_likelihood"]]
    out["stages"] = {str(k): finite_or_none(v) for k, v in out["stages"].items()}
    if out["cross_fit"] is not None:
        out["cross_fit"] = {**out["cross_fit"], "seconds": finite_or_none(out["cross_fit"]["seconds"])}
    return out
