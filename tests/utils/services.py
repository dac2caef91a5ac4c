"""Real services for tests: a redis-server and a PostgreSQL cluster started in temp dirs.

Both skip the calling test with a message when their binaries are absent (no Docker here).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _postgres_bin() -> Path:
    """CROWDQA_PG_BIN, else the newest Debian cluster binaries, else the folder of an ``initdb`` on PATH."""
    if "CROWDQA_PG_BIN" in os.environ:
        return Path(os.environ["CROWDQA_PG_BIN"])
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if debian:
        return debian[-1].parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else Path("/usr/lib/postgresql/15/bin")


PG_BIN = _postgres_bin()


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, *, timeout: float = 20.0) -> None:
    """Wait until something accepts connections on ``port``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


@contextmanager
def redis_server() -> Iterator[str]:
    """Start ``redis-server`` on a free port (no persistence); yield its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not found on PATH (apt-get install redis-server); Redis tests skipped")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="crowdqa-redis-") as tmp:
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", tmp],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(port)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(10)


def stop_process_group(pid: int, *, timeout: float = 20.0) -> None:
    """SIGTERM a shell's process group (what it started in the background kept the group), then SIGKILL what is
    left after ``timeout`` seconds; a group already gone is fine."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(pid, signal.SIGKILL)


def _as_postgres(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; tests run as root here, so drop to the postgres user.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *cmd]
    return cmd


class PostgresCluster:
    """A throwaway PostgreSQL cluster in a temp dir on a free port, which can be stopped and started again on
    the same port and data (a restart of the database server under a running service)."""

    def __init__(self) -> None:
        self.initdb, self.pg_ctl = PG_BIN / "initdb", PG_BIN / "pg_ctl"
        if not self.initdb.exists() or not self.pg_ctl.exists():
            pytest.skip(f"PostgreSQL binaries not found in {PG_BIN} (set CROWDQA_PG_BIN); PostgreSQL tests skipped")
        if os.geteuid() == 0 and shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as an unprivileged user")
        self.port = free_port()
        self.tmp = Path(tempfile.mkdtemp(prefix="crowdqa-pg-"))
        self.data = self.tmp / "data"
        self.url = f"postgresql+psycopg://crowdqa@127.0.0.1:{self.port}/crowdqa"

    def create(self) -> None:
        """initdb, start, and create the database ``crowdqa`` owned by the user ``crowdqa``."""
        if os.geteuid() == 0:
            shutil.chown(self.tmp, "postgres", "postgres")
        os.chmod(self.tmp, 0o700)
        subprocess.run(_as_postgres([str(self.initdb), "-D", str(self.data), "-U", "crowdqa", "--auth=trust", "-E",
                                     "UTF8", "--no-sync"]), check=True, capture_output=True)
        self.start()
        subprocess.run(_as_postgres([str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                                     "crowdqa", "crowdqa"]), check=True, capture_output=True)

    def start(self) -> None:
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.tmp} -c fsync=off -c full_page_writes=off"
        subprocess.run(_as_postgres([str(self.pg_ctl), "-D", str(self.data), "-o", opts, "-w", "-t", "30", "-l",
                                     str(self.tmp / "log"), "start"]), check=True, capture_output=True)

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server (``immediate``: as a crash, every connection cut; ``fast``: a clean restart)."""
        subprocess.run(_as_postgres([str(self.pg_ctl), "-D", str(self.data), "-m", mode, "stop"]),
                       capture_output=True)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a throwaway PostgreSQL cluster on a free port; yield a SQLAlchemy URL to its database."""
    cluster = PostgresCluster()
    try:
        cluster.create()
        yield cluster.url
    finally:
        cluster.close()


@contextmanager
def crowdqa_serve(env: dict[str, str], *, log_path: Path) -> Iterator[tuple[subprocess.Popen, int]]:
    """Run ``crowdqa serve`` with ``env`` on a free port; yield (process, port); stop it after, printing its
    log's tail when it holds a traceback."""
    port = free_port()
    log = open(log_path, "w+")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "crowdqa"), "serve", "--port", str(port),
                             "--log-level", "warning"], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, timeout=60)
        yield proc, port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.seek(0)
        tail = log.read()[-4000:]
        log.close()
        if "Traceback" in tail:
            print("crowdqa serve log:\n" + tail)
