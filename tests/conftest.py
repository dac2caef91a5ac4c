"""Shared fixtures: the seed, ../shared/data, and one real Redis and PostgreSQL per test session."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def seed() -> int:
    """A seed from CROWDQA_SEED, or a fresh one that is printed so a failure can be replayed."""
    value = os.environ.get("CROWDQA_SEED")
    s = int(value) if value else random.SystemRandom().randrange(2**31)
    print(f"CROWDQA_SEED={s}")
    return s


@pytest.fixture
def shared_data() -> Path:
    """The real data folder beside the project; skip (with a message) where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA} (set CROWDQA_SHARED_DATA or place ../shared/data)")
    return SHARED_DATA


def shared_path(*parts: str) -> Path:
    """A path inside ../shared/data, skipping the calling test where it is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not found: {p} is absent")
    return p


@pytest.fixture(scope="session")
def postgres_url():
    """A real PostgreSQL started for this session (skips with a message where it is not installed)."""
    from tests.utils.services import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def redis_url_session():
    """A real redis-server on a free port for this session (skips with a message where it is absent)."""
    from tests.utils.services import redis_server

    with redis_server() as url:
        yield url


@pytest.fixture
def redis_url(redis_url_session):
    """The session's Redis, flushed before and after the test (rq's own test convention)."""
    import redis

    conn = redis.Redis.from_url(redis_url_session)
    conn.flushdb()
    yield redis_url_session
    conn.flushdb()
