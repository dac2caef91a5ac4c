"""Production mode as the README describes it: ``crowdqa serve`` and separate ``crowdqa worker`` processes on a
real redis-server and a real PostgreSQL (never fakeredis or SQLite here), through crashes and restarts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.reliability.production import Deployment

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "api" / "sample" / "README_example.sh"

pytestmark = [pytest.mark.redis, pytest.mark.postgres]


@pytest.fixture
def deployment(tmp_path, redis_url, postgres_url):
    """A fresh database schema per test is not needed: every test makes its own project and dataset."""
    with Deployment(tmp_path, redis_url=redis_url, database_url=postgres_url) as d:
        yield d.serve()


def test_readme_example_twice_on_one_worker(deployment):
    """Issue 27 (1): the README API example, run twice against `crowdqa serve` and one separate `crowdqa worker`
    on PostgreSQL: both jobs finish (each rq work horse is a fork of the worker; a pooled PostgreSQL connection
    it inherited made every job after the first fail with DuplicatePreparedStatement)."""
    worker = deployment.worker()
    for run in range(2):
        out = subprocess.run(["bash", str(SCRIPT)], env=deployment.env, cwd=deployment.root, capture_output=True,
                             text=True, timeout=180)
        assert out.returncode == 0, out.stdout + out.stderr
        assert re.search(r"job [0-9a-f]{32}: finished", out.stdout), (run, out.stdout, deployment.log("worker-0.log"))
    assert worker.poll() is None, deployment.log("worker-0.log")
    assert "Traceback" not in deployment.log("worker-0.log"), deployment.log("worker-0.log")
