"""Production mode as the README describes it: ``crowdqa serve`` and separate ``crowdqa worker`` processes on a
real redis-server and a real PostgreSQL (never fakeredis or SQLite here), through crashes and restarts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

from crowdqa.aggregation.registry import METHODS
from tests.api.conftest import SAMPLE
from tests.reliability import production
from tests.reliability.production import Deployment, children, kill_hard, kill_hard_pid, upload, wait_status
from tests.reliability.test_faults import RestartableRedis
from tests.utils.factories import synthetic_corpus
from tests.utils.services import PostgresCluster

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "api" / "sample" / "README_example.sh"

pytestmark = [pytest.mark.redis, pytest.mark.postgres]


@pytest.fixture
def deployment(tmp_path, redis_url, postgres_url):
    """A fresh database schema per test is not needed: every test makes its own project and dataset."""
    with Deployment(tmp_path, redis_url=redis_url, database_url=postgres_url) as d:
        yield d.serve()


def test_readme_example_twice_on_a_deployed_worker(deployment):
    """Issue 27 (1): the README API example, run twice against `crowdqa serve` and a separate `crowdqa worker` as
    deployed (deploy/compose.yaml) on PostgreSQL: both jobs finish (each rq work horse is a fork of the worker;
    a pooled PostgreSQL connection it inherited made every job after the first fail with DuplicatePreparedStatement)."""
    worker = deployment.deployed_worker()
    for run in range(2):
        out = subprocess.run(["bash", str(SCRIPT)], env=deployment.env, cwd=deployment.root, capture_output=True,
                             text=True, timeout=180)
        assert out.returncode == 0, out.stdout + out.stderr
        assert re.search(r"job [0-9a-f]{32}: finished", out.stdout), (run, out.stdout, deployment.log("worker-0.log"))
    assert worker.poll() is None, deployment.log("worker-0.log")
    assert "Traceback" not in deployment.log("worker-0.log"), deployment.log("worker-0.log")


@pytest.fixture
def slow_corpus(tmp_path) -> Path:
    """A corpus on which a Dawid-Skene job with ``tol`` 0 runs for several seconds."""
    path = tmp_path / "big.npz"
    synthetic_corpus(n_docs=2000, doc_len=50, n_crowd=20, crowd_per_doc=5, seed=4).save(path)
    return path


def _two_datasets(api, slow_corpus: Path) -> tuple[str, str]:
    """The bundled sample (quick jobs) and the slow corpus, each a dataset of the key's project."""
    ids = []
    for name, path, fmt in (("small", SAMPLE / "crowd.jsonl", "spans-jsonl"), ("big", slow_corpus, "corpus")):
        ids.append(api.post("/datasets", json={"name": name}).json()["id"])
        assert upload(api, ids[-1], path, format=fmt).status_code == 201
    return ids[0], ids[1]


def _no_rq_text(response) -> None:
    assert "Execution" not in response.text and "rq" not in response.text.split(), response.text


def test_rerun_from_every_terminal_state(tmp_path, redis_url, postgres_url, slow_corpus):
    """Issue 27 (2, 3): a finished job, a job failed as lost (Redis flushed under it) and a job failed as abandoned
    (its worker and work horse SIGKILLed mid-job) each re-run to finished on a new worker. Before, the abandoned
    job's re-run answered 422 with rq's "Execution ... not found in Redis" and stayed queued for good."""
    env = {"CROWDQA_STALE_AFTER": "3", "CROWDQA_HEARTBEAT_INTERVAL": "0.5", "CROWDQA_LOST_AFTER": "1"}
    with Deployment(tmp_path, redis_url=redis_url, database_url=postgres_url, **env) as d:
        d.serve()
        api = d.client(d.key("rerun"))
        small, big = _two_datasets(api, slow_corpus)

        # Lost: queued while no worker runs, then Redis forgets it.
        lost = api.post(f"/datasets/{small}/jobs", json={"method": "mv"}).json()["id"]
        redis.Redis.from_url(redis_url).flushdb()
        body = wait_status(api, lost, timeout=30, until=("failed",))
        assert body["status"] == "failed" and body["error"].startswith("lost"), body

        # Abandoned: the worker and its horse die mid-job.
        worker = d.worker()
        abandoned = api.post(f"/datasets/{big}/jobs", json={"method": "ds", "params": {"max_iter": 300, "tol": 0.0}})
        abandoned = abandoned.json()["id"]
        assert wait_status(api, abandoned, timeout=60, until=("running",))["status"] == "running"
        time.sleep(1.0)
        kill_hard(worker)
        body = wait_status(api, abandoned, timeout=30, until=("failed", "finished"))
        assert body["status"] == "failed" and body["error"].startswith("abandoned"), body
        # The dead run's execution hash expires after rq's heartbeat TTL (about 90 s) while its id stays in the
        # job's execution registry for 60 s more: expire it now instead of waiting.
        r = redis.Redis.from_url(redis_url)
        assert r.delete(*r.keys("rq:execution:*")) >= 1

        d.worker()
        finished = api.post(f"/datasets/{small}/jobs", json={"method": "ds"}).json()["id"]
        assert wait_status(api, finished, timeout=60)["status"] == "finished"

        for job_id, params in ((lost, None), (abandoned, {"params": {"max_iter": 5}}), (finished, None)):
            r = api.post(f"/jobs/{job_id}/rerun", json=params)
            _no_rq_text(r)
            assert r.status_code == 202, r.text
            body = wait_status(api, job_id, timeout=60)
            assert body["status"] == "finished", body
        # Once more from finished, then the abandoned run's leftovers in Redis are gone for good.
        r = api.post(f"/jobs/{abandoned}/rerun")
        assert r.status_code == 202, r.text
        assert wait_status(api, abandoned, timeout=90)["status"] == "finished"


def _process_tree(pid: int) -> list[str]:
    """Each process under ``pid`` (recursively) with its state and command line: what a hung stop waits on."""
    lines = []
    for child in [pid, *children(pid)]:
        try:
            status = dict(line.split(":\t", 1) for line in Path(f"/proc/{child}/status").read_text().splitlines()
                          if ":\t" in line)
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
        except OSError:
            continue
        lines.append(f"{child} {status.get('State', '?')} {cmd}")
        if child != pid:
            lines.extend("  " + line for line in _process_tree(child)[1:])
    return lines


def _start_slow_job(api, dataset: str) -> str:
    job = api.post(f"/datasets/{dataset}/jobs", json={"method": "ds", "params": {"max_iter": 200, "tol": 0.0}})
    assert job.status_code == 202, job.text
    assert wait_status(api, job.json()["id"], timeout=60, until=("running",))["status"] == "running"
    return job.json()["id"]


def _finishes_once(api, job_id: str, timeout: float = 120) -> None:
    body = wait_status(api, job_id, timeout=timeout)
    assert body["status"] == "finished" and body["attempts"] == 1, body


def test_worker_keeps_serving_across_redis_and_postgres_restarts(tmp_path, slow_corpus):
    """Issue 27 (3): one `crowdqa worker` process, never restarted from outside. Redis crashes (and comes back
    empty) while it runs a job, then PostgreSQL restarts while it runs another: both jobs finish, each run once,
    and the same worker process takes a new job after each outage. Before, rq's loop quit when Redis vanished
    under a job, and a job's database writes failed at the first cut connection."""
    redis_srv = RestartableRedis()
    pg = PostgresCluster()
    try:
        redis_srv.start()
        pg.create()
        with Deployment(tmp_path, redis_url=redis_srv.url, database_url=pg.url,
                        CROWDQA_HEARTBEAT_INTERVAL="0.5") as d:
            d.serve()
            api = d.client(d.key("outages"))
            small, big = _two_datasets(api, slow_corpus)
            worker = d.worker()

            outages = ((redis_srv.crash, redis_srv.start, "hmm-crowd"), (lambda: pg.stop("fast"), pg.start, "mv"))
            for down, up, method in outages:
                running = _start_slow_job(api, big)
                down()
                time.sleep(2.0)
                up()
                _finishes_once(api, running)
                after = api.post(f"/datasets/{small}/jobs", json={"method": method}).json()["id"]
                _finishes_once(api, after, timeout=60)
                assert worker.poll() is None, d.log("worker-0.log")
    finally:
        redis_srv.close()
        pg.close()


#: The worker processes of a deployed `crowdqa worker` (deploy/compose.yaml).
POOL = int(production.WORKER_ARGS[production.WORKER_ARGS.index("--processes") + 1])
#: The methods of the 20 jobs in a row (every aggregator that takes a span corpus of the crowd alone), in turn.
MIXED = tuple(m for m, entry in METHODS.items() if not entry.experts and entry.classes[1] is None)


def _pool_processes(pid: int) -> list[int]:
    """The worker processes of a `crowdqa worker --processes N` (not multiprocessing's resource tracker)."""
    return [c for c in children(pid) if b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()]


def test_supervised_pool_twenty_in_a_row_ten_at_once_and_a_killed_process(tmp_path, redis_url, postgres_url,
                                                                         slow_corpus):
    """Issue 27 (3): `crowdqa worker --processes 2` runs 20 jobs of mixed methods in a row and 10 at once, each
    finished and run once; a pool process SIGKILLed mid-job (with its work horse) is started again by the
    supervisor, its job fails as abandoned and re-runs to finished; SIGTERM stops the pool cleanly."""
    env = {"CROWDQA_STALE_AFTER": "3", "CROWDQA_HEARTBEAT_INTERVAL": "0.5"}
    with Deployment(tmp_path, redis_url=redis_url, database_url=postgres_url, **env) as d:
        d.serve()
        api = d.client(d.key("pool"))
        small, big = _two_datasets(api, slow_corpus)
        pool = d.deployed_worker()

        for i in range(20):
            job = api.post(f"/datasets/{small}/jobs", json={"method": MIXED[i % len(MIXED)]}).json()["id"]
            _finishes_once(api, job, timeout=60)
        at_once = [api.post(f"/datasets/{small}/jobs", json={"method": MIXED[i % 3]}).json()["id"]
                   for i in range(10)]
        for job in at_once:
            _finishes_once(api, job, timeout=90)

        running = _start_slow_job(api, big)
        processes = _pool_processes(pool.pid)
        busy = [pid for pid in processes if children(pid)]
        assert len(processes) == POOL and len(busy) == 1, (processes, busy)
        kill_hard_pid(busy[0])
        body = wait_status(api, running, timeout=30, until=("failed", "finished"))
        assert body["status"] == "failed" and body["error"].startswith("abandoned"), body
        deadline = time.monotonic() + 30
        while len(_pool_processes(pool.pid)) < POOL and time.monotonic() < deadline:
            time.sleep(0.2)
        log = d.log("worker-0.log")
        assert len(_pool_processes(pool.pid)) == POOL and "restarting in" in log, log
        assert api.post(f"/jobs/{running}/rerun", json={"params": {"max_iter": 5}}).status_code == 202
        assert wait_status(api, running, timeout=60)["status"] == "finished"

        os.kill(pool.pid, signal.SIGTERM)
        tree: list[str] = []
        try:
            code = pool.wait(30)
        except subprocess.TimeoutExpired:  # what the stop waits on: each process's threads, in the log
            code, tree = None, _process_tree(pool.pid)
            for pid in _pool_processes(pool.pid):
                os.kill(pid, signal.SIGUSR2)
            time.sleep(1)
        assert code == 0, "\n".join([*tree, *d.log("worker-0.log").splitlines()[-80:]])
