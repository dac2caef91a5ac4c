"""deploy/ and the production tutorial (docs/tutorials/production.md): what they start is what the production tests
start.

The compose file cannot be started here (no Docker engine): it is checked against the Compose specification's
JSON schema (check-jsonschema's vendored copy), the systemd units with ``systemd-analyze verify``, and the
crowdqa commands and settings of both against the ones tests/reliability/production.py starts. The tutorial's
production snippet is run word for word against a real redis-server and PostgreSQL.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import signal
import subprocess
import time
from urllib.parse import urlsplit

import pytest

from tests.reliability.production import BIN, REPO, SERVE_ARGS, SETTINGS, WORKER_ARGS, upload, wait_status
from tests.utils.services import wait_for_port

DEPLOY = REPO / "deploy"
UNITS = {"crowdqa-api.service": SERVE_ARGS, "crowdqa-worker.service": WORKER_ARGS}


def _unit(name: str) -> dict[str, str]:
    """The ``[Service]`` keys of a unit file (one value each)."""
    keys, section = {}, None
    for line in (DEPLOY / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            keys[key] = value
    return keys


def test_compose_file_is_valid_against_the_compose_schema(tmp_path):
    """deploy/compose.yaml passes the Compose specification's schema; a misspelt key does not (the check bites)."""
    checker = BIN / "check-jsonschema"
    if not checker.exists():
        pytest.skip("check-jsonschema is not installed (pip install -e '.[test]')")
    compose = DEPLOY / "compose.yaml"
    ok = subprocess.run([str(checker), "--builtin-schema", "vendor.compose-spec", str(compose)],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = tmp_path / "compose.yaml"
    bad.write_text(compose.read_text().replace("    restart: unless-stopped", "    restrat: unless-stopped", 1))
    refused = subprocess.run([str(checker), "--builtin-schema", "vendor.compose-spec", str(bad)],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "restrat" in refused.stdout, refused.stdout


def test_compose_file_starts_what_the_suite_starts():
    """The API and the workers run the commands and settings the production tests start, restarted when they
    exit, with the data directory on a volume; Redis and PostgreSQL 15 are restarted too."""
    from tests.reliability.production import COMPOSE

    services = COMPOSE["services"]
    assert services["api"]["command"] == ["crowdqa", *SERVE_ARGS]
    assert services["worker"]["command"] == ["crowdqa", *WORKER_ARGS]
    assert SERVE_ARGS[:1] == ["serve"] and WORKER_ARGS[:1] == ["worker"]
    for name in ("api", "worker"):
        assert sorted(services[name]["environment"]) == SETTINGS
        data_dir = services[name]["environment"]["CROWDQA_DATA_DIR"]
        assert any(v.endswith(f":{data_dir}") for v in services[name]["volumes"])
    assert services["postgres"]["image"] == "postgres:15" and services["redis"]["image"].startswith("redis:")
    assert all(s.get("restart") in ("always", "unless-stopped") for s in services.values()), services
    build = services["api"]["build"]
    assert (DEPLOY / build["context"]).resolve() == REPO and (REPO / build["dockerfile"]).is_file()


def _compose_interpolated(password: str) -> dict:
    """deploy/compose.yaml with ``${CROWDQA_DB_PASSWORD...}`` replaced as Compose does: the value, as it is."""
    import re

    import yaml

    text = re.sub(r"\$\{CROWDQA_DB_PASSWORD:\?[^}]*\}", lambda _: password,
                  (DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    return yaml.safe_load(text)


@pytest.mark.parametrize("password", ["0f3a9c" * 8, "Ab-._~9xYz", "p%40ss", "p@ss"])
def test_the_compose_password_reaches_postgres_and_crowdqa_alike_only_when_url_safe(password):
    """The compose file hands CROWDQA_DB_PASSWORD to the postgres image as it is (POSTGRES_PASSWORD) and to
    crowdqa inside CROWDQA_DATABASE_URL, which SQLAlchemy decodes: the two agree for the passwords the compose
    file and the production tutorial ask for (letters, digits, -._~) and not for an encoded or a bare @, so both say
    so."""
    from sqlalchemy.engine import make_url

    services = _compose_interpolated(password)["services"]
    given = services["postgres"]["environment"]["POSTGRES_PASSWORD"]
    url = make_url(services["api"]["environment"]["CROWDQA_DATABASE_URL"])
    url_safe = all(c.isascii() and (c.isalnum() or c in "-._~") for c in password)
    assert (url.password == given and url.host == "postgres") is url_safe, (given, url.password, url.host)
    header = (DEPLOY / "compose.yaml").read_text(encoding="utf-8").split("name:", 1)[0]
    assert "letters, digits and - . _ ~ only" in header
    tutorial = (REPO / "docs" / "tutorials" / "production.md").read_text(encoding="utf-8")
    assert "letters, digits and `-._~` only" in tutorial


@pytest.mark.parametrize("name", sorted(UNITS))
def test_systemd_units_verify_and_start_what_the_suite_starts(name, tmp_path):
    """Each unit runs the installed `crowdqa` with the production tests' arguments, restarts always, reads the
    settings from an environment file; `systemd-analyze verify` finds nothing (the ExecStart path pointed at this
    environment's crowdqa, which /opt/crowdqa/.venv stands for)."""
    service = _unit(name)
    argv = shlex.split(service["ExecStart"])
    assert argv[0] == "/opt/crowdqa/.venv/bin/crowdqa" and argv[1:] == UNITS[name]
    assert service["Restart"] == "always" and service["EnvironmentFile"] == "/etc/crowdqa/crowdqa.env"
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not found (apt-get install systemd); the unit's syntax was not checked")
    unit = tmp_path / name
    unit.write_text((DEPLOY / name).read_text().replace("/opt/crowdqa/.venv/bin/crowdqa", str(BIN / "crowdqa"))
                    .replace("User=crowdqa", "User=root"))
    out = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stderr.strip(), out.stderr


def _environment_file(path) -> dict[str, str]:
    """A file read as systemd reads an EnvironmentFile: KEY=value lines, ``#`` comments, nothing expanded."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    return dict(line.split("=", 1) for line in lines if line and not line.startswith(("#", ";")))


def test_the_units_environment_file_example_is_what_they_read():
    """deploy/crowdqa.env.example holds the deployment's settings as systemd takes them, written out (systemd
    expands no ``${...}`` and knows no ``export``: the tutorial's shell lines copied there would reach crowdqa as
    they are written); crowdqa refuses its placeholder password and takes it once a real one is set. The units
    say how to set a host up: the user they run as, its data directory, this file."""
    from pydantic import ValidationError

    from crowdqa.store.settings import Settings

    env = _environment_file(DEPLOY / "crowdqa.env.example")
    assert sorted(env) == SETTINGS
    assert not any("$" in v or k.startswith("export") for k, v in env.items()), env
    fields = {k.removeprefix("CROWDQA_").lower(): v for k, v in env.items()}
    with pytest.raises(ValidationError, match="placeholder"):
        Settings(_env_file=None, **fields)
    fields["database_url"] = fields["database_url"].replace(":changeme@", ":a-real-one@")
    settings = Settings(_env_file=None, **fields)
    assert str(settings.data_dir) == "/srv/crowdqa" and settings.redis_url.startswith("redis://")
    setup = (DEPLOY / "crowdqa-api.service").read_text(encoding="utf-8").split("[Unit]", 1)[0]
    assert "useradd --system" in setup and "install -d -o crowdqa -g crowdqa -m 700 /srv/crowdqa" in setup
    assert "deploy/crowdqa.env.example /etc/crowdqa/crowdqa.env" in setup
    assert "crowdqa.env.example" in (DEPLOY / "crowdqa-worker.service").read_text(encoding="utf-8")


def _docker_ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker leaves ``path`` (relative to the context) out: a pattern (``**`` = any folders) matches it
    or a folder holding it. Only the pattern forms .dockerignore uses here (no ``!`` exceptions)."""
    import fnmatch

    parts = path.split("/")
    for pattern in patterns:
        body = pattern.removeprefix("**/")
        for end in range(1, len(parts) + 1):
            starts = range(end) if pattern.startswith("**/") else [0]
            if any(fnmatch.fnmatchcase("/".join(parts[a:end]), body) for a in starts):
                return True
    return False


def test_the_image_context_leaves_out_what_a_checkout_makes():
    """deploy/Dockerfile's context is the repository (``COPY . /src``), where `bash scripts/run.sh` keeps an
    embedded server's data directory: its admin key (first-key.txt), server-secret and database would go into the
    image's COPY layer (a later RUN deleting /src does not take them out of it), with the .venv and .git. The
    .dockerignore leaves those out and keeps every file the repository tracks."""
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    assert not any(p.startswith("!") for p in patterns)  # _docker_ignored does not model exceptions
    for made in ("crowdqa-data/first-key.txt", "crowdqa-data/server-secret", "crowdqa-data/crowdqa.db",
                 "deploy/crowdqa-data/first-key.txt", "first-key.txt", ".venv/bin/python", ".venv-peers/bin/python",
                 ".git/config", "test-artifacts/dashboard/report.png", "api/__pycache__/main.cpython-311.pyc",
                 "crowdqa.egg-info/PKG-INFO"):
        assert _docker_ignored(made, patterns), made
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    kept = tracked.stdout.splitlines()
    assert "pyproject.toml" in kept and "README.md" in kept and "src/crowdqa/api" in kept
    assert [f for f in kept if _docker_ignored(f, patterns)] == []
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert "COPY . /src" in dockerfile


def _readme_snippet() -> str:
    readme = (REPO / "docs" / "tutorials" / "production.md").read_text(encoding="utf-8")
    section = readme.split("<!-- production:start -->", 1)[1].split("<!-- production:end -->", 1)[0]
    return section.split("```sh\n", 1)[1].split("\n```", 1)[0]


def test_readme_production_snippet_starts_what_the_suite_starts():
    """The snippet's crowdqa commands are the deployed ones, its settings the deployed settings."""
    lines = [line.split("#", 1)[0].strip() for line in _readme_snippet().splitlines()]
    exported = sorted(line.split()[1].split("=", 1)[0] for line in lines if line.startswith("export "))
    assert exported == SETTINGS
    started = [shlex.split(line.split(">", 1)[0]) for line in lines if line.endswith("&")]
    assert [argv[1:] for argv in started] == [[*SERVE_ARGS[:-1], "${CROWDQA_PORT:-8000}"], WORKER_ARGS]
    assert SERVE_ARGS[-2:] == ["--port", "8000"]


@pytest.mark.redis
@pytest.mark.postgres
def test_readme_production_snippet_word_for_word(tmp_path, redis_url, postgres_url):
    """The snippet, run as written with the password variable set (and the servers' hosts and ports, the API's
    port and the data directory, which it reads from variables), starts an API and a worker pool that finish a
    job with the key it printed; without the password it stops at once, saying which variable to set."""
    from tests.utils.services import free_port, stop_process_group

    redis_at, pg_at, port = urlsplit(redis_url), urlsplit(postgres_url), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", REDIS_HOST=redis_at.hostname,
               REDIS_PORT=str(redis_at.port), PG_HOST=pg_at.hostname, PG_PORT=str(pg_at.port),
               CROWDQA_PORT=str(port), CROWDQA_DATA_DIR=str(tmp_path / "data"))
    missing = subprocess.run(["bash", "-c", _readme_snippet()], env=env, cwd=tmp_path, capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode != 0 and "CROWDQA_DB_PASSWORD" in missing.stderr, missing.stderr
    assert not (tmp_path / "serve.log").exists()  # nothing was started

    env["CROWDQA_DB_PASSWORD"] = secrets.token_urlsafe(12)  # the test cluster trusts local connections
    shell = subprocess.Popen(["bash", "-c", _readme_snippet()], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = shell.communicate(timeout=120)
        assert shell.returncode == 0, err
        key = out.strip().splitlines()[-1]
        assert key.startswith("cqa_"), out
        wait_for_port(port, timeout=60)
        import httpx

        with httpx.Client(base_url=f"http://127.0.0.1:{port}/api/v1", timeout=30,
                          headers={"Authorization": f"Bearer {key}"}) as api:
            dataset = api.post("/datasets", json={"name": "snippet"}).json()["id"]
            assert upload(api, dataset, REPO / "api" / "sample" / "crowd.jsonl").status_code == 201
            job = api.post(f"/datasets/{dataset}/jobs", json={"method": "ds"}).json()["id"]
            body = wait_status(api, job, timeout=90)
            assert body["status"] == "finished", (body, (tmp_path / "worker.log").read_text())
    finally:
        stop_process_group(shell.pid)  # the snippet's background processes kept its process group
    for log in ("serve.log", "worker.log"):
        assert "Traceback" not in (tmp_path / log).read_text(), (tmp_path / log).read_text()


def test_worker_processes_bad_values_are_one_line(tmp_path):
    """`crowdqa worker --processes 0` and a pool whose Redis cannot be reached each answer one line, status 2."""
    from tests.utils.services import free_port

    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(CROWDQA_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", CROWDQA_DATA_DIR=str(tmp_path / "data"))
    for args, says in ((["--processes", "0"], "--processes must be at least 1"),
                       (["--processes", "2"], "cannot reach Redis")):
        out = subprocess.run([str(BIN / "crowdqa"), "worker", *args], env=env, capture_output=True, text=True,
                             timeout=60)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and says in lines[0], out.stderr


def _children(pid: int) -> list[int]:
    path = f"/proc/{pid}/task/{pid}/children"
    return [int(p) for p in open(path).read().split()] if os.path.exists(path) else []


@pytest.mark.redis
def test_worker_processes_run_niced_so_the_api_is_served_first(tmp_path):
    """`crowdqa worker --processes 2` runs itself and its worker processes at niceness 10 by default (`--nice N`
    sets it): on a host that also runs the API, a poll is not queued behind two fits. Out of range: one line."""
    from tests.utils.services import redis_server

    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(CROWDQA_DATA_DIR=str(tmp_path / "data"))
    out = subprocess.run([str(BIN / "crowdqa"), "worker", "--nice", "20"], env={**env, "CROWDQA_REDIS_URL":
                         "redis://127.0.0.1:1/0"}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and out.stderr.strip() == "crowdqa: error: --nice must be 0 to 19, found 20", out.stderr
    base = os.getpriority(os.PRIO_PROCESS, 0)
    with redis_server() as url:
        for args, expected in (([], 10), (["--nice", "3"], 3)):
            proc = subprocess.Popen([str(BIN / "crowdqa"), "worker", "--processes", "2", *args],
                                    env={**env, "CROWDQA_REDIS_URL": url}, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 60
                while len(children := _children(proc.pid)) < 2 and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert len(children) >= 2
                for pid in (proc.pid, *children):
                    assert os.getpriority(os.PRIO_PROCESS, pid) == min(base + expected, 19), pid
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
