"""Datasets, their uploads, and starting jobs on them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Form, Path, Response, status

from crowdqa.api.deps import CurrentProjectDep, Limit, Offset, OwnedDatasetDep, QueueDep, SessionDep, SettingsDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.api.forms import UploadForm, check_upload_request, upload_options
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.jobs import service, uploads
from crowdqa.store import crud
from crowdqa.store.models import (
    DatasetCreate,
    DatasetPublic,
    DatasetsPublic,
    JobCreate,
    JobPublic,
    JobsPublic,
    UploadPublic,
    UploadsPublic,
)

router = APIRouter(prefix="/datasets", tags=["datasets"], route_class=StrictJSONRoute)


@router.post("", status_code=status.HTTP_201_CREATED, responses=problem_responses())
def create_dataset(dataset_in: DatasetCreate, session: SessionDep, project: CurrentProjectDep) -> DatasetPublic:
    """Create an empty dataset; upload crowd and expert files to it next."""
    dataset = crud.create_dataset(session=session, project_id=project.id, dataset_in=dataset_in)
    return DatasetPublic.model_validate(dataset)


@router.get("", responses=problem_responses())
def list_datasets(session: SessionDep, project: CurrentProjectDep, offset: Offset = 0,
                  limit: Limit = 100) -> DatasetsPublic:
    """List the project's datasets, oldest first."""
    rows, count = crud.list_datasets(session=session, project_id=project.id, offset=offset, limit=limit)
    return DatasetsPublic(data=[DatasetPublic.model_validate(d) for d in rows], count=count)


@router.get("/{dataset_id}", responses=problem_responses(404))
def get_dataset(dataset: OwnedDatasetDep) -> DatasetPublic:
    """Show a dataset with the parse summary of its merged corpus."""
    return DatasetPublic.model_validate(dataset)


@router.delete("/{dataset_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problem_responses(404, 409))
def delete_dataset(dataset: OwnedDatasetDep, session: SessionDep, settings: SettingsDep) -> Response:
    """Delete a dataset with its uploads, jobs, reports and stored files (refused while one of its jobs runs)."""
    uploads.delete_dataset(session=session, settings=settings, dataset=dataset)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{dataset_id}/uploads", status_code=status.HTTP_201_CREATED,
             responses=problem_responses(404, 409, 413, 429), dependencies=[Depends(check_upload_request)])
def create_upload(dataset: OwnedDatasetDep, session: SessionDep, settings: SettingsDep,
                  form: Annotated[UploadForm, Form(media_type="multipart/form-data")]) -> UploadPublic:
    """Upload one file (crowd or expert): it is stored, parsed and merged into the dataset's corpus."""
    upload = uploads.add_upload(session=session, settings=settings, dataset=dataset, stream=form.file.file,
                                filename=form.file.filename or "upload", format=form.format, role=form.role,
                                options=upload_options(form),
                                docs_stream=form.docs.file if form.docs is not None else None)
    return UploadPublic.model_validate(upload)


@router.delete("/{dataset_id}/uploads/{upload_id}", status_code=status.HTTP_204_NO_CONTENT,
               responses=problem_responses(404))
def delete_upload(dataset: OwnedDatasetDep, upload_id: Annotated[str, Path(max_length=64)], session: SessionDep,
                  settings: SettingsDep) -> Response:
    """Remove one upload: the dataset becomes the merge of its other uploads (existing jobs keep their
    snapshot); the upload's files go once no job or upload uses them."""
    upload = crud.find_upload(session=session, dataset_id=dataset.id, upload_id=upload_id)
    if upload is None:
        raise ProblemError(404, f"no upload {upload_id!r} in dataset {dataset.id}")
    uploads.delete_upload(session=session, settings=settings, dataset=dataset, upload=upload)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/{dataset_id}/uploads", responses=problem_responses(404))
def list_uploads(dataset: OwnedDatasetDep, session: SessionDep, offset: Offset = 0,
                 limit: Limit = 100) -> UploadsPublic:
    """List a dataset's uploads, oldest first."""
    rows, count = crud.list_uploads(session=session, dataset_id=dataset.id, offset=offset, limit=limit)
    return UploadsPublic(data=[UploadPublic.model_validate(u) for u in rows], count=count)


@router.post(
    "/{dataset_id}/jobs",
    status_code=status.HTTP_202_ACCEPTED,
    responses={**problem_responses(404, 409, 429, 503),
               202: {"description": "Queued; poll the Location.",
                     "headers": {"Location": {"schema": {"type": "string"}}}}},
)
def create_job(job_in: JobCreate, dataset: OwnedDatasetDep, session: SessionDep, settings: SettingsDep,
               queue: QueueDep, response: Response) -> JobPublic:
    """Queue an aggregation job on the dataset's current corpus; poll the returned Location."""
    job = service.start_job(session=session, settings=settings, queue=queue, dataset=dataset, job_in=job_in)
    response.headers["Location"] = f"/api/v1/jobs/{job.id}"
    return JobPublic.model_validate(job)


@router.get("/{dataset_id}/jobs", responses=problem_responses(404))
def list_dataset_jobs(dataset: OwnedDatasetDep, session: SessionDep, project: CurrentProjectDep,
                      offset: Offset = 0, limit: Limit = 100) -> JobsPublic:
    """List a dataset's jobs, oldest first."""
    rows, count = crud.list_jobs(session=session, project_id=project.id, dataset_id=dataset.id,
                                 offset=offset, limit=limit)
    return JobsPublic(data=[JobPublic.model_validate(j) for j in rows], count=count)
