"""The rq worker ``crowdqa worker`` runs against ``CROWDQA_REDIS_URL``.

Each job runs in a forked work horse (rq's ``Worker``), so a job that exhausts memory or
is killed takes only its horse: the worker records the failure on the job row at once
(:meth:`CrowdqaWorker.handle_work_horse_killed`). A worker killed outright is noticed by
the job's missing heartbeats (the API marks it abandoned) and later by rq's registry cleanup.

Nothing a horse inherits is shared with its parent: the database engines give a forked child an empty pool
(:func:`crowdqa.store.db._after_fork`), redis-py's pool opens new connections in a new pid, and the parent
runs no thread of its own. The worker outlives its services: rq's own loop quits when Redis vanishes under
a job, so :func:`run_worker` waits for Redis with backoff and serves again (one log line when an outage starts
and one when it ends), and a job's database writes wait out a PostgreSQL restart
(:data:`crowdqa.jobs.tasks.DB_PATIENCE`). :func:`supervise` runs ``--processes N`` such workers and starts
again any that exits.
"""

from __future__ import annotations

import faulthandler
import importlib
import logging
import multiprocessing
import os
import signal
import time

import redis
from rq import Worker
from rq.serializers import JSONSerializer

from crowdqa.aggregation.registry import METHODS, load_entry_points
from crowdqa.jobs.queue import PromptUnsubscribe, get_queue, redis_connection
from crowdqa.jobs.tasks import fail_or_requeue
from crowdqa.store.db import get_engine
from crowdqa.store.errors import ConfigurationError
from crowdqa.store.settings import Settings, get_settings, masked_url

__all__ = ["CrowdqaWorker", "run_worker", "supervise"]

logger = logging.getLogger("crowdqa.worker")

#: Backoff between attempts to reach Redis again, and between restarts of a supervised process (seconds).
BACKOFF_START, BACKOFF_MAX = 0.5, 10.0
#: A supervised process that ran this long before exiting restarts at once (its backoff starts over).
HEALTHY_AFTER = 30.0


class CrowdqaWorker(PromptUnsubscribe, Worker):
    """rq's forking worker that records a killed work horse on the job row, and remembers a stop request (rq
    says so only while a job runs: an idle worker's loop just ends, as it does when Redis vanishes)."""

    stop_asked = False

    def request_stop(self, signum, frame) -> None:
        self.stop_asked = True
        super().request_stop(signum, frame)

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
    load_entry_points()  # the methods installed packages declare: every work horse inherits them
    for entry in METHODS.values():
        importlib.import_module(entry.module)


def _check(settings: Settings) -> redis.Redis:
    """The database schema (created or checked) and a Redis that answers, or a one-line ConfigurationError."""
    get_engine(settings)
    connection = redis_connection(settings)
    try:
        connection.ping()
    except redis.exceptions.RedisError as exc:
        raise ConfigurationError(f"cannot reach Redis at {masked_url(settings.redis_url)} (CROWDQA_REDIS_URL): "
                                 f"{_first_line(exc)}") from None
    return connection


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _StopFlag:
    """SIGTERM / SIGINT outside rq's loop (while waiting for Redis, or supervising). The handler only sets a
    boolean: an Event set from a signal handler can deadlock with the main thread waiting on it."""

    def __init__(self) -> None:
        self.asked = False

    def _ask(self, *_) -> None:
        self.asked = True

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._ask)

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` (in short steps, to notice a stop); True if a stop was asked for."""
        deadline = time.monotonic() + seconds
        while not self.asked and time.monotonic() < deadline:
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        return self.asked


def _wait_for_redis(connection: redis.Redis, url: str, stop: _StopFlag, reason: str) -> bool:
    """Ping Redis with backoff until it answers (True) or a stop is asked for (False); log the outage once."""
    started, delay = time.monotonic(), BACKOFF_START
    logger.warning("Redis at %s unreachable (%s); retrying with backoff up to %.0f s", url, reason, BACKOFF_MAX)
    stop.install()
    while not stop.wait(delay):
        try:
            connection.ping()
        except redis.exceptions.RedisError:
            delay = min(delay * 2, BACKOFF_MAX)
            continue
        logger.warning("Redis at %s back after %.1f s; serving again", url, time.monotonic() - started)
        return True
    return False


def run_worker(settings: Settings, *, burst: bool = False, name: str | None = None) -> bool:
    """Run a worker on the settings' Redis until stopped (or until the queue is empty with ``burst``).

    When rq's loop ends for any other reason than a stop request or ``burst`` (Redis went away under a job,
    or an error in rq's bookkeeping), the worker waits for Redis and starts its loop again.
    """
    connection = _check(settings)
    _preload()
    url, stop, worked, runs = masked_url(settings.redis_url), _StopFlag(), False, 0
    while True:
        runs += 1
        # A later run takes a new name: the dead run's registration may outlive the outage in Redis.
        worker = CrowdqaWorker([get_queue(settings, connection)], connection=connection, serializer=JSONSerializer,
                               name=name if runs == 1 or name is None else f"{name}.{runs}")
        try:
            worked = worker.work(burst=burst, logging_level="INFO") or worked
            reason = "rq's worker loop ended"
        except redis.exceptions.RedisError as exc:
            reason = _first_line(exc)
        if burst or worker.stop_asked or stop.asked:
            return worked
        if not _wait_for_redis(connection, url, stop, reason):
            return worked


def _supervised(name: str | None, burst: bool) -> None:
    """One supervised worker process (spawned, not forked: it inherits nothing from the supervisor). Its own
    process group, so a Ctrl-C in a terminal reaches only the supervisor, which stops each process once (a
    second signal would be rq's cold shutdown, killing the running job)."""
    os.setpgrp()
    faulthandler.register(signal.SIGUSR2, all_threads=True)  # `kill -USR2 PID`: every thread's stack to the log
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    run_worker(get_settings(), burst=burst, name=name)


def supervise(settings: Settings, *, processes: int, burst: bool = False, name: str | None = None) -> int:
    """Run ``processes`` worker processes and start again any that exits (with backoff) until SIGTERM / SIGINT,
    which each process gets in turn (a warm stop: a running job finishes first); with ``burst``, return once
    every process has emptied the queue and quit. Returns the number of restarts."""
    _check(settings)  # fail fast, with one line, on a wrong URL or an absent Redis
    ctx = multiprocessing.get_context("spawn")
    stop = _StopFlag()
    stop.install()
    slots: list[dict] = [{"proc": None, "started": 0.0, "delay": BACKOFF_START, "due": 0.0} for _ in range(processes)]
    restarts = 0

    def start(i: int) -> None:
        proc = ctx.Process(target=_supervised, args=(f"{name}-{i}" if name else None, burst),
                           name=f"crowdqa-worker-{i}")
        proc.start()
        slots[i].update(proc=proc, started=time.monotonic())

    for i in range(processes):
        start(i)
    logger.warning("supervising %d worker processes (pids %s)", processes,
                   ", ".join(str(s["proc"].pid) for s in slots))
    while not stop.wait(0.5):
        now = time.monotonic()
        for i, slot in enumerate(slots):
            proc = slot["proc"]
            if proc is not None and proc.is_alive():
                continue
            if proc is not None:  # it has just exited
                proc.join()
                slot["proc"] = None
                if burst and proc.exitcode == 0:
                    slot["due"] = float("inf")
                    continue
                ran = now - slot["started"]
                slot["delay"] = BACKOFF_START if ran >= HEALTHY_AFTER else min(slot["delay"] * 2, BACKOFF_MAX)
                slot["due"] = now + (0 if ran >= HEALTHY_AFTER else slot["delay"])
                logger.warning("worker process %d (pid %d) exited with %s after %.0f s; restarting in %.1f s",
                               i, proc.pid, proc.exitcode, ran, slot["due"] - now)
            if now >= slot["due"]:
                start(i)
                restarts += 1
        if burst and all(s["proc"] is None and s["due"] == float("inf") for s in slots):
            return restarts
    for slot in slots:
        if slot["proc"] is not None and slot["proc"].is_alive():
            slot["proc"].terminate()  # SIGTERM: rq's warm shutdown
    for slot in slots:
        if slot["proc"] is not None:
            slot["proc"].join()
    return restarts
