"""Schema migrations, on SQLite and a real PostgreSQL: a version-3 database keeps its keys at version 4; a
version-5 database's job methods become text; a method registered later is stored without a migration."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from sqlalchemy import inspect, text
from sqlmodel import Session, select

from crowdqa.aggregation.registry import METHODS, MethodEntry, register_method
from crowdqa.jobs import keys
from crowdqa.store import crud
from crowdqa.store.db import init_db
from crowdqa.store.errors import SchemaVersionError
from crowdqa.store.models import SCHEMA_VERSION, ApiKey, DatasetCreate, JobCreate, JobPublic, SchemaInfo

#: The methods of this package (those of a version-5 database's enum type).
BUILT_IN = tuple(METHODS)


@pytest.fixture
def registered_method():
    """A method registered after the database was made (a copy of Dawid-Skene under a new id), removed after."""
    register_method("ds-registered-later", MethodEntry("crowdqa.aggregation.dawid_skene", "DawidSkene",
                                                       cost=10_001, memory={"confusion": 4, "tokens": 3}))
    yield "ds-registered-later"
    del METHODS["ds-registered-later"]


def _as_version_3(engine) -> None:
    """Turn a fresh database into what version 3 made: keys without scope or expiry, no session table, job methods
    as version 4 kept them."""
    _as_version_5(engine, modes=())
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE web_session"))
        conn.execute(text("ALTER TABLE apikey DROP COLUMN admin"))
        conn.execute(text("ALTER TABLE apikey DROP COLUMN expires_at"))
        conn.execute(text("UPDATE crowdqa_schema SET version = 3"))


def test_version_3_keys_become_admin_keys_that_never_expire(engine):
    """Issue 35 item 6: keys that exist before scopes keep every right they had (any key could make keys)."""
    with Session(engine) as s:
        project = crud.create_project(session=s, name="lab")
        key = keys.create_key(session=s, project=project).key
    _as_version_3(engine)
    with engine.begin() as conn:
        assert {"admin", "expires_at"}.isdisjoint(
            {c["name"] for c in inspect(conn).get_columns("apikey")})
    init_db(engine)
    init_db(engine)  # a second start finds the current version and changes nothing
    with Session(engine) as s:
        assert s.exec(select(SchemaInfo)).one().version == SCHEMA_VERSION == 6
        row, found = keys.check_key(session=s, key=key)
        assert found.name == "lab" and row.admin is True and row.expires_at is None
        second = keys.create_key(session=s, project=project)
        assert second.admin is False  # new keys get the new rule
        assert len(s.exec(select(ApiKey)).all()) == 2


def _as_version_5(engine, *, modes: tuple[str, ...] = ("auto", "compare")) -> None:
    """Turn a fresh database into what version 5 made: a job's method kept as its enum member's name (``hmm_crowd``),
    on PostgreSQL in a native enum type ``method`` of the built-in ids and ``modes`` (version 4 had no modes)."""
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            names = ", ".join(f"'{m.replace('-', '_')}'" for m in (*BUILT_IN, *modes))
            conn.execute(text(f"CREATE TYPE method AS ENUM ({names})"))
            conn.execute(text("ALTER TABLE job ALTER COLUMN method TYPE method "
                              "USING replace(method, '-', '_')::method"))
        else:
            conn.execute(text("UPDATE job SET method = replace(method, '-', '_')"))
        conn.execute(text("UPDATE crowdqa_schema SET version = 5"))


def _jobs(session, methods) -> tuple[str, list[str]]:
    project = crud.create_project(session=session, name="lab")
    dataset = crud.create_dataset(session=session, project_id=project.id, dataset_in=DatasetCreate(name="d"))
    dataset.corpus_sha256 = "0" * 64
    return project.id, [crud.create_job(session=session, dataset=dataset, job_in=JobCreate(method=m)).id
                        for m in methods]


def _method_column(engine) -> tuple[str, list[str]]:
    """The job table's method column type, and its stored values in job id order."""
    with engine.begin() as conn:
        column = next(c for c in inspect(conn).get_columns("job") if c["name"] == "method")
        return str(column["type"]), [r[0] for r in conn.execute(text("SELECT method FROM job ORDER BY id"))]


def test_version_5_job_methods_become_text(engine):
    """Issue 45: a version-5 database's methods (enum names; on PostgreSQL a native enum) become the ids as text.

    Oracle: the ids the jobs were created with, read back by raw SQL, and the column type the database reports."""
    methods = ("hmm-crowd", "gold-mv", "mv", "auto", "compare")
    with Session(engine) as s:
        project_id, ids = _jobs(s, methods)
    _as_version_5(engine)
    assert sorted(_method_column(engine)[1]) == sorted(m.replace("-", "_") for m in methods)
    init_db(engine)
    init_db(engine)  # a second start finds the current version and changes nothing
    column_type, stored = _method_column(engine)
    assert column_type.startswith("VARCHAR") and sorted(stored) == sorted(methods)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":  # the enum type is gone
            assert conn.execute(text("SELECT count(*) FROM pg_type WHERE typname = 'method'")).scalar() == 0
    with Session(engine) as s:
        assert s.exec(select(SchemaInfo)).one().version == SCHEMA_VERSION == 6
        assert [crud.get_job(session=s, project_id=project_id, job_id=i).method for i in ids] == list(methods)


def test_version_4_jobs_can_then_run_auto_and_compare(engine):
    """Issue 29: a version-4 database (PostgreSQL: a native enum of the aggregation methods alone) takes jobs of
    auto and compare after migrating (through version 5's enum values to version 6's text)."""
    _as_version_5(engine, modes=())
    with engine.begin() as conn:
        conn.execute(text("UPDATE crowdqa_schema SET version = 4"))
    init_db(engine)
    with Session(engine) as s:
        assert s.exec(select(SchemaInfo)).one().version == SCHEMA_VERSION
        project_id, ids = _jobs(s, ("auto", "compare", "hmm-crowd"))
        s.expire_all()
        assert [crud.get_job(session=s, project_id=project_id, job_id=i).method for i in ids] == [
            "auto", "compare", "hmm-crowd"]


def test_a_method_registered_after_the_database_was_made_is_stored(engine, registered_method):
    """Issue 45 done-criterion: the job table holds a method id that did not exist when the database was made
    (no migration, no enum to extend). Oracle: the id the job was created with, read back in a new session."""
    assert registered_method not in BUILT_IN
    with Session(engine) as s:
        project_id, (job_id,) = _jobs(s, (registered_method,))
    with Session(engine) as s:
        job = crud.get_job(session=s, project_id=project_id, job_id=job_id)
        assert job.method == registered_method
        assert JobPublic.model_validate(job).method == registered_method


def test_a_method_id_that_is_not_registered_is_refused(engine):
    with pytest.raises(ValidationError, match="method must be one of mv, ds, .*, auto, compare, found 'nope'"):
        JobCreate(method="nope")


@pytest.mark.parametrize("version", [2, 7])
def test_a_version_without_a_migration_is_refused(engine, version):
    with engine.begin() as conn:
        conn.execute(text("UPDATE crowdqa_schema SET version = :v"), {"v": version})
    with pytest.raises(SchemaVersionError, match=f"found {version}"):
        init_db(engine)
