"""How many requests to another server (a Label Studio pull or push) one project may have under way at once.

A pull or push waits on a server crowdqa does not run; a slow one holds an API thread for as long as its deadline
(``CROWDQA_LABEL_STUDIO_DEADLINE``) allows. So each project may run ``CROWDQA_LABEL_STUDIO_CONCURRENCY`` of them
at once; past that the request is refused with :class:`~crowdqa.jobs.errors.QuotaExceededError` (the API's 429
with ``Retry-After``) before anything is sent.

The count lives in Redis, so every API process of a production server sees the same one: a sorted set per project
whose members are the exchanges under way, each scored by the instant it must be over by (its deadline and a
margin). An exchange removes its member when it ends; one whose process died is dropped when its instant passes, so
a crash costs a slot for one deadline at most. The embedded server keeps the same set in its in-process Redis
(fakeredis, :func:`crowdqa.jobs.queue.redis_connection`).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from crowdqa.jobs.errors import QuotaExceededError
from crowdqa.jobs.queue import redis_connection
from crowdqa.store.settings import Settings

__all__ = ["exchange_slot", "SLOT_MARGIN"]

#: Seconds an exchange's slot outlives its deadline (the work before and after its requests: reading the
#: database, parsing, storing).
SLOT_MARGIN = 120.0


def _key(project_id: str) -> str:
    return f"crowdqa:exchanges:{project_id}"


@contextmanager
def exchange_slot(*, settings: Settings, project_id: str, what: str) -> Iterator[None]:
    """Hold one of the project's ``label_studio_concurrency`` slots while the block runs; QuotaExceededError (429)
    when they are all taken, its ``retry_after`` the seconds until the soonest of them lapses at the latest.

    ``what`` (``"pull"``, ``"push"``) only words the refusal.
    """
    r = redis_connection(settings)
    key, member = _key(project_id), uuid.uuid4().hex
    now = time.time()
    hold = settings.label_studio_deadline + SLOT_MARGIN
    with r.pipeline(transaction=True) as p:
        p.zremrangebyscore(key, "-inf", now)  # the slots of exchanges whose process died
        p.zadd(key, {member: now + hold})
        p.zcard(key)
        p.expire(key, math.ceil(hold))
        _, _, taken, _ = p.execute()
    if taken > settings.label_studio_concurrency:
        r.zrem(key, member)
        soonest = r.zrange(key, 0, 0, withscores=True)
        wait = soonest[0][1] - now if soonest else 1
        raise QuotaExceededError(
            f"the project has {taken - 1} pulls or pushes of Label Studio under way, its limit "
            f"(CROWDQA_LABEL_STUDIO_CONCURRENCY = {settings.label_studio_concurrency}): this {what} waits for one "
            "to end", retry_after=min(math.ceil(wait), math.ceil(settings.label_studio_timeout)))
    try:
        yield
    finally:
        r.zrem(key, member)
