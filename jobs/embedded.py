"""The embedded mode: the same rq jobs on an in-process worker over fakeredis.

With no ``CROWDQA_REDIS_URL``, ``crowdqa serve`` runs jobs on a ``SimpleWorker`` in a
background thread. rq's ``SimpleWorker`` runs in a thread only if it neither installs
signal handlers (allowed in the main thread only) nor uses the SIGALRM job timeout, so
:class:`ThreadWorker` uses ``TimerDeathPenalty`` and a no-op ``_install_signal_handlers``.
A forking ``Worker`` cannot be used: its child would write to its own copy of the
in-memory server.
"""

from __future__ import annotations

import logging
import threading

from rq import SimpleWorker
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty
from sqlmodel import Session, select

from jobs.queue import enqueue_job, enqueued, get_queue
from store import crud
from store.db import get_engine
from store.models import Job, JobStatus, utcnow
from store.settings import Settings

__all__ = ["ThreadWorker", "EmbeddedWorker", "recover_jobs"]

logger = logging.getLogger(__name__)


class ThreadWorker(SimpleWorker):
    """A SimpleWorker that can run outside the main thread."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        # Signal handlers can only be installed from the main thread; the server owns them.
        pass


class EmbeddedWorker:
    """Poll the in-process queue and run its jobs on a :class:`ThreadWorker` in a daemon thread."""

    def __init__(self, settings: Settings, *, poll_interval: float = 1.0) -> None:
        self.settings = settings
        self.poll_interval = poll_interval
        self.queue = get_queue(settings)
        self.worker = ThreadWorker([self.queue], connection=self.queue.connection, serializer=JSONSerializer)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="crowdqa-embedded-worker", daemon=True)

    def start(self) -> EmbeddedWorker:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self.queue.count:
                    # Burst: run what is queued, then come back to polling (stop() is honoured between jobs).
                    self.worker.work(burst=True, logging_level="WARNING")
            except Exception:  # noqa: BLE001 - keep serving; the job row records its own failure
                logger.exception("embedded worker loop failed")
            # Sleep until this process enqueues something (or the poll interval passes, as a safety net).
            enqueued.wait(self.poll_interval)
            enqueued.clear()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the current job (waiting at most ``timeout`` seconds)."""
        self._stop.set()
        enqueued.set()
        self._thread.join(timeout)


def recover_jobs(settings: Settings) -> tuple[int, int]:
    """At start: fail jobs left running by a previous process and re-enqueue the queued ones.

    The embedded queue lives in memory, so after a restart nothing else knows about them.
    Returns (failed, requeued).
    """
    engine = get_engine(settings)
    queue = get_queue(settings)
    with Session(engine) as s:
        running = s.exec(select(Job.id).where(Job.status == JobStatus.running)).all()
        for job_id in running:
            crud.update_job(session=s, job_id=job_id, only_if=JobStatus.running, status=JobStatus.failed,
                            finished_at=utcnow(),
                            error="abandoned: the service stopped while the job ran; the dataset is intact, re-run it")
        queued = s.exec(select(Job.id).where(Job.status == JobStatus.queued).order_by(Job.created_at)).all()
    for job_id in queued:
        enqueue_job(queue, job_id, settings=settings)
    return len(running), len(queued)
