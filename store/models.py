"""SQLModel tables and the public models the API returns.

Each resource follows the FastAPI template's family: ``XBase`` (shared fields) ->
``XCreate`` (input) -> ``X(XBase, table=True)`` -> ``XPublic`` and ``XsPublic(data, count)``.
The API never returns a table class. Arrays never go into rows: label arrays, posteriors
and corpora are artifacts (see :mod:`crowdqa.store.artifacts`); rows keep their sha256.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import (
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)
from pydantic_core import core_schema
from sqlalchemy import JSON, DateTime, String, UniqueConstraint
from sqlmodel import Field, SQLModel

from crowdqa.aggregation.registry import METHODS, describe_bounds
from crowdqa.quality.report_model import WorkerReport

__all__ = [
    "SCHEMA_VERSION",
    "JobStatus",
    "queued_progress",
    "JOB_MODES",
    "MethodId",
    "job_methods",
    "SchemaInfo",
    "Project",
    "ApiKey",
    "WebSession",
    "DatasetBase",
    "DatasetCreate",
    "Dataset",
    "DatasetPublic",
    "DatasetsPublic",
    "Upload",
    "UploadPublic",
    "UploadsPublic",
    "Annotator",
    "JobBase",
    "JobCreate",
    "JobRerun",
    "Job",
    "JobPublic",
    "JobsPublic",
    "Report",
    "WorkerScore",
    "WorkerScorePublic",
    "WorkerScoresPublic",
    "BlockedWorkerCreate",
    "BlockedWorker",
    "BlockedWorkerPublic",
    "BlockedWorkersPublic",
    "RoutedDocumentPublic",
    "RoutingPublic",
    "Prediction",
    "PredictionPublic",
    "PredictionsPublic",
    "new_id",
    "utcnow",
    "aware",
]

#: Bump when a table changes; :func:`crowdqa.store.db.init_db` migrates the versions it knows
#: (``crowdqa.store.db.MIGRATIONS``) and refuses any other.
SCHEMA_VERSION = 6  # 2: worker accuracy columns; 3: jobs' from_job and frozen (new batches);
#                     4: keys' admin and expires_at, dashboard sessions (issue 35); 5: job methods auto and compare;
#                     6: a job's method is text checked by the application, not a database enum (issue 45)


def new_id() -> str:
    """A fresh random id (32 hex digits)."""
    return uuid.uuid4().hex


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def aware(moment: datetime | None) -> datetime | None:
    """``moment`` as timezone-aware UTC (SQLite hands back naive datetimes that were stored as UTC)."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


class JobStatus(StrEnum):
    """Where a job is: queued -> running -> finished | failed."""

    queued = "queued"
    running = "running"
    finished = "finished"
    failed = "failed"


#: What a job can run besides one method: ``auto`` (compare the methods on the experts, then aggregate with the
#: recommended one) and ``compare`` (the comparison only, :mod:`crowdqa.jobs.compare`).
JOB_MODES: tuple[str, ...] = ("auto", "compare")
#: The longest method id the job table keeps (the registry's ids are at most 32 characters).
METHOD_ID_LENGTH = 64


def job_methods() -> tuple[str, ...]:
    """What a job can run now: every method id of :data:`crowdqa.aggregation.registry.METHODS`, then
    :data:`JOB_MODES` (a method registered after start is included)."""
    return (*METHODS, *JOB_MODES)


class MethodId(str):
    """A job's method: an id of :func:`job_methods`, checked when a job is asked for.

    The database keeps it as text (no enum type), so a method registered after the database was made needs no
    migration; OpenAPI shows the ids registered when the document is made, as the enum of the ``Method`` schema.
    """

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(cls._check, core_schema.str_schema(), ref="Method")

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
                                     ) -> dict[str, Any]:
        json_schema = handler.resolve_ref_schema(handler(schema))
        json_schema.update(title="Method", enum=list(job_methods()),
                           description="A method id of the registry, or auto or compare.")
        return json_schema

    @staticmethod
    def _check(value: str) -> str:
        if value not in job_methods():
            raise ValueError(f"method must be one of {', '.join(job_methods())}, found {value!r}")
        return value


class SchemaInfo(SQLModel, table=True):
    """One row: the schema version this database was created with."""

    __tablename__ = "crowdqa_schema"
    id: int = Field(default=1, primary_key=True)
    version: int


# ---------------------------------------------------------------- projects and keys
class Project(SQLModel, table=True):
    """A tenant: its keys see only its datasets and jobs."""

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    name: str = Field(unique=True, index=True, max_length=200)
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))


class ApiKey(SQLModel, table=True):
    """An API key, stored as the sha256 of the secret; ``prefix`` finds the row.

    An ``admin`` key may also create and revoke the project's keys; a key past its ``expires_at``
    (None: never) authenticates nothing.
    """

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    project_id: str = Field(foreign_key="project.id", index=True, ondelete="CASCADE")
    prefix: str = Field(unique=True, index=True, max_length=16)
    key_hash: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))
    admin: bool = Field(default=False)
    expires_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))


class WebSession(SQLModel, table=True):
    """A dashboard sign-in: the sha256 of its cookie's token, the key it was made with, and its end.

    Signing out deletes the row, and revoking the key deletes it with the key (cascade), so a
    cookie replayed after either finds nothing.
    """

    __tablename__ = "web_session"
    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    token_hash: str = Field(unique=True, index=True, max_length=64)
    key_id: str = Field(foreign_key="apikey.id", index=True, ondelete="CASCADE")
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))
    expires_at: datetime = Field(sa_type=DateTime(timezone=True), index=True)


# ---------------------------------------------------------------- datasets
class DatasetBase(SQLModel):
    name: str = Field(min_length=1, max_length=200, description="A label for people; no control characters.")

    @field_validator("name")
    @classmethod
    def _printable(cls, value: str) -> str:
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError("name must not contain control characters")
        return value


class DatasetCreate(DatasetBase):
    """Body of ``POST /datasets``."""

    model_config = ConfigDict(extra="forbid")


class Dataset(DatasetBase, table=True):
    """A set of uploads of the same documents; its corpus is their merge."""

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    project_id: str = Field(foreign_key="project.id", index=True, ondelete="CASCADE")
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))
    corpus_sha256: str | None = Field(default=None, max_length=64)
    summary: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    n_uploads: int = 0


class _OmitNone(SQLModel):
    """A JSON column's public shape whose optional keys are left out, not null, when absent (as stored)."""

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler):  # unannotated: the schema stays the model's
        return {k: v for k, v in handler(self).items() if v is not None}


class CoverageStats(SQLModel):
    """Annotators per document."""

    min: int
    median: float
    max: int


class Coverage(SQLModel):
    """Annotators per document, overall and per role, and the documents an expert labelled."""

    model_config = ConfigDict(extra="allow")
    annotators_per_document: CoverageStats
    crowd: CoverageStats
    expert: CoverageStats
    documents_with_expert: int = Field(description="Documents (items) both an expert and a crowd annotator labelled; "
                                                   "without any crowd annotator, every expert document.")
    expert_documents_without_crowd: int = Field(
        default=0, description="Expert documents (items) no crowd annotator labelled: their ids match no crowd "
                               "document, so they are not aggregated nor scored.")


class ParseSummary(_OmitNone):
    """What a file (or a dataset's merged corpus) holds: ``crowdqa.ingest.summary.summarize``."""

    model_config = ConfigDict(extra="allow")
    documents: int
    tokens: int
    annotations: int = Field(description="Labels (one per token an annotator labelled).")
    annotators: dict[str, int] = Field(description="Annotators by role.")
    labels: list[str] = Field(description="The class names.")
    label_counts: dict[str, int] = Field(description="Labels per class.")
    coverage: Coverage
    skipped: int | None = Field(default=None, description="Rows skipped (on_error=skip).")
    problems: list[str] | None = Field(default=None, description="The first 20 skipped rows, with their lines.")
    dropped: dict[str, int] | None = Field(default=None, description="Rows left out by rule, by reason.")
    notes: list[str] | None = Field(default=None, description="What the reader assumed or left out.")


def queued_progress() -> dict[str, Any]:
    """The progress of a job waiting for a worker (new, re-run, or put back in the queue)."""
    return {"stage": "queued"}


class JobProgress(_OmitNone):
    """What a job is doing: its stage and, while fitting, the EM iteration and log-likelihood."""

    model_config = ConfigDict(extra="allow")
    stage: str | None = Field(default=None, description="queued, starting, reading, fitting, cross-fitting, scoring, "
                                                        "writing, done.")
    stage_seconds: float | None = Field(default=None, description="Seconds in the current stage so far.")
    stages: dict[str, float] | None = Field(default=None, description="Seconds of every finished stage.")
    iteration: int | None = Field(default=None, description="EM iteration (or the last one, when done).")
    log_likelihood: float | None = Field(default=None, description="Objective at that iteration.")
    converged: bool | None = Field(default=None, description="When done: whether the fit converged (absent: a "
                                                             "fixed schedule).")
    convergence_note: str | None = Field(default=None, description="When done: why the fit stopped before "
                                                                   "converging (it reached max_iter).")


class _UtcTimes(SQLModel):
    """Public models give every timestamp as timezone-aware UTC (SQLite returns naive ones)."""

    @field_validator("created_at", "started_at", "finished_at", check_fields=False)
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return aware(value)


class DatasetPublic(_UtcTimes, DatasetBase):
    id: str
    created_at: datetime
    n_uploads: int
    corpus_sha256: str | None
    summary: ParseSummary | None = Field(description="Parse summary of the merged corpus.")


class DatasetsPublic(SQLModel):
    data: list[DatasetPublic]
    count: int


class Upload(SQLModel, table=True):
    """One uploaded file: raw bytes kept on disk (content-addressed), its parse and summary."""

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    dataset_id: str = Field(foreign_key="dataset.id", index=True, ondelete="CASCADE")
    filename: str = Field(max_length=300)
    format: str = Field(max_length=32)
    role: str = Field(max_length=16)
    options: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    size: int
    sha256: str = Field(max_length=64)
    raw_path: str = Field(max_length=300)
    corpus_sha256: str = Field(max_length=64)
    summary: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    problems: list[str] = Field(default_factory=list, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))


class UploadAttempt(SQLModel, table=True):
    """One upload request of a project: what ``CROWDQA_MAX_UPLOADS_PER_HOUR`` counts (refused and deleted uploads
    too); rows older than an hour are removed when the next one is counted."""

    id: int | None = Field(default=None, primary_key=True)
    project_id: str = Field(foreign_key="project.id", index=True, ondelete="CASCADE")
    at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True), index=True)


class UploadPublic(_UtcTimes):
    id: str
    dataset_id: str
    filename: str
    format: str
    role: str
    options: dict[str, Any]
    size: int
    sha256: str
    summary: ParseSummary = Field(description="Parse summary of this file.")
    problems: list[str] = Field(description="Rows skipped under on_error=skip.")
    created_at: datetime


class UploadsPublic(SQLModel):
    data: list[UploadPublic]
    count: int


class Annotator(SQLModel, table=True):
    """An annotator of a dataset's merged corpus."""

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: str = Field(foreign_key="dataset.id", index=True, ondelete="CASCADE")
    external_id: str = Field(description="Unique within a dataset (the corpus vocabulary guarantees it).")
    role: str = Field(max_length=16)
    documents: int
    tokens: int


# ---------------------------------------------------------------- jobs
#: What ``params`` of a job may hold (OpenAPI shows it): the method's own table, with upper bounds on the work.
PARAMS_DESCRIPTION = (f"The method's parameters (the README's Aggregators section lists them), checked when the job "
                      f"is asked for (422 naming params.<name>); upper bounds: {describe_bounds()}.")


class JobBase(SQLModel):
    method: MethodId = Field(sa_type=String(METHOD_ID_LENGTH))
    params: dict[str, Any] = Field(default_factory=dict, sa_type=JSON, description=PARAMS_DESCRIPTION)
    use_experts: bool = Field(
        default=False, description="Whether the fit clamps the experts' labels (the report's scores against them then "
                                   "come from 4-fold cross-fitting). An auto job asked without use_experts keeps "
                                   "{\"expert_variants\": true} in params and false here until it finishes; "
                                   "then what auto fitted.")
    reference: str = Field(default="union", max_length=300,
                           description="Expert reference: union, majority or an expert's annotator id.")
    from_job: str | None = Field(default=None, max_length=64,
                                 description="A new batch: aggregate with this finished job's fitted model (same "
                                             "method), annotators seen before keeping their history.")
    frozen: bool = Field(default=False, description="With from_job: predict with the earlier model's parameters "
                                                    "(no EM); otherwise EM starts from them (warm start).")


class JobCreate(JobBase):
    """Body of ``POST /datasets/{id}/jobs``."""

    model_config = ConfigDict(extra="forbid")
    use_experts: bool | None = Field(
        default=None, description="Clamp the experts' labels in the fit (the report's scores against them then come "
                                  "from 4-fold cross-fitting). Not given: false, except for method auto, which then "
                                  "compares each method both on the crowd alone and with the experts clamped and "
                                  "fits the one its rule expects to score best on the items the experts did not "
                                  "label (the job's use_experts says which once it finishes); false: auto compares "
                                  "crowd-only fits; true: clamped fits only.")
    methods: list[str] | None = Field(
        default=None, description="method compare: the methods to compare (default: every method that applies); "
                                  "params then holds each method's parameters by method id. Kept in the job's "
                                  "params as {\"methods\": [...], \"params_for\": {...}}.")
    expert_variants: bool = Field(
        default=False, description="method compare: each method both on the crowd alone and with the experts "
                                   "clamped (METHOD+experts, scored by cross-fitting), as crowdqa compare "
                                   "--expert-variants; not with use_experts (which clamps them in every fit). Kept "
                                   "in the job's params as {\"expert_variants\": true}.")


class JobRerun(SQLModel):
    """Body of ``POST /jobs/{id}/rerun`` (optional): the settings to change; the rest stay the job's."""

    model_config = ConfigDict(extra="forbid")
    method: MethodId | None = None
    params: dict[str, Any] | None = Field(default=None, description=PARAMS_DESCRIPTION)
    use_experts: bool | None = Field(default=None, description=(
        "Not given: the job's own request (an auto job that left the experts to auto decides again); true or "
        "false: clamp them or not (method auto: that kind of candidate only)."))
    reference: str | None = Field(default=None, max_length=300)


class Job(JobBase, table=True):
    """One aggregation run on a snapshot (``corpus_sha256``) of a dataset's corpus."""

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    project_id: str = Field(foreign_key="project.id", index=True, ondelete="CASCADE")
    dataset_id: str = Field(foreign_key="dataset.id", index=True, ondelete="CASCADE")
    corpus_sha256: str = Field(max_length=64)
    status: JobStatus = Field(default=JobStatus.queued, index=True)
    progress: dict[str, Any] = Field(default_factory=queued_progress, sa_type=JSON)
    timings: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    error: str | None = None
    attempts: int = 0
    worker_name: str | None = Field(default=None, max_length=200)
    artifacts: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))
    enqueued_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    started_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    finished_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    heartbeat_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))


class JobPublic(_UtcTimes, JobBase):
    method: str = Field(description="The method the job ran, as stored (also an id no longer registered).")
    id: str
    dataset_id: str
    status: JobStatus
    progress: JobProgress = Field(description="stage, iteration, log_likelihood while running.")
    timings: dict[str, Any] = Field(description="Seconds per stage (load, fit, report, save).")
    error: str | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class JobsPublic(SQLModel):
    data: list[JobPublic]
    count: int


class Report(SQLModel, table=True):
    """The quality report of a finished job: a :class:`~crowdqa.quality.report_model.QualityReport` as JSON."""

    job_id: str = Field(foreign_key="job.id", primary_key=True, max_length=32, ondelete="CASCADE")
    body: dict[str, Any] = Field(sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))


class WorkerScore(SQLModel, table=True):
    """One annotator's scores in one job's report, as a row so lists can sort and page."""

    id: int | None = Field(default=None, primary_key=True)
    job_id: str = Field(foreign_key="job.id", index=True, max_length=32, ondelete="CASCADE")
    annotator: str
    role: str = Field(max_length=16)
    documents: int
    tokens: int
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    span_f1: float | None = None
    agreement_precision: float | None = None
    agreement_recall: float | None = None
    agreement_f1: float | None = None
    accuracy: float | None = None
    agreement_accuracy: float | None = None
    detail: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)


class WorkerScorePublic(SQLModel):
    annotator: str
    role: str
    documents: int
    tokens: int
    precision: float | None = Field(description="Token precision against the expert reference.")
    recall: float | None = Field(description="Token recall against the expert reference.")
    f1: float | None = Field(description="Token F1 against the expert reference.")
    span_f1: float | None = Field(description="Span F1 by location (same start and length, any type) against the "
                                              "expert reference, on the documents of f1 (the report's "
                                              "span_vs_expert); null for experts and categorical answers.")
    agreement_precision: float | None = Field(description="Token precision against the aggregate.")
    agreement_recall: float | None = Field(description="Token recall against the aggregate.")
    agreement_f1: float | None = Field(description="Token F1 against the aggregate.")
    accuracy: float | None = Field(description="Share of tokens (categorical: items) labelled as the experts.")
    agreement_accuracy: float | None = Field(description="Share of tokens (items) labelled as the aggregate.")
    detail: WorkerReport = Field(description="The worker's full entry of the report.")


class WorkerScoresPublic(SQLModel):
    data: list[WorkerScorePublic]
    count: int


# ---------------------------------------------------------------- pre-annotation
class Prediction(SQLModel, table=True):
    """A finished job's model labelling an upload of documents nobody annotated (:mod:`crowdqa.jobs.preannotate`),
    run on the job queue: the documents as read (``documents_sha256``, a corpus file without labels) and, once
    finished, their labels (``artifacts["labels"]``)."""

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    project_id: str = Field(foreign_key="project.id", index=True, ondelete="CASCADE")
    job_id: str = Field(foreign_key="job.id", index=True, max_length=32, ondelete="CASCADE")
    method: str = Field(max_length=METHOD_ID_LENGTH)
    filename: str = Field(max_length=300)
    format: str = Field(max_length=32)
    options: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    size: int
    documents_sha256: str = Field(max_length=64)
    summary: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    status: JobStatus = Field(default=JobStatus.queued, index=True)
    progress: dict[str, Any] = Field(default_factory=queued_progress, sa_type=JSON)
    error: str | None = None
    worker_name: str | None = Field(default=None, max_length=200)
    artifacts: dict[str, Any] = Field(default_factory=dict, sa_type=JSON)
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))
    started_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))
    finished_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))


class PredictionPublic(_UtcTimes):
    id: str
    job_id: str = Field(description="The finished job whose fitted model labels the documents.")
    method: str = Field(description="The method of that model.")
    filename: str
    format: str = Field(description="The format the documents were read as.")
    documents: int = Field(description="Documents read from the file.")
    tokens: int = Field(description="Tokens of those documents.")
    status: JobStatus
    progress: JobProgress = Field(description="stage: queued, starting, reading, labelling, writing, done.")
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, row: Prediction) -> PredictionPublic:
        """The public view of a row (its documents and tokens from the row's summary)."""
        return cls.model_validate(row, update={"documents": int(row.summary.get("documents", 0)),
                                               "tokens": int(row.summary.get("tokens", 0))})


class PredictionsPublic(SQLModel):
    data: list[PredictionPublic]
    count: int


# ---------------------------------------------------------------- blocked workers
class BlockedWorkerCreate(SQLModel):
    """Body of ``POST /blocked-workers``."""

    model_config = ConfigDict(extra="forbid")
    annotator: str = Field(min_length=1, max_length=300,
                           description="The annotator id as reports name it, e.g. mturk:A1B2C3D4E5F6G7.")
    reason: str = Field(default="", max_length=1000, description="Why, for the project's records.")

    @field_validator("annotator", "reason")
    @classmethod
    def _printable(cls, value: str) -> str:
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError("must not contain control characters")
        return value


class BlockedWorker(SQLModel, table=True):
    """An annotator the project no longer trusts: left out of the fit of its later jobs, still scored."""

    __tablename__ = "blocked_worker"
    __table_args__ = (UniqueConstraint("project_id", "annotator"),)
    id: int | None = Field(default=None, primary_key=True)
    project_id: str = Field(foreign_key="project.id", index=True, ondelete="CASCADE")
    annotator: str = Field(max_length=300)
    reason: str = Field(default="", max_length=1000)
    created_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))


class BlockedWorkerPublic(_UtcTimes):
    annotator: str
    reason: str
    created_at: datetime


class BlockedWorkersPublic(SQLModel):
    data: list[BlockedWorkerPublic]
    count: int


# ---------------------------------------------------------------- routing to the experts
class RoutedDocumentPublic(SQLModel):
    rank: int = Field(description="1 = label this one first.")
    doc_id: str
    index: int = Field(description="The document's index in the job's corpus (the dashboard's document page).")
    text: str
    link: str | None = Field(description="The link template with the document id, when one was given.")
    tokens: int
    score: float = Field(description="Expected narrowing of the intervals (plus corrections) when it was ranked.")
    reason: str = Field(description="What the document measures most.")
    parts: dict[str, float] = Field(description="The score split into aggregate_precision, aggregate_recall, "
                                                "workers and corrections.")
    expected_errors: float = Field(description="The aggregate's expected token errors on the document.")


class RoutingPublic(SQLModel):
    budget: int
    half_width: float = Field(description="SLiCE's target half-width of every interval.")
    worker_weight: float
    correction_weight: float
    candidates: int = Field(description="Documents without expert labels that could be routed.")
    widths: dict[str, float] = Field(description="The aggregate's interval widths now (1 when unmeasured).")
    count: int
    data: list[RoutedDocumentPublic]


class LabelStudioLink(SQLModel, table=True):
    """A dataset pulled from a Label Studio project: where from, how far (the last task's ``updated_at``), the
    tasks pulled so far (the next pull's base), the uploads they made, and the token, sealed
    (:mod:`crowdqa.store.sealed`)."""

    __tablename__ = "label_studio_link"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=32)
    dataset_id: str = Field(foreign_key="dataset.id", index=True, unique=True, ondelete="CASCADE")
    url: str = Field(max_length=500)
    ls_project: int
    token_sealed: str | None = Field(default=None, max_length=4000)
    experts: list[str] = Field(default_factory=list, sa_type=JSON)
    ground_truth: bool = False
    cursor: str | None = Field(default=None, max_length=64)
    tasks: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    upload_ids: list[str] = Field(default_factory=list, sa_type=JSON)
    pulled_at: datetime = Field(default_factory=utcnow, sa_type=DateTime(timezone=True))
