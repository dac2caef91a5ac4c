"""Keep job rows true to their workers and the queue: running jobs gone silent, queued jobs the queue lost.

Two things can make a job row lie. A running job whose worker died (killed, out of memory, host gone)
stops sending heartbeats: after ``stale_after`` seconds it is *abandoned*. A queued job that Redis no
longer holds (restarted without persistence, flushed) will never run: after ``lost_after`` seconds it is
*lost*. Both end ``failed`` with a reason, so a client can re-run them.

Reading a job never writes. :func:`observe` gives what a reader is shown (the row, or the verdict the row
is about to get), while the rows themselves are corrected by :func:`reconcile_jobs`, which the API process
runs at start and then every few seconds (:class:`Reconciler`), and by :func:`reconcile_job` before an
action on one job (re-running it).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

import redis
from rq import Queue
from rq.job import Job as RqJob
from sqlmodel import Session

from crowdqa.jobs.queue import get_queue
from crowdqa.store import crud
from crowdqa.store.db import open_session
from crowdqa.store.models import Job, JobPublic, JobStatus, aware, utcnow
from crowdqa.store.settings import Settings

__all__ = ["verdict", "observe", "reconcile_job", "reconcile_jobs", "Reconciler", "LOST"]

logger = logging.getLogger(__name__)

LOST = "lost: the queue no longer holds this job (Redis restarted or flushed?); re-run it"


def _in_queue(queue: Queue, job_id: str) -> bool | None:
    """Whether Redis holds the rq job ``job_id``; None when Redis cannot be asked (then nothing is judged)."""
    try:
        return bool(RqJob.exists(job_id, connection=queue.connection))
    except redis.exceptions.RedisError:
        return None


def verdict(job: Job, *, settings: Settings, queue: Queue, now: datetime | None = None) -> str | None:
    """The reason ``job`` has failed without its row saying so yet (abandoned or lost), or None.

    A running job is abandoned when its worker has gone silent (:func:`crowdqa.store.crud.gone_silent`: no
    heartbeat for ``settings.stale_after`` seconds, the rule :func:`reconcile_jobs` applies to the rows); a queued
    job is lost when it was enqueued more than ``settings.lost_after`` seconds ago and Redis does not
    hold it (an unreachable Redis judges nothing: polling keeps working while Redis is down).
    """
    now = now or utcnow()
    if crud.gone_silent(job, stale_after=settings.stale_after, now=now):
        return crud.abandoned_reason(settings.stale_after)
    if job.status == JobStatus.queued:
        enqueued = aware(job.enqueued_at)
        if enqueued is not None and now - enqueued >= timedelta(seconds=settings.lost_after):
            if _in_queue(queue, job.id) is False:
                return LOST
    return None


def observe(job: Job, *, settings: Settings, queue: Queue) -> JobPublic:
    """What a reader is shown of ``job``: its row, or ``failed`` with the reason when :func:`verdict` has one."""
    public = JobPublic.model_validate(job)
    reason = verdict(job, settings=settings, queue=queue)
    if reason is None:
        return public
    return public.model_copy(update={"status": JobStatus.failed, "error": reason, "finished_at": utcnow()})


def reconcile_job(*, session: Session, settings: Settings, queue: Queue, job: Job) -> bool:
    """Record the verdict on ``job``'s row (only if its status is still the judged one); True if it changed."""
    reason = verdict(job, settings=settings, queue=queue)
    if reason is None:
        return False
    changed = crud.update_job(session=session, job_id=job.id, only_if=job.status, status=JobStatus.failed,
                              finished_at=utcnow(), error=reason)
    session.refresh(job)
    return changed


def reconcile_jobs(*, session: Session, settings: Settings, queue: Queue) -> tuple[int, int]:
    """Fail every abandoned running job and every lost queued job; return (abandoned, lost).

    Candidates are found by reading, so a pass with nothing to correct writes nothing (and takes no
    write lock from uploads and jobs).
    """
    abandoned = crud.mark_stale_jobs(session=session, stale_after=settings.stale_after)
    cutoff = utcnow() - timedelta(seconds=settings.lost_after)
    lost = 0
    for job_id in crud.queued_job_ids(session=session, enqueued_before=cutoff):
        if _in_queue(queue, job_id) is False:
            lost += crud.update_job(session=session, job_id=job_id, only_if=JobStatus.queued,
                                    status=JobStatus.failed, finished_at=utcnow(), error=LOST)
    return abandoned, lost


class Reconciler:
    """Run :func:`reconcile_jobs` in a daemon thread every ``interval`` seconds until stopped.

    The default interval is a quarter of the shorter of ``stale_after`` and ``lost_after`` (at most
    30 s), so a row is corrected soon after its verdict is due.
    """

    def __init__(self, settings: Settings, *, interval: float | None = None) -> None:
        self.settings = settings
        self.interval = interval or min(settings.stale_after, settings.lost_after, 120.0) / 4
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="crowdqa-reconciler", daemon=True)

    def start(self) -> Reconciler:
        self._thread.start()
        return self

    def run_once(self) -> tuple[int, int]:
        """One pass; (abandoned, lost) jobs it failed."""
        with open_session(self.settings) as session:
            return reconcile_jobs(session=session, settings=self.settings, queue=get_queue(self.settings))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                abandoned, lost = self.run_once()
            except Exception:  # noqa: BLE001 - a failed pass (database busy, Redis down) is retried next time
                logger.exception("reconciling job rows failed")
                continue
            if abandoned or lost:
                logger.warning("failed %d abandoned and %d lost jobs", abandoned, lost)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
