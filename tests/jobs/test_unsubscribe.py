"""A worker's warm stop does not stall in rq's pub/sub teardown (the CI failure of 2026-12-07).

rq 2.12 unsubscribes its pub/sub channel, then stops the listening thread; redis-py 8.2's ``stop()`` waits for
the thread with no timeout. When the thread has already read the unsubscribe confirmation, it waits for a new
subscription for rq's ``sleep_time`` (60 s) first: `crowdqa worker --processes 2` missed a 30 s SIGTERM deadline
under load. The oracle is rq's own ``Worker.unsubscribe`` in the same state, which takes the whole minute.
"""

from __future__ import annotations

import time

import fakeredis
import pytest
import redis
from rq import Queue

from crowdqa.jobs.embedded import ThreadWorker
from crowdqa.jobs.worker import CrowdqaWorker

#: Far below rq's 60 s stall, far above a loaded machine's scheduling delays.
BOUND = 10.0


def _connection(kind: str, request) -> redis.Redis:
    if kind == "fakeredis":
        return fakeredis.FakeRedis()
    return redis.Redis.from_url(request.getfixturevalue("redis_url"))


def _confirmed_before_stop(worker) -> None:
    """The race's losing side, made certain: the thread reads the confirmation before anyone stops it."""
    worker.subscribe()
    deadline = time.monotonic() + BOUND
    while not worker.pubsub.subscribed and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.pubsub.unsubscribe()
    while worker.pubsub.subscribed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not worker.pubsub.subscribed, "the pub/sub thread never read the confirmation"


@pytest.mark.parametrize("kind", ["redis-server", "fakeredis"])
@pytest.mark.parametrize("worker_class", [CrowdqaWorker, ThreadWorker])
def test_unsubscribe_returns_promptly_after_the_confirmation(worker_class, kind, request):
    connection = _connection(kind, request)
    worker = worker_class([Queue("unsubscribe-test", connection=connection)], connection=connection)
    _confirmed_before_stop(worker)
    started = time.monotonic()
    worker.unsubscribe()
    assert time.monotonic() - started < BOUND


@pytest.mark.parametrize("kind", ["redis-server", "fakeredis"])
def test_unsubscribe_ends_the_thread_in_the_usual_order(kind, request):
    """Unsubscribed from a listening thread, as at a warm stop: the thread itself is gone, not left behind."""
    connection = _connection(kind, request)
    worker = CrowdqaWorker([Queue("unsubscribe-test", connection=connection)], connection=connection)
    worker.subscribe()
    deadline = time.monotonic() + BOUND
    while not worker.pubsub.subscribed and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.unsubscribe()
    worker.pubsub_thread.join(BOUND)
    assert not worker.pubsub_thread.is_alive()
