"""The embedded mode: the same rq jobs on an in-process worker over fakeredis.

With no ``CROWDQA_REDIS_URL``, ``crowdqa serve`` runs jobs on a ``SimpleWorker`` in a
background thread. rq's ``SimpleWorker`` runs in a thread only if it neither installs
signal handlers (allowed in the main thread only) nor uses the SIGALRM job timeout, so
:class:`ThreadWorker` uses ``TimerDeathPenalty`` and a no-op ``_install_signal_handlers``.
A forking ``Worker`` cannot be used: its child would write to its own copy of the
in-memory server.

Fair scheduling: the embedded worker runs ``CROWDQA_EMBEDDED_WORKERS`` jobs at once (default 2), one thread
each, and :class:`FairShare` picks what a free thread takes: the oldest queued job of the project served
longest ago among the projects with no job running here. One project's long job (or a hundred of them)
therefore holds one thread at most, and the other projects' jobs run beside it in turn.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from rq import Queue, SimpleWorker
from rq.exceptions import NoSuchJobError
from rq.job import Job as RqJob
from rq.serializers import JSONSerializer
from rq.timeouts import TimerDeathPenalty

from crowdqa.jobs import cancel
from crowdqa.jobs.queue import PromptUnsubscribe, enqueue_job, enqueued, get_queue
from crowdqa.store import crud
from crowdqa.store.db import open_session
from crowdqa.store.models import JobStatus, aware, queued_progress, utcnow
from crowdqa.store.settings import Settings

__all__ = ["ThreadWorker", "FairShare", "EmbeddedWorker", "recover_jobs", "EMBEDDED_PREFIX", "embedded_worker_name"]

logger = logging.getLogger(__name__)

#: Names of embedded workers start with this; the job row's ``worker_name`` says who ran it.
EMBEDDED_PREFIX = "embedded."


def embedded_worker_name() -> str:
    """A fresh name for this process' embedded worker: ``embedded.<host>.<pid>.<random>``."""
    return f"{EMBEDDED_PREFIX}{socket.gethostname()[:60]}.{os.getpid()}.{uuid.uuid4().hex[:8]}"


class ThreadWorker(PromptUnsubscribe, SimpleWorker):
    """A SimpleWorker that can run outside the main thread."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        # Signal handlers can only be installed from the main thread; the server owns them.
        pass


class FairShare:
    """What the embedded worker's threads take from the queue, one project at a time.

    A free thread takes the oldest queued job of the project whose last job started longest ago (never served:
    first), skipping the projects that have a job running here; it takes nothing when only those are queued
    (their next job waits for the running one). A queued id whose row is gone is taken too, so that the task
    finds it deleted and it leaves the queue.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._running: dict[str, str] = {}  # job id -> project id, for the jobs running here
        self._served: dict[str, int] = {}  # project id -> turn of its last started job
        self._turn = 0

    def take(self, queue: Queue) -> tuple[RqJob, Queue] | None:
        """Remove the next fair job from ``queue`` and return it with the queue (rq's dequeue result), or None."""
        with self._lock:
            while True:
                ids = queue.get_job_ids()
                if not ids:
                    return None
                with open_session(self.settings) as s:
                    owner = crud.job_projects(session=s, job_ids=ids)
                busy = set(self._running.values())
                ready = [(self._served.get(owner.get(j, ""), -1), i, j)
                         for i, j in enumerate(ids) if owner.get(j) not in busy]
                if not ready:
                    return None
                job_id = min(ready)[2]
                queue.remove(job_id)
                try:
                    job = RqJob.fetch(job_id, connection=queue.connection, serializer=queue.serializer)
                except NoSuchJobError:
                    continue  # deleted meanwhile: look again
                if job_id in owner:
                    self._turn += 1
                    self._served[owner[job_id]] = self._turn
                    self._running[job_id] = owner[job_id]
                return job, queue

    def done(self, job_id: str) -> None:
        """The job ``job_id`` ended (however): its project may run its next job."""
        with self._lock:
            self._running.pop(job_id, None)
        enqueued.set()  # wake the idle threads: a deferred job may now run

    def running_projects(self) -> set[str]:
        """Projects with a job running on this worker now."""
        with self._lock:
            return set(self._running.values())


class _FairThreadWorker(ThreadWorker):
    """A ThreadWorker that dequeues through a :class:`FairShare` shared with the other threads."""

    def __init__(self, *args, share: FairShare, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.share = share

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None):
        self.heartbeat()
        return self.share.take(self.queues[0])

    def execute_job(self, job: RqJob, queue: Queue):
        try:
            return super().execute_job(job, queue)
        finally:
            self.share.done(job.id)


class EmbeddedWorker:
    """Poll the in-process queue and run its jobs on ``settings.embedded_workers`` daemon threads, fairly."""

    def __init__(self, settings: Settings, *, poll_interval: float = 1.0) -> None:
        self.settings = settings
        self.poll_interval = poll_interval
        self.queue = get_queue(settings)
        self.share = FairShare(settings)
        self.workers = [_FairThreadWorker([self.queue], connection=self.queue.connection, serializer=JSONSerializer,
                                          name=embedded_worker_name(), share=self.share)
                        for _ in range(settings.embedded_workers)]
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._loop, args=(worker,), name=f"crowdqa-embedded-worker-{i}",
                                          daemon=True) for i, worker in enumerate(self.workers)]

    def start(self) -> EmbeddedWorker:
        for thread in self._threads:
            thread.start()
        return self

    def _loop(self, worker: ThreadWorker) -> None:
        while not self._stop.is_set():
            try:
                if self.queue.count:
                    # Burst: run what is queued (and fair to take), then come back to polling (stop() is honoured
                    # between jobs).
                    worker.work(burst=True, logging_level="WARNING")
            except Exception:  # noqa: BLE001 - keep serving; the job row records its own failure
                logger.exception("embedded worker loop failed")
            # Sleep until this process enqueues something or a job ends (or the poll interval passes, as a
            # safety net).
            enqueued.wait(self.poll_interval)
            enqueued.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop now: a running job stops at its next checkpoint and goes back to the queue.

        A job still running after ``timeout`` seconds (a long step without a checkpoint) is put back
        to the queue here; its thread dies with the process and its late writes find it not running.
        """
        self._stop.set()
        for worker in self.workers:
            worker._stop_requested = True  # rq's flag: take no further job from the queue
        cancel.request_shutdown()
        enqueued.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        left = cancel.running_here()
        if left:
            with open_session(self.settings) as s:
                for job_id in left:
                    crud.update_job(session=s, job_id=job_id, only_if=JobStatus.running, status=JobStatus.queued,
                                    progress=queued_progress(), started_at=None, heartbeat_at=None,
                                    error="interrupted: the service stopped while the job ran; it was queued again")


def recover_jobs(settings: Settings) -> tuple[int, int]:
    """At start: fail jobs whose worker is gone and re-enqueue the queued ones.

    The embedded queue lives in memory, so after a restart nothing else knows about them. Call it
    only while holding the data directory's serve lock (:mod:`crowdqa.store.datadir_lock`): then no other
    embedded server runs on this data, so a job run by an embedded worker of another process lost
    its worker. A job run by a ``crowdqa worker`` (an earlier Redis setup on the same database) is
    failed only once its heartbeats stopped for ``stale_after`` seconds. Pre-annotations are failed and re-enqueued
    alike (:func:`crowdqa.jobs.preannotate.requeue_predictions`). Returns (failed, requeued), both counted.
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
    from crowdqa.jobs.preannotate import requeue_predictions  # pre-annotations, the same way

    failed, requeued = requeue_predictions(settings)
    return len(gone) + failed, len(queued) + requeued
