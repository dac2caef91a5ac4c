"""Issue 35 item 4: per-project limits. A key's project may have at most CROWDQA_MAX_ACTIVE_JOBS queued or running
jobs, CROWDQA_MAX_UPLOADS_PER_HOUR upload requests in any hour and CROWDQA_MAX_PROJECT_BYTES of uploads kept; past a
limit the request is a 429 problem+json with Retry-After, nothing is queued or kept, and the other project is not
affected."""

from __future__ import annotations

import hashlib

import pytest

from crowdqa.jobs.embedded import EmbeddedWorker
from crowdqa.store.settings import get_settings
from tests.api.conftest import SAMPLE, auth, sample_dataset, upload, wait_job


@pytest.fixture
def idle_worker(monkeypatch):
    """The embedded worker takes no job (each waits for its stop), so queued jobs stay queued."""
    monkeypatch.setattr(EmbeddedWorker, "_loop", lambda self, *a: self._stop.wait())


def _is_429(r) -> int:
    assert r.status_code == 429 and r.headers["content-type"].startswith("application/problem+json"), r.text
    return int(r.headers["Retry-After"])


def test_the_101st_job_post_of_a_project_is_a_429_with_retry_after(idle_worker, client, keys):
    """The review's case: 100 job POSTs from one key were all accepted. Now the default limit holds (20 queued
    or running), the rest are 429; another project still gets its job; deleting a job frees a place."""
    key = keys["a"]
    ds = sample_dataset(client, key, experts=False)
    limit = get_settings().max_active_jobs
    codes = [client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}) for _ in range(101)]
    assert [r.status_code for r in codes[:limit]] == [202] * limit
    assert _is_429(codes[-1]) == 30 and all(r.status_code == 429 for r in codes[limit:])
    assert "CROWDQA_MAX_ACTIVE_JOBS" in codes[-1].json()["detail"]
    assert client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()["count"] == limit
    other = sample_dataset(client, keys["b"], experts=False)
    assert client.post(f"/api/v1/datasets/{other}/jobs", headers=auth(keys["b"]),
                       json={"method": "mv"}).status_code == 202
    assert client.delete(f"/api/v1/jobs/{codes[0].json()['id']}", headers=auth(key)).status_code == 204
    assert client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).status_code == 202


def test_uploads_per_hour(settings, monkeypatch, keys, tmp_path):
    monkeypatch.setenv("CROWDQA_MAX_UPLOADS_PER_HOUR", "3")
    get_settings.cache_clear()
    from fastapi.testclient import TestClient

    from crowdqa.api.main import app

    with TestClient(app) as client:
        key = keys["a"]
        ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "x"}).json()["id"]
        bad = tmp_path / "bad.jsonl"
        bad.write_text("not json\n")
        assert upload(client, key, ds, bad).status_code == 422  # a refused upload counts too
        assert upload(client, key, ds, SAMPLE / "crowd.jsonl").status_code == 201
        assert upload(client, key, ds, SAMPLE / "expert.jsonl", role="expert").status_code == 201
        r = upload(client, key, ds, SAMPLE / "crowd.jsonl")
        assert 3500 < _is_429(r) <= 3601 and "CROWDQA_MAX_UPLOADS_PER_HOUR" in r.json()["detail"]
        assert client.get(f"/api/v1/datasets/{ds}/uploads", headers=auth(key)).json()["count"] == 2
        other = client.post("/api/v1/datasets", headers=auth(keys["b"]), json={"name": "y"}).json()["id"]
        assert upload(client, keys["b"], other, SAMPLE / "crowd.jsonl").status_code == 201


def test_bytes_kept_per_project(settings, monkeypatch, keys):
    size = (SAMPLE / "crowd.jsonl").stat().st_size
    monkeypatch.setenv("CROWDQA_MAX_PROJECT_BYTES", str(size + 10))
    get_settings.cache_clear()
    from fastapi.testclient import TestClient

    from crowdqa.api.main import app

    with TestClient(app) as client:
        key = keys["a"]
        ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "x"}).json()["id"]
        assert upload(client, key, ds, SAMPLE / "crowd.jsonl").status_code == 201
        r = upload(client, key, ds, SAMPLE / "expert.jsonl", role="expert")
        _is_429(r)
        assert "CROWDQA_MAX_PROJECT_BYTES" in r.json()["detail"]
        assert client.get(f"/api/v1/datasets/{ds}/uploads", headers=auth(key)).json()["count"] == 1
        kept = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (settings.data_dir / "uploads").rglob("*")
                if p.is_file()}
        assert hashlib.sha256((SAMPLE / "crowd.jsonl").read_bytes()).hexdigest() in kept
        assert hashlib.sha256((SAMPLE / "expert.jsonl").read_bytes()).hexdigest() not in kept  # not kept
        other = client.post("/api/v1/datasets", headers=auth(keys["b"]), json={"name": "y"}).json()["id"]
        assert upload(client, keys["b"], other, SAMPLE / "crowd.jsonl").status_code == 201


def test_the_limits_are_in_the_openapi_document(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path, method in [("/api/v1/datasets/{dataset_id}/jobs", "post"), ("/api/v1/jobs/{job_id}/rerun", "post"),
                         ("/api/v1/datasets/{dataset_id}/uploads", "post")]:
        answer = paths[path][method]["responses"]["429"]
        assert "Retry-After" in answer["headers"] and "CROWDQA_MAX_ACTIVE_JOBS" in answer["description"]


def test_a_job_past_its_cpu_budget_fails_for_good_with_the_reason(settings, monkeypatch, keys):
    """A job of 100 MACE restarts of 10,000 iterations each (allowed by the bounds) would hold a worker for long:
    past CROWDQA_JOB_CPU_SECONDS it fails at its next checkpoint, with the reason, and is not retried."""
    monkeypatch.setenv("CROWDQA_JOB_CPU_SECONDS", "1")
    get_settings.cache_clear()
    from fastapi.testclient import TestClient

    from crowdqa.api.main import app

    with TestClient(app) as client:
        key = keys["a"]
        ds = sample_dataset(client, key, experts=False)
        r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                        json={"method": "mace", "params": {"n_restarts": 100, "max_iter": 10000}})
        assert r.status_code == 202, r.text
        job = wait_job(client, r.json()["id"], key, timeout=120)
        assert job["status"] == "failed", job
        assert job["error"].startswith("CPU budget exceeded: stopped while fitting after ")
        assert "past the job's budget of 1 (CROWDQA_JOB_CPU_SECONDS)" in job["error"]
        assert job["attempts"] == 1 and "retrying" not in job["error"]


@pytest.mark.postgres
@pytest.mark.redis
def test_limits_and_the_cpu_budget_in_production(pg_settings, redis_url, monkeypatch):
    """The production setup (PostgreSQL, a real Redis, a `crowdqa worker` process): the same limits from the
    database, and the CPU budget enforced in the worker's forked work horse."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.store.db import get_engine
    from tests.utils.factories import project_with_key

    for name, value in (("REDIS_URL", redis_url), ("MAX_ACTIVE_JOBS", "2"), ("MAX_UPLOADS_PER_HOUR", "2"),
                        ("JOB_CPU_SECONDS", "1")):
        monkeypatch.setenv(f"CROWDQA_{name}", value)
    get_settings.cache_clear()
    with Session(get_engine(get_settings())) as s:
        _, key = project_with_key(s, "prod")
    with TestClient(app) as client:
        ds = sample_dataset(client, key)  # two uploads
        _is_429(upload(client, key, ds, SAMPLE / "crowd.jsonl"))
        long_job = {"method": "mace", "params": {"n_restarts": 100, "max_iter": 10000}}
        ids = [client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json=long_job) for _ in range(3)]
        assert [r.status_code for r in ids] == [202, 202, 429]  # no worker yet: both stay queued
        worker = subprocess.Popen([str(Path(sys.executable).with_name("crowdqa")), "worker"], env=dict(os.environ),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            job = wait_job(client, ids[0].json()["id"], key, timeout=120)
        finally:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(10)
    assert job["status"] == "failed" and job["error"].startswith("CPU budget exceeded: stopped while fitting"), job


def test_the_dashboard_says_the_limit_on_the_job_form(idle_worker, settings, monkeypatch, keys):
    """The dashboard's form goes through the same use case: past the limit the page says why, with status 429."""
    from fastapi.testclient import TestClient

    from crowdqa.api.main import app
    from tests.dashboard.test_pages import sign_in

    monkeypatch.setenv("CROWDQA_MAX_ACTIVE_JOBS", "1")
    get_settings.cache_clear()
    with TestClient(app) as client:
        ds = sample_dataset(client, keys["a"], experts=False)
        csrf = sign_in(client, keys["a"])
        first = client.post(f"/ui/datasets/{ds}/jobs", data={"method": "mv", "params": "{}", "csrf": csrf},
                            follow_redirects=False)
        assert first.status_code == 303, first.text
        r = client.post(f"/ui/datasets/{ds}/jobs", data={"method": "mv", "params": "{}", "csrf": csrf})
        assert r.status_code == 429 and "job not started" in r.text and "CROWDQA_MAX_ACTIVE_JOBS" in r.text


def test_a_rerun_counts_as_a_new_active_job(idle_worker, settings, monkeypatch, keys):
    """A re-run puts a finished job back in the queue: past the limit it is a 429 too, and the job stays finished."""
    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.store import crud
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import JobStatus

    monkeypatch.setenv("CROWDQA_MAX_ACTIVE_JOBS", "1")
    get_settings.cache_clear()
    with TestClient(app) as client:
        key = keys["a"]
        ds = sample_dataset(client, key, experts=False)
        done = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
        with Session(get_engine(get_settings())) as s:  # as if it had run (the worker here takes nothing)
            crud.update_job(session=s, job_id=done, status=JobStatus.failed, error="stopped for the test")
        assert client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).status_code == 202
        r = client.post(f"/api/v1/jobs/{done}/rerun", headers=auth(key))
        assert _is_429(r) == 30 and "CROWDQA_MAX_ACTIVE_JOBS" in r.json()["detail"]
        assert client.get(f"/api/v1/jobs/{done}", headers=auth(key)).json()["status"] == "failed"
