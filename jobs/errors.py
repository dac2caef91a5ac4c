"""Job errors: one name per failure."""

from __future__ import annotations

__all__ = ["JobError", "QueueUnavailableError", "JobNotRunnableError"]


class JobError(Exception):
    """Base class of the jobs package's errors."""


class QueueUnavailableError(JobError):
    """The job queue (Redis) cannot be reached; the job was kept and can be enqueued again."""


class JobNotRunnableError(JobError):
    """A job cannot be (re-)run in its current state, e.g. it is still queued or running."""
