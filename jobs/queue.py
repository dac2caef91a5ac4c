"""The rq queue: connection, enqueueing with a timeout and a retry policy, JSON only.

Job ids in Redis are the database job ids, and Redis carries nothing but that id (rq's
JSONSerializer; never pickle): results, progress and reports live in the database. A
job row is committed *before* it is enqueued, so a worker always finds it.
"""

from __future__ import annotations

import inspect
import logging
import threading
from functools import lru_cache

import fakeredis
import redis
from redis import Redis
from redis.client import PubSubWorkerThread
from rq import Callback, Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job as RqJob
from rq.serializers import JSONSerializer

from crowdqa.jobs.errors import QueueInstallError, QueueUnavailableError
from crowdqa.store.settings import Settings

__all__ = ["PromptUnsubscribe", "TASK", "FAILURE_CALLBACK", "PRE_ANNOTATION_TASK", "PRE_ANNOTATION_FAILURE_CALLBACK",
           "redis_connection", "get_queue", "enqueue_job", "cancel_job", "queue_available", "check_embedded_queue"]

#: The task and the failure callback, by name: rq imports them in the worker.
TASK = "crowdqa.jobs.tasks.run_job"
FAILURE_CALLBACK = "crowdqa.jobs.tasks.on_job_failure"
#: The task that labels a pre-annotation's documents (:mod:`crowdqa.jobs.preannotate`), and its failure callback.
PRE_ANNOTATION_TASK = "crowdqa.jobs.tasks.run_pre_annotation"
PRE_ANNOTATION_FAILURE_CALLBACK = "crowdqa.jobs.tasks.on_pre_annotation_failure"

logger = logging.getLogger(__name__)

_fake_servers: dict[str, fakeredis.FakeServer] = {}
_fake_lock = threading.Lock()

#: Set whenever this process enqueues a job: wakes the embedded worker without waiting for its next poll.
enqueued = threading.Event()


#: redis-py 8.2's ``PubSubWorkerThread.stop`` waits for the thread (with no timeout unless given one); before, it
#: only cleared the thread's run flag.
_STOP_WAITS = "timeout" in inspect.signature(PubSubWorkerThread.stop).parameters


class PromptUnsubscribe:
    """rq's ``Worker.unsubscribe`` without its minute-long stall: mixed into every worker class of ours.

    rq (2.12) unsubscribes, then stops its pub/sub thread. When the thread reads the unsubscribe confirmation
    before the stop, it goes on to wait for a new subscription for its ``sleep_time`` (60 s), and redis-py 8.2's
    ``stop()`` waits for it without a timeout: a warm shutdown of an idle worker took up to a minute (the
    supervised pool's SIGTERM, the embedded worker at server exit). Here the thread's run flag is cleared first,
    so the confirmation ends its loop, and the wait is bounded either way (the thread is a daemon).
    """

    def unsubscribe(self) -> None:
        thread = getattr(self, "pubsub_thread", None)
        if not thread:
            return
        self.log.info("Worker %s: unsubscribing from channel %s", self.name, self.pubsub_channel_name)
        if _STOP_WAITS:
            thread.stop(timeout=0)
        else:
            thread.stop()
        self.pubsub.unsubscribe()
        thread.join(timeout=1)
        self.pubsub.close()


def _fake_server(key: str) -> fakeredis.FakeServer:
    # One in-memory server per data directory and process: the API and the embedded
    # worker thread must share it (each FakeRedis() without a server is its own island).
    with _fake_lock:
        if key not in _fake_servers:
            _fake_servers[key] = fakeredis.FakeServer()
        return _fake_servers[key]


@lru_cache(maxsize=8)
def _real_connection(url: str) -> Redis:
    # Short timeouts so the API answers 503 quickly instead of hanging when Redis is down.
    return Redis.from_url(url, socket_connect_timeout=2, socket_timeout=10, health_check_interval=30)


def redis_connection(settings: Settings) -> Redis:
    """The Redis of ``CROWDQA_REDIS_URL``, or the process's in-memory fakeredis when embedded."""
    if settings.redis_url:
        return _real_connection(settings.redis_url)
    return _fake_connection(str(settings.data_dir.resolve()))


@lru_cache(maxsize=8)
def _fake_connection(key: str) -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(server=_fake_server(key))


#: The packages the in-process queue is made of, and the command that installs the versions tested together.
QUEUE_PACKAGES = ("redis", "fakeredis", "rq")
REPAIR = "bash scripts/install.sh locks/run.txt (in a checkout; elsewhere: pip install -r locks/run.txt)"


def check_embedded_queue(settings: Settings) -> None:
    """Start the in-process queue once and put a job key through it; raise :class:`QueueInstallError` if it fails.

    A fresh install that resolved its own versions can pair a redis and a fakeredis that do not work together
    (redis 8.2.0 with fakeredis 2.40.0 fails in ``FakeRedis()``); the message names the installed versions and
    the command that installs the locked ones, where a bare traceback named neither.
    """
    try:
        connection = redis_connection(settings)
        connection.set("crowdqa:queue-check", "1")
        connection.delete("crowdqa:queue-check")
        get_queue(settings, connection).count  # noqa: B018 - rq's own calls on the connection, as a job's
    except Exception as exc:  # any failure here is the install's: nothing of the user's has been read yet
        _fake_connection.cache_clear()
        from importlib.metadata import PackageNotFoundError, version

        def installed(name: str) -> str:
            try:
                return f"{name} {version(name)}"
            except PackageNotFoundError:
                return f"{name} (not installed)"

        what = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise QueueInstallError(
            f"the in-process queue cannot start with {', '.join(map(installed, QUEUE_PACKAGES))} ({what[:200]}); "
            f"these versions do not work together: install the tested ones with {REPAIR}") from exc


def get_queue(settings: Settings, connection: Redis | None = None) -> Queue:
    """The ``aggregate`` queue (JSON serializer, default timeout from settings)."""
    return Queue(
        settings.queue_name,
        connection=connection if connection is not None else redis_connection(settings),
        serializer=JSONSerializer,
        default_timeout=settings.job_timeout,
    )


def _forget_executions(queue: Queue, rq_job: RqJob) -> None:
    """Remove every execution of ``rq_job`` (its hash, its execution-registry and started-registry entries).

    Done by id, without reading the executions: a worker killed mid-job leaves an execution id whose hash has
    expired, and rq's own ``remove_executions`` and ``Job.delete`` then raise ``ValueError("Execution ... not
    found in Redis")`` (which made a re-run of an abandoned job fail and stay queued). Dropping the
    started-registry entries also keeps rq's abandoned-job cleanup from mistaking a re-run for the dead run.
    """
    registry = rq_job.execution_registry
    ids = registry.get_execution_ids()
    if not ids:
        return
    composite = [f"{rq_job.id}:{execution_id}" for execution_id in ids]
    pipe = queue.connection.pipeline()
    pipe.zrem(queue.started_job_registry.key, *composite)
    pipe.delete(*(f"rq:execution:{key}" for key in composite))
    pipe.delete(registry.key)
    pipe.execute()


def cancel_job(queue: Queue, job_id: str) -> None:
    """Forget the rq job of this id (from every registry), if any; raise QueueUnavailableError if Redis is down."""
    try:
        rq_job = RqJob.fetch(job_id, connection=queue.connection, serializer=JSONSerializer)
    except NoSuchJobError:
        return
    except redis.exceptions.RedisError as exc:
        raise QueueUnavailableError(f"the job queue is unavailable: {exc}") from exc
    try:
        _forget_executions(queue, rq_job)
        rq_job.delete(remove_from_queue=True)
    except redis.exceptions.RedisError as exc:
        raise QueueUnavailableError(f"the job queue is unavailable: {exc}") from exc


def enqueue_job(queue: Queue, job_id: str, *, settings: Settings, task: str = TASK,
                on_failure: str = FAILURE_CALLBACK, what: str = "aggregate job") -> RqJob:
    """Enqueue ``task(job_id)`` (by default ``run_job``) under rq job id ``job_id``; the row must already be
    committed.

    A previous rq job of the same id (a re-run) is deleted first. Raises QueueUnavailableError when Redis
    cannot be reached or rq refuses the job (its error is logged, not passed on).
    """
    try:
        cancel_job(queue, job_id)
        rq_job = queue.enqueue(
            task,
            job_id,
            job_id=job_id,
            job_timeout=settings.job_timeout,
            retry=Retry(max=settings.job_retries) if settings.job_retries else None,
            on_failure=Callback(on_failure),
            result_ttl=24 * 3600,
            failure_ttl=7 * 24 * 3600,
            description=f"{what} {job_id}",
        )
    except redis.exceptions.RedisError as exc:
        raise QueueUnavailableError(f"the job queue is unavailable: {exc}") from exc
    except QueueUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - rq's own errors are logged here, never shown to a client as text
        logger.exception("rq refused to enqueue job %s", job_id)
        raise QueueUnavailableError("the job queue refused the job (the server log has rq's error)") from exc
    enqueued.set()
    return rq_job


def queue_available(queue: Queue) -> bool:
    """True if Redis answers a ping."""
    try:
        return bool(queue.connection.ping())
    except redis.exceptions.RedisError:
        return False
