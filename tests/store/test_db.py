"""Schema migrations, on SQLite and a real PostgreSQL: a version-3 database keeps its keys at version 4."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, text
from sqlmodel import Session, select

from crowdqa.jobs import keys
from crowdqa.store import crud
from crowdqa.store.db import init_db
from crowdqa.store.errors import SchemaVersionError
from crowdqa.store.models import SCHEMA_VERSION, ApiKey, DatasetCreate, JobCreate, SchemaInfo


def _as_version_3(engine) -> None:
    """Turn a fresh database into what version 3 made: keys without scope or expiry, no session table."""
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
        assert s.exec(select(SchemaInfo)).one().version == SCHEMA_VERSION == 5
        row, found = keys.check_key(session=s, key=key)
        assert found.name == "lab" and row.admin is True and row.expires_at is None
        second = keys.create_key(session=s, project=project)
        assert second.admin is False  # new keys get the new rule
        assert len(s.exec(select(ApiKey)).all()) == 2


def test_version_4_jobs_can_then_run_auto_and_compare(engine):
    """Issue 29: PostgreSQL's native enum of job methods gains auto and compare (SQLite keeps text)."""
    from crowdqa.aggregation.registry import METHODS

    if engine.dialect.name == "postgresql":  # the type as version 4 made it: the aggregation methods only
        old = ", ".join(f"'{m.replace('-', '_')}'" for m in METHODS)
        with engine.begin() as conn:
            conn.execute(text("ALTER TYPE method RENAME TO method_v5"))
            conn.execute(text(f"CREATE TYPE method AS ENUM ({old})"))
            conn.execute(text("ALTER TABLE job ALTER COLUMN method TYPE method USING method::text::method"))
            conn.execute(text("DROP TYPE method_v5"))
    with engine.begin() as conn:
        conn.execute(text("UPDATE crowdqa_schema SET version = 4"))
    init_db(engine)
    with Session(engine) as s:
        assert s.exec(select(SchemaInfo)).one().version == 5
        project = crud.create_project(session=s, name="lab")
        dataset = crud.create_dataset(session=s, project_id=project.id, dataset_in=DatasetCreate(name="d"))
        dataset.corpus_sha256 = "0" * 64
        for method in ("auto", "compare", "hmm-crowd"):
            job = crud.create_job(session=s, dataset=dataset, job_in=JobCreate(method=method))
            s.expire_all()
            assert str(crud.get_job(session=s, project_id=project.id, job_id=job.id).method) == method


@pytest.mark.parametrize("version", [2, 6])
def test_a_version_without_a_migration_is_refused(engine, version):
    with engine.begin() as conn:
        conn.execute(text("UPDATE crowdqa_schema SET version = :v"), {"v": version})
    with pytest.raises(SchemaVersionError, match=f"found {version}"):
        init_db(engine)
