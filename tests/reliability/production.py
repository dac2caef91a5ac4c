"""A production deployment for tests, as the README describes it: a real redis-server and PostgreSQL,
``crowdqa serve`` and separate ``crowdqa worker`` processes sharing one data directory.

The processes are the installed ``crowdqa`` command, started with the environment a user would export;
each runs in its own session so that a test can kill a worker (and its work horse) outright.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.utils.services import free_port, wait_for_port

BIN = Path(sys.executable).parent
CROWDQA = BIN / "crowdqa"
REPO = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text(encoding="utf-8"))
#: The arguments of ``crowdqa serve`` and ``crowdqa worker`` as deploy/compose.yaml (and the systemd units, by
#: tests/reliability/test_deploy.py) start them; the production tests start the same (on a free port).
SERVE_ARGS: list[str] = COMPOSE["services"]["api"]["command"][1:]
WORKER_ARGS: list[str] = COMPOSE["services"]["worker"]["command"][1:]
#: The settings the deployment gives every crowdqa process (values differ per host; the names do not).
SETTINGS = sorted(COMPOSE["x-crowdqa"]["environment"])


def with_port(args: list[str], port: int) -> list[str]:
    """``args`` with the value of ``--port`` replaced."""
    i = args.index("--port")
    return [*args[:i + 1], str(port), *args[i + 2:]]


class Deployment:
    """``crowdqa serve`` plus workers on ``redis_url`` and ``database_url``; logs under ``root``."""

    def __init__(self, root: Path, *, redis_url: str, database_url: str, **env: str) -> None:
        self.root = root
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api/v1"
        base = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
        settings = {"CROWDQA_REDIS_URL": redis_url, "CROWDQA_DATABASE_URL": database_url,
                    "CROWDQA_DATA_DIR": str(root / "crowdqa-data")}
        assert sorted(settings) == SETTINGS  # the settings deploy/compose.yaml gives the API and the workers
        self.env = {**base, "PATH": f"{BIN}{os.pathsep}{base.get('PATH', '')}", "PYTHONUNBUFFERED": "1",
                    "CROWDQA_API": self.api, **settings, **env}
        self.server: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self._logs: list = []

    def _spawn(self, args: list[str], log_name: str) -> subprocess.Popen:
        log = open(self.root / log_name, "ab")  # noqa: SIM115 - closed in close()
        self._logs.append(log)
        return subprocess.Popen([str(CROWDQA), *args], env=self.env, cwd=self.root, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def serve(self) -> Deployment:
        """``crowdqa serve`` as deployed (deploy/compose.yaml), on a free port."""
        self.server = self._spawn([*with_port(SERVE_ARGS, self.port), "--log-level", "warning"], "serve.log")
        wait_for_port(self.port, timeout=60)
        return self

    def worker(self, *args: str) -> subprocess.Popen:
        """Start one more ``crowdqa worker ARGS`` (its log: ``worker-<n>.log``)."""
        proc = self._spawn(["worker", *args], f"worker-{len(self.workers)}.log")
        self.workers.append(proc)
        return proc

    def deployed_worker(self) -> subprocess.Popen:
        """``crowdqa worker`` as deployed (deploy/compose.yaml: a supervised pool)."""
        proc = self._spawn(WORKER_ARGS, f"worker-{len(self.workers)}.log")
        self.workers.append(proc)
        return proc

    def log(self, name: str) -> str:
        return (self.root / name).read_text(errors="replace")

    def key(self, project: str = "demo") -> str:
        out = subprocess.run([str(CROWDQA), "keys", "create", "--project", project], env=self.env, cwd=self.root,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip().splitlines()[-1]

    def client(self, key: str) -> httpx.Client:
        return httpx.Client(base_url=self.api, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def close(self) -> None:
        """SIGTERM to every process (a warm stop), SIGKILL after 20 s; then SIGKILL whatever they left (a
        supervised worker's processes and work horses run in process groups of their own)."""
        procs = [*self.workers, *([self.server] if self.server else [])]
        left = [pid for proc in procs for pid in descendants(proc.pid)]
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for log in self._logs:
            log.close()

    def __enter__(self) -> Deployment:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def wait_status(client: httpx.Client, job_id: str, *, timeout: float, until=("finished", "failed")) -> dict:
    """Poll ``GET /jobs/{id}`` until its status is one of ``until`` (or the time is up); the last body."""
    deadline, body = time.monotonic() + timeout, {}
    while True:
        try:  # while the database restarts the API answers 503: keep polling
            r = client.get(f"/jobs/{job_id}")
            body = r.json() if r.status_code == 200 else body
        except (httpx.HTTPError, ValueError):
            pass
        if body.get("status") in until or time.monotonic() > deadline:
            return body
        time.sleep(0.2)


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (rq's work horse is one: it runs in its own process group)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def descendants(pid: int) -> list[int]:
    """Children, grandchildren... of ``pid``, now."""
    found = children(pid)
    for child in list(found):
        found += descendants(child)
    return found


def kill_hard_pid(pid: int) -> None:
    """SIGKILL a worker process and its work horse at once, as when its host or container dies."""
    for target in [pid, *children(pid)]:
        try:
            os.kill(target, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_hard(proc: subprocess.Popen) -> None:
    """:func:`kill_hard_pid` on a worker this test started (and reap it)."""
    kill_hard_pid(proc.pid)
    proc.wait(10)


def upload(client: httpx.Client, dataset_id: str, path: Path, *, format: str = "spans-jsonl",
           role: str = "crowd") -> httpx.Response:
    with open(path, "rb") as fh:
        return client.post(f"/datasets/{dataset_id}/uploads", files={"file": (path.name, fh)},
                           data={"format": format, "role": role})
