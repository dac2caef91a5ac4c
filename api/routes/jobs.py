"""Jobs: poll, re-run, delete, and fetch their report, worker scores and labels."""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from crowdqa.api.deps import CurrentProjectDep, OwnedJobDep, QueueDep, SessionDep, SettingsDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.ingest.formats import FORMATS, WRITE_FORMATS, Writer
from crowdqa.jobs import reconcile, service
from crowdqa.store import crud
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.models import JobPublic, JobRerun, JobsPublic, JobStatus, WorkerScorePublic, WorkerScoresPublic

router = APIRouter(prefix="/jobs", tags=["jobs"])

Offset = Annotated[int, Query(ge=0, le=10**9, description="Rows to skip.")]
Limit = Annotated[int, Query(ge=1, le=1000, description="Rows to return (at most 1000).")]
SortKey = Literal[crud.WORKER_SORT_KEYS]  # the store's sortable columns, one list for both

#: Output format -> how it is downloaded (media type, suffix), from the formats table.
LABEL_FORMATS: dict[str, Writer] = {name: FORMATS[name].writer for name in WRITE_FORMATS}


def _finished(job) -> None:
    if job.status != JobStatus.finished:
        raise ProblemError(409, f"job {job.id} is {job.status.value}, not finished"
                           + (f": {job.error}" if job.error else ""))


@router.get("", responses=problem_responses())
def list_jobs(session: SessionDep, project: CurrentProjectDep, status_: Annotated[
        JobStatus | None, Query(alias="status", description="Only jobs in this state.")] = None,
        offset: Offset = 0, limit: Limit = 100) -> JobsPublic:
    """List the project's jobs, oldest first."""
    rows, count = crud.list_jobs(session=session, project_id=project.id, status=status_, offset=offset, limit=limit)
    return JobsPublic(data=[JobPublic.model_validate(j) for j in rows], count=count)


@router.get("/{job_id}", responses=problem_responses(404))
def get_job(job: OwnedJobDep, settings: SettingsDep, queue: QueueDep) -> JobPublic:
    """Poll a job: status (queued, running, finished, failed), progress, timings and error (a running job gone
    silent reads as failed, abandoned; a queued job the queue lost as failed, lost)."""
    return reconcile.observe(job, settings=settings, queue=queue)


@router.delete("/{job_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problem_responses(404, 503))
def delete_job(job: OwnedJobDep, session: SessionDep, settings: SettingsDep, queue: QueueDep) -> Response:
    """Delete a job and its result files (a running job's result is discarded)."""
    service.delete_job(session=session, settings=settings, queue=queue, job=job)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{job_id}/rerun", status_code=status.HTTP_202_ACCEPTED, responses=problem_responses(404, 409, 503))
def rerun_job(job: OwnedJobDep, session: SessionDep, settings: SettingsDep, queue: QueueDep,
              response: Response, changes: JobRerun | None = None) -> JobPublic:
    """Run a finished or failed job again on the same corpus snapshot; an optional body changes its method,
    params, use_experts or reference (checked as for a new job), the rest stay as they were."""
    job = service.rerun_job(session=session, settings=settings, queue=queue, job=job, changes=changes)
    response.headers["Location"] = f"/api/v1/jobs/{job.id}"
    return JobPublic.model_validate(job)


@router.get("/{job_id}/report", responses=problem_responses(404, 409))
def get_report(job: OwnedJobDep, session: SessionDep) -> dict[str, Any]:
    """The quality report of a finished job (see crowdqa.quality.report.build_report for its keys)."""
    _finished(job)
    report = crud.get_report(session=session, job_id=job.id)
    if report is None:
        raise ProblemError(409, f"job {job.id} has no report")
    return report.body


#: The columns of a worker row, in the order the CSV export writes them.
WORKER_COLUMNS = ("annotator", "role", "documents", "tokens", "precision", "recall", "f1", "span_f1",
                  "agreement_precision", "agreement_recall", "agreement_f1", "accuracy", "agreement_accuracy")


@router.get("/{job_id}/workers", responses={**problem_responses(404, 409),
                                            200: {"content": {"text/csv": {}},
                                                  "description": "Worker rows (JSON, or CSV with format=csv)."}})
def list_workers(job: OwnedJobDep, session: SessionDep,
                 sort: Annotated[SortKey | None, Query(
                     description="Column to sort by; nulls last. Default: f1 for span reports, accuracy for "
                                 "categorical ones (which have no precision, recall or F1).")] = None,
                 order: Annotated[Literal["asc", "desc"], Query()] = "asc",
                 offset: Offset = 0, limit: Limit = 100,
                 format: Annotated[Literal["json", "csv"], Query(
                     description="csv: every row (offset and limit apply too) as a spreadsheet.")] = "json",
                 ) -> WorkerScoresPublic:
    """Per-annotator scores of a finished job, sorted and paged (or as CSV)."""
    _finished(job)
    report = crud.get_report(session=session, job_id=job.id)
    kind = (report.body.get("kind") if report is not None else None) or "spans"
    if sort is None:
        sort = crud.DEFAULT_SORT.get(kind, "annotator")
    if kind == "categorical" and sort not in crud.CATEGORICAL_SORT_KEYS:
        raise ProblemError(422, f"sort: job {job.id} has a categorical report, whose workers have no {sort}; "
                                f"sort by one of {', '.join(crud.CATEGORICAL_SORT_KEYS)}")
    rows, count = crud.list_worker_scores(session=session, job_id=job.id, sort=sort, order=order,
                                          offset=offset, limit=limit)
    if format == "csv":
        import csv

        from crowdqa.ingest.writers import csv_escape

        buf = io.StringIO()
        out = csv.writer(buf)
        out.writerow(WORKER_COLUMNS)
        for r in rows:
            out.writerow([csv_escape(str(v)) if isinstance(v := getattr(r, c), str) else ("" if v is None else v)
                          for c in WORKER_COLUMNS])
        return Response(buf.getvalue(), media_type="text/csv; charset=utf-8",  # type: ignore[return-value]
                        headers={"Content-Disposition": f'attachment; filename="{job.id}-workers.csv"'})
    return WorkerScoresPublic(data=[WorkerScorePublic.model_validate(r) for r in rows], count=count)


def _stream_file(path: Path):
    with open(path, "rb") as fh:
        yield from iter(lambda: fh.read(1 << 16), b"")


@router.get(
    "/{job_id}/labels",
    response_class=StreamingResponse,
    responses={**problem_responses(404, 409),
               200: {"description": "The aggregate in the chosen format, streamed.",
                     "content": {w.media_type: {} for w in LABEL_FORMATS.values()}}},
)
def get_labels(job: OwnedJobDep, settings: SettingsDep,
               format: Annotated[Literal[WRITE_FORMATS],
                                 Query(description="Output format (ebm-nlp comes as a zip).")] = "spans-jsonl"
               ) -> StreamingResponse:
    """The aggregated labels of a finished job, streamed in the chosen format."""
    from crowdqa.ingest.writers import write_labels

    _finished(job)
    store = ArtifactStore(settings.data_dir)
    labels = store.load_arrays(job.artifacts["labels"])["labels"]
    corpus = service.load_job_corpus(store, job.corpus_sha256)
    writer = LABEL_FORMATS[format]
    media, suffix = writer.media_type, writer.suffix
    folder = Path(tempfile.mkdtemp(prefix="crowdqa-labels-"))
    try:
        target = folder / f"labels{suffix}"
        if writer.folder:  # sent as a zip of the folder
            out = folder / format
            write_labels(labels, corpus, out, format=format)
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for f in sorted(out.rglob("*")):
                    if f.is_file():
                        zf.write(f, f.relative_to(out).as_posix())
            target.write_bytes(buf.getvalue())
        else:
            write_labels(labels, corpus, target, format=format)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return StreamingResponse(
        _stream_file(target), media_type=media,
        headers={"Content-Disposition": f'attachment; filename="{job.id}{suffix}"'},
        background=BackgroundTask(shutil.rmtree, folder, ignore_errors=True),
    )
