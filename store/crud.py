"""Create, read, update and delete rows: keyword-only functions, session first.

Every read of a dataset or job takes the caller's ``project_id``, so a key of one project
can never reach another project's rows (the API answers 404 for them).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Text, cast, func, insert, nulls_last, text
from sqlmodel import Session, col, delete, select, update

from crowdqa.quality.report_model import ACCURACY_KINDS, LabelScore, QualityReport
from crowdqa.store.artifacts import artifact_path
from crowdqa.store.models import (
    Annotator,
    ApiKey,
    BlockedWorker,
    BlockedWorkerCreate,
    Dataset,
    DatasetCreate,
    Job,
    JobCreate,
    JobStatus,
    LabelStudioLink,
    Prediction,
    Project,
    Report,
    Upload,
    UploadAttempt,
    WebSession,
    WorkerScore,
    aware,
    utcnow,
)

__all__ = [
    "ACCURACY_KINDS",
    "find_dataset",
    "get_label_studio_link",
    "replace_uploads",
    "database_available",
    "count_active_jobs",
    "stored_upload_bytes",
    "record_upload_attempt",
    "add_upload_attempt",
    "job_projects",
    "referenced_artifacts",
    "create_project",
    "get_project",
    "get_or_create_project",
    "find_project",
    "create_api_key",
    "get_api_key",
    "any_api_key",
    "find_api_key",
    "find_api_key_and_project",
    "key_expired",
    "authenticate",
    "list_api_keys",
    "revoke_api_key",
    "create_web_session",
    "get_web_session",
    "delete_web_session",
    "create_dataset",
    "get_dataset",
    "list_datasets",
    "lock_dataset",
    "delete_dataset",
    "list_uploads",
    "find_upload",
    "dataset_uploads",
    "upload_corpora",
    "file_has_upload",
    "remove_upload",
    "annotator_ids",
    "set_dataset_corpus",
    "create_job",
    "get_job",
    "list_jobs",
    "delete_job",
    "has_running_job",
    "report_kind",
    "claim_job",
    "update_job",
    "load_job",
    "finish_job",
    "mark_stale_jobs",
    "gone_silent",
    "silent_since",
    "abandoned_reason",
    "queued_job_ids",
    "running_jobs",
    "save_report",
    "stored_report",
    "StoredReport",
    "get_report",
    "get_report_json",
    "clear_report",
    "list_worker_scores",
    "WORKER_SORT_KEYS",
    "block_worker",
    "unblock_worker",
    "list_blocked_workers",
    "blocked_annotators",
    "create_prediction",
    "get_prediction",
    "list_predictions",
    "delete_prediction",
    "claim_prediction",
    "update_prediction",
    "count_active_predictions",
    "queued_prediction_ids",
    "fail_running_predictions",
]

KEY_PREFIX = "cqa"


def text_safe(value: str) -> str:
    """``value`` with NUL characters replaced (PostgreSQL text cannot hold them)."""
    return value.replace("\x00", "\ufffd")


def _hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def database_available(*, session: Session) -> bool:
    """True if the database answers a trivial query."""
    try:
        session.exec(text("SELECT 1"))
    except Exception:  # noqa: BLE001 - any database failure is "down" here, and said so
        return False
    return True


# ---------------------------------------------------------------- projects and keys
def create_project(*, session: Session, name: str) -> Project:
    """Create a project named ``name``."""
    project = Project(name=name)
    session.add(project)
    session.commit()
    session.refresh(project)
    return project


def get_project(*, session: Session, project_id: str) -> Project | None:
    """The project with this id, or None."""
    return session.get(Project, project_id)


def find_project(*, session: Session, name: str) -> Project | None:
    """The project named ``name``, or None."""
    return session.exec(select(Project).where(Project.name == name)).first()


def get_or_create_project(*, session: Session, name: str) -> Project:
    """The project named ``name``, created if absent."""
    return find_project(session=session, name=name) or create_project(session=session, name=name)


def create_api_key(*, session: Session, project_id: str, admin: bool = False,
                   expires_at: datetime | None = None) -> str:
    """Create a key for the project and return its secret (shown once; only its sha256 is kept)."""
    prefix = secrets.token_hex(6)
    key = f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    session.add(ApiKey(project_id=project_id, prefix=prefix, key_hash=_hash_key(key), admin=admin,
                       expires_at=expires_at))
    session.commit()
    return key


def get_api_key(*, session: Session, prefix: str) -> ApiKey | None:
    """The key row with this prefix, or None."""
    return session.exec(select(ApiKey).where(ApiKey.prefix == prefix)).first()


def any_api_key(*, session: Session, project_id: str | None = None) -> bool:
    """True if the database (or the project) holds at least one key."""
    stmt = select(ApiKey.id)
    if project_id is not None:
        stmt = stmt.where(ApiKey.project_id == project_id)
    return session.exec(stmt.limit(1)).first() is not None


def _prefix_of_key(key: str) -> str | None:
    parts = key.split("_", 2)
    return parts[1] if len(parts) == 3 and parts[0] == KEY_PREFIX else None


def _matches(row: ApiKey | None, key: str) -> bool:
    return row is not None and hmac.compare_digest(row.key_hash, _hash_key(key))


def find_api_key(*, session: Session, key: str) -> ApiKey | None:
    """The row of the whole key ``key`` (expired or not), or None; the hash comparison takes constant time."""
    prefix = _prefix_of_key(key)
    row = None if prefix is None else get_api_key(session=session, prefix=prefix)
    return row if _matches(row, key) else None


def find_api_key_and_project(*, session: Session, key: str) -> tuple[ApiKey, Project] | None:
    """The row of the whole key ``key`` (expired or not) and its project, read in one query (every API request
    asks, so one round trip to the database instead of two), or None; the hash comparison takes constant time."""
    prefix = _prefix_of_key(key)
    if prefix is None:
        return None
    found = session.exec(select(ApiKey, Project).join(Project, Project.id == ApiKey.project_id)
                         .where(ApiKey.prefix == prefix)).first()
    return found if found is not None and _matches(found[0], key) else None


def key_expired(key: ApiKey, *, now: datetime | None = None) -> bool:
    """True once ``key`` is past its expiry (a key without one never expires)."""
    return key.expires_at is not None and aware(key.expires_at) <= (now or utcnow())


def authenticate(*, session: Session, key: str, now: datetime | None = None) -> Project | None:
    """The project of ``key``, or None for an unknown or expired key."""
    row = find_api_key(session=session, key=key)
    if row is None or key_expired(row, now=now):
        return None
    return session.get(Project, row.project_id)


def list_api_keys(*, session: Session, project_name: str | None = None,
                  project_id: str | None = None) -> list[tuple[ApiKey, Project]]:
    """The keys (with their project), oldest first; optionally of one project (by name or id)."""
    stmt = select(ApiKey, Project).where(ApiKey.project_id == Project.id)
    if project_name is not None:
        stmt = stmt.where(Project.name == project_name)
    if project_id is not None:
        stmt = stmt.where(Project.id == project_id)
    return [(k, p) for k, p in session.exec(stmt.order_by(ApiKey.created_at, ApiKey.id)).all()]


def revoke_api_key(*, session: Session, prefix: str, project_id: str | None = None) -> bool:
    """Delete the key with this prefix (optionally only within a project); True if one was deleted."""
    stmt = delete(ApiKey).where(ApiKey.prefix == prefix)
    if project_id is not None:
        stmt = stmt.where(ApiKey.project_id == project_id)
    result = session.exec(stmt)
    session.commit()
    return bool(result.rowcount)


def create_web_session(*, session: Session, token_hash: str, key_id: str, expires_at: datetime) -> WebSession:
    """Record a dashboard sign-in (and forget the sign-ins that have ended)."""
    session.exec(delete(WebSession).where(WebSession.expires_at < utcnow()))
    row = WebSession(token_hash=token_hash, key_id=key_id, expires_at=expires_at)
    session.add(row)
    session.commit()
    session.refresh(row)
    return row


def get_web_session(*, session: Session, token_hash: str) -> tuple[WebSession, ApiKey] | None:
    """The sign-in with this token hash and its key (still stored), or None."""
    stmt = select(WebSession, ApiKey).where(WebSession.token_hash == token_hash, WebSession.key_id == ApiKey.id)
    return session.exec(stmt).first()


def delete_web_session(*, session: Session, token_hash: str) -> bool:
    """End a sign-in; True if it existed."""
    result = session.exec(delete(WebSession).where(WebSession.token_hash == token_hash))
    session.commit()
    return bool(result.rowcount)


# ---------------------------------------------------------------- datasets and uploads
def create_dataset(*, session: Session, project_id: str, dataset_in: DatasetCreate) -> Dataset:
    """Create an empty dataset in the project."""
    dataset = Dataset.model_validate(dataset_in, update={"project_id": project_id})
    session.add(dataset)
    session.commit()
    session.refresh(dataset)
    return dataset


def get_dataset(*, session: Session, project_id: str, dataset_id: str) -> Dataset | None:
    """The project's dataset, or None (also for another project's dataset)."""
    return session.exec(select(Dataset).where(Dataset.id == dataset_id, Dataset.project_id == project_id)).first()


def _order(newest_first: bool, *columns: Any) -> tuple:
    """``columns`` ascending, or all descending for ``newest_first``."""
    return tuple(col(c).desc() for c in columns) if newest_first else columns


def _page(session: Session, stmt, *, offset: int, limit: int, order) -> tuple[list, int]:
    count = session.exec(select(func.count()).select_from(stmt.subquery())).one()
    rows = session.exec(stmt.order_by(*order).offset(offset).limit(limit)).all()
    return list(rows), int(count)


def lock_dataset(*, session: Session, dataset: Dataset) -> None:
    """Take the dataset's write lock until the session commits (a no-op write: a row lock on PostgreSQL,
    the database write lock on SQLite), so concurrent uploads merge one after the other; then re-read the
    row, as the last writer committed it."""
    session.exec(update(Dataset).where(Dataset.id == dataset.id).values(n_uploads=Dataset.n_uploads)
                 .execution_options(synchronize_session=False))
    session.refresh(dataset)


def list_datasets(*, session: Session, project_id: str, offset: int = 0, limit: int = 100) -> tuple[list[Dataset], int]:
    """One page of the project's datasets, oldest first, and the total count."""
    stmt = select(Dataset).where(Dataset.project_id == project_id)
    return _page(session, stmt, offset=offset, limit=limit, order=(Dataset.created_at, Dataset.id))


def delete_dataset(*, session: Session, dataset: Dataset) -> None:
    """Delete a dataset with its uploads, annotators, jobs and reports.

    Its files are shared by hash with any other row holding the same bytes; the caller
    removes the ones nothing references any more (``crowdqa.jobs.uploads.collect_garbage``).
    """
    job_ids = select(Job.id).where(Job.dataset_id == dataset.id)
    session.exec(delete(WorkerScore).where(col(WorkerScore.job_id).in_(job_ids)))
    session.exec(delete(Report).where(col(Report.job_id).in_(job_ids)))
    session.exec(delete(Prediction).where(col(Prediction.job_id).in_(job_ids)))
    session.exec(delete(Job).where(Job.dataset_id == dataset.id))
    session.exec(delete(Upload).where(Upload.dataset_id == dataset.id))
    session.exec(delete(Annotator).where(Annotator.dataset_id == dataset.id))
    session.exec(delete(LabelStudioLink).where(LabelStudioLink.dataset_id == dataset.id))
    session.delete(dataset)
    session.commit()


def referenced_artifacts(*, session: Session) -> set[str]:
    """Paths (relative to the data directory) of every file some row still needs.

    Raw uploads and their docs zips, each upload's own corpus, datasets' merged corpora,
    the corpus snapshot of every job and every job's result arrays. Anything else in the
    artifact folders belongs to deleted rows (or to an upload still in flight).
    """
    def corpus(sha: str | None) -> str | None:
        return artifact_path("corpora", sha, ".npz") if sha else None

    keep: set[str | None] = set()
    for raw_path, own, options in session.exec(select(Upload.raw_path, Upload.corpus_sha256, Upload.options)):
        docs = (options or {}).get("docs_sha256")
        keep.update((raw_path, corpus(own), artifact_path("docs", docs, ".zip") if isinstance(docs, str) else None))
    def snapshot(sha: str | None) -> str | None:
        return artifact_path("snapshots", sha, ".json") if sha else None

    for sha in session.exec(select(Dataset.corpus_sha256)):
        keep.update((corpus(sha), snapshot(sha)))
    for sha, artifacts in session.exec(select(Job.corpus_sha256, Job.artifacts)):
        keep.update((corpus(sha), snapshot(sha)))
        keep.update(a.get("path") for a in (artifacts or {}).values() if isinstance(a, dict))
    for sha, artifacts in session.exec(select(Prediction.documents_sha256, Prediction.artifacts)):
        keep.add(corpus(sha))
        keep.update(a.get("path") for a in (artifacts or {}).values() if isinstance(a, dict))
    keep.discard(None)
    return keep  # type: ignore[return-value]


def set_dataset_corpus(*, session: Session, dataset: Dataset, corpus_sha256: str | None,
                       summary: dict[str, Any] | None, annotators: list[tuple[str, str, int, int]],
                       n_uploads: int) -> None:
    """Set the dataset's corpus snapshot, summary, upload count and annotator rows (not committed)."""
    dataset.corpus_sha256 = corpus_sha256
    dataset.summary = summary
    dataset.n_uploads = n_uploads
    session.add(dataset)
    session.exec(delete(Annotator).where(Annotator.dataset_id == dataset.id))
    if annotators:  # one executemany, not an ORM object per annotator (thousands of workers)
        session.exec(insert(Annotator), params=[
            {"dataset_id": dataset.id, "external_id": text_safe(wid), "role": role, "documents": documents,
             "tokens": tokens} for wid, role, documents, tokens in annotators])


def find_upload(*, session: Session, dataset_id: str, sha256: str | None = None,
                upload_id: str | None = None) -> Upload | None:
    """The dataset's upload with these bytes (or this id), or None."""
    stmt = select(Upload).where(Upload.dataset_id == dataset_id)
    if sha256 is not None:
        stmt = stmt.where(Upload.sha256 == sha256)
    if upload_id is not None:
        stmt = stmt.where(Upload.id == upload_id)
    return session.exec(stmt.order_by(Upload.created_at)).first()


def file_has_upload(*, session: Session, sha256: str) -> bool:
    """True if some upload row (of any dataset) names the raw file with these bytes."""
    return session.exec(select(Upload.id).where(Upload.sha256 == sha256).limit(1)).first() is not None


def corpus_has_upload(*, session: Session, corpus_sha256: str) -> bool:
    """True if some upload row (of any dataset) names the parsed corpus with this sha256."""
    return session.exec(select(Upload.id).where(Upload.corpus_sha256 == corpus_sha256).limit(1)).first() is not None


def remove_upload(*, session: Session, dataset: Dataset, upload: Upload, corpus_sha256: str | None,
                  summary: dict[str, Any] | None, annotators: list[tuple[str, str, int, int]]) -> None:
    """Delete an upload row and set the dataset's new corpus (the merge of its other uploads) in one transaction."""
    session.delete(upload)
    set_dataset_corpus(session=session, dataset=dataset, corpus_sha256=corpus_sha256, summary=summary,
                       annotators=annotators, n_uploads=dataset.n_uploads - 1)
    session.commit()


def annotator_ids(*, session: Session, dataset_id: str, role: str | None = None) -> list[str]:
    """The external ids of a dataset's annotators (optionally of one role)."""
    stmt = select(Annotator.external_id).where(Annotator.dataset_id == dataset_id)
    if role is not None:
        stmt = stmt.where(Annotator.role == role)
    return list(session.exec(stmt).all())


def upload_corpora(*, session: Session, dataset_id: str, exclude: Collection[str] = ()) -> list[str]:
    """The corpus sha256 of each of the dataset's uploads (but the uploads ``exclude``), in upload order (the
    order they merge in)."""
    stmt = select(Upload.corpus_sha256).where(Upload.dataset_id == dataset_id)
    if exclude:
        stmt = stmt.where(col(Upload.id).not_in(list(exclude)))
    return list(session.exec(stmt.order_by(Upload.created_at, Upload.id)).all())


def list_uploads(*, session: Session, dataset_id: str, offset: int = 0, limit: int = 100,
                 newest_first: bool = False) -> tuple[list[Upload], int]:
    """One page of a dataset's uploads, oldest first (or newest first), and the total count."""
    stmt = select(Upload).where(Upload.dataset_id == dataset_id)
    return _page(session, stmt, offset=offset, limit=limit, order=_order(newest_first, Upload.created_at, Upload.id))


def dataset_uploads(*, session: Session, dataset_id: str, format: str | None = None,  # noqa: A002
                    role: str | None = None, upload_ids: Collection[str] | None = None) -> list[Upload]:
    """Every upload of a dataset with the given format, role and ids (each optional; ``upload_ids`` in one
    ``id IN (...)``, an id of another dataset's upload or of none finding nothing), oldest first (the order
    uploads merge in), filtered in SQL and never cut at a page size."""
    if upload_ids is not None and not upload_ids:
        return []
    stmt = select(Upload).where(Upload.dataset_id == dataset_id)
    for column, value in ((Upload.format, format), (Upload.role, role)):
        if value is not None:
            stmt = stmt.where(column == value)
    if upload_ids is not None:
        stmt = stmt.where(col(Upload.id).in_(list(upload_ids)))
    return list(session.exec(stmt.order_by(Upload.created_at, Upload.id)).all())


# ---------------------------------------------------------------- jobs
def create_job(*, session: Session, dataset: Dataset, job_in: JobCreate) -> Job:
    """Create a queued job on the dataset's current corpus (a snapshot: later uploads do not change it)."""
    job = Job.model_validate(
        job_in,
        update={"project_id": dataset.project_id, "dataset_id": dataset.id, "corpus_sha256": dataset.corpus_sha256,
                "use_experts": bool(job_in.use_experts)},  # not given: false (jobs.service keeps auto's request)
    )
    session.add(job)
    session.commit()
    session.refresh(job)
    return job


def get_job(*, session: Session, project_id: str, job_id: str) -> Job | None:
    """The project's job, or None (also for another project's job)."""
    return session.exec(select(Job).where(Job.id == job_id, Job.project_id == project_id)).first()


def list_jobs(*, session: Session, project_id: str, dataset_id: str | None = None, status: JobStatus | None = None,
              offset: int = 0, limit: int = 100, newest_first: bool = False) -> tuple[list[Job], int]:
    """One page of the project's jobs (optionally of one dataset or status), oldest first (or newest first), and
    the count."""
    stmt = select(Job).where(Job.project_id == project_id)
    if dataset_id is not None:
        stmt = stmt.where(Job.dataset_id == dataset_id)
    if status is not None:
        stmt = stmt.where(Job.status == status)
    return _page(session, stmt, offset=offset, limit=limit, order=_order(newest_first, Job.created_at, Job.id))


def has_running_job(*, session: Session, dataset_id: str) -> bool:
    """True if a job of the dataset is running."""
    stmt = select(Job.id).where(Job.dataset_id == dataset_id, Job.status == JobStatus.running).limit(1)
    return session.exec(stmt).first() is not None


def report_kind(*, session: Session, job_id: str) -> str | None:
    """The ``kind`` of a job's report ("spans", "categorical" or "tags"), or None without a report."""
    return session.exec(select(Report.body["kind"].as_string()).where(Report.job_id == job_id)).first()


def delete_job(*, session: Session, job: Job) -> None:
    """Delete a job with its report and worker rows."""
    session.exec(delete(WorkerScore).where(WorkerScore.job_id == job.id))
    session.exec(delete(Report).where(Report.job_id == job.id))
    session.exec(delete(Prediction).where(Prediction.job_id == job.id))
    session.delete(job)
    session.commit()


def claim_job(*, session: Session, job_id: str, worker_name: str | None) -> Job | None:
    """Move a queued job to running, atomically; None if it is not queued (already run, failed or deleted)."""
    now = utcnow()
    result = session.exec(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.queued)
        .execution_options(synchronize_session=False)
        .values(status=JobStatus.running, started_at=now, heartbeat_at=now, worker_name=worker_name,
                attempts=Job.attempts + 1, progress={"stage": "starting"}, error=None)
    )
    session.commit()
    if result.rowcount != 1:
        return None
    return session.get(Job, job_id, populate_existing=True)


def load_job(*, session: Session, job_id: str) -> Job | None:
    """The job with this id whatever its project (for workers and the queue, never for a client), or None."""
    return session.get(Job, job_id)


def finish_job(*, session: Session, job_id: str, report: QualityReport | StoredReport | None,
               timings: dict[str, Any], progress: dict[str, Any], artifacts: dict[str, Any],
               use_experts: bool | None = None) -> bool:
    """Store a running job's report and mark it finished, in one transaction (a finished job always has its
    report, except a comparison, whose result is an artifact: ``report=None``); False, with nothing stored, when
    the job was deleted or left the running state meanwhile. ``use_experts``, when given, is what the fit did
    (an auto job may have chosen to clamp the experts): the row says it from then on."""
    done = session.exec(update(Job).where(Job.id == job_id, Job.status == JobStatus.running)
                        .execution_options(synchronize_session=False)
                        .values(status=JobStatus.finished, finished_at=utcnow(), error=None, timings=timings,
                                progress=progress, artifacts=artifacts,
                                **({} if use_experts is None else {"use_experts": use_experts})))
    if done.rowcount != 1:
        session.rollback()
        return False
    if report is not None:
        save_report(session=session, job_id=job_id, report=report)
    session.commit()
    return True


def update_job(*, session: Session, job_id: str, only_if: JobStatus | None = None, **values: Any) -> bool:
    """Set columns of a job (optionally only while it has status ``only_if``); True if a row changed."""
    stmt = update(Job).where(Job.id == job_id)
    if only_if is not None:
        stmt = stmt.where(Job.status == only_if)
    result = session.exec(stmt.execution_options(synchronize_session=False).values(**values))
    session.commit()
    return result.rowcount == 1


def abandoned_reason(stale_after: float) -> str:
    """The error of a running job whose worker fell silent for ``stale_after`` seconds."""
    return (f"abandoned: the worker sent no heartbeat for {stale_after:g} s (killed or lost); "
            "the dataset is intact, re-run the job")


def silent_since(stale_after: float, now: datetime | None = None) -> datetime:
    """The heartbeat time before which a running job's worker has gone silent (``stale_after`` s before now)."""
    return (now or utcnow()) - timedelta(seconds=stale_after)


def gone_silent(job: Job, *, stale_after: float, now: datetime | None = None) -> bool:
    """Whether ``job`` runs on a worker gone silent: its last heartbeat is older than ``stale_after`` seconds.

    The one "gone silent" rule: the reconciler's verdict on a job read, and :func:`mark_stale_jobs` (the
    same test as SQL) on the rows. A job without a heartbeat yet is not judged.
    """
    beat = aware(job.heartbeat_at)
    return job.status == JobStatus.running and beat is not None and beat < silent_since(stale_after, now)


def mark_stale_jobs(*, session: Session, stale_after: float) -> int:
    """Fail the running jobs gone silent (:func:`gone_silent`); return how many.

    Reads first, so a pass with nothing to fail writes nothing (and takes no write lock from uploads and jobs).
    """
    now = utcnow()
    silent = (Job.status == JobStatus.running) & (col(Job.heartbeat_at) < silent_since(stale_after, now))
    if session.exec(select(Job.id).where(silent).limit(1)).first() is None:
        return 0
    result = session.exec(update(Job).where(silent).execution_options(synchronize_session=False).values(
        status=JobStatus.failed, finished_at=now, error=abandoned_reason(stale_after)))
    session.commit()
    return int(result.rowcount or 0)


def queued_job_ids(*, session: Session, enqueued_before: datetime | None = None) -> list[str]:
    """Ids of the queued jobs (only those enqueued before ``enqueued_before``, if given), oldest first."""
    stmt = select(Job.id).where(Job.status == JobStatus.queued)
    if enqueued_before is not None:
        stmt = stmt.where(Job.enqueued_at < enqueued_before)
    return list(session.exec(stmt.order_by(Job.created_at, Job.id)).all())


def running_jobs(*, session: Session) -> list[tuple[str, str | None, datetime | None]]:
    """(id, worker name, last heartbeat) of every running job."""
    stmt = select(Job.id, Job.worker_name, Job.heartbeat_at).where(Job.status == JobStatus.running)
    return [tuple(row) for row in session.exec(stmt).all()]


# ---------------------------------------------------------------- reports
#: The sortable scores of a span report's score block, from the report model: the fields of a ``LabelScore``
#: that are scores, not counts (precision, recall, F1).
_PRF = tuple(name for name, f in LabelScore.model_fields.items() if f.annotation == float | None)


def _scores(block: dict[str, Any] | None) -> dict[str, float | None]:
    """The sortable columns of one side (against the experts, or the aggregate) of a worker's report entry, as
    JSON data: a span report's block (``Score``) has precision, recall and F1 (:data:`_PRF`), a categorical
    one's (``CategoricalScore``) only an accuracy, whose ``value`` is the column."""
    token = block if block is not None and "f1" in block else None
    accuracy = (block or {}).get("accuracy")
    return {**{name: token[name] if token else None for name in _PRF},
            "accuracy": accuracy["value"] if accuracy else None}


@dataclass(frozen=True)
class StoredReport:
    """A report as the store keeps it (:func:`stored_report`): the JSON body and one sortable row per worker."""

    body: dict[str, Any]
    rows: list[dict[str, Any]]


def stored_report(*, job_id: str, report: QualityReport | dict[str, Any]) -> StoredReport:
    """What :func:`save_report` stores for ``report``: the typed report dumped, or the same as plain JSON data
    (``crowdqa.quality.report.build_report_data``, stored as it is), and its worker rows. No database work."""
    body = report.model_dump(mode="json") if isinstance(report, QualityReport) else report
    rows = []
    for w in body["workers"]:
        ve, va = _scores(w["vs_expert"]), _scores(w["vs_aggregate"])
        rows.append(dict(
            job_id=job_id, annotator=text_safe(w["annotator"]), role=w["role"], documents=w["documents"],
            tokens=w["tokens"], **ve, **{f"agreement_{name}": score for name, score in va.items()},
            span_f1=(w.get("span_vs_expert") or {}).get("f1"),  # a crowd worker's strict spans vs the experts
            detail=w,
        ))
    return StoredReport(body=body, rows=rows)


def save_report(*, session: Session, job_id: str, report: QualityReport | StoredReport) -> None:
    """Store a job's report and one sortable row per worker (replacing any earlier ones); not committed."""
    stored = report if isinstance(report, StoredReport) else stored_report(job_id=job_id, report=report)
    session.exec(delete(WorkerScore).where(WorkerScore.job_id == job_id))
    session.exec(delete(Report).where(Report.job_id == job_id))
    session.add(Report(job_id=job_id, body=stored.body))
    if stored.rows:  # one executemany, not an ORM object per worker (thousands of workers)
        session.exec(insert(WorkerScore), params=stored.rows)


def clear_report(*, session: Session, job_id: str) -> None:
    """Delete a job's report and worker rows (before a re-run)."""
    session.exec(delete(WorkerScore).where(WorkerScore.job_id == job_id))
    session.exec(delete(Report).where(Report.job_id == job_id))
    session.commit()


def get_report(*, session: Session, job_id: str) -> Report | None:
    """The report of a job, or None."""
    return session.get(Report, job_id)


def get_report_json(*, session: Session, job_id: str) -> str | None:
    """The report of a job as the JSON text the database keeps (not parsed: it is served as it is), or None."""
    return session.exec(select(cast(Report.body, Text)).where(Report.job_id == job_id)).first()


WORKER_SORT_KEYS = ("annotator", "role", "documents", "tokens", "precision", "recall", "f1", "span_f1",
                    "agreement_precision", "agreement_recall", "agreement_f1", "accuracy", "agreement_accuracy")
#: The keys a categorical report's worker rows can be sorted by (they carry no P/R/F1), and each kind's default.
CATEGORICAL_SORT_KEYS = ("annotator", "role", "documents", "tokens", "accuracy", "agreement_accuracy")
DEFAULT_SORT = {"spans": "f1", "categorical": "accuracy", "tags": "accuracy"}


def list_worker_scores(*, session: Session, job_id: str, sort: str = "annotator", order: str = "asc",
                       offset: int = 0, limit: int = 100) -> tuple[list[WorkerScore], int]:
    """One page of a job's worker rows sorted by ``sort`` (nulls last, ties by annotator id), and the count."""
    if sort not in WORKER_SORT_KEYS:
        raise ValueError(f"sort must be one of {WORKER_SORT_KEYS}, found {sort!r}")
    column = getattr(WorkerScore, sort)
    key = nulls_last(column.desc() if order == "desc" else column.asc())
    stmt = select(WorkerScore).where(WorkerScore.job_id == job_id)
    return _page(session, stmt, offset=offset, limit=limit, order=(key, WorkerScore.annotator))


# ---------------------------------------------------------------- blocked workers
def block_worker(*, session: Session, project_id: str, worker_in: BlockedWorkerCreate) -> tuple[BlockedWorker, bool]:
    """Put an annotator on the project's block list (a second time updates the reason); the row and whether it
    is new."""
    row = session.exec(select(BlockedWorker).where(BlockedWorker.project_id == project_id,
                                                   BlockedWorker.annotator == worker_in.annotator)).first()
    created = row is None
    if row is None:
        row = BlockedWorker(project_id=project_id, annotator=worker_in.annotator, reason=worker_in.reason)
    else:
        row.reason = worker_in.reason
    session.add(row)
    session.commit()
    session.refresh(row)
    return row, created


def unblock_worker(*, session: Session, project_id: str, annotator: str) -> bool:
    """Take an annotator off the project's block list; False when it was not on it."""
    result = session.exec(delete(BlockedWorker).where(BlockedWorker.project_id == project_id,
                                                      BlockedWorker.annotator == annotator))
    session.commit()
    return bool(result.rowcount)


def list_blocked_workers(*, session: Session, project_id: str, offset: int = 0,
                         limit: int = 100) -> tuple[list[BlockedWorker], int]:
    """One page of the project's block list, by annotator id, and its length."""
    stmt = select(BlockedWorker).where(BlockedWorker.project_id == project_id)
    return _page(session, stmt, offset=offset, limit=limit, order=(BlockedWorker.annotator,))


def blocked_annotators(*, session: Session, project_id: str) -> frozenset[str]:
    """Every annotator id on the project's block list."""
    return frozenset(session.exec(select(BlockedWorker.annotator).where(BlockedWorker.project_id == project_id)))


# ---------------------------------------------------------------- per-project limits
def count_active_jobs(*, session: Session, project_id: str) -> int:
    """The project's queued and running jobs."""
    stmt = select(func.count()).select_from(Job).where(
        Job.project_id == project_id, col(Job.status).in_([JobStatus.queued, JobStatus.running]))
    return int(session.exec(stmt).one())


def stored_upload_bytes(*, session: Session, project_id: str, upload_ids: Collection[str] | None = None) -> int:
    """Bytes of the uploaded files the project's datasets keep (of the uploads ``upload_ids`` only, if given)."""
    stmt = select(func.coalesce(func.sum(Upload.size), 0)).select_from(Upload).join(
        Dataset, col(Dataset.id) == col(Upload.dataset_id)).where(Dataset.project_id == project_id)
    if upload_ids is not None:
        stmt = stmt.where(col(Upload.id).in_(list(upload_ids)))
    return int(session.exec(stmt).one())


def record_upload_attempt(*, session: Session, project_id: str, since: datetime) -> list[datetime]:
    """Forget the project's upload attempts before ``since`` and return the times of the others, oldest first
    (the new attempt is not recorded: see :func:`add_upload_attempt`)."""
    session.exec(delete(UploadAttempt).where(UploadAttempt.project_id == project_id,
                                             col(UploadAttempt.at) < since))
    session.commit()
    stmt = select(UploadAttempt.at).where(UploadAttempt.project_id == project_id).order_by(col(UploadAttempt.at))
    return [aware(t) for t in session.exec(stmt)]


def add_upload_attempt(*, session: Session, project_id: str) -> None:
    """Count one upload request of the project (committed at once: a failed upload counts too)."""
    session.add(UploadAttempt(project_id=project_id))
    session.commit()


def job_projects(*, session: Session, job_ids: list[str]) -> dict[str, str]:
    """Job id -> project id of the jobs among ``job_ids`` that still exist."""
    if not job_ids:
        return {}
    return dict(session.exec(select(Job.id, Job.project_id).where(col(Job.id).in_(job_ids))).all())


def find_dataset(*, session: Session, project_id: str, name: str) -> Dataset | None:
    """The project's first dataset of this name, or None."""
    stmt = select(Dataset).where(Dataset.project_id == project_id, Dataset.name == name)
    return session.exec(stmt.order_by(Dataset.created_at)).first()


def get_label_studio_link(*, session: Session, dataset_id: str) -> LabelStudioLink | None:
    """The Label Studio project a dataset is pulled from, or None."""
    return session.exec(select(LabelStudioLink).where(LabelStudioLink.dataset_id == dataset_id)).first()


def replace_uploads(*, session: Session, dataset: Dataset, removed: list[Upload], added: list[Upload],
                    corpus_sha256: str | None, summary: dict[str, Any] | None,
                    annotators: list[tuple[str, str, int, int]], link: LabelStudioLink | None = None) -> None:
    """Add uploads to a dataset and remove others, with the dataset's new corpus (snapshot, summary, annotators)
    and a Label Studio link's new state, in one transaction (the caller holds the dataset's lock): an upload or
    a pull is stored whole or not at all."""
    for upload in removed:
        session.delete(upload)
    session.add_all(added)
    if link is not None:
        session.add(link)
    set_dataset_corpus(session=session, dataset=dataset, corpus_sha256=corpus_sha256, summary=summary,
                       annotators=annotators, n_uploads=dataset.n_uploads - len(removed) + len(added))
    session.commit()


# ---------------------------------------------------------------- pre-annotation
def create_prediction(*, session: Session, prediction: Prediction) -> Prediction:
    """Commit a new (queued) pre-annotation row."""
    session.add(prediction)
    session.commit()
    session.refresh(prediction)
    return prediction


def get_prediction(*, session: Session, project_id: str, prediction_id: str) -> Prediction | None:
    """The project's pre-annotation, or None (also for another project's)."""
    stmt = select(Prediction).where(Prediction.id == prediction_id, Prediction.project_id == project_id)
    return session.exec(stmt).first()


def list_predictions(*, session: Session, project_id: str, job_id: str | None = None, offset: int = 0,
                     limit: int = 100, newest_first: bool = False) -> tuple[list[Prediction], int]:
    """One page of the project's pre-annotations (of one job, if given), oldest first (or newest first), and the
    count."""
    stmt = select(Prediction).where(Prediction.project_id == project_id)
    if job_id is not None:
        stmt = stmt.where(Prediction.job_id == job_id)
    return _page(session, stmt, offset=offset, limit=limit,
                 order=_order(newest_first, Prediction.created_at, Prediction.id))


def delete_prediction(*, session: Session, prediction: Prediction) -> None:
    """Delete a pre-annotation row (its files go with the next garbage collection)."""
    session.delete(prediction)
    session.commit()


def claim_prediction(*, session: Session, prediction_id: str, worker_name: str | None) -> Prediction | None:
    """Move a queued pre-annotation to running, atomically; None if it is not queued (run, failed or deleted)."""
    result = session.exec(
        update(Prediction)
        .where(Prediction.id == prediction_id, Prediction.status == JobStatus.queued)
        .execution_options(synchronize_session=False)
        .values(status=JobStatus.running, started_at=utcnow(), worker_name=worker_name,
                progress={"stage": "starting"}, error=None))
    session.commit()
    if result.rowcount != 1:
        return None
    return session.get(Prediction, prediction_id, populate_existing=True)


def update_prediction(*, session: Session, prediction_id: str, only_if: JobStatus | None = None,
                      **values: Any) -> bool:
    """Set columns of a pre-annotation (optionally only while it has status ``only_if``); True if a row changed."""
    stmt = update(Prediction).where(Prediction.id == prediction_id)
    if only_if is not None:
        stmt = stmt.where(Prediction.status == only_if)
    result = session.exec(stmt.execution_options(synchronize_session=False).values(**values))
    session.commit()
    return result.rowcount == 1


def count_active_predictions(*, session: Session, project_id: str) -> int:
    """The project's queued and running pre-annotations."""
    stmt = select(func.count()).select_from(Prediction).where(
        Prediction.project_id == project_id, col(Prediction.status).in_([JobStatus.queued, JobStatus.running]))
    return int(session.exec(stmt).one())


def queued_prediction_ids(*, session: Session) -> list[str]:
    """Every queued pre-annotation, oldest first (what an embedded server's start puts back on its queue)."""
    stmt = select(Prediction.id).where(Prediction.status == JobStatus.queued)
    return list(session.exec(stmt.order_by(Prediction.created_at, Prediction.id)))


def fail_running_predictions(*, session: Session, error: str) -> int:
    """Fail every running pre-annotation with ``error`` (an embedded server's start: their worker is gone)."""
    result = session.exec(update(Prediction).where(Prediction.status == JobStatus.running)
                          .execution_options(synchronize_session=False)
                          .values(status=JobStatus.failed, finished_at=utcnow(), error=error))
    session.commit()
    return int(result.rowcount or 0)
