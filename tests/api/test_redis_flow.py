"""The service against a real redis-server with separate ``crowdqa worker`` processes.

Includes the fault test: SIGKILL a worker mid-EM; the job ends failed with a reason, the
dataset is intact, and a re-run on a new worker succeeds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from crowdqa.aggregation.corpus import Corpus
from crowdqa.store.settings import get_settings
from tests.api.conftest import auth, sample_dataset, upload, wait_job
from tests.utils.factories import synthetic_corpus
from tests.utils.services import free_port

pytestmark = pytest.mark.redis

CROWDQA = Path(sys.executable).with_name("crowdqa")


@pytest.fixture
def redis_settings(settings, redis_url, monkeypatch):
    monkeypatch.setenv("CROWDQA_REDIS_URL", redis_url)
    monkeypatch.setenv("CROWDQA_STALE_AFTER", "3")
    monkeypatch.setenv("CROWDQA_LOST_AFTER", "0.5")
    get_settings.cache_clear()
    return get_settings()


@pytest.fixture
def start_worker(redis_settings):
    """Start ``crowdqa worker`` processes with the test's environment; kill leftovers at the end."""
    procs: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen([str(CROWDQA), "worker"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        for pid in [*_children(proc.pid), proc.pid]:
            _kill(pid)
        proc.wait(10)


@pytest.fixture
def redis_client(redis_settings):
    from crowdqa.api.main import app

    with TestClient(app) as c:
        yield c


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_full_flow_with_a_worker_process(redis_client, keys, start_worker):
    """Upload, HMM-Crowd job, poll, report and labels, run by a separate `crowdqa worker`."""
    start_worker()
    key = keys["a"]
    ds = sample_dataset(redis_client, key)
    r = redis_client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                          json={"method": "hmm-crowd", "params": {}, "use_experts": False})
    assert r.status_code == 202, r.text
    body = wait_job(redis_client, r.json()["id"], key, timeout=120)
    assert body["status"] == "finished", body
    report = redis_client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key)).json()
    assert report["method"] == "hmm-crowd" and len(report["workers"]) == 11
    labels = redis_client.get(f"/api/v1/jobs/{body['id']}/labels?format=spans-jsonl", headers=auth(key))
    assert labels.status_code == 200 and labels.text.count("\n") >= 20
    health = redis_client.get("/api/v1/health").json()
    assert health == {"status": "ok", "database": True, "queue": True, "embedded": False}


def test_a_queued_job_says_its_stage(redis_client, keys, start_worker):
    """A job waiting for a worker, new or re-run, has the stage ``queued`` in its progress, as the progress schema
    says (it was ``{}``: a client generated from the OpenAPI document read the stage as unset). No worker runs
    until the new job has been read, and none while the re-run is, so nothing races the reads."""
    key = keys["a"]
    ds = sample_dataset(redis_client, key, experts=False)
    r = redis_client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
    assert r.status_code == 202 and r.json()["progress"] == {"stage": "queued"}, r.text
    job = r.json()["id"]
    polled = redis_client.get(f"/api/v1/jobs/{job}", headers=auth(key)).json()
    assert (polled["status"], polled["progress"]) == ("queued", {"stage": "queued"})
    worker = start_worker()
    assert wait_job(redis_client, job, key, timeout=120)["status"] == "finished"
    worker.send_signal(signal.SIGTERM)  # a warm stop: the pool ends, nothing takes the re-run
    worker.wait(60)
    r = redis_client.post(f"/api/v1/jobs/{job}/rerun", headers=auth(key))
    assert r.status_code == 202 and r.json()["progress"] == {"stage": "queued"}, r.text
    assert redis_client.get(f"/api/v1/jobs/{job}", headers=auth(key)).json()["progress"] == {"stage": "queued"}


def test_redis_down_answers_503_and_keeps_everything(redis_settings, keys, monkeypatch, start_worker):
    """While Redis is unreachable uploads still work, enqueueing answers 503 problem+json, and the job can be
    enqueued again (re-run) once Redis is back."""
    from crowdqa.api.main import app

    real = redis_settings.redis_url
    monkeypatch.setenv("CROWDQA_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    get_settings.cache_clear()
    key = keys["a"]
    with TestClient(app) as client:
        ds = sample_dataset(client, key)
        r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
        assert r.status_code == 503 and r.headers["content-type"].startswith("application/problem+json")
        assert r.headers["retry-after"] == "5"
        jobs = client.get("/api/v1/jobs", headers=auth(key)).json()
        assert jobs["count"] == 1 and jobs["data"][0]["status"] == "failed"
        assert "not queued" in jobs["data"][0]["error"]
        assert client.get("/api/v1/health").json()["queue"] is False
    monkeypatch.setenv("CROWDQA_REDIS_URL", real)
    get_settings.cache_clear()
    start_worker()
    with TestClient(app) as client:
        job_id = jobs["data"][0]["id"]
        assert client.post(f"/api/v1/jobs/{job_id}/rerun", headers=auth(key)).status_code == 202
        assert wait_job(client, job_id, key, timeout=60)["status"] == "finished"


def test_sigkill_worker_mid_job(redis_client, keys, start_worker, redis_settings, tmp_path):
    """Kill -9 the worker (and its work horse) during EM: the job ends failed with a reason instead of
    staying "running"; the dataset is intact; re-running the job on a new worker finishes it."""
    key = keys["a"]
    big = synthetic_corpus(n_docs=4000, doc_len=50, n_crowd=20, crowd_per_doc=5, seed=1)  # 1.1M labels
    path = tmp_path / "big.npz"
    big.save(path)
    ds = redis_client.post("/api/v1/datasets", headers=auth(key), json={"name": "big"}).json()["id"]
    assert upload(redis_client, key, ds, path, format="corpus").status_code == 201
    before = redis_client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    worker = start_worker()
    r = redis_client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                          json={"method": "ds", "params": {"max_iter": 300, "tol": 0.0}})
    job_id = r.json()["id"]
    body = wait_job(redis_client, job_id, key, timeout=60, until=("finished", "failed", "running"))
    deadline = time.monotonic() + 60
    while (body.get("progress") or {}).get("iteration", 0) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
        body = redis_client.get(f"/api/v1/jobs/{job_id}", headers=auth(key)).json()
    assert body["status"] == "running" and body["progress"]["iteration"] >= 3, body
    horses = _children(worker.pid)
    _kill(worker.pid)  # the worker first, so nobody is left to notice its horse dying
    for pid in horses:
        _kill(pid)
    worker.wait(10)

    body = wait_job(redis_client, job_id, key, timeout=30)
    assert body["status"] == "failed", body
    assert body["error"].startswith("abandoned") and "re-run" in body["error"]
    after = redis_client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    assert after == before
    from crowdqa.store.artifacts import ArtifactStore

    assert ArtifactStore(redis_settings.data_dir).load_corpus(after["corpus_sha256"]).equals(Corpus.load(path))

    start_worker()
    assert redis_client.post(f"/api/v1/jobs/{job_id}/rerun", headers=auth(key)).status_code == 202
    body = wait_job(redis_client, job_id, key, timeout=120)
    assert body["status"] == "finished" and body["attempts"] == 2 and body["error"] is None, body
    assert body["progress"]["iteration"] == 300


def test_job_lost_by_redis_is_failed_and_rerunnable(redis_client, keys, start_worker, redis_url):
    """A queued job that Redis loses (restart without persistence: here FLUSHDB) is reported lost, not queued
    forever; re-running it after a worker starts finishes it."""
    import redis

    key = keys["a"]
    ds = sample_dataset(redis_client, key, experts=False)
    job_id = redis_client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
    assert redis_client.get(f"/api/v1/jobs/{job_id}", headers=auth(key)).json()["status"] == "queued"
    redis.Redis.from_url(redis_url).flushdb()
    time.sleep(0.6)
    body = redis_client.get(f"/api/v1/jobs/{job_id}", headers=auth(key)).json()
    assert body["status"] == "failed" and body["error"].startswith("lost"), body
    start_worker()
    assert redis_client.post(f"/api/v1/jobs/{job_id}/rerun", headers=auth(key)).status_code == 202
    assert wait_job(redis_client, job_id, key, timeout=60)["status"] == "finished"


@pytest.mark.postgres
def test_production_setup_postgres_redis_worker(pg_settings, redis_settings, start_worker):
    """The production front end: rows in PostgreSQL, jobs on Redis, run by a separate worker process."""
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.store.db import get_engine
    from tests.utils.factories import project_with_key

    settings = get_settings()
    assert settings.database_url.startswith("postgresql+psycopg://") and settings.redis_url
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "prod")
    start_worker()
    with TestClient(app) as client:
        ds = sample_dataset(client, key)
        r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                        json={"method": "hmm-crowd", "use_experts": True})
        body = wait_job(client, r.json()["id"], key, timeout=120)
        assert body["status"] == "finished", body
        report = client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key)).json()
        assert report["experts_used_in_fit"] is True and len(report["workers"]) == 11


def test_killed_work_horse_fails_the_job_at_once(redis_client, keys, start_worker, monkeypatch, tmp_path):
    """SIGKILL only the forked work horse (as the OOM killer would): the surviving worker records the failure
    immediately, naming the signal, without waiting for heartbeats to go stale."""
    monkeypatch.setenv("CROWDQA_JOB_RETRIES", "0")
    monkeypatch.setenv("CROWDQA_STALE_AFTER", "600")
    get_settings.cache_clear()
    key = keys["a"]
    path = tmp_path / "big.npz"
    synthetic_corpus(n_docs=4000, doc_len=50, n_crowd=20, crowd_per_doc=5, seed=3).save(path)
    ds = redis_client.post("/api/v1/datasets", headers=auth(key), json={"name": "big"}).json()["id"]
    assert upload(redis_client, key, ds, path, format="corpus").status_code == 201
    worker = start_worker()
    job_id = redis_client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                               json={"method": "ds", "params": {"max_iter": 300, "tol": 0.0}}).json()["id"]
    deadline = time.monotonic() + 60
    body = {}
    while (body.get("progress") or {}).get("iteration", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
        body = redis_client.get(f"/api/v1/jobs/{job_id}", headers=auth(key)).json()
    horses = _children(worker.pid)
    assert len(horses) == 1, horses
    _kill(horses[0])
    t0 = time.monotonic()
    body = wait_job(redis_client, job_id, key, timeout=30)
    assert body["status"] == "failed" and "work horse" in body["error"] and "SIGKILL" in body["error"], body
    assert time.monotonic() - t0 < 20
    assert worker.poll() is None  # the worker itself lives on and takes the next job
    ok = redis_client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                           json={"method": "mv"}).json()["id"]
    assert wait_job(redis_client, ok, key, timeout=60)["status"] == "finished"
