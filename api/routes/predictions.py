"""Pre-annotation: a finished job's model labels uploaded documents nobody annotated, on the job queue."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Form, Path, Query, Response, status
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from crowdqa.api.deps import CurrentProjectDep, Limit, Offset, OwnedJobDep, QueueDep, SessionDep, SettingsDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.api.forms import DocumentsForm, check_upload_request, upload_options
from crowdqa.api.openapi import download_response
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.ingest.formats import FORMATS, WRITE_FORMATS
from crowdqa.jobs import preannotate
from crowdqa.store import crud
from crowdqa.store.models import Prediction, PredictionPublic, PredictionsPublic

router = APIRouter(tags=["predictions"], route_class=StrictJSONRoute)

LabelFormat = Literal[WRITE_FORMATS]  # type: ignore[valid-type]


def get_owned_prediction(prediction_id: Annotated[str, Path(max_length=64)], session: SessionDep,
                         project: CurrentProjectDep) -> Prediction:
    """The caller's pre-annotation; 404 when it does not exist or belongs to another project."""
    prediction = crud.get_prediction(session=session, project_id=project.id, prediction_id=prediction_id)
    if prediction is None:
        raise ProblemError(404, f"no pre-annotation {prediction_id!r} in this project")
    return prediction


OwnedPredictionDep = Annotated[Prediction, Depends(get_owned_prediction)]


@router.post(
    "/jobs/{job_id}/predictions",
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(check_upload_request)],
    responses={**problem_responses(404, 409, 503),
               202: {"description": "Queued; poll the Location.",
                     "headers": {"Location": {"schema": {"type": "string"}}}}},
)
def create_prediction(job: OwnedJobDep, session: SessionDep, settings: SettingsDep, queue: QueueDep,
                      response: Response,
                      form: Annotated[DocumentsForm, Form(media_type="multipart/form-data")]) -> PredictionPublic:
    """Queue the labelling of uploaded documents by a finished job's fitted model, one that reads the text; the file
    is read as an upload of its format is, its labels (if any) not read. 409 for a job that has not finished or
    whose method's model cannot (naming the methods that can); 422 for a file without a document."""
    prediction = preannotate.start_prediction(
        session=session, settings=settings, queue=queue, job=job, stream=form.file.file,
        filename=form.file.filename or "documents", format=form.format, options=upload_options(form))
    response.headers["Location"] = f"/api/v1/predictions/{prediction.id}"
    return PredictionPublic.of(prediction)


@router.get("/jobs/{job_id}/predictions", responses=problem_responses(404))
def list_job_predictions(job: OwnedJobDep, session: SessionDep, offset: Offset = 0,
                         limit: Limit = 100) -> PredictionsPublic:
    """List a job's pre-annotations, oldest first."""
    rows, count = crud.list_predictions(session=session, project_id=job.project_id, job_id=job.id, offset=offset,
                                        limit=limit)
    return PredictionsPublic(data=[PredictionPublic.of(p) for p in rows], count=count)


@router.get("/predictions/{prediction_id}", responses=problem_responses(404))
def get_prediction(prediction: OwnedPredictionDep) -> PredictionPublic:
    """Poll a pre-annotation: status (queued, running, finished, failed), progress and error."""
    return PredictionPublic.of(prediction)


@router.delete("/predictions/{prediction_id}", status_code=status.HTTP_204_NO_CONTENT,
               responses=problem_responses(404, 503))
def delete_prediction(prediction: OwnedPredictionDep, session: SessionDep, settings: SettingsDep,
                      queue: QueueDep) -> Response:
    """Delete a pre-annotation with its documents and labels."""
    preannotate.delete_prediction(session=session, settings=settings, queue=queue, prediction=prediction)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/predictions/{prediction_id}/labels",
    response_class=StreamingResponse,
    responses={**problem_responses(404, 409),
               200: download_response("The predicted labels in the chosen format (as crowdqa aggregate "
                                      "--predictions writes them), streamed.",
                                      *(FORMATS[f].writer.media_type for f in WRITE_FORMATS))},
)
def get_prediction_labels(prediction: OwnedPredictionDep, session: SessionDep, settings: SettingsDep,
                          format: Annotated[LabelFormat, Query(description="Output format (ebm-nlp comes as a zip); "
                                                                           "one its job's labels have.")]
                          = "spans-jsonl") -> StreamingResponse:
    """The labels a finished pre-annotation predicted, streamed in the chosen format; 409 before it finished."""
    out = preannotate.prediction_labels(session=session, settings=settings, prediction=prediction, format=format)
    return StreamingResponse(out.chunks(), media_type=out.media_type,
                             headers={"Content-Disposition": f'attachment; filename="{out.filename}"'},
                             background=BackgroundTask(out.remove))
