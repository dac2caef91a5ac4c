"""A finished job's stored results (corpus snapshot, labels, posteriors, worker models) and what the
dashboard reads from them: the most disputed documents, one worker's details, one document's layers.

The dashboard's report, worker and document pages all read the same arrays; a small
per-process cache keyed by the artifacts' sha256 keeps a page view from re-reading them.
The numbers come from :mod:`crowdqa.quality.inspect`; these functions pick one worker or document.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.confidence import AggregateConfidence, independent_chain, score_aggregate, sequence_starts
from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.registry import METHODS
from crowdqa.aggregation.spans import decode_spans
from crowdqa.jobs.finished import check_aggregated
from crowdqa.jobs.uploads import load_job_corpus
from crowdqa.quality.inspect import (
    document_disagreement,
    document_entropy,
    measured_confusion,
    worker_document_disagreement,
)
from crowdqa.quality.references import reference_labels
from crowdqa.quality.report import headline_level, span_levels
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.models import Job
from crowdqa.store.settings import Settings

#: The orders of :func:`disputed_documents`.
DISPUTED_ORDERS = ("confidence", "disagreement", "entropy")

__all__ = ["DISPUTED_ORDERS", "score_levels", "JobResult", "load_job_result", "disputed_documents", "expected_wrong",
           "WorkerDetails", "worker_details",
           "DocumentLayers", "document_layers"]


@dataclass(frozen=True)
class JobResult:
    """What a finished job computed, beside its report.

    Attributes
    ----------
    corpus : Corpus
        The snapshot the job ran on.
    labels : ndarray of shape (n_tokens,)
    clamped : ndarray of shape (n_tokens,), bool
        Tokens whose expert label was given to the fit.
    proba : ndarray of shape (n_tokens, n_classes)
    worker_confusion : ndarray of shape (n_workers, n_classes, n_classes)
        The model's estimate of P(answer | true class) per annotator.
    scores : AggregateConfidence
        The calibrated scores of every token, span and document and the calibrated marginals
        (:mod:`crowdqa.jobs.calibration`); for a job stored before scores were kept, its token posteriors as
        independent tokens at the method's default temperature.
    """

    corpus: Corpus
    labels: NDArray[np.int64]
    clamped: NDArray[np.bool_]
    proba: NDArray[np.float64]
    worker_confusion: NDArray[np.float64]
    scores: AggregateConfidence | None = None

    def __post_init__(self) -> None:
        if self.scores is None:  # made without scores: the token posteriors as they are (temperature 1)
            chain = independent_chain(self.proba, seq_first=sequence_starts(self.corpus))
            object.__setattr__(self, "scores", score_aggregate(chain, self.labels, self.corpus))


@lru_cache(maxsize=2)  # a large job's arrays take hundreds of MB
def _load(data_dir: str, corpus_sha: str, labels: tuple[str, str], proba: tuple[str, str],
          confusion: tuple[str, str], method: str) -> JobResult:
    store = ArtifactStore(data_dir)

    def arrays(artifact: tuple[str, str]) -> dict[str, NDArray]:
        return store.load_arrays({"path": artifact[0], "sha256": artifact[1]})

    found, posteriors = arrays(labels), arrays(proba)
    # A dataset snapshot: the merge of its uploads (with the documents the job's labels cover).
    corpus = load_job_corpus(store, corpus_sha, n_tokens=len(found["labels"]))
    lab = np.asarray(found["labels"], dtype=np.int64)
    post = np.asarray(posteriors["proba"], dtype=np.float64)
    return JobResult(corpus=corpus, labels=lab, clamped=np.asarray(found["clamped"], dtype=bool), proba=post,
                     worker_confusion=np.asarray(arrays(confusion)["worker_confusion"], dtype=np.float64),
                     scores=_stored_scores(found, posteriors, corpus, lab, method))


def _stored_scores(found: dict[str, NDArray], posteriors: dict[str, NDArray], corpus: Corpus,
                   labels: NDArray[np.int64], method: str) -> AggregateConfidence:
    """The job's stored scores, or (a job stored before they were kept) its token posteriors scored as independent
    tokens at the method's default temperature."""
    entry = METHODS.get(method)
    temperature, scope = (entry.temperature, entry.temperature_scope) if entry else (1.0, "chain")
    if "token_score" in found and "calibrated" in posteriors:
        return AggregateConfidence(temperature=float("nan"), scope=scope, token=found["token_score"],
                                   span=found["span_score"], document=found["document_score"],
                                   proba=posteriors["calibrated"])
    chain = independent_chain(posteriors["proba"], seq_first=sequence_starts(corpus))
    return score_aggregate(chain, labels, corpus, temperature=temperature, scope=scope)


def load_job_result(*, settings: Settings, job: Job) -> JobResult:
    """The stored results of a finished job; JobNotFinishedError for a job that is not finished."""
    check_aggregated(job)
    a = job.artifacts

    def key(name: str) -> tuple[str, str]:
        return str(a[name]["path"]), str(a[name]["sha256"])

    return _load(str(settings.data_dir), job.corpus_sha256, key("labels"), key("proba"), key("worker_confusion"),
                 str(job.method))


#: How a page names each score level of a span report, in the report's order.
LEVEL_TITLES = {"token": "tokens (any type)", "span_location": "spans: location only",
                "span_location_relaxed": "spans: location, length within 2 characters",
                "span_location_and_type": "spans: location and type (conlleval)",
                "span_overlap": "spans: overlap (partial match)"}


def score_levels(report: dict[str, Any]) -> list[tuple[str, str, dict, bool]]:
    """The score levels of a span report's aggregate as ``(key, title, block, headline)``, the headline first
    (conlleval's on BIO labels), reading a report stored with the seed's names (``span_strict``, ...) too."""
    agg = report.get("aggregate_vs_expert") or {}
    levels = {"token": agg.get("token"), **span_levels(agg)}
    head = headline_level(report)
    return [(key, LEVEL_TITLES[key], block, key == head) for key, block in sorted(levels.items(),
                                                                              key=lambda kv: kv[0] != head)
            if isinstance(block, dict)]


def disputed_documents(result: JobResult, *, by: str = "confidence", limit: int = 15) -> list[dict[str, Any]]:
    """The documents the crowd disputes, most disputed first.

    ``by="confidence"`` (the default) ranks by the calibrated probability that the document's aggregate is right
    wherever the crowd marked anything (``scores.document``, lowest first: the documents most likely to need a
    correction of what the crowd disputed), then by the expected number of wrong spans (items) there;
    ``"disagreement"`` by the share of crowd labels differing from the aggregate; ``"entropy"`` by the mean
    posterior entropy of the tokens (of the model as fitted). Ties go to the other measures, then to document
    order.

    A document is disputed when a crowd label of it differs from the aggregate (so also wherever two crowd
    workers differ). A document the crowd labelled unanimously, as the aggregate, is never listed (one that every
    annotator left empty among them), so the list can be shorter than ``limit``, or empty.
    """
    if by not in DISPUTED_ORDERS:
        raise ValueError(f"by must be one of {', '.join(DISPUTED_ORDERS)}, found {by!r}")
    corpus = result.corpus
    crowd = corpus.workers_with_role("crowd")
    entropy = document_entropy(corpus, result.proba)
    disagreement = document_disagreement(corpus, result.labels, workers=crowd)
    differs = np.nan_to_num(disagreement, nan=0.0)
    disputed = differs > 0
    score = np.asarray(result.scores.document, dtype=np.float64)
    wrong = expected_wrong(result)
    keys = {"confidence": (-score, wrong, differs), "disagreement": (differs, -score, wrong),
            "entropy": (entropy, differs, -score)}[by]
    order = np.lexsort((np.arange(corpus.n_docs), -keys[2], -keys[1], -keys[0], ~disputed))
    order = order[disputed[order]][:limit]
    return [{"index": int(d), "id": corpus.doc_ids[d], "score": float(score[d]), "expected_wrong": float(wrong[d]),
             "entropy": float(entropy[d]),
             "disagreement": None if np.isnan(disagreement[d]) else float(disagreement[d]),
             "tokens": int(corpus.doc_lengths[d])} for d in order]


def expected_wrong(result: JobResult) -> NDArray[np.float64]:
    """Expected number of wrong aggregate spans in each document (categorical answers: of wrong items), from the
    calibrated scores: ndarray of shape (n_docs,)."""
    corpus = result.corpus
    if corpus.has_outside and result.scores.span.size == len(spans := decode_spans(result.labels, corpus)):
        return np.bincount(spans.doc, weights=1.0 - result.scores.span, minlength=corpus.n_docs)
    labelled = result.labels >= 0
    return np.bincount(corpus.token_doc[labelled], weights=1.0 - result.scores.token[labelled],
                       minlength=corpus.n_docs)


def _reference_for(corpus: Corpus, w: int, rule: str) -> NDArray[np.int64] | None:
    """What annotator ``w`` is measured against: the expert reference (for an expert, the other experts')."""
    experts = corpus.workers_with_role("expert")
    if corpus.worker_roles[w] == "expert":
        others = experts[experts != w]
        if rule == corpus.worker_ids[w] or others.size == 0:
            return None
        corpus = corpus.select_workers(others)
    elif experts.size == 0:
        return None
    return reference_labels(corpus, rule=rule)


@dataclass(frozen=True)
class WorkerDetails:
    """One annotator of a finished job, beside its report entry.

    Attributes
    ----------
    index : int
        The annotator's index in the corpus.
    role : str
    estimated : ndarray of shape (n_classes, n_classes)
        The model's P(answer | true class).
    measured : ndarray of shape (n_classes, n_classes) or None
        Counts of (reference class, answer) on the tokens the expert reference covers; None without one.
    worst : list of dict
        The documents where the annotator differs most from the aggregate: index, id, tokens, disagree, rate.
    documents : int
        Documents the annotator labelled.
    """

    index: int
    role: str
    estimated: NDArray[np.float64]
    measured: NDArray[np.int64] | None
    worst: list[dict[str, Any]]
    documents: int


def worker_details(result: JobResult, *, annotator: str, reference: str = "union", limit: int = 10) -> WorkerDetails:
    """The estimated and measured confusion matrices of one annotator and the documents where it disagrees
    most with the aggregate (highest share of differing tokens, then most tokens differing, then document
    order). KeyError for an annotator the job's corpus does not have."""
    corpus = result.corpus
    if annotator not in corpus.worker_ids:
        raise KeyError(annotator)
    w = corpus.worker_ids.index(annotator)
    ref = _reference_for(corpus, w, reference)
    measured = measured_confusion(corpus.select_workers([w]), ref)[w] if ref is not None else None
    pairs = worker_document_disagreement(corpus.select_workers([w]), result.labels)
    rate = pairs.rate
    order = np.lexsort((pairs.doc, -pairs.disagree, -rate))[:limit]
    worst = [{"index": int(pairs.doc[i]), "id": corpus.doc_ids[pairs.doc[i]], "tokens": int(pairs.tokens[i]),
              "disagree": int(pairs.disagree[i]), "rate": float(rate[i])} for i in order]
    return WorkerDetails(index=w, role=corpus.worker_roles[w], estimated=result.worker_confusion[w],
                         measured=measured if measured is not None and measured.sum() else None, worst=worst,
                         documents=int(pairs.doc.size))


@dataclass(frozen=True)
class DocumentLayers:
    """What the document viewer stacks for one document.

    Attributes
    ----------
    doc_id : str
    text : str
    annotators : list of (annotator id, role, spans)
        Every annotator who labelled the document, experts first; spans are (start, end, label) character
        ranges in ``text``, sorted (a categorical item's answer spans the whole text).
    aggregate : list of (start, end, label)
    tokens : list of (start, end, proba)
        Every token's character range and the aggregate's posterior (one probability per class).
    clamped : int
        Tokens whose label the fit was given (experts clamped).
    """

    doc_id: str
    text: str
    annotators: list[tuple[str, str, list[tuple[int, int, str]]]]
    aggregate: list[tuple[int, int, str]]
    tokens: list[tuple[int, int, list[float]]]
    clamped: int


def document_layers(result: JobResult, doc: int) -> DocumentLayers:
    """Every annotator's spans, the aggregate's and the token posteriors of document ``doc`` (IndexError if absent)."""
    corpus = result.corpus
    if not 0 <= doc < corpus.n_docs:
        raise IndexError(f"document index must be in [0, {corpus.n_docs}), found {doc}")
    s, e = int(corpus.doc_start[doc]), int(corpus.doc_start[doc + 1])

    def spans_of(labels: NDArray[np.int64]) -> list[tuple[int, int, str]]:
        if corpus.has_outside:
            spans = decode_spans(labels, corpus)
            keep = spans.doc == doc
            return [(int(a), int(b), corpus.entity_types[int(t) - 1])
                    for a, b, t in zip(spans.start[keep], spans.end[keep], spans.type[keep], strict=True)]
        return [(int(corpus.token_start[t]), int(corpus.token_end[t]), corpus.class_names[int(labels[t])])
                for t in range(s, e) if labels[t] != MISSING]

    on_doc = corpus.obs_doc == doc
    workers = sorted(np.unique(corpus.worker[on_doc]).tolist(),
                     key=lambda w: (corpus.worker_roles[w] != "expert", corpus.worker_ids[w]))
    annotators = []
    for w in workers:
        mine = on_doc & (corpus.worker == w)
        labels = np.full(corpus.n_tokens, MISSING, dtype=np.int64)
        labels[corpus.token[mine]] = corpus.label[mine]
        annotators.append((corpus.worker_ids[w], corpus.worker_roles[w], spans_of(labels)))
    aggregate = np.full(corpus.n_tokens, MISSING, dtype=np.int64)
    aggregate[s:e] = result.labels[s:e]
    tokens = list(zip(corpus.token_start[s:e].tolist(), corpus.token_end[s:e].tolist(), result.proba[s:e].tolist(),
                      strict=True))
    return DocumentLayers(doc_id=corpus.doc_ids[doc], text=corpus.texts[doc], annotators=annotators,
                          aggregate=spans_of(aggregate), tokens=tokens, clamped=int(result.clamped[s:e].sum()))
