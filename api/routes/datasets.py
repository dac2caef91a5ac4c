"""Datasets, their uploads, and starting jobs on them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, File, Form, Path, Query, Request, Response, UploadFile, status

from crowdqa.api.deps import CurrentProjectDep, OwnedDatasetDep, QueueDep, SessionDep, SettingsDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.jobs import service
from crowdqa.store import crud
from crowdqa.store.models import (
    DatasetCreate,
    DatasetPublic,
    DatasetsPublic,
    JobCreate,
    JobPublic,
    JobsPublic,
    JobStatus,
    Role,
    UploadPublic,
    UploadsPublic,
)

router = APIRouter(prefix="/datasets", tags=["datasets"])

#: The multipart fields an upload takes: the file, its format and role, the docs zip and the format options.
UPLOAD_FIELDS = ("file", "format", "role", "docs", *service.UPLOAD_OPTIONS)


async def refuse_unknown_fields(request: Request) -> None:
    """422 for a form field the upload does not take (a typo such as ``text_colum`` would be ignored)."""
    import difflib

    form = await request.form()  # parsed once: FastAPI has read it for the route's own fields
    unknown = sorted(set(form.keys()) - set(UPLOAD_FIELDS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], UPLOAD_FIELDS, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ProblemError(422, f"unknown form field {unknown[0]!r}{hint} (an upload takes {', '.join(UPLOAD_FIELDS)})")

Offset = Annotated[int, Query(ge=0, le=10**9, description="Rows to skip.")]
Limit = Annotated[int, Query(ge=1, le=1000, description="Rows to return (at most 1000).")]


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
def delete_dataset(dataset: OwnedDatasetDep, session: SessionDep, settings: SettingsDep,
                   project: CurrentProjectDep) -> Response:
    """Delete a dataset with its uploads, jobs, reports and stored files (refused while one of its jobs runs)."""
    _, running = crud.list_jobs(session=session, project_id=project.id, dataset_id=dataset.id,
                                status=JobStatus.running, limit=1)
    if running:
        raise ProblemError(409, f"dataset {dataset.id} has a running job; wait for it or delete the job first")
    service.delete_dataset(session=session, settings=settings, dataset=dataset)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{dataset_id}/uploads", status_code=status.HTTP_201_CREATED,
             responses=problem_responses(404, 409, 413), dependencies=[Depends(refuse_unknown_fields)])
def create_upload(
    dataset: OwnedDatasetDep,
    session: SessionDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="The label dump.")],
    format: Annotated[str, Form(description="Upload format, one of ingest.FORMATS (e.g. spans-jsonl).")],
    role: Annotated[Role, Form(description="Whether the file's annotators are crowd workers or experts.")] = Role.crowd,
    category: Annotated[str | None, Form(description="Element / label to keep (PICO, EBM-NLP, spans).")] = None,
    text_column: Annotated[str | None, Form(description="Column with the document text.")] = None,
    answer_column: Annotated[str | None, Form(description="MTurk answer column; categorical: label column.")] = None,
    id_column: Annotated[str | None, Form(description="Column with the document (categorical: item) id.")] = None,
    annotator_column: Annotated[str | None, Form(description="Categorical: annotator column (name or number).")] = None,
    gold_column: Annotated[str | None, Form(description="Categorical: gold label column (name or number).")] = None,
    keep_rejected: Annotated[bool | None, Form(description="MTurk: keep rejected assignments.")] = None,
    on_error: Annotated[str | None, Form(pattern="^(fail|skip)$", description="fail or skip bad rows.")] = None,
    scheme: Annotated[str | None, Form(pattern="^(auto|io|bio)$", description="Label scheme.")] = None,
    docs: Annotated[UploadFile | None, File(
        description="A zip of <doc_id>.txt texts, for span formats without texts (pico-jsonl, brat, spans).")] = None,
) -> UploadPublic:
    """Upload one file (crowd or expert): it is stored, parsed and merged into the dataset's corpus."""
    from crowdqa.ingest import FORMATS

    if format not in FORMATS:
        raise ProblemError(422, f"format must be one of {list(FORMATS)}, found {format!r}")
    given = {"category": category, "text_column": text_column, "answer_column": answer_column,
             "id_column": id_column, "annotator_column": annotator_column, "gold_column": gold_column,
             "keep_rejected": keep_rejected, "on_error": on_error, "scheme": scheme}
    options = {k: v for k, v in given.items() if v is not None}
    upload = service.add_upload(session=session, settings=settings, dataset=dataset, stream=file.file,
                                filename=file.filename or "upload", format=format, role=role.value, options=options,
                                docs_stream=docs.file if docs is not None else None)
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
    service.delete_upload(session=session, settings=settings, dataset=dataset, upload=upload)
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
    responses={**problem_responses(404, 409, 503),
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
