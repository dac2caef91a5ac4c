"""The production tutorial (docs/tutorials/production.md), run as written on a real PostgreSQL and Redis.

What the suite cannot do as written is installing packages and starting system services (step 1's ``apt-get
install`` and ``service ... start``: scripts/test.sh installs redis-server and PostgreSQL with apt-get as root, and
CI must not start the host's own servers). Instead this test starts a PostgreSQL cluster made as Debian's package
makes one (superuser ``postgres``, peer authentication on the local socket, passwords over TCP) and a
redis-server, and points the tutorial's commands at them with ``PGHOST``/``PGPORT`` (which ``createuser``, ``psql``
and ``createdb`` read) and the tutorial's own ``PG_PORT``, ``REDIS_PORT``, ``CROWDQA_PORT`` and
``CROWDQA_DATA_DIR``. Then every other line runs as written, in order, in one shell: the ``crowdqa`` role and
database with a fresh password (step 2), the settings, ``crowdqa serve``, ``crowdqa worker`` and
``crowdqa keys create`` (step 4); and the README example job runs against that deployment to ``finished``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.docs.test_examples import BLOCK
from tests.utils.docs import REPO, page
from tests.utils.services import PG_BIN, free_port, stop_process_group

BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.redis, pytest.mark.postgres]


def _as_postgres(*argv: str) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv]


@pytest.fixture
def debian_like_cluster() -> Iterator[tuple[str, int]]:
    """A PostgreSQL cluster as ``apt-get install postgresql`` makes one; yields its socket folder and port."""
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("the tutorial's steps run as root (runuser -u postgres): run the suite as root")
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL binaries not found in {PG_BIN} (apt-get install postgresql)")
    tmp = Path(tempfile.mkdtemp(prefix="crowdqa-pg-tutorial-"))
    shutil.chown(tmp, "postgres", "postgres")
    os.chmod(tmp, 0o700)
    port, data = free_port(), tmp / "data"
    subprocess.run(_as_postgres(str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=peer",
                                "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"), check=True,
                   capture_output=True)
    opts = f"-p {port} -c listen_addresses=127.0.0.1 -k {tmp} -c fsync=off"
    subprocess.run(_as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-o", opts, "-w", "-t", "30", "-l",
                                str(tmp / "log"), "start"), check=True, capture_output=True)
    try:
        yield str(tmp), port
    finally:
        subprocess.run(_as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"),
                       capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def tutorial_session() -> str:
    """The tutorial's shell blocks in order, step 1's package installs and service starts left out."""
    script = "\n".join(code for language, code in BLOCK.findall(page("tutorials/production.md")) if language == "sh")
    skipped = [line for line in script.splitlines() if re.match(r"\s*(apt-get|service) ", line)]
    assert len(skipped) == 3, skipped
    return "\n".join(line for line in script.splitlines() if line not in skipped) + "\n"


def test_the_session_is_the_tutorials_blocks_in_order():
    script = tutorial_session()
    order = [script.index(s) for s in ("createuser crowdqa", "createdb --owner crowdqa crowdqa",
                                       "export CROWDQA_DATABASE_URL", "crowdqa serve", "crowdqa worker",
                                       "crowdqa keys create")]
    assert order == sorted(order) and "apt-get" not in script


def test_the_production_tutorial_as_written_runs_a_job(tmp_path, debian_like_cluster, redis_url):
    socket_dir, pg_port = debian_like_cluster
    redis_at, api_port = urlsplit(redis_url), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWDQA_", "PG"))}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", PGHOST=socket_dir, PGPORT=str(pg_port),
               PG_PORT=str(pg_port), REDIS_PORT=str(redis_at.port), CROWDQA_PORT=str(api_port),
               CROWDQA_DATA_DIR=str(tmp_path / "data"), CROWDQA_API=f"http://127.0.0.1:{api_port}/api/v1")
    script = tutorial_session() + (
        # Then, as a user of the deployment: wait for the API, and run the README example job against it.
        'for _ in $(seq 120); do curl -sf "$CROWDQA_API/health" >/dev/null && break; sleep 0.5; done\n'
        f"bash {REPO / 'api' / 'sample' / 'README_example.sh'}\n")
    shell = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], env=env, cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = shell.communicate(timeout=300)
    finally:
        stop_process_group(shell.pid)  # serve and worker were started in the background of this session
    logs = {name: (tmp_path / name).read_text() for name in ("serve.log", "worker.log") if (tmp_path / name).exists()}
    assert shell.returncode == 0, (out, err, logs)
    assert re.search(r"^job [0-9a-f]{32}: finished$", out, flags=re.M), (out, logs)
    assert re.search(r"^cqa_\S+$", out, flags=re.M)  # the key `crowdqa keys create --project lab-a` printed
    assert all("Traceback" not in log for log in logs.values()), logs
