"""Faults the service must survive: Redis restarting under a running job and while jobs are enqueued, and the
API process SIGKILLed in the middle of a large upload.

Real processes: a ``redis-server`` (stopped and started again on the same port, without persistence, so
it comes back empty as after a crash), ``crowdqa worker`` and ``crowdqa serve`` subprocesses.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from crowdqa.store.db import get_engine
from crowdqa.store.settings import get_settings
from tests.api.conftest import SAMPLE, auth, sample_dataset, upload, wait_job
from tests.utils.factories import project_with_key, synthetic_corpus
from tests.utils.services import free_port, wait_for_port

CROWDQA = Path(sys.executable).with_name("crowdqa")


class RestartableRedis:
    """A redis-server on a fixed port that can be stopped (SIGKILL: a crash) and started again, empty."""

    def __init__(self) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.skip("redis-server not found on PATH; Redis fault tests skipped")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="crowdqa-redis-fault-")
        self.proc: subprocess.Popen | None = None
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", self.dir],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)

    def crash(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def close(self) -> None:
        self.crash()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def _processes():
    procs: list[subprocess.Popen] = []
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


def _worker(procs: list[subprocess.Popen]) -> subprocess.Popen:
    p = subprocess.Popen([str(CROWDQA), "worker"], env={**os.environ}, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    procs.append(p)
    return p


def _wait_with_a_worker(client, job_id: str, key: str, procs: list[subprocess.Popen], *, timeout: float) -> dict:
    """:func:`wait_job`, starting a new worker whenever the last one has exited, as a supervisor would.

    rq's worker quits when Redis vanishes under a job it runs, but only once its teardown has retried its way
    back to Redis: that can be after Redis is up again and after any single check of the process, so the check
    repeats while the job waits.
    """
    deadline = time.monotonic() + timeout
    while True:
        if procs[-1].poll() is not None:
            _worker(procs)
        body = wait_job(client, job_id, key, timeout=1.0)
        if body["status"] in ("finished", "failed") or time.monotonic() > deadline:
            return body


@pytest.mark.redis
def test_redis_restart_during_a_job_and_while_enqueueing(settings, keys, monkeypatch, tmp_path, tally):
    """Redis crashes while a worker runs a long DS job: while it is down, enqueueing answers 503 problem+json
    (the job row is kept, failed with "not queued"), uploads and polling still work; once Redis is back (empty)
    the running job still ends in a final state (finished, or failed with a reason: never "running"
    forever), and both jobs re-run to finished."""
    redis_srv = RestartableRedis()
    redis_srv.start()
    monkeypatch.setenv("CROWDQA_REDIS_URL", redis_srv.url)
    monkeypatch.setenv("CROWDQA_STALE_AFTER", "3")
    monkeypatch.setenv("CROWDQA_LOST_AFTER", "0.5")
    get_settings.cache_clear()
    from crowdqa.api.main import app

    key = keys["a"]
    big = tmp_path / "big.npz"
    synthetic_corpus(n_docs=2000, doc_len=50, n_crowd=20, crowd_per_doc=5, seed=4).save(big)
    try:
        with _processes() as procs, TestClient(app) as client:
            ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "big"}).json()["id"]
            assert upload(client, key, ds, big, format="corpus").status_code == 201
            _worker(procs)
            running = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                                  json={"method": "ds", "params": {"max_iter": 150, "tol": 0.0}}).json()["id"]
            body = wait_job(client, running, key, timeout=60, until=("running", "finished", "failed"))
            assert body["status"] == "running", body

            redis_srv.crash()
            r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
            assert r.status_code == 503 and r.headers["content-type"].startswith("application/problem+json"), r.text
            assert r.headers["retry-after"]
            refused = [j for j in client.get("/api/v1/jobs", headers=auth(key)).json()["data"] if j["id"] != running]
            assert len(refused) == 1 and refused[0]["status"] == "failed" and "not queued" in refused[0]["error"]
            # The data side keeps working without Redis: a new upload, listings, polling the running job.
            small = client.post("/api/v1/datasets", headers=auth(key), json={"name": "small"}).json()["id"]
            assert upload(client, key, small, SAMPLE / "crowd.jsonl").status_code == 201
            assert client.get(f"/api/v1/datasets/{ds}/uploads", headers=auth(key)).json()["count"] == 1
            assert client.get(f"/api/v1/jobs/{running}", headers=auth(key)).status_code == 200
            assert client.get("/api/v1/health").json()["queue"] is False
            time.sleep(1.0)

            redis_srv.start()
            final = wait_job(client, running, key, timeout=90)
            assert final["status"] in ("finished", "failed"), final
            print(f"job running across the Redis crash: {final['status']} ({final.get('error')})")
            if final["status"] == "failed":
                assert final["error"], final
            for job_id in (running, refused[0]["id"]):
                if client.get(f"/api/v1/jobs/{job_id}", headers=auth(key)).json()["status"] != "finished":
                    assert client.post(f"/api/v1/jobs/{job_id}/rerun", headers=auth(key)).status_code == 202
                assert _wait_with_a_worker(client, job_id, key, procs, timeout=120)["status"] == "finished"
            tally(2)
    finally:
        redis_srv.close()


def _serve(port: int, env: dict, procs: list[subprocess.Popen]) -> subprocess.Popen:
    p = subprocess.Popen([str(CROWDQA), "serve", "--port", str(port), "--log-level", "warning"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    procs.append(p)
    wait_for_port(port, timeout=30)
    return p


def test_sigkill_api_during_a_large_upload(settings, tmp_path, tally):
    """SIGKILL ``crowdqa serve`` while a 40 MB upload streams in: after a restart the dataset shows no upload
    (no row, no half-written dataset corpus), nothing but temp files under the data dir, an earlier upload and
    finished job read back unchanged, and the same upload then succeeds."""
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "kill")
    env = {**os.environ, "CROWDQA_DATA_DIR": str(settings.data_dir)}
    env.pop("CROWDQA_REDIS_URL", None)
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/v1"
    with _processes() as procs:
        server = _serve(port, env, procs)
        with httpx.Client(base_url=base, headers=auth(key), timeout=60) as http:
            first = sample_dataset(_Adapter(http), key)
            job = http.post(f"/datasets/{first}/jobs", json={"method": "mv"}).json()["id"]
            assert wait_job(_Adapter(http), job, key, timeout=60)["status"] == "finished"
            before = (http.get(f"/datasets/{first}").json(), http.get(f"/jobs/{job}/report").content)
            ds = http.post("/datasets", json={"name": "big"}).json()["id"]
            line = (SAMPLE / "crowd.jsonl").read_bytes().splitlines(keepends=True)[0]
            started = threading.Event()
            boundary = "crowdqa-kill"

            def body():
                yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"format\"\r\n\r\nspans-jsonl\r\n"
                       f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.jsonl\"\r\n"
                       "Content-Type: application/octet-stream\r\n\r\n").encode()
                chunk = line * max(1, (1 << 20) // len(line))
                for i in range(40):
                    if i == 10:
                        started.set()
                        time.sleep(0.5)  # the server has ~10 MB of the body when it dies
                    yield chunk
                yield f"\r\n--{boundary}--\r\n".encode()

            outcome: dict = {}

            def send():
                try:
                    outcome["status"] = http.post(f"/datasets/{ds}/uploads", content=body(), headers={
                        "content-type": f"multipart/form-data; boundary={boundary}"}).status_code
                except httpx.HTTPError as exc:
                    outcome["error"] = exc

            sender = threading.Thread(target=send)
            sender.start()
            assert started.wait(60)
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
            sender.join(60)
            assert "error" in outcome, outcome  # the connection died with the server

        _serve(port, env, procs)
        with httpx.Client(base_url=base, headers=auth(key), timeout=60) as http:
            info = http.get(f"/datasets/{ds}").json()
            assert info["n_uploads"] == 0 and info["corpus_sha256"] is None, info
            assert http.get(f"/datasets/{ds}/uploads").json()["count"] == 0
            assert (http.get(f"/datasets/{first}").json(), http.get(f"/jobs/{job}/report").content) == before
            stored = [p for p in settings.data_dir.rglob("*") if p.is_file() and "tmp" not in p.parts
                      and p.suffix not in (".db", ".db-journal", ".db-wal", ".db-shm")]
            uploads = http.get(f"/datasets/{first}/uploads").json()["data"]
            known = {u["sha256"] for u in uploads}
            assert all(p.name.split(".")[0] in known for p in stored if "uploads" in p.parts), stored
            with open(SAMPLE / "crowd.jsonl", "rb") as fh:
                r = http.post(f"/datasets/{ds}/uploads", files={"file": ("c.jsonl", fh)},
                              data={"format": "spans-jsonl"})
            assert r.status_code == 201, r.text
    tally()


class _Adapter:
    """Let the TestClient helpers of tests.api.conftest drive an httpx.Client on a base URL."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def _url(self, url: str) -> str:
        return url.removeprefix("/api/v1")

    def get(self, url, **kw):
        return self.http.get(self._url(url), **kw)

    def post(self, url, **kw):
        return self.http.post(self._url(url), **kw)
