"""Engines and schema: build an engine from settings, create or check the schema at start."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
import weakref
from collections.abc import Callable
from functools import lru_cache
from typing import TypeVar

from sqlalchemy import DateTime, event, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import (
    ArgumentError,
    DBAPIError,
    IntegrityError,
    NoSuchModuleError,
    OperationalError,
    ProgrammingError,
)
from sqlmodel import Session, SQLModel, create_engine, select

from crowdqa.store import models  # noqa: F401  (registers the tables on SQLModel.metadata)
from crowdqa.store.errors import ConfigurationError, SchemaVersionError
from crowdqa.store.models import SCHEMA_VERSION, SchemaInfo
from crowdqa.store.private import make_private_dir, prepare_sqlite_file
from crowdqa.store.settings import Settings, masked_url

__all__ = ["make_engine", "init_db", "get_engine", "open_session", "open_read_session", "MIGRATIONS", "outage",
           "with_session_retry"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    # WAL lets the API read while a worker process writes; busy_timeout waits out short locks
    # instead of failing with "database is locked"; SQLite enforces foreign keys only when asked.
    cur = dbapi_connection.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


#: Every engine this process built: a forked child must not use their pooled connections (see _after_fork).
_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


def _after_fork() -> None:
    """In a forked child (rq's work horse), give every engine a new, empty pool.

    A pooled connection is a socket and a server session: parent and child would both talk on it, and
    psycopg's automatically prepared statements (``_pg3_0``...) would be made twice in one server session,
    failing every job after the first with DuplicatePreparedStatement. ``dispose(close=False)`` drops the
    child's references without closing them (closing would end the parent's session too); the child opens
    its own connections on first use. This is SQLAlchemy's documented recipe for pools across ``fork``
    ("Using Connection Pools with Multiprocessing or os.fork()"), chosen over turning prepared statements
    off because sharing a socket is wrong with or without them; and over disposing in the worker only,
    because every fork of a process that has used the database needs it.
    """
    for engine in list(_engines):
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_after_fork)


def make_engine(settings: Settings) -> Engine:
    """Build the engine for ``settings.database_url`` (SQLite: the data dir and the file are created private)."""
    url = settings.database_url
    assert url is not None  # filled in by Settings
    if url.startswith("sqlite"):
        make_private_dir(settings.data_dir)
        prepare_sqlite_file(url)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    _engines.add(engine)
    return engine


def init_db(engine: Engine) -> None:
    """Create missing tables and record the schema version; refuse a database of another version.

    Several processes may start on a new database at once (``crowdqa serve`` and its workers):
    the loser of a race to create a table or the version row tries again and finds them made.
    """
    for attempt in range(5):
        try:
            _init_db_once(engine)
            return
        except (IntegrityError, OperationalError, ProgrammingError):
            if attempt == 4:
                raise
            time.sleep(0.1 * (attempt + 1))


def _keys_get_scopes_and_expiry(conn: Connection) -> None:
    """3 -> 4: keys gain ``admin`` and ``expires_at``; the dashboard's session table is new (create_all).

    Every key that exists becomes an admin key: before version 4 any key could create and revoke
    keys, so a deployment's rotation scripts keep working; the operator narrows them by making
    ordinary keys and revoking the old ones. No key expires.
    """
    when = DateTime(timezone=True).compile(dialect=conn.dialect)
    conn.execute(text("ALTER TABLE apikey ADD COLUMN admin BOOLEAN NOT NULL DEFAULT TRUE"))
    conn.execute(text(f"ALTER TABLE apikey ADD COLUMN expires_at {when}"))


def _jobs_get_auto_and_compare(conn: Connection) -> None:
    """4 -> 5: a job's method may be ``auto`` or ``compare`` (issue 29). PostgreSQL keeps the method as a native
    enum type, which gains the two values; SQLite keeps it as text, which needs nothing."""
    if conn.dialect.name == "postgresql":
        for value in ("auto", "compare"):
            conn.execute(text(f"ALTER TYPE method ADD VALUE IF NOT EXISTS '{value}'"))


def _job_methods_become_text(conn: Connection) -> None:
    """5 -> 6: a job's method becomes text checked by the application (issue 45), so a method registered later
    needs no migration.

    Version 5 kept the enum member's *name* (the id with ``_`` for ``-``: ``hmm_crowd``); no id had an underscore,
    so replacing each ``_`` by ``-`` gives the id back. PostgreSQL's native enum type ``method`` is converted to
    text and dropped; SQLite kept the names as text already and only has them rewritten.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(text("ALTER TABLE job ALTER COLUMN method TYPE VARCHAR(64) USING replace(method::text, '_', '-')"))
        conn.execute(text("DROP TYPE IF EXISTS method"))
    else:
        conn.execute(text("UPDATE job SET method = replace(method, '_', '-')"))


#: The steps from an older schema version to the next, applied in order at start.
MIGRATIONS = {3: _keys_get_scopes_and_expiry, 4: _jobs_get_auto_and_compare, 5: _job_methods_become_text}


def _init_db_once(engine: Engine) -> None:
    SQLModel.metadata.create_all(engine)
    with Session(engine) as session:
        info = session.exec(select(SchemaInfo)).first()
        version = None if info is None else info.version
    if version is None:
        with Session(engine) as session:
            session.add(SchemaInfo(id=1, version=SCHEMA_VERSION))
            session.commit()
        return
    while version in MIGRATIONS and version < SCHEMA_VERSION:
        with engine.begin() as conn:  # one step, one transaction (PostgreSQL: the DDL too)
            MIGRATIONS[version](conn)
            conn.execute(text("UPDATE crowdqa_schema SET version = :new WHERE version = :old"),
                         {"new": version + 1, "old": version})
        version += 1
    with Session(engine) as session:
        info = session.exec(select(SchemaInfo)).first()
        if info.version != SCHEMA_VERSION:
            raise SchemaVersionError(
                f"database schema version {SCHEMA_VERSION} expected, found {info.version}: "
                "migrate the database or point CROWDQA_DATABASE_URL at a new one"
            )


@lru_cache(maxsize=8)
def _engine_for(url: str, data_dir: str) -> Engine:
    settings = Settings(database_url=url, data_dir=data_dir)
    engine = make_engine(settings)
    init_db(engine)
    return engine


def get_engine(settings: Settings) -> Engine:
    """The initialised engine of these settings, built once per process and URL.

    A database URL that cannot be used (unsupported, unreachable, refused) raises
    :class:`~crowdqa.store.errors.ConfigurationError` with one line saying what to fix.
    """
    url = masked_url(settings.database_url)
    try:
        return _engine_for(settings.database_url, str(settings.data_dir))
    except (ArgumentError, NoSuchModuleError, ImportError) as exc:
        raise ConfigurationError(
            f"CROWDQA_DATABASE_URL {url!r} is not a supported database URL ({str(exc).splitlines()[0]}); use "
            "sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST/DATABASE") from None
    except OperationalError as exc:
        reason = str(exc.orig if exc.orig is not None else exc).strip().splitlines()[0]
        raise ConfigurationError(f"cannot use the database {url} (CROWDQA_DATABASE_URL): {reason}") from None



def open_session(settings: Settings) -> Session:
    """A new session on the initialised database of ``settings`` (use it in a ``with`` block)."""
    return Session(get_engine(settings))


@lru_cache(maxsize=8)
def _autocommit(engine: Engine) -> Engine:
    return engine.execution_options(isolation_level="AUTOCOMMIT")


def open_read_session(settings: Settings) -> Session:
    """A new session for reading only: each statement commits on its own, so no BEGIN and no ROLLBACK travel to
    the server (on PostgreSQL two of a poll's six round trips). What it reads is what a transaction would read:
    PostgreSQL's default READ COMMITTED gives every statement its own snapshot inside a transaction too, and
    SQLite's driver starts no transaction for a SELECT. Writing through it would commit statement by statement,
    so only reads use it (a GET never writes: :mod:`crowdqa.jobs.reconcile`)."""
    return Session(_autocommit(get_engine(settings)))


def outage(exc: BaseException) -> bool:
    """True if ``exc`` says the database server cannot be reached now (down, restarting, connection cut).

    SQLite has no server: its OperationalErrors (a locked file, a missing table) are not outages, and its
    busy timeout already waits out a lock.
    """
    if not isinstance(exc, DBAPIError):
        return False
    return exc.connection_invalidated or (isinstance(exc, OperationalError) and not isinstance(exc.orig, sqlite3.Error))


def with_session_retry(settings: Settings, action: Callable[[Session], T], *, what: str, patience: float) -> T:
    """``action(session)`` on a new session, tried again with backoff (0.2 s doubling to 5 s) while the database
    is unreachable, for up to ``patience`` seconds; then the last error is raised.

    One warning when an outage starts and one line when it ends, not one per attempt. Each attempt opens a new
    session, and the pool's pre-ping replaces connections the restarted server cut.
    """
    deadline = time.monotonic() + patience
    delay, started = 0.2, None
    while True:
        try:
            with open_session(settings) as session:
                result = action(session)
        except DBAPIError as exc:
            if not outage(exc) or time.monotonic() + delay > deadline:
                raise
            if started is None:
                started = time.monotonic()
                reason = str(exc.orig if exc.orig is not None else exc).strip().splitlines()[0]
                logger.warning("database unreachable while %s (%s); retrying for up to %.0f s", what, reason,
                               patience)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
            continue
        if started is not None:
            logger.warning("database back after %.1f s; %s done", time.monotonic() - started, what)
        return result
