"""The poll (``GET /jobs/{id}``), the request clients send most: what it asks of the database and of worker threads,
without checking the key any less (issue 27: poll p99 under load)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import anyio.to_thread
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlmodel import Session

from crowdqa.jobs import keys as key_cases
from crowdqa.store.db import get_engine
from tests.api.conftest import auth, sample_dataset, wait_job
from tests.utils.factories import project_with_key


@contextmanager
def _statements(settings) -> Iterator[list[tuple[str, bool]]]:
    """Every SQL statement the process sends while inside, with whether its driver connection was in autocommit
    (psycopg's ``autocommit``: no BEGIN is sent before it)."""
    engine, seen = get_engine(settings), []

    def record(conn, _cursor, statement, _params, _context, _many) -> None:
        seen.append((statement, bool(getattr(conn.connection.dbapi_connection, "autocommit", False))))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def _finished_job(client, key: str) -> str:
    ds = sample_dataset(client, key, experts=False)
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    return job


@pytest.mark.postgres
def test_a_poll_on_postgres_is_two_statements_outside_a_transaction(pg_settings):
    """On PostgreSQL a poll reads the key with its project in one statement and the job in another, each on its
    own (autocommit: no BEGIN and ROLLBACK round trips); before, three statements inside a transaction."""
    from crowdqa.api.main import app

    with Session(get_engine(pg_settings)) as s:
        _, key = project_with_key(s, "poll")
    with TestClient(app) as client:
        job = _finished_job(client, key)
        with _statements(pg_settings) as seen:
            r = client.get(f"/api/v1/jobs/{job}", headers=auth(key))
        assert r.status_code == 200 and r.json()["status"] == "finished"
        assert r.headers["content-type"] == "application/json"
    assert len(seen) == 2, [s for s, _ in seen]
    assert "apikey" in seen[0][0] and "project" in seen[0][0] and "FROM job" in seen[1][0]
    assert all(autocommit for _, autocommit in seen)


def test_the_key_is_checked_once_per_request_and_a_revoked_key_at_once(client, keys, settings):
    """A key the request gate has not seen is checked by the gate, and the route takes the caller the gate found
    (one lookup, not two); a key the gate remembers is checked by the route. Revoking a key still refuses its very
    next request, within the gate's memory."""
    job = _finished_job(client, keys["a"])
    with Session(get_engine(settings)) as s:
        made = key_cases.create_key(session=s, project_name="a")
    for _ in range(2):  # first: the gate asks the database; then: the gate remembers, the route asks
        with _statements(settings) as seen:
            r = client.get(f"/api/v1/jobs/{job}", headers=auth(made.key))
        assert r.status_code == 200
        assert sum("apikey" in statement for statement, _ in seen) == 1, seen
    with Session(get_engine(settings)) as s:
        assert key_cases.revoke_key(session=s, prefix=made.prefix)
    r = client.get(f"/api/v1/jobs/{job}", headers=auth(made.key))
    assert r.status_code == 401 and r.headers["content-type"].startswith("application/problem+json")
    assert client.get(f"/api/v1/jobs/{job}", headers=auth(keys["b"])).status_code == 404  # another project's key


def _thread_handovers(client, url: str, key: str, monkeypatch) -> tuple[list[str], dict]:
    """The worker-thread hand-overs one GET of ``url`` makes, and its JSON answer."""
    calls = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func, *args, **kwargs):
        calls.append(repr(func)[:80])
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    try:
        r = client.get(url, headers=auth(key))
    finally:
        monkeypatch.undo()
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    return calls, r.json()


def test_a_poll_hands_work_to_worker_threads_at_most_three_times(client, keys, monkeypatch):
    """Under load every hand-over to a worker thread and back waits for the CPU: a poll makes at most three (the key
    when the gate remembered it, the job and its answer, closing the session), where it made nine; the answer is
    the job as before."""
    job = _finished_job(client, keys["a"])
    before = client.get(f"/api/v1/jobs/{job}", headers=auth(keys["a"])).json()
    calls, body = _thread_handovers(client, f"/api/v1/jobs/{job}", keys["a"], monkeypatch)
    assert body == before and body["status"] == "finished"
    assert len(calls) <= 3, calls


def test_the_worker_page_is_validated_once(client, keys, monkeypatch):
    """``GET /jobs/{id}/workers`` validates its rows once and encodes the page itself: no second validation of the
    whole page as the response model in another thread (4-5x the time of the first, measured on 1000 rows)."""
    job = _finished_job(client, keys["a"])
    calls, body = _thread_handovers(client, f"/api/v1/jobs/{job}/workers?sort=annotator&limit=5", keys["a"],
                                    monkeypatch)
    assert not any("validate" in c for c in calls), calls
    names = [w["annotator"] for w in body["data"]]
    assert body["count"] == 10 and len(names) == 5 and names == sorted(names)  # the sample's ten crowd workers
    assert all(w["detail"]["annotator"] == w["annotator"] and w["detail"]["vs_expert"] is None for w in body["data"])
