"""Dashboard: pre-annotate documents with a finished job's model, and download the predicted labels.

The job page of a finished job whose model reads the text (:func:`crowdqa.jobs.preannotate.pre_annotation_methods`)
gets a form for a file of documents and the list of its pre-annotations; the same use cases as
``POST /api/v1/jobs/{id}/predictions`` and ``GET /api/v1/predictions/{id}/labels``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Query, Request
from fastapi.responses import JSONResponse, Response

from crowdqa.api.dashboard.auth import DashboardSession, DashSessionDep, check_csrf
from crowdqa.api.dashboard.pages import (
    FORM_ERRORS,
    error_message,
    form_text,
    given_fields,
    job_page_response,
    owned_job,
    router,
)
from crowdqa.api.dashboard.web import PageError, redirect
from crowdqa.api.deps import QueueDep, SessionDep, SettingsDep
from crowdqa.api.forms import documents_form, upload_options
from crowdqa.api.routes.predictions import LabelFormat, get_prediction_labels
from crowdqa.ingest.formats import READ_FORMATS, UPLOAD_OPTIONS
from crowdqa.jobs import preannotate
from crowdqa.jobs.errors import JobNotRunnableError
from crowdqa.store import crud
from crowdqa.store.errors import UploadTooLargeError
from crowdqa.store.models import Job, JobStatus, Prediction

__all__ = ["pre_annotation_context", "pre_annotate", "prediction_progress", "download_predictions"]

#: The newest pre-annotations a job page lists.
LISTED = 20


def pre_annotation_context(session, job: Job) -> dict[str, Any]:
    """What the job page's pre-annotation part shows: nothing for a job whose model cannot label new documents,
    else the form's formats and options and the job's newest pre-annotations with their download formats."""
    try:
        preannotate.check_job_can_predict(session=session, job=job)
    except JobNotRunnableError:
        return {}
    rows, count = crud.list_predictions(session=session, project_id=job.project_id, job_id=job.id, limit=LISTED,
                                        newest_first=True)
    formats = rows and preannotate.prediction_formats(session=session, prediction=rows[0])
    return {"pre_annotation": {"predictions": rows, "count": count, "label_formats": formats or [],
                               "formats": READ_FORMATS, "upload_options": [o for o in UPLOAD_OPTIONS if o.client]}}


def _owned_prediction(session, dash: DashboardSession, prediction_id: str) -> Prediction:
    prediction = crud.get_prediction(session=session, project_id=dash.project.id, prediction_id=prediction_id[:64])
    if prediction is None:
        raise PageError(404, f"no pre-annotation {prediction_id[:64]!r} in this project")
    return prediction


@router.post("/jobs/{job_id}/predictions")
async def pre_annotate(request: Request, job_id: str, session: SessionDep, settings: SettingsDep, queue: QueueDep,
                       dash: DashSessionDep) -> Response:
    """Queue the labelling of an uploaded file of documents by the job's model; back to the job page, which lists
    it (and reloads when it has finished)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.datastructures import UploadFile as Part

    form = await request.form()
    check_csrf(request, dash, form_text(form.get("csrf")))
    job = owned_job(session, dash, job_id)
    try:
        file = form.get("file")
        if not isinstance(file, Part) or not file.filename:
            raise ValueError("choose a file of documents to label")
        documents = documents_form(given_fields(form))  # the API's check and form model
        await run_in_threadpool(
            preannotate.start_prediction, session=session, settings=settings, queue=queue, job=job,
            stream=documents.file.file, filename=documents.file.filename, format=documents.format,
            options=upload_options(documents))
    except FORM_ERRORS as exc:
        session.rollback()
        status = getattr(exc, "status", 413 if isinstance(exc, UploadTooLargeError)
                         else 409 if isinstance(exc, JobNotRunnableError) else 422)
        return job_page_response(request, session, settings, dash, job, status_code=status,
                                 error=f"pre-annotation refused: {error_message(exc)}",
                                 **pre_annotation_context(session, job))
    finally:
        await form.close()
    return redirect(f"/jobs/{job.id}#pre-annotation")


@router.get("/predictions/{prediction_id}/progress")
def prediction_progress(prediction_id: str, session: SessionDep, dash: DashSessionDep) -> JSONResponse:
    """A pre-annotation's status and stage, polled by the job page's script."""
    prediction = _owned_prediction(session, dash, prediction_id)
    return JSONResponse({"status": prediction.status.value, "stage": (prediction.progress or {}).get("stage")},
                        headers={"Cache-Control": "no-store"})


@router.get("/predictions/{prediction_id}/labels")
def download_predictions(prediction_id: str, session: SessionDep, settings: SettingsDep, dash: DashSessionDep,
                         format: Annotated[LabelFormat, Query()] = "spans-jsonl") -> Response:
    """The predicted labels in an output format (the API's route)."""
    prediction = _owned_prediction(session, dash, prediction_id)
    if prediction.status != JobStatus.finished:
        raise PageError(409, f"pre-annotation {prediction.id} is {prediction.status.value}, not finished")
    return get_prediction_labels(prediction=prediction, session=session, settings=settings, format=format)
