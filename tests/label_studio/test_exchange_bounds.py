"""A pull or push is bounded in time and bytes against a Label Studio that misbehaves (issue 47), on real loopback
servers (tests/utils/fake_servers.py) and on the httpx fake of test_pull_guards.py.

Oracles: the wall clock (a bound of time is met when the call returns within it, with a slack for a loaded
machine), the server's own count of what it sent or was asked, and the database's count of upload requests and
of connections checked out of its pool.
"""

from __future__ import annotations

import functools
import time

import httpx
import pytest
from sqlmodel import Session, select

from crowdqa.ingest.label_studio_api import ExchangeLimits, LabelStudio, LabelStudioError
from crowdqa.store.db import get_engine
from crowdqa.store.models import UploadAttempt
from crowdqa.store.settings import get_settings
from tests.label_studio.conftest import CHOICE_CONFIG
from tests.label_studio.test_pull_guards import CROWD, PROJECT, TOKEN, FakeLabelStudio, choice_tasks
from tests.utils.factories import auth
from tests.utils.fake_servers import HugeServer, TricklingServer

#: Seconds a bounded call may overrun its bound on a loaded 2-core machine (thread switches, a last read).
SLACK = 1.0
MIB = 1 << 20


def _timed(call):
    start = time.monotonic()
    with pytest.raises(LabelStudioError) as caught:
        call()
    return time.monotonic() - start, str(caught.value)


def test_a_trickling_answer_ends_at_the_request_timeout_not_per_read():
    """A byte every 0.5 s never lets a per-read timeout of 2 s fire (the issue's pull ran 60 s on a 30 s timeout);
    the request's own deadline does."""
    with TricklingServer(interval=0.5).running() as server:
        client = LabelStudio(server.url, TOKEN, limits=ExchangeLimits(timeout=2.0, deadline=60.0))
        with client:
            took, message = _timed(lambda: client.project(PROJECT))
    assert 2.0 - 0.1 <= took <= 2.0 + SLACK, took
    assert "CROWDQA_LABEL_STUDIO_TIMEOUT" in message and "from connecting to the answer's last byte" in message
    assert server.sent >= 2  # it did trickle


def test_the_whole_exchange_ends_at_its_deadline():
    with TricklingServer(interval=0.5).running() as server:
        client = LabelStudio(server.url, TOKEN, limits=ExchangeLimits(timeout=30.0, deadline=1.5))
        with client:
            took, message = _timed(lambda: client.project(PROJECT))
    assert took <= 1.5 + SLACK, took
    assert "CROWDQA_LABEL_STUDIO_DEADLINE" in message


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_huge_answer_is_refused_as_it_streams(chunked):
    """A 400 MiB answer against an 8 MiB cap: refused naming the setting, and the server could send no more than
    the cap and the sockets' buffers before the client hung up (with a Content-Length over the cap: nothing of
    the body is read)."""
    with HugeServer(size=400 * MIB, chunked=chunked).running() as server:
        client = LabelStudio(server.url, TOKEN, limits=ExchangeLimits(max_answer_bytes=8 * MIB))
        with client:
            _, message = _timed(lambda: client.project(PROJECT))
            assert client.received == 0
    assert "CROWDQA_LABEL_STUDIO_MAX_ANSWER_BYTES" in message and str(8 * MIB) in message
    assert server.sent < 8 * MIB + 16 * MIB, server.sent


def test_every_answer_of_an_exchange_counts_against_its_total():
    fake = FakeLabelStudio(CHOICE_CONFIG, choice_tasks(CROWD))
    limits = ExchangeLimits(max_total_bytes=1500)
    with LabelStudio("http://label-studio.test", TOKEN, limits=limits, transport=httpx.MockTransport(fake)) as c:
        c.project(PROJECT)  # a few hundred bytes
        _, message = _timed(lambda: list(c.tasks(PROJECT)))
    assert "CROWDQA_LABEL_STUDIO_MAX_PULL_BYTES" in message


def test_a_compressed_answer_is_refused():
    """The client asks for a plain answer (a compressed one would be counted as it came, not as it inflates)."""
    def gzipped(request: httpx.Request) -> httpx.Response:
        assert request.headers["accept-encoding"] == "identity"
        return httpx.Response(200, headers={"content-encoding": "gzip"}, content=b"\x1f\x8b")

    with LabelStudio("http://label-studio.test", TOKEN, transport=httpx.MockTransport(gzipped)) as c:
        _, message = _timed(lambda: c.project(PROJECT))
    assert "compressed (gzip)" in message


def _attempts(settings) -> int:
    with Session(get_engine(settings)) as s:
        return len(s.exec(select(UploadAttempt)).all())


@pytest.fixture
def key(settings):
    from tests.utils.factories import project_with_key

    with Session(get_engine(settings)) as s:
        return project_with_key(s, "a")[1]


def _pull(client, key: str, url: str, **body):
    return client.post("/api/v1/label-studio/pulls", headers=auth(key),
                       json={"url": url, "token": TOKEN, "project": PROJECT, "dataset": "ls", **body})


def test_a_pull_from_a_slow_server_is_a_422_naming_the_setting_and_counted(client, key, monkeypatch):
    monkeypatch.setenv("CROWDQA_LABEL_STUDIO_TIMEOUT", "1")
    get_settings.cache_clear()
    settings = get_settings()
    with TricklingServer(interval=0.3).running() as server:
        took = []
        for _ in range(2):  # the first request of a test client also loads what the route needs
            start = time.monotonic()
            r = _pull(client, key, server.url)
            took.append(time.monotonic() - start)
            assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
            assert "CROWDQA_LABEL_STUDIO_TIMEOUT" in r.json()["detail"]
    assert took[1] <= 1 + SLACK, took
    assert _attempts(settings) == 2


def test_a_pull_at_the_hourly_limit_sends_nothing(client, key, monkeypatch):
    """Issue 47 item 3: a pull is counted, and refused at the project's limit, before its first request to Label
    Studio; failing pulls count too."""
    monkeypatch.setenv("CROWDQA_MAX_UPLOADS_PER_HOUR", "2")
    get_settings.cache_clear()
    settings = get_settings()
    with HugeServer(size=MIB).running() as server:  # every pull of it fails: the answer is no project
        monkeypatch.setenv("CROWDQA_LABEL_STUDIO_MAX_ANSWER_BYTES", str(MIB // 2))
        get_settings.cache_clear()
        codes = [_pull(client, key, server.url).status_code for _ in range(3)]
        asked = list(server.requests)
    assert codes == [422, 422, 429]
    assert asked == ["GET /api/projects/7"] * 2  # the third was refused before it asked
    assert _attempts(settings) == 2  # (a request refused at the limit is not one more of it)


def test_no_database_connection_is_held_while_label_studio_is_asked(client, key, monkeypatch, settings):
    """Every request the fake Label Studio receives during a pull finds the pool with no connection checked out
    (the test client's own requests are done): the pull's session ended its transaction before asking."""
    engine = get_engine(get_settings())
    fake = FakeLabelStudio(CHOICE_CONFIG, choice_tasks(CROWD))
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, engine.pool.checkedout()))
        return fake(request)

    monkeypatch.setattr(LabelStudio, "__init__",
                        functools.partialmethod(LabelStudio.__init__, transport=httpx.MockTransport(handler)))
    r = _pull(client, key, "http://label-studio.test:8080")
    assert r.status_code == 200, r.text
    assert seen and all(out == 0 for _, out in seen), seen
    r = _pull(client, key, "http://label-studio.test:8080", full=True)  # a re-pull: the link's held tasks
    assert r.status_code == 200, r.text
    assert all(out == 0 for _, out in seen), seen
