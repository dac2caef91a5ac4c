"""Small things a user expects: the service describes itself, /docs works offline, /health says
503 when degraded, keys can be listed and revoked (API and CLI)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from crowdqa.api.cli import main
from crowdqa.store.settings import get_settings
from tests.api.conftest import auth
from tests.utils.services import free_port


def test_root_and_api_v1_describe_the_service(client):
    """`/` says where things are; `/api/v1` lists its endpoints (before: both 404)."""
    root = client.get("/").json()
    assert root["api"] == "/api/v1" and root["docs"] == "/docs"
    index = client.get("/api/v1").json()
    paths = {(e["method"], e["path"]) for e in index["endpoints"]}
    assert ("POST", "/api/v1/datasets/{dataset_id}/uploads") in paths and ("GET", "/api/v1/health") in paths


def test_docs_are_served_from_the_package(client):
    """/docs loads Swagger UI from this server, not from a CDN, so it works offline."""
    page = client.get("/docs").text
    assert "cdn.jsdelivr.net" not in page and "/static/docs/swagger-ui-bundle.js" in page
    js = client.get("/static/docs/swagger-ui-bundle.js")
    assert js.status_code == 200 and len(js.content) > 100_000
    assert client.get("/static/docs/swagger-ui.css").status_code == 200


def test_health_is_503_when_degraded(settings, monkeypatch):
    """/health answers 503 (not 200) while the queue does not answer."""
    from crowdqa.api.main import app

    monkeypatch.setenv("CROWDQA_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    get_settings.cache_clear()
    with TestClient(app) as c:
        r = c.get("/api/v1/health")
    assert r.status_code == 503 and r.json()["status"] == "degraded" and r.json()["queue"] is False


def test_keys_list_create_and_revoke_in_the_api(client, keys):
    """GET /keys lists the project's keys by prefix; POST makes another; DELETE revokes one (then 401)."""
    key = keys["a"]
    listed = client.get("/api/v1/keys", headers=auth(key)).json()
    assert listed["count"] == 1 and listed["data"][0]["prefix"] == key.split("_")[1]
    new = client.post("/api/v1/keys", headers=auth(key), json={"admin": True}).json()
    assert new["key"].startswith("cqa_") and client.get("/api/v1/keys", headers=auth(key)).json()["count"] == 2
    assert client.delete(f"/api/v1/keys/{key.split('_')[1]}", headers=auth(new["key"])).status_code == 204
    assert client.get("/api/v1/keys", headers=auth(key)).status_code == 401
    assert client.delete(f"/api/v1/keys/{keys['b'].split('_')[1]}", headers=auth(new["key"])).status_code == 404


def test_keys_list_and_revoke_in_the_cli(settings, capsys):
    """`crowdqa keys list` shows prefixes and projects (never secrets); `keys revoke PREFIX` removes one."""
    assert main(["keys", "create", "--project", "lab"]) == 0
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["keys", "list"]) == 0
    out = capsys.readouterr().out
    prefix = key.split("_")[1]
    assert prefix in out and "lab" in out and key not in out
    assert main(["keys", "revoke", prefix]) == 0
    capsys.readouterr()
    assert main(["keys", "revoke", prefix]) == 2
    assert "no key with prefix" in capsys.readouterr().err


def test_every_list_endpoint_takes_offset_and_limit(client):
    """The README: "every list takes `offset` and `limit` and answers {"data": [...], "count": n}". GET /keys
    answered the whole list whatever they said (offset=1&limit=1 gave both keys; limit=-1 a 200)."""
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    lists = []
    for path, ops in doc["paths"].items():
        get = ops.get("get")
        ref = ((((get or {}).get("responses", {}).get("200") or {}).get("content") or {}).get("application/json") or {}
               ).get("schema", {}).get("$ref", "")
        names = {p["name"] for p in (get or {}).get("parameters", [])}
        if {"data", "count"} <= set(schemas.get(ref.rsplit("/", 1)[-1], {}).get("properties", {})) and (
                "budget" not in names):  # a routing is the budget's best documents in order, not a list to page
            lists.append(path)
            assert {"offset", "limit"} <= names, path
    assert "/api/v1/keys" in lists and len(lists) >= 7


def test_the_keys_list_pages_like_every_list(client, keys):
    key = keys["a"]
    second = client.post("/api/v1/keys", headers=auth(key), json={}).json()
    page = client.get("/api/v1/keys?offset=1&limit=1", headers=auth(key)).json()
    assert page["count"] == 2 and [k["prefix"] for k in page["data"]] == [second["prefix"]]
    assert client.get("/api/v1/keys?limit=0", headers=auth(key)).status_code == 422


def test_run_sh_installs_from_the_lock_only_when_it_or_pyproject_changed_and_passes_its_arguments(tmp_path):
    """scripts/run.sh installs the lock (locks/run.txt, hash-checked), then crowdqa without resolving again, only
    when the lock or pyproject.toml changed since the last install (before: on every start), and its arguments go
    to `crowdqa serve`. A stand-in .venv records what run.sh runs."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for name in ("scripts/run.sh", "scripts/install.sh", "locks/run.txt", "pyproject.toml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(root / name, tmp_path / name)
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    log = tmp_path / "log"
    (bin_ / "python").write_text('#!/bin/sh\n'
                                 f'if [ "$1 $2" = "-m pip" ]; then shift 2; echo "pip $*" >> {log}; exit 0; fi\n'
                                 f'exec {sys.executable} "$@"\n')
    (bin_ / "crowdqa").write_text(f'#!/bin/sh\necho "crowdqa $*" >> {log}\n')
    for exe in ("python", "crowdqa"):
        (bin_ / exe).chmod(0o755)

    def run() -> list[str]:
        log.write_text("")
        subprocess.run(["bash", "scripts/run.sh", "--port", "8001"], cwd=tmp_path, check=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "PYTHON"}, capture_output=True)
        return log.read_text().splitlines()

    pip = "pip install -q --disable-pip-version-check"
    install = [f"{pip} --no-deps --require-hashes -r locks/run.txt", "pip check",
               f"{pip} --no-deps --no-build-isolation -e ."]
    assert run() == [*install, "crowdqa serve --port 8001"]  # first start: no record of an install
    assert run() == ["crowdqa serve --port 8001"]  # nothing changed
    for changed in ("pyproject.toml", "locks/run.txt"):
        with open(tmp_path / changed, "a", encoding="utf-8") as fh:
            fh.write("\n# a new dependency\n")
        assert run() == [*install, "crowdqa serve --port 8001"], changed


def test_an_unexpected_error_is_a_500_problem_logged_once(caplog):
    """Polish 3: an unhandled exception is answered with a 500 problem and its traceback logged once (before:
    Starlette's handler logged it, then re-raised it to the server, which logged it again; TestClient's
    default raise_server_exceptions shows that re-raise). One raised after the response started is left to
    the server."""
    import logging

    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    from crowdqa.api.errors import install_error_handlers

    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("kaboom")

    @app.get("/late")
    def late() -> StreamingResponse:
        def body():
            yield b"partial"
            raise RuntimeError("too late")
        return StreamingResponse(body())

    client = TestClient(app)  # raise_server_exceptions=True: what reaches the server is raised here
    with caplog.at_level(logging.ERROR):
        r = client.get("/boom")
    assert r.status_code == 500 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"] == "internal error; the server log has the details"
    logged = [rec for rec in caplog.records if rec.exc_info and "kaboom" in str(rec.exc_info[1])]
    assert len(logged) == 1 and "GET /boom" in logged[0].getMessage()
    with pytest.raises(RuntimeError, match="too late"):
        client.get("/late")
