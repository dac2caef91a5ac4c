"""The rq worker ``crowdqa worker`` runs against ``CROWDQA_REDIS_URL``.

Each job runs in a forked work horse (rq's ``Worker``), so a job that exhausts memory or
is killed takes only its horse: the worker records the failure on the job row at once
(:meth:`CrowdqaWorker.handle_work_horse_killed`). A worker killed outright is noticed by
the job's missing heartbeats (the API marks it abandoned) and later by rq's registry cleanup.
"""

from __future__ import annotations

import importlib
import signal

import redis
from rq import Worker
from rq.serializers import JSONSerializer

from crowdqa.aggregation.registry import METHODS
from crowdqa.jobs.queue import get_queue, redis_connection
from crowdqa.jobs.tasks import fail_or_requeue
from crowdqa.store.db import get_engine
from crowdqa.store.errors import ConfigurationError
from crowdqa.store.settings import Settings, get_settings, masked_url

__all__ = ["CrowdqaWorker", "run_worker"]


class CrowdqaWorker(Worker):
    """rq's forking worker that records a killed work horse on the job row."""

    def handle_work_horse_killed(self, job, retpid, ret_val, rusage) -> None:
        sig = ret_val & 0x7F if ret_val else 0
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"status {ret_val}"
        fail_or_requeue(get_settings(), job.id,
                        reason=f"abandoned: the work horse running the job was killed ({name})",
                        retries_left=int(job.retries_left or 0))
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)


def _preload() -> None:
    """Import every aggregator's module once in the parent (the task's modules come with
    :mod:`crowdqa.jobs.tasks`), so each forked work horse starts warm."""
    for module, _ in METHODS.values():
        importlib.import_module(module)


def run_worker(settings: Settings, *, burst: bool = False, name: str | None = None) -> bool:
    """Run a worker on the settings' Redis until stopped (or until the queue is empty with ``burst``)."""
    get_engine(settings)  # create or check the schema before taking jobs
    connection = redis_connection(settings)
    try:
        connection.ping()
    except redis.exceptions.RedisError as exc:
        raise ConfigurationError(f"cannot reach Redis at {masked_url(settings.redis_url)} (CROWDQA_REDIS_URL): "
                                 f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    _preload()
    worker = CrowdqaWorker([get_queue(settings, connection)], connection=connection, serializer=JSONSerializer,
                           name=name)
    return worker.work(burst=burst, logging_level="INFO")
