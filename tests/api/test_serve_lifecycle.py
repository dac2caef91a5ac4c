"""Lost or stuck work: one embedded server per data directory, stopping a running job
when it is deleted or when the server stops, and one-line configuration errors.

Real processes: ``crowdqa serve`` subprocesses on loopback ports, a real redis-server and ``crowdqa worker``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlmodel import Session

from crowdqa.store.db import get_engine
from crowdqa.store.settings import get_settings
from tests.api.conftest import auth, wait_job
from tests.utils.factories import project_with_key, synthetic_corpus
from tests.utils.services import free_port, wait_for_port

CROWDQA = Path(sys.executable).with_name("crowdqa")
#: A job that runs for minutes within the parameters' bounds (100 restarts of 10,000 EM iterations; MACE's tol None
#: runs them all), stopped by the tests long before its CPU budget.
LONG_JOB = {"method": "mace", "params": {"n_restarts": 100, "max_iter": 10000}}


def _env(settings) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(CROWDQA_DATA_DIR=str(settings.data_dir), PYTHONUNBUFFERED="1", CROWDQA_HEARTBEAT_INTERVAL="0.5")
    return env


def _serve(env: dict, port: int) -> subprocess.Popen:
    return subprocess.Popen([str(CROWDQA), "serve", "--port", str(port), "--log-level", "warning"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _keyed_server(settings) -> tuple[str, dict, int, subprocess.Popen]:
    """A key of project "a", then `crowdqa serve` on the settings' data directory, listening."""
    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, "a")
    env, port = _env(settings), free_port()
    proc = _serve(env, port)
    wait_for_port(port, timeout=60)
    return key, env, port, proc


def _http(port: int, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", headers=auth(key), timeout=60)


def _stop(proc: subprocess.Popen) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
    return out or ""


def _big_dataset(http: httpx.Client, tmp_path: Path, *, n_docs: int = 2000) -> str:
    path = tmp_path / "big.npz"
    synthetic_corpus(n_docs=n_docs, doc_len=50, n_crowd=20, crowd_per_doc=5, seed=1).save(path)
    ds = http.post("/datasets", json={"name": "big"}).json()["id"]
    with open(path, "rb") as fh:
        r = http.post(f"/datasets/{ds}/uploads", files={"file": ("big.npz", fh)}, data={"format": "corpus"})
    assert r.status_code == 201, r.text
    return ds


def _wait_iterations(http: httpx.Client, job_id: str, n: int, timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    body: dict = {}
    while time.monotonic() < deadline:
        body = http.get(f"/jobs/{job_id}").json()
        if body.get("status") == "running" and (body.get("progress") or {}).get("iteration", 0) >= n:
            return body
        if body.get("status") in ("finished", "failed"):
            break
        time.sleep(0.1)
    raise AssertionError(f"job did not reach iteration {n}: {body}")


def test_second_serve_on_one_data_directory_refuses_before_touching_anything(settings, tmp_path):
    """Defect 1: a second `crowdqa serve` on the data directory of a running one (same port, as running
    scripts/run.sh twice does, or another port) exits 2 with one line naming the directory and the first
    server's pid, and the first server's running job is untouched: it finishes and keeps its result."""
    key, env, port, first = _keyed_server(settings)
    try:
        with _http(port, key) as http:
            ds = _big_dataset(http, tmp_path, n_docs=1000)
            job = http.post(f"/datasets/{ds}/jobs", json={"method": "ds", "params": {"max_iter": 150, "tol": 0.0}})
            job_id = job.json()["id"]
            _wait_iterations(http, job_id, 2)
            for other_port in (port, free_port()):
                second = subprocess.run([str(CROWDQA), "serve", "--port", str(other_port)], env=env,
                                        capture_output=True, text=True, timeout=60)
                err = second.stderr.strip().splitlines()
                assert second.returncode == 2, second.stdout + second.stderr
                assert len(err) == 1 and err[0].startswith("crowdqa: error:"), second.stderr
                assert str(settings.data_dir.resolve()) in err[0] and f"pid {first.pid}" in err[0], err[0]
                assert "serving on" not in second.stdout
                assert http.get(f"/jobs/{job_id}").json()["status"] in ("running", "finished")
            body = wait_job(_Adapter(http), job_id, key, timeout=180)
            assert body["status"] == "finished" and body["error"] is None and body["attempts"] == 1, body
            assert http.get(f"/jobs/{job_id}/report").status_code == 200
    finally:
        log = _stop(first)
    assert "left the running state" not in log and "Traceback" not in log, log


def test_recovery_at_start_only_fails_jobs_whose_worker_is_gone(settings):
    """Defect 1: at start-up an embedded server fails the running jobs of embedded workers (the data
    directory lock proves their process is gone) but not a job a live `crowdqa worker` heartbeats."""
    from crowdqa.jobs.embedded import recover_jobs
    from crowdqa.store import crud
    from crowdqa.store.models import DatasetCreate, Job, JobCreate, JobStatus, utcnow

    with Session(get_engine(settings)) as s:
        project_id, _ = project_with_key(s, "a")
        ds = crud.create_dataset(session=s, project_id=project_id, dataset_in=DatasetCreate(name="d"))
        ds.corpus_sha256 = "0" * 64
        ids = {}
        for name, worker in (("dead", "embedded.host.123.abcd"), ("live", "rq-worker-on-another-host")):
            job = crud.create_job(session=s, dataset=ds, job_in=JobCreate(method="mv"))
            crud.update_job(session=s, job_id=job.id, status=JobStatus.running, worker_name=worker,
                            heartbeat_at=utcnow())
            ids[name] = job.id
    assert recover_jobs(settings) == (1, 0)
    with Session(get_engine(settings)) as s:
        assert s.get(Job, ids["dead"]).status == JobStatus.failed
        assert s.get(Job, ids["live"]).status == JobStatus.running


def test_delete_running_embedded_job_stops_it_and_the_next_job_runs(client, keys, tmp_path):
    """Defect 2 (embedded): DELETE of a running job answers 204, the job stops computing at its next
    EM iteration (nothing runs in the process any more), and a small job queued after it runs at once."""
    key = keys["a"]
    http = _ClientAdapter(client, key)
    ds = _big_dataset(http, tmp_path, n_docs=600)
    job_id = http.post(f"/datasets/{ds}/jobs", json=LONG_JOB).json()["id"]
    _wait_iterations(http, job_id, 2)
    assert client.delete(f"/api/v1/jobs/{job_id}", headers=auth(key)).status_code == 204
    assert client.get(f"/api/v1/jobs/{job_id}", headers=auth(key)).status_code == 404
    t0 = time.monotonic()
    small = http.post(f"/datasets/{ds}/jobs", json={"method": "mv"}).json()["id"]
    assert wait_job(client, small, key, timeout=60)["status"] == "finished"
    assert time.monotonic() - t0 < 45


@pytest.mark.redis
def test_delete_running_job_on_a_worker_process_stops_it(settings, keys, redis_url, monkeypatch, tmp_path):
    """Defect 2 (Redis): DELETE of a job running on a `crowdqa worker` sends rq's stop-job command: the
    work horse dies at once, the worker lives on and runs the next job promptly."""
    from fastapi.testclient import TestClient

    from crowdqa.api.main import app

    monkeypatch.setenv("CROWDQA_REDIS_URL", redis_url)
    get_settings.cache_clear()
    key = keys["a"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    worker = subprocess.Popen([str(CROWDQA), "worker"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with TestClient(app) as client:
            http = _ClientAdapter(client, key)
            ds = _big_dataset(http, tmp_path, n_docs=600)
            job_id = http.post(f"/datasets/{ds}/jobs", json=LONG_JOB).json()["id"]
            _wait_iterations(http, job_id, 2)
            t0 = time.monotonic()
            assert client.delete(f"/api/v1/jobs/{job_id}", headers=auth(key)).status_code == 204
            small = http.post(f"/datasets/{ds}/jobs", json={"method": "mv"}).json()["id"]
            assert wait_job(client, small, key, timeout=60)["status"] == "finished"
            assert time.monotonic() - t0 < 45
            assert worker.poll() is None
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)


def test_stopping_serve_during_a_job_is_prompt_and_requeues_it(settings, tmp_path):
    """Defect 2: SIGTERM to `crowdqa serve` while a long job runs ends the server within a few seconds;
    the job goes back to the queue (not failed) and runs again at the next start."""
    key, env, port, server = _keyed_server(settings)
    try:
        with _http(port, key) as http:
            ds = _big_dataset(http, tmp_path, n_docs=600)
            job_id = http.post(f"/datasets/{ds}/jobs", json=LONG_JOB).json()["id"]
            _wait_iterations(http, job_id, 2)
        t0 = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        took = time.monotonic() - t0
    finally:
        log = _stop(server)
    assert took < 6, f"serve took {took:.1f} s to stop\n{log}"
    assert "Traceback" not in log, log
    with Session(get_engine(settings)) as s:
        from crowdqa.store.models import Job

        row = s.get(Job, job_id)
        assert row.status == "queued" and row.error.startswith("interrupted"), (row.status, row.error)
    server = _serve(env, port)
    try:
        wait_for_port(port, timeout=60)
        with _http(port, key) as http:
            body = wait_job(_Adapter(http), job_id, key, timeout=60, until=("running", "failed", "finished"))
            assert body["status"] == "running", body
            assert http.delete(f"/jobs/{job_id}").status_code == 204
    finally:
        _stop(server)


@pytest.mark.parametrize("env, message", [
    ({"CROWDQA_DATABASE_URL": "mysql://u:pw1@127.0.0.1/x"}, "not a supported database URL"),
    ({"CROWDQA_DATABASE_URL": "postgresql+psycopg://u:pw1@127.0.0.1:{db_port}/x"}, "cannot use the database"),
    ({"CROWDQA_MAX_UPLOAD_BYTES": "lots"}, "CROWDQA_MAX_UPLOAD_BYTES"),
])
@pytest.mark.parametrize("argv", [["keys", "create", "--project", "p"], ["serve", "--port", "{port}"]])
def test_configuration_errors_are_one_line(tmp_path, env, message, argv):
    """Defect 11: an unsupported or unreachable database, or a bad setting, is one line and exit 2 for
    `keys create` and `serve` (which never says "serving on"), not a traceback."""
    port, db_port = str(free_port()), str(free_port())
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")},
            "CROWDQA_DATA_DIR": str(tmp_path / "d"), **{k: v.format(db_port=db_port) for k, v in env.items()}}
    out = subprocess.run([str(CROWDQA), *[a.format(port=port) for a in argv]], env=full, capture_output=True,
                         text=True, timeout=60)
    err = out.stderr.strip().splitlines()
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(err) == 1 and err[0].startswith("crowdqa: error:") and message in err[0], out.stderr
    assert "pw1" not in out.stderr and "serving on" not in out.stdout


def test_worker_without_redis_is_one_line(tmp_path):
    """Defect 11: `crowdqa worker` with an unreachable Redis says so in one line, exit 2."""
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")},
            "CROWDQA_DATA_DIR": str(tmp_path / "d"), "CROWDQA_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"}
    out = subprocess.run([str(CROWDQA), "worker"], env=full, capture_output=True, text=True, timeout=60)
    err = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(err) == 1 and "cannot reach Redis" in err[0], out.stderr


def test_serve_on_a_busy_port_never_says_serving(settings):
    """Defect 11: `serve` on a port something else listens on exits 2 with one line, without "serving on"."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        out = subprocess.run([str(CROWDQA), "serve", "--port", str(port)], env=_env(settings), capture_output=True,
                             text=True, timeout=60)
    err = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(err) == 1 and f"cannot listen on 127.0.0.1:{port}" in err[0], out.stderr
    assert "serving on" not in out.stdout


def test_keys_create_says_which_data_directory_it_uses(tmp_path):
    """Defect 13: `keys create` in a folder without crowdqa data says which data directory and database it
    uses, and that it created a new one there (so a 401 from a server elsewhere is explained)."""
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}}
    out = subprocess.run([str(CROWDQA), "keys", "create", "--project", "p"], env=full, cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    where = str((tmp_path / "crowdqa-data").resolve())
    assert f"data directory {where}" in out.stderr and "database sqlite:///" in out.stderr
    assert "a new database was created" in out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith("cqa_")
    again = subprocess.run([str(CROWDQA), "keys", "list"], env=full, cwd=tmp_path, capture_output=True, text=True,
                           timeout=60)
    assert again.returncode == 0 and "a new database" not in again.stderr and " p " in again.stdout


@pytest.mark.parametrize("command", [["blocked", "add", "mturk:A1", "--project", "demo"],
                                     ["blocked", "list", "--project", "demo"], ["keys", "list"],
                                     ["keys", "revoke", "cqa_abcdef123456"]])
def test_server_commands_in_a_folder_without_crowdqa_data_make_nothing(tmp_path, command):
    """Found walking the README: `crowdqa blocked add ... --project demo` run outside the server's folder made a
    new empty database there, said "a server started elsewhere will not know this key" (no key was made), then
    failed on the unknown project. Only the commands that make something (keys create, a Label Studio pull)
    may start a database; the others stop with one line naming the folder and leave it empty."""
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}}
    out = subprocess.run([str(CROWDQA), *command], env=full, cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    where = str((tmp_path / "crowdqa-data").resolve())
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines()[-1] == (
        f"crowdqa: error: {where} holds no crowdqa database: run the command where `crowdqa serve` runs (its data "
        "directory), or set CROWDQA_DATA_DIR or CROWDQA_DATABASE_URL")
    assert "Traceback" not in out.stderr and list(tmp_path.iterdir()) == []


class _Adapter:
    """wait_job's client interface over an httpx client whose base URL is /api/v1."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http

    def get(self, url: str, headers=None):
        return self.http.get(url.removeprefix("/api/v1"))


class _ClientAdapter:
    """An httpx-like client over a TestClient with a fixed key and the /api/v1 prefix."""

    def __init__(self, client, key: str) -> None:
        self.client, self.headers = client, auth(key)

    def get(self, url: str, **kw):
        return self.client.get(f"/api/v1{url}", headers=self.headers, **kw)

    def post(self, url: str, **kw):
        return self.client.post(f"/api/v1{url}", headers=self.headers, **kw)


def test_a_queue_that_cannot_start_is_one_line_naming_the_versions(tmp_path):
    """Issue 42: redis 8.2 with fakeredis 2.40 (the pair a fresh install met) makes `serve` say, in one line, which
    versions are installed and the command that installs the locked ones; no traceback, nothing served.

    Oracle: the real clash. fakeredis 2.40.0 is put in front of the venv's own (pip install --target); the test
    skips where PyPI cannot be reached."""
    target = tmp_path / "fakeredis-2.40"
    got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                          "--target", str(target), "fakeredis==2.40.0"], capture_output=True, text=True, timeout=300)
    if got.returncode != 0:
        pytest.skip(f"cannot install fakeredis 2.40.0 for the clash: {got.stderr.strip()[-200:]}")
    from importlib.metadata import version

    if version("redis") != "8.2.0":
        pytest.skip(f"the clash is redis 8.2.0's; this venv has redis {version('redis')}")
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")},
            "CROWDQA_DATA_DIR": str(tmp_path / "d"), "PYTHONPATH": str(target)}
    out = subprocess.run([str(CROWDQA), "serve", "--port", str(free_port())], env=full, capture_output=True,
                         text=True, timeout=60)
    err = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(err) == 1, out.stdout + out.stderr
    assert "redis 8.2.0" in err[0] and "fakeredis 2.40.0" in err[0] and "locks/run.txt" in err[0], err[0]
    assert "Traceback" not in out.stderr and "serving on" not in out.stdout
