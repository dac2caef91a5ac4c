"""Per-project limits: active jobs (and pre-annotations), uploads per hour, bytes kept.

One project's key must not be able to take the service from the others: a hundred job POSTs in a few
seconds, uploads in a loop, or files until the disk is full. Each limit is a setting
(``CROWDQA_MAX_ACTIVE_JOBS``, ``CROWDQA_MAX_UPLOADS_PER_HOUR``, ``CROWDQA_MAX_PROJECT_BYTES``); past it the request is
refused with :class:`~crowdqa.jobs.errors.QuotaExceededError` (the API's 429 with ``Retry-After``) before anything
is queued or kept. The counts come from the database, so every API process sees the same ones; two requests at
the same instant may both pass a limit by one.
"""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import Session

from crowdqa.jobs.errors import QuotaExceededError
from crowdqa.store import crud
from crowdqa.store.models import utcnow
from crowdqa.store.settings import Settings

__all__ = ["check_job_quota", "check_prediction_quota", "check_upload_rate", "check_stored_bytes", "JOB_RETRY_AFTER",
           "BYTES_RETRY_AFTER"]

#: Seconds to wait before asking again for a job, when the project has its limit of queued and running jobs.
JOB_RETRY_AFTER = 30
#: Seconds to wait when the project keeps its limit of bytes: they are freed only by deleting uploads or datasets.
BYTES_RETRY_AFTER = 3600
_HOUR = timedelta(hours=1)


def check_job_quota(*, session: Session, settings: Settings, project_id: str) -> None:
    """Refuse a new (or re-run) job while the project has ``max_active_jobs`` queued or running."""
    _check_active(crud.count_active_jobs(session=session, project_id=project_id), "jobs", settings=settings)


def check_prediction_quota(*, session: Session, settings: Settings, project_id: str) -> None:
    """Refuse a new pre-annotation while the project has ``max_active_jobs`` pre-annotations queued or running (a
    limit of their own: labelling documents waits for no aggregation job, and none waits for it)."""
    _check_active(crud.count_active_predictions(session=session, project_id=project_id), "pre-annotations",
                  settings=settings)


def _check_active(active: int, what: str, *, settings: Settings) -> None:
    if active >= settings.max_active_jobs:
        raise QuotaExceededError(
            f"the project has {active} queued or running {what}, its limit (CROWDQA_MAX_ACTIVE_JOBS = "
            f"{settings.max_active_jobs}): wait for one to finish, or delete one", retry_after=JOB_RETRY_AFTER)


def check_upload_rate(*, session: Session, settings: Settings, project_id: str) -> None:
    """Count an upload request of the project, or refuse it when the project made ``max_uploads_per_hour`` in
    the last hour (``Retry-After``: when the oldest of them leaves the hour)."""
    now = utcnow()
    recent = crud.record_upload_attempt(session=session, project_id=project_id, since=now - _HOUR)
    if len(recent) >= settings.max_uploads_per_hour:
        wait = (recent[-settings.max_uploads_per_hour] + _HOUR - now).total_seconds()
        raise QuotaExceededError(
            f"the project made {len(recent)} uploads in the last hour, its limit (CROWDQA_MAX_UPLOADS_PER_HOUR = "
            f"{settings.max_uploads_per_hour})", retry_after=int(wait) + 1)
    crud.add_upload_attempt(session=session, project_id=project_id)


def check_stored_bytes(*, session: Session, settings: Settings, project_id: str, incoming: int = 0,
                       freed: int = 0) -> None:
    """Refuse an upload of ``incoming`` bytes that would take the project's kept uploads past ``max_project_bytes``
    (with ``incoming=0``: refuse any upload once the project is at its limit, before one byte is read).

    ``freed`` is what the request leaves kept bytes lower by once it commits: the bytes of the uploads it replaces
    (a Label Studio re-pull swaps the link's uploads), less those it has stored already; 0 for a file upload."""
    kept = crud.stored_upload_bytes(session=session, project_id=project_id) - freed
    if kept + incoming > settings.max_project_bytes or (not incoming and kept >= settings.max_project_bytes):
        what = f"this upload ({incoming} bytes) would take" if incoming else "they take"
        after = " after this request's replacements" if freed else ""
        raise QuotaExceededError(
            f"the project keeps {kept} bytes of uploads{after} and {what} it past its limit "
            f"(CROWDQA_MAX_PROJECT_BYTES = {settings.max_project_bytes}): delete uploads or datasets it no longer "
            "needs", retry_after=BYTES_RETRY_AFTER)
