"""Whether a job has finished: the one check made by every action that needs a finished job's results.

Its report, worker rows and labels and a review of its batch (:mod:`crowdqa.jobs.exports`), a routing list
(:mod:`crowdqa.jobs.routing`) and a new batch started from its model (:mod:`crowdqa.jobs.batches`) all ask
here, so a job that is not finished is refused with one message, :class:`~crowdqa.jobs.errors.JobNotFinishedError`
(409 through the API). The module reads the job row and the store only, never the queue: commands such as
``crowdqa route`` import the routing use case, and rq and redis would cost them their import time.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session

from crowdqa.jobs.errors import JobNotFinishedError
from crowdqa.store import crud
from crowdqa.store.models import Job, JobStatus

__all__ = ["check_finished", "check_aggregated", "finished_report", "finished_report_json"]


def check_finished(job: Job) -> None:
    """Raise JobNotFinishedError unless ``job`` has finished (the message carries a failed job's reason)."""
    if job.status != JobStatus.finished:
        raise JobNotFinishedError(f"job {job.id} is {job.status.value}, not finished"
                                  + (f": {job.error}" if job.error else ""))


def check_aggregated(job: Job) -> None:
    """Raise JobNotFinishedError unless ``job`` has finished with an aggregate: a ``compare`` job keeps only its
    comparison (no labels, report, worker rows or model), so asking it for them says where its result is."""
    check_finished(job)
    if str(job.method) == "compare":
        raise JobNotFinishedError(f"job {job.id} is a comparison of methods: it keeps no aggregate, report or worker "
                                  f"rows; its result is GET /api/v1/jobs/{job.id}/comparison, and a job of the "
                                  "recommended method (or of method auto) aggregates")


def finished_report(*, session: Session, job: Job) -> dict[str, Any]:
    """The stored report of a finished job, as the JSON document the API serves."""
    check_aggregated(job)
    report = crud.get_report(session=session, job_id=job.id)
    if report is None:
        raise JobNotFinishedError(f"job {job.id} has no report")
    return report.body


def finished_report_json(*, session: Session, job: Job) -> str:
    """:func:`finished_report` as the JSON text the store keeps, to serve without parsing it and encoding it
    again (both cost time in the size of the report: thousands of workers, maybe 10^5 crowd pairs)."""
    check_aggregated(job)
    text = crud.get_report_json(session=session, job_id=job.id)
    if text is None:
        raise JobNotFinishedError(f"job {job.id} has no report")
    return text
