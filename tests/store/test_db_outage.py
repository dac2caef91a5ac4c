"""store.db's care for workers: a forked child gets its own connections; a database outage is waited out."""

from __future__ import annotations

import os
import sqlite3

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from crowdqa.store.db import get_engine, outage, with_session_retry
from crowdqa.store.settings import Settings


def _down() -> OperationalError:
    return OperationalError("SELECT 1", {}, Exception("connection refused"))


def test_with_session_retry_waits_out_an_outage_once_logged(tmp_path, caplog):
    """Two failed attempts (the server down), then the answer; one warning as it starts, one line as it ends."""
    settings = Settings(data_dir=tmp_path)
    calls = []

    def action(session):
        calls.append(1)
        if len(calls) < 3:
            raise _down()
        return session.exec(text("SELECT 41 + 1")).one()[0]

    assert with_session_retry(settings, action, what="testing", patience=10) == 42
    assert len(calls) == 3
    lines = [r.getMessage() for r in caplog.records if r.name == "crowdqa.store.db"]
    assert len(lines) == 2 and "unreachable while testing" in lines[0] and "back after" in lines[1], lines


def test_with_session_retry_gives_up_and_never_retries_other_errors(tmp_path):
    settings = Settings(data_dir=tmp_path)
    with pytest.raises(OperationalError):
        with_session_retry(settings, lambda s: (_ for _ in ()).throw(_down()), what="testing", patience=0.5)
    calls = []

    def locked(session):
        calls.append(1)
        raise OperationalError("UPDATE", {}, sqlite3.OperationalError("database is locked"))

    with pytest.raises(OperationalError):
        with_session_retry(settings, locked, what="testing", patience=10)
    assert len(calls) == 1  # SQLite's errors are no outage: its busy timeout already waited
    assert outage(_down()) and not outage(ValueError("x"))


@pytest.mark.postgres
def test_a_forked_child_opens_its_own_postgresql_connections(tmp_path, postgres_url):
    """The child of a process that has used the database (rq's work horse) gets a connection of its own: a
    different server backend from the parent's, which keeps working after the child has used and closed its own.
    Without the fork hook the child took the parent's pooled connection (DuplicatePreparedStatement in workers)."""
    engine = get_engine(Settings(data_dir=tmp_path, database_url=postgres_url))
    with engine.connect() as c:
        parent_pid = c.execute(text("SELECT pg_backend_pid()")).scalar_one()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report the backend it talks to, then leave without running any cleanup
        try:
            with engine.connect() as c:
                os.write(write, str(c.execute(text("SELECT pg_backend_pid()")).scalar_one()).encode())
        finally:
            os._exit(0)
    os.close(write)
    child_pid = int(os.read(read, 64) or b"0")
    os.waitpid(pid, 0)
    os.close(read)
    assert child_pid and child_pid != parent_pid
    with engine.connect() as c:
        assert c.execute(text("SELECT pg_backend_pid()")).scalar_one() == parent_pid
