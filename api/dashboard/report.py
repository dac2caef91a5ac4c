"""Dashboard pages of a job's results: the report, a worker's page, the document viewer, downloads.

The numbers come from the job's stored report (``crowdqa.store.crud``) and its stored arrays through the
use cases of ``crowdqa.jobs.results`` (measured confusion matrices, disagreement and entropy per document,
a document's layers); this module only shapes them for the templates. Downloads call the API's
own route functions.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response

from crowdqa.api.dashboard.auth import DashSessionDep
from crowdqa.api.dashboard.charts import (
    accuracy_scatter,
    confusion_matrix,
    forest_plot,
    precision_recall_scatter,
    reliability_diagram,
    shade_class,
)
from crowdqa.api.dashboard.pages import job_dataset, job_page_response, owned_job, router
from crowdqa.api.dashboard.predictions import pre_annotation_context
from crowdqa.api.dashboard.web import PREFIX, SECURITY_HEADERS, PageError, render, templates
from crowdqa.api.deps import QueueDep, SessionDep, SettingsDep
from crowdqa.api.routes.jobs import LabelFormat, get_labels
from crowdqa.jobs import compare, exports, reconcile
from crowdqa.jobs.errors import JobNotFinishedError
from crowdqa.jobs.finished import check_aggregated, finished_report, finished_report_json
from crowdqa.jobs.results import (
    DocumentLayers,
    disputed_documents,
    document_layers,
    load_job_result,
    score_levels,
    worker_details,
)
from crowdqa.store import crud
from crowdqa.store.models import Job, JobStatus

__all__ = ["report_context", "comparison_context", "viewer"]

PAGE = 25
#: Longest text the viewer draws; longer documents are cut there (with a note), so a 1 MB line stays a page.
MAX_TEXT = 20_000


def _finished(read, **kwargs):
    """``read(**kwargs)`` (a check or a read of a finished job); a job that is not finished is the page's 409."""
    try:
        return read(**kwargs)
    except JobNotFinishedError as exc:
        raise PageError(409, str(exc)) from None


def _finished_report(session, job: Job) -> dict[str, Any]:
    return _finished(finished_report, session=session, job=job)


def _worker_href(job: Job):
    from urllib.parse import quote

    return lambda annotator: f"{PREFIX}/jobs/{job.id}/worker?id={quote(annotator, safe='')}"


def _tag_confusion(body: dict):
    """The aggregate against the experts of a tags report as a matrix the page shows (rows: the experts' tag, each
    row the share of its tokens the aggregate gave each tag, with the counts); None for other kinds."""
    confusion = (body.get("aggregate_vs_expert") or {}).get("token_confusion")
    if body.get("kind") != "tags" or not confusion:
        return None
    counts = np.asarray(confusion["matrix"], dtype=np.int64).T  # stored rows: the aggregate; shown rows: the experts
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):  # a tag the experts never use: NaN row
        rates = np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)
    return confusion_matrix(rates, confusion["labels"], counts=counts)


def report_context(session, settings, job: Job, *, sort: str | None, order: str, offset: int, against: str | None,
                   docs_by: str) -> dict[str, Any]:
    """Everything the report part of the job page shows (the scatter against the experts when any worker
    has a score against them, else against the aggregate, unless ``against`` says which). The worker table
    is sorted worst first unless ``sort`` says otherwise: by F1 (categorical answers: accuracy) against the
    experts, or against the aggregate when no worker has a score against the experts."""
    body = _finished_report(session, job)
    scored = any(isinstance(w.get("vs_expert"), dict) for w in body.get("workers") or [])
    if against is None:
        against = "expert" if scored else "aggregate"
    if sort is None:
        sort = crud.DEFAULT_SORT.get(str(body.get("kind")), "f1")
        sort = sort if scored else f"agreement_{sort}"
    rows, count = crud.list_worker_scores(session=session, job_id=job.id, sort=sort, order=order, offset=offset,
                                          limit=PAGE)
    categorical = body.get("kind") in crud.ACCURACY_KINDS
    plot = accuracy_scatter if categorical else precision_recall_scatter  # categorical answers have no P and R
    scatter = plot(body, against=against, worker_href=_worker_href(job))
    disputed = disputed_documents(load_job_result(settings=settings, job=job), by=docs_by)
    vs_expert = body.get("aggregate_vs_expert") or {}
    return {"report": body, "workers": rows, "worker_count": count, "sort": sort, "order": order, "offset": offset,
            "page": PAGE, "scatter": None if categorical else scatter,
            "accuracy_plot": scatter if categorical else None,
            "against": against, "disputed": disputed, "docs_by": docs_by, "reliability": _reliability(body),
            "mturk_batch": exports.has_batch(session=session, job=job),
            "levels": score_levels(body), "per_type": vs_expert.get("span_per_type") or {},
            "accuracy": vs_expert.get("accuracy"), "per_label": vs_expert.get("token_per_label") or {},
            "agreement": body.get("agreement") or {}, "tag_confusion": _tag_confusion(body),
            "sort_keys": crud.WORKER_SORT_KEYS, "label_formats": exports.label_formats(body.get("kind"))}


def _reliability(body: dict[str, Any]) -> list:
    """The reliability diagrams of the report's calibration against the experts (none without experts)."""
    cal = body.get("calibration") or {}
    made = [reliability_diagram(cal.get("without_experts"), label="without experts"),
            reliability_diagram(cal.get("with_experts"), label="with experts")]
    return [r for r in made if r is not None]


def comparison_context(comparison: dict[str, Any]) -> dict[str, Any]:
    """The comparison part of a job page: the table (best first), the forest plot and the recommendation."""
    return {"comparison": comparison, "forest": forest_plot(comparison)}


@router.get("/jobs/{job_id}")
def job_page(request: Request, job_id: str, session: SessionDep, settings: SettingsDep, queue: QueueDep,
             dash: DashSessionDep,
             sort: Annotated[Literal[crud.WORKER_SORT_KEYS] | None, Query()] = None,  # type: ignore[valid-type]
             order: Annotated[Literal["asc", "desc"], Query()] = "asc",
             offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
             against: Annotated[Literal["expert", "aggregate"] | None, Query()] = None,
             docs: Annotated[Literal["confidence", "disagreement", "entropy"], Query()] = "confidence",
             pushed: Annotated[int | None, Query(ge=0, le=10**9)] = None,
             skipped: Annotated[int, Query(ge=0, le=10**9)] = 0,
             drafted: Annotated[int, Query(ge=0, le=10**9)] = 0) -> HTMLResponse:
    """A job: live progress while it runs, the reason and a re-run button when it failed, the report when done
    (after a push to Label Studio, ``pushed``, ``skipped`` and ``drafted`` say what it wrote)."""
    job = owned_job(session, dash, job_id)
    extra = {}
    if job.status == JobStatus.finished and str(job.method) == "compare":
        extra = comparison_context(_finished(compare.job_comparison, session=session, settings=settings, job=job))
    elif job.status == JobStatus.finished:
        extra = report_context(session, settings, job, sort=sort, order=order, offset=offset, against=against,
                               docs_by=docs)
        if extra["report"].get("comparison"):
            extra.update(comparison_context(extra["report"]["comparison"]))
        extra.update(pre_annotation_context(session, job))
    return job_page_response(request, session, settings, dash, reconcile.observe(job, settings=settings, queue=queue),
                             pushed=pushed, skipped=skipped, drafted=drafted, **extra)


@router.get("/jobs/{job_id}/worker")
def worker_page(request: Request, job_id: str, session: SessionDep, settings: SettingsDep, dash: DashSessionDep,
                id: Annotated[str, Query(max_length=10_000)]) -> HTMLResponse:
    """One annotator: scores, the confusion matrix the model estimated beside the one measured against the
    experts, and the documents where the annotator disagrees most with the aggregate."""
    job = owned_job(session, dash, job_id)
    body = _finished_report(session, job)
    result = load_job_result(settings=settings, job=job)
    try:
        details = worker_details(result, annotator=id, reference=job.reference)
    except KeyError:
        raise PageError(404, "no such annotator in this job") from None
    labels = list(result.corpus.class_names)
    measured = None
    if details.measured is not None:
        counts = details.measured
        totals = counts.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):  # a class the reference never has: NaN row
            rates = np.where(totals > 0, counts / np.maximum(totals, 1), np.nan)
        measured = confusion_matrix(rates, labels, counts=counts)
    entry = next((e for e in body.get("workers") or [] if e.get("annotator") == id), {})
    return render(request, "worker.html", {
        "job": job, "dataset": job_dataset(session, dash, job), "annotator": id, "role": details.role, "entry": entry,
        "estimated": confusion_matrix(details.estimated, labels), "measured": measured, "worst": details.worst,
        "documents": details.documents, "method": body.get("method"), "reference": job.reference,
        "categorical": body.get("kind") in crud.ACCURACY_KINDS,
    }, dash=dash)


def _segments(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[str, str | None, int, int]]:
    """``text`` cut into (piece, label or None, start, end): the spans (sorted, disjoint) and the gaps."""
    out, at = [], 0
    for start, end, label in spans:
        start, end = max(start, at), min(end, len(text))
        if start >= end:
            continue
        if start > at:
            out.append((text[at:start], None, at, start))
        out.append((text[start:end], label, start, end))
        at = end
    if at < len(text):
        out.append((text[at:], None, at, len(text)))
    return out


@router.get("/jobs/{job_id}/documents/{doc}")
def document_page(request: Request, job_id: str, doc: int, session: SessionDep, settings: SettingsDep,
                  dash: DashSessionDep) -> HTMLResponse:
    """One document: the text with every annotator's spans stacked (experts, crowd, the aggregate) and the
    aggregate's token posteriors as shading."""
    job = owned_job(session, dash, job_id)
    _finished(check_aggregated, job=job)  # the report is not read: the method it names is the job row's
    result = load_job_result(settings=settings, job=job)
    try:
        layers = document_layers(result, doc)
    except IndexError:
        raise PageError(404, "no such document in this job") from None
    return render(request, "document.html", {"job": job, "dataset": job_dataset(session, dash, job),
                                             "method": job.method, "doc": doc,
                                             "n_docs": result.corpus.n_docs,
                                             **viewer(layers, job, has_outside=result.corpus.has_outside,
                                                      class_names=result.corpus.class_names)}, dash=dash)


def viewer(layers: DocumentLayers, job: Job, *, has_outside: bool, class_names) -> dict[str, Any]:
    """The document viewer's rows, cut at ``MAX_TEXT`` characters: (piece, label) segments per annotator and
    the aggregate, and the tokens with a shade (P(inside a span) for span tasks, else the top class's P)."""
    text = layers.text[:MAX_TEXT]
    href = _worker_href(job)
    rows = [{"who": who, "kind": role, "href": href(who), "segments": _segments(text, spans)}
            for who, role, spans in layers.annotators]
    rows.append({"who": "aggregate", "kind": "aggregate", "href": None, "segments": _segments(text, layers.aggregate)})
    shaded, at = [], 0
    for a, b, proba in layers.tokens:
        if a >= len(text):
            break
        if a > at:
            shaded.append((text[at:a], None, ""))
        p = 1.0 - proba[0] if has_outside else max(proba)
        title = ", ".join(f"{name} {q:.3f}" for name, q in zip(class_names, proba, strict=True))
        shaded.append((text[a:b], shade_class(p), title))
        at = b
    if at < len(text):
        shaded.append((text[at:], None, ""))
    return {"doc_id": layers.doc_id, "rows": rows, "shaded": shaded, "cut": len(layers.text) > MAX_TEXT,
            "length": len(layers.text), "tokens": len(layers.tokens), "clamped": layers.clamped,
            "max_text": MAX_TEXT}


# ---------------------------------------------------------------- downloads
@router.get("/jobs/{job_id}/report.json")
def download_report(job_id: str, session: SessionDep, dash: DashSessionDep) -> Response:
    """The job's report as the API returns it (the JSON text the store keeps), as a file."""
    job = owned_job(session, dash, job_id)
    text = _finished(finished_report_json, session=session, job=job)
    return Response(text, media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{job.id}-report.json"'})


@router.get("/jobs/{job_id}/labels")
def download_labels(job_id: str, session: SessionDep, settings: SettingsDep, dash: DashSessionDep,
                    format: Annotated[LabelFormat, Query()] = "spans-jsonl") -> Response:
    """The aggregate in an output format (the API's labels route)."""
    job = owned_job(session, dash, job_id)
    _finished(check_aggregated, job=job)  # a finished job has its report (one transaction): no need to read it
    return get_labels(job=job, settings=settings, format=format)


@router.get("/jobs/{job_id}/workers.csv")
def download_workers(job_id: str, session: SessionDep, dash: DashSessionDep) -> Response:
    """Every worker's row of the report (the columns the worker table sorts by) as a spreadsheet."""
    job = owned_job(session, dash, job_id)
    _finished(check_aggregated, job=job)
    rows, _ = crud.list_worker_scores(session=session, job_id=job.id, limit=10**9)
    return Response(exports.workers_csv(rows), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{job.id}-workers.csv"'})


@router.get("/jobs/{job_id}/scatter.svg")
def download_scatter(request: Request, job_id: str, session: SessionDep, dash: DashSessionDep,
                     against: Annotated[Literal["expert", "aggregate"], Query()] = "expert") -> Response:
    """The precision-recall scatter (categorical answers: accuracy against items) as a standalone SVG file."""
    job = owned_job(session, dash, job_id)
    body = _finished_report(session, job)
    if body.get("kind") in crud.ACCURACY_KINDS:
        name, context = "accuracy.svg", {"accuracy_plot": accuracy_scatter(body, against=against)}
    else:
        name, context = "scatter.svg", {"scatter": precision_recall_scatter(body, against=against)}
    response = templates.TemplateResponse(request, name, {**context, "standalone": True},
                                          media_type="image/svg+xml")
    response.headers.update(SECURITY_HEADERS)
    response.headers["Content-Disposition"] = f'attachment; filename="{job.id}-scatter-{against}.svg"'
    return response

