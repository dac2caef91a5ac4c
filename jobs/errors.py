"""Job errors: one name per failure."""

from __future__ import annotations

__all__ = ["JobError", "QueueUnavailableError", "QueueInstallError", "JobNotRunnableError", "JobNotFinishedError",
           "DatasetBusyError",
           "JobCancelled", "UploadConflictError", "JobParamsError", "JobModelMissingError", "KeyRefusedError",
           "KeyScopeError", "QuotaExceededError", "BudgetExceededError"]


class JobError(Exception):
    """Base class of the jobs package's errors."""


class QueueUnavailableError(JobError):
    """The job queue (Redis) cannot be reached; the job was kept and can be enqueued again."""


class QueueInstallError(JobError):
    """The in-process queue cannot start: the installed redis, fakeredis and rq do not work together."""


class JobNotRunnableError(JobError):
    """A job cannot be (re-)run in its current state, e.g. it is still queued or running."""


class JobNotFinishedError(JobNotRunnableError):
    """An action that needs a finished job's results (its report, workers or labels; routing; a model to start
    from) on a job that is not."""


class NoComparisonError(JobNotRunnableError):
    """The job has no comparison: it ran one method, or chose ``auto``'s default without experts (409)."""


class DatasetBusyError(JobError):
    """A dataset that cannot be deleted now: one of its jobs is running."""


class JobModelMissingError(JobNotRunnableError):
    """A finished job that kept no fitted model (its method keeps none, or it finished before models were kept)."""


class UploadConflictError(JobError):
    """An upload that does not fit the dataset (another kind of labels, or the same file again)."""


class JobParamsError(JobError, ValueError):
    """A method parameter the aggregator does not take, or of the wrong type; ``field`` names it."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class KeyRefusedError(JobError):
    """An API key that authenticates nothing: malformed, unknown (or revoked), or expired; the message says which."""


class KeyScopeError(JobError):
    """A key that may not do this: only an admin key creates and revokes keys."""


class QuotaExceededError(JobError):
    """A per-project limit (``CROWDQA_MAX_*``) is reached; ``retry_after`` says in how many seconds to try again."""

    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, int(retry_after))


class BudgetExceededError(JobError):
    """A running job used more CPU time than ``CROWDQA_JOB_CPU_SECONDS``: it fails for good with this reason."""


class JobCancelled(BaseException):  # noqa: N818 - a signal to unwind, like KeyboardInterrupt
    """Raised inside a running job at a checkpoint when it was deleted or the service is stopping.

    A BaseException, so that no ``except Exception`` on the way up swallows it.
    ``requeue`` is True when the job should run again (the service stopped under it).
    """

    def __init__(self, reason: str, *, requeue: bool = False) -> None:
        super().__init__(reason)
        self.requeue = requeue
