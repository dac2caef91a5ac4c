"""Jobs: poll, re-run, delete, and fetch their report, worker scores and labels."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from crowdqa.api.deps import (
    CurrentProjectDep,
    JobId,
    Limit,
    Offset,
    OwnedJobDep,
    QueueDep,
    SessionDep,
    SettingsDep,
    owned_job,
)
from crowdqa.api.errors import problem_responses
from crowdqa.api.openapi import download_response
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.ingest.formats import FORMATS, WRITE_FORMATS
from crowdqa.jobs import compare, exports, reconcile, service
from crowdqa.jobs.compare import MethodsComparison
from crowdqa.jobs.exports import QualityReport
from crowdqa.jobs.finished import finished_report_json
from crowdqa.store import crud
from crowdqa.store.models import JobPublic, JobRerun, JobsPublic, JobStatus, WorkerScorePublic, WorkerScoresPublic

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=StrictJSONRoute)

#: The store's sortable columns, one list for both; named enums, so OpenAPI (and a generated client) has them
#: as the components WorkerSortKey and SortOrder.
WorkerSortKey = StrEnum("WorkerSortKey", [(k, k) for k in crud.WORKER_SORT_KEYS])
SortOrder = StrEnum("SortOrder", [("asc", "asc"), ("desc", "desc")])
LabelFormat = Literal[WRITE_FORMATS]  # type: ignore[valid-type]


@router.get("", responses=problem_responses())
def list_jobs(session: SessionDep, project: CurrentProjectDep, status_: Annotated[
        JobStatus | None, Query(alias="status", description="Only jobs in this state.")] = None,
        offset: Offset = 0, limit: Limit = 100) -> JobsPublic:
    """List the project's jobs, oldest first."""
    rows, count = crud.list_jobs(session=session, project_id=project.id, status=status_, offset=offset, limit=limit)
    return JobsPublic(data=[JobPublic.model_validate(j) for j in rows], count=count)


@router.get("/{job_id}", response_model=JobPublic, responses=problem_responses(404))
def get_job(job_id: JobId, session: SessionDep, project: CurrentProjectDep, settings: SettingsDep,
            queue: QueueDep) -> Response:
    """Poll a job: status (queued, running, finished, failed), progress, timings and error (a running job gone
    silent reads as failed, abandoned; a queued job the queue lost as failed, lost)."""
    # The most frequent request of all, so it takes one worker thread, not three: the job is read here (not by
    # OwnedJobDep in a thread of its own), and the typed JobPublic is encoded here, not validated again as the
    # response model in one more thread and encoded twice (through jsonable_encoder and json.dumps).
    job = owned_job(session=session, project=project, job_id=job_id)
    return Response(reconcile.observe(job, settings=settings, queue=queue).model_dump_json(),
                    media_type="application/json")


@router.delete("/{job_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problem_responses(404, 503))
def delete_job(job: OwnedJobDep, session: SessionDep, settings: SettingsDep, queue: QueueDep) -> Response:
    """Delete a job and its result files (a running job's result is discarded)."""
    service.delete_job(session=session, settings=settings, queue=queue, job=job)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{job_id}/rerun", status_code=status.HTTP_202_ACCEPTED,
             responses=problem_responses(404, 409, 429, 503))
def rerun_job(job: OwnedJobDep, session: SessionDep, settings: SettingsDep, queue: QueueDep,
              response: Response, changes: JobRerun | None = None) -> JobPublic:
    """Run a finished or failed job again on the same corpus snapshot; an optional body changes its method,
    params, use_experts or reference (checked as for a new job), the rest stay as they were."""
    job = service.rerun_job(session=session, settings=settings, queue=queue, job=job, changes=changes)
    response.headers["Location"] = f"/api/v1/jobs/{job.id}"
    return JobPublic.model_validate(job)


@router.get("/{job_id}/report", response_model=QualityReport, responses=problem_responses(404, 409))
def get_report(job: OwnedJobDep, session: SessionDep) -> Response:
    """The quality report of a finished job: every worker and the aggregate against the experts."""
    # Served as stored: the store wrote it from the typed report, so validating it again would only cost time,
    # and so would parsing the stored JSON text and encoding it again.
    return Response(finished_report_json(session=session, job=job), media_type="application/json")


@router.get("/{job_id}/comparison", responses=problem_responses(404, 409))
def get_comparison(job: OwnedJobDep, session: SessionDep, settings: SettingsDep) -> MethodsComparison:
    """The methods a finished compare job (or auto job with experts) compared on the experts, best first, with
    intervals, paired differences to the best, and the recommended method with its reason."""
    return MethodsComparison.model_validate(compare.job_comparison(session=session, settings=settings, job=job))


SortQuery = Annotated[WorkerSortKey | None, Query(
    description="Column to sort by; nulls last. Default: f1 for span reports, accuracy for categorical ones (which "
                "have no precision, recall or F1).")]
OrderQuery = Annotated[SortOrder, Query()]


@router.get("/{job_id}/workers", response_model=WorkerScoresPublic, responses=problem_responses(404, 409))
def list_workers(job: OwnedJobDep, session: SessionDep, sort: SortQuery = None, order: OrderQuery = SortOrder.asc,
                 offset: Offset = 0, limit: Limit = 100) -> Response:
    """Per-annotator scores of a finished job, sorted and paged (the same rows as a spreadsheet:
    ``GET /jobs/{id}/workers.csv``)."""
    rows, count = exports.worker_scores(session=session, job=job, sort=sort, order=order, offset=offset, limit=limit)
    # Each row's detail is validated into a WorkerReport once, here, and the page encoded by pydantic: as a response
    # model FastAPI validated the whole page again and encoded it through jsonable_encoder, 4-5x the time of this
    # (1000 rows: 2.6-3.1 s against 0.56-0.64 s on a busy 2-core machine).
    page = WorkerScoresPublic(data=[WorkerScorePublic.model_validate(r) for r in rows], count=count)
    return Response(page.model_dump_json(), media_type="application/json")


@router.get("/{job_id}/workers.csv", response_class=Response, responses={
    **problem_responses(404, 409), 200: download_response("The worker rows as CSV.", "text/csv; charset=utf-8")})
def export_workers(job: OwnedJobDep, session: SessionDep, sort: SortQuery = None, order: OrderQuery = SortOrder.asc,
                   offset: Offset = 0, limit: Limit = 1000) -> Response:
    """The per-annotator rows of ``GET /jobs/{id}/workers`` (same sort, order and paging) as a spreadsheet."""
    rows, _ = exports.worker_scores(session=session, job=job, sort=sort, order=order, offset=offset, limit=limit)
    return Response(exports.workers_csv(rows), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{job.id}-workers.csv"'})


@router.get(
    "/{job_id}/labels",
    response_class=StreamingResponse,
    responses={**problem_responses(404, 409),
               200: download_response("The aggregate in the chosen format, streamed.",
                                      *(FORMATS[f].writer.media_type for f in WRITE_FORMATS))},
)
def get_labels(job: OwnedJobDep, settings: SettingsDep,
               format: Annotated[LabelFormat, Query(description="Output format (ebm-nlp comes as a zip).")]
               = "spans-jsonl") -> StreamingResponse:
    """The aggregated labels of a finished job, streamed in the chosen format."""
    out = exports.export_labels(settings=settings, job=job, format=format)
    return StreamingResponse(out.chunks(), media_type=out.media_type,
                             headers={"Content-Disposition": f'attachment; filename="{out.filename}"'},
                             background=BackgroundTask(out.remove))
