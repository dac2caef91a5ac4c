"""API fixtures: settings in a temp data dir, a TestClient on the embedded service, keys, a real Redis."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from crowdqa.store.db import get_engine
from crowdqa.store.settings import get_settings
from tests.utils.factories import auth, project_with_key

SAMPLE = Path(__file__).resolve().parents[2] / "api" / "sample"


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """Settings of a fresh data dir (embedded queue unless a test sets CROWDQA_REDIS_URL before use)."""
    monkeypatch.setenv("CROWDQA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CROWDQA_REDIS_URL", raising=False)
    monkeypatch.delenv("CROWDQA_DATABASE_URL", raising=False)
    monkeypatch.setenv("CROWDQA_HEARTBEAT_INTERVAL", "0.5")
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


@pytest.fixture
def client(settings):
    """A TestClient on the embedded service (its lifespan starts the in-process worker)."""
    from crowdqa.api.main import app

    with TestClient(app) as c:
        yield c


@pytest.fixture
def keys(settings):
    """Keys of two projects: {"a": key, "b": key}."""
    with Session(get_engine(settings)) as s:
        return {name: project_with_key(s, name)[1] for name in ("a", "b")}


@pytest.fixture
def pg_settings(settings, postgres_url, monkeypatch):
    """Like ``settings`` but on a real PostgreSQL (tables dropped afterwards)."""
    from sqlmodel import SQLModel

    monkeypatch.setenv("CROWDQA_DATABASE_URL", postgres_url)
    get_settings.cache_clear()
    s = get_settings()
    yield s
    from crowdqa.store.db import _engine_for

    engine = get_engine(s)
    SQLModel.metadata.drop_all(engine)
    engine.dispose()
    _engine_for.cache_clear()


def wait_job(client, job_id: str, key: str, *, timeout: float = 60.0, until=("finished", "failed")) -> dict:
    """Poll a job until its status is in ``until``; return the last body."""
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/api/v1/jobs/{job_id}", headers=auth(key)).json()
        if body.get("status") in until or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def upload(client, key: str, dataset_id: str, path: Path, *, role: str = "crowd", format: str = "spans-jsonl",
           **options):
    with open(path, "rb") as fh:
        return client.post(f"/api/v1/datasets/{dataset_id}/uploads", headers=auth(key),
                           files={"file": (path.name, fh, "application/octet-stream")},
                           data={"format": format, "role": role, **options})


def sample_dataset(client, key: str, *, experts: bool = True) -> str:
    """A dataset holding the bundled sample (crowd, and the expert file unless ``experts`` is False)."""
    r = client.post("/api/v1/datasets", headers=auth(key), json={"name": "sample"})
    assert r.status_code == 201, r.text
    ds = r.json()["id"]
    assert upload(client, key, ds, SAMPLE / "crowd.jsonl").status_code == 201
    if experts:
        assert upload(client, key, ds, SAMPLE / "expert.jsonl", role="expert").status_code == 201
    return ds
