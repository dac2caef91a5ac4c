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
import os
import socket
import threading
import uuid

from rq import SimpleWorker
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty

from crowdqa.jobs import cancel
from crowdqa.jobs.queue import enqueue_job, enqueued, get_queue
from crowdqa.store import crud
from crowdqa.store.db import open_session
from crowdqa.store.models import JobStatus, aware, utcnow
from crowdqa.store.settings import Settings

__all__ = ["ThreadWorker", "EmbeddedWorker", "recover_jobs", "EMBEDDED_PREFIX", "embedded_worker_name"]

logger = logging.getLogger(__name__)

#: Names of embedded workers start with this; the job row's ``worker_name`` says who ran it.
EMBEDDED_PREFIX = "embedded."


def embedded_worker_name() -> str:
    """A fresh name for this process' embedded worker: ``embedded.<host>.<pid>.<random>``."""
    return f"{EMBEDDED_PREFIX}{socket.gethostname()[:60]}.{os.getpid()}.{uuid.uuid4().hex[:8]}"


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
        self.worker = ThreadWorker([self.queue], connection=self.queue.connection, serializer=JSONSerializer,
                                   name=embedded_worker_name())
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

    def stop(self, timeout: float = 5.0) -> None:
        """Stop now: a running job stops at its next checkpoint and goes back to the queue.

        A job still running after ``timeout`` seconds (a long step without a checkpoint) is put back
        to the queue here; its thread dies with the process and its late writes find it not running.
        """
        self._stop.set()
        self.worker._stop_requested = True  # rq's flag: take no further job from the queue
        cancel.request_shutdown()
        enqueued.set()
        self._thread.join(timeout)
        left = cancel.running_here()
        if left:
            with open_session(self.settings) as s:
                for job_id in left:
                    crud.update_job(session=s, job_id=job_id, only_if=JobStatus.running, status=JobStatus.queued,
                                    progress={"stage": "queued"}, started_at=None, heartbeat_at=None,
                                    error="interrupted: the service stopped while the job ran; it was queued again")


def recover_jobs(settings: Settings) -> tuple[int, int]:
    """At start: fail jobs whose worker is gone and re-enqueue the queued ones.

    The embedded queue lives in memory, so after a restart nothing else knows about them. Call it
    only while holding the data directory's serve lock (:mod:`crowdqa.store.datadir_lock`): then no other
    embedded server runs on this data, so a job run by an embedded worker of another process lost
    its worker. A job run by a ``crowdqa worker`` (an earlier Redis setup on the same database) is
    failed only once its heartbeats stopped for ``stale_after`` seconds. Returns (failed, requeued).
    """
    queue = get_queue(settings)
    cutoff = crud.silent_since(settings.stale_after)  # (a job without a heartbeat counts as silent here)
    gone = []
    with open_session(settings) as s:
        for job_id, worker, beat in crud.running_jobs(session=s):
            embedded = (worker or "").startswith(EMBEDDED_PREFIX)
            if embedded or (aware(beat) or cutoff) <= cutoff:
                gone.append(job_id)
        for job_id in gone:
            crud.update_job(session=s, job_id=job_id, only_if=JobStatus.running, status=JobStatus.failed,
                            finished_at=utcnow(),
                            error="abandoned: the service stopped while the job ran; the dataset is intact, re-run it")
        queued = crud.queued_job_ids(session=s)
    for job_id in queued:
        enqueue_job(queue, job_id, settings=settings)
    return len(gone), len(queued)
