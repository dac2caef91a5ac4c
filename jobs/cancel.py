"""Stop a running job cooperatively: a checkpoint the job passes between EM iterations and stages.

The embedded worker runs jobs in a thread of the serving process, which cannot be killed from
outside; instead ``DELETE /jobs/{id}`` (:func:`request_cancel`) and the server's shutdown
(:func:`request_shutdown`) raise a flag that the job's next :func:`checkpoint` turns into
:class:`~crowdqa.jobs.errors.JobCancelled`. Jobs on ``crowdqa worker`` processes are stopped by rq's
stop-job command instead (see :func:`crowdqa.jobs.service.delete_job`).

A flag is kept only for a job that runs in this process (inside :class:`running`, which a worker enters before it
claims the job), and the block's end forgets it: a job deleted before it ran, one the worker finds gone, or one
running in another process leaves no id behind.
"""

from __future__ import annotations

import threading

from crowdqa.jobs.errors import JobCancelled

__all__ = ["request_cancel", "request_shutdown", "checkpoint", "running_here", "running"]

_lock = threading.Lock()
_cancelled: set[str] = set()
_requeue: set[str] = set()
_running: set[str] = set()


def request_cancel(job_id: str) -> None:
    """Ask the job ``job_id``, if it runs in this process, to stop at its next checkpoint; a job that does not
    (deleted before it ran, or running elsewhere) leaves nothing behind."""
    with _lock:
        if job_id in _running:
            _cancelled.add(job_id)


def request_shutdown() -> None:
    """Ask every job running in this process now to stop at its next checkpoint and go back to the queue."""
    with _lock:
        _requeue.update(_running)


def checkpoint(job_id: str) -> None:
    """Raise :class:`JobCancelled` if ``job_id`` was cancelled or the service is stopping."""
    with _lock:
        if job_id in _cancelled:
            raise JobCancelled("deleted while it ran")
        if job_id in _requeue:
            raise JobCancelled("the service stopped while the job ran", requeue=True)


class running:  # noqa: N801 - used as a context manager, like a function
    """Record that ``job_id`` runs in this process for the duration of the ``with`` block (enter it before the job
    is claimed, so a delete between the claim and the first checkpoint is seen); its end forgets the job's flags."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id

    def __enter__(self) -> running:
        with _lock:
            _running.add(self.job_id)
        return self

    def __exit__(self, *exc: object) -> None:
        with _lock:
            _running.discard(self.job_id)
            _cancelled.discard(self.job_id)
            _requeue.discard(self.job_id)


def running_here() -> set[str]:
    """Ids of the jobs running in this process now."""
    with _lock:
        return set(_running)
