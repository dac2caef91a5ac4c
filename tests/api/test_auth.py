"""Isolation: a key of project B reaches none of project A's datasets or jobs (each endpoint answers 404)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from crowdqa.api.throttle import FailureThrottle
from crowdqa.jobs import keys as key_cases
from crowdqa.store import crud
from crowdqa.store.db import get_engine
from crowdqa.store.models import utcnow
from crowdqa.store.settings import get_settings
from tests.api.conftest import SAMPLE, auth, sample_dataset, upload, wait_job


@pytest.fixture
def a_resources(client, keys):
    """Project A's dataset with the sample and one finished job."""
    ds = sample_dataset(client, keys["a"])
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(keys["a"]), json={"method": "mv"}).json()["id"]
    assert wait_job(client, job, keys["a"])["status"] == "finished"
    return ds, job


def _endpoints(ds: str, job: str):
    return [
        ("GET", f"/api/v1/datasets/{ds}", {}),
        ("GET", f"/api/v1/datasets/{ds}/uploads", {}),
        ("GET", f"/api/v1/datasets/{ds}/jobs", {}),
        ("POST", f"/api/v1/datasets/{ds}/jobs", {"json": {"method": "mv"}}),
        ("GET", f"/api/v1/jobs/{job}", {}),
        ("GET", f"/api/v1/jobs/{job}/report", {}),
        ("GET", f"/api/v1/jobs/{job}/workers", {}),
        ("GET", f"/api/v1/jobs/{job}/labels", {}),
        ("POST", f"/api/v1/jobs/{job}/rerun", {}),
        ("DELETE", f"/api/v1/jobs/{job}", {}),
        ("DELETE", f"/api/v1/datasets/{ds}", {}),
    ]


def test_other_project_gets_404_everywhere(client, keys, a_resources):
    """Every dataset and job endpoint answers 404 problem+json to project B, and A's data is unchanged."""
    ds, job = a_resources
    for method, url, kw in _endpoints(ds, job):
        r = client.request(method, url, headers=auth(keys["b"]), **kw)
        assert r.status_code == 404, (method, url, r.status_code)
        assert r.headers["content-type"].startswith("application/problem+json")
    with open(SAMPLE / "crowd.jsonl", "rb") as fh:
        r = client.post(f"/api/v1/datasets/{ds}/uploads", headers=auth(keys["b"]),
                        files={"file": ("c.jsonl", fh)}, data={"format": "spans-jsonl", "role": "crowd"})
    assert r.status_code == 404
    assert client.get("/api/v1/datasets", headers=auth(keys["b"])).json() == {"data": [], "count": 0}
    assert client.get("/api/v1/jobs", headers=auth(keys["b"])).json() == {"data": [], "count": 0}
    # Project A still sees everything, unchanged.
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(keys["a"])).json()["n_uploads"] == 2
    assert client.get(f"/api/v1/jobs/{job}", headers=auth(keys["a"])).json()["status"] == "finished"
    assert client.get("/api/v1/jobs", headers=auth(keys["a"])).json()["count"] == 1


def test_no_key_gets_401_everywhere(client, keys, a_resources, monkeypatch):
    """Without a key (or with a wrong scheme) every endpoint answers 401 with a Bearer challenge."""
    ds, job = a_resources
    monkeypatch.setenv("CROWDQA_AUTH_FAILURE_BURST", "1000")  # 39 failures in a row: not throttled here
    get_settings.cache_clear()
    client.app.state.auth_throttle = None
    for method, url, kw in _endpoints(ds, job) + [("GET", "/api/v1/datasets", {}), ("GET", "/api/v1/jobs", {})]:
        for headers in ({}, {"Authorization": f"Basic {keys['a']}"}, auth(keys["a"] + "x")):
            r = client.request(method, url, headers=headers, **kw)
            assert r.status_code == 401, (method, url, headers)
            assert r.headers["www-authenticate"] == "Bearer"
    assert upload(client, keys["a"], ds, SAMPLE / "expert.jsonl", role="expert").status_code == 409  # already uploaded


def test_openapi_documents_every_endpoint_and_error(client):
    """Every operation lists its problem+json errors, and auth is a Bearer scheme."""
    doc = client.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            if path.endswith("/health"):
                continue
            codes = set(op["responses"])
            assert {"401", "422"} <= codes, (method, path)
            for code in codes - {"200", "201", "202", "204"}:
                assert "application/problem+json" in op["responses"][code]["content"], (method, path, code)
            if "{job_id}" in path or "{dataset_id}" in path:
                assert "404" in codes, (method, path)


def _problem(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    return r.json()


def test_only_admin_keys_create_and_revoke_keys(client, keys, settings):
    """Issue 35 item 6: any key could mint keys, so a leaked key's successor survived its revocation."""
    made = client.post("/api/v1/keys", headers=auth(keys["a"])).json()
    assert made["admin"] is False and made["expires_at"] is None
    ordinary = made["key"]
    assert client.get("/api/v1/keys", headers=auth(ordinary)).json()["count"] == 2  # it reads like any key
    body = _problem(client.post("/api/v1/keys", headers=auth(ordinary)), 403)
    assert "not an admin key" in body["detail"] and "--admin" in body["detail"]
    _problem(client.post("/api/v1/keys", headers=auth(ordinary), json={"admin": True}), 403)
    _problem(client.delete(f"/api/v1/keys/{keys['a'].split('_')[1]}", headers=auth(ordinary)), 403)
    assert client.get("/api/v1/keys", headers=auth(keys["a"])).json()["count"] == 2  # nothing was made or revoked
    admin = client.post("/api/v1/keys", headers=auth(keys["a"]), json={"admin": True}).json()
    assert admin["admin"] is True
    assert client.delete(f"/api/v1/keys/{made['prefix']}", headers=auth(admin["key"])).status_code == 204
    _problem(client.get("/api/v1/datasets", headers=auth(ordinary)), 401)
    _problem(client.post("/api/v1/keys", headers=auth(keys["a"]), json={"admin": "maybe"}), 422)
    _problem(client.post("/api/v1/keys", headers=auth(keys["a"]), json={"expires_in_days": 0}), 422)
    doc = client.get("/openapi.json").json()
    assert {"403", "429"} <= set(doc["paths"]["/api/v1/keys"]["post"]["responses"])


def test_expired_keys_answer_401(client, keys, settings):
    made = client.post("/api/v1/keys", headers=auth(keys["a"]), json={"expires_in_days": 0.5}).json()
    expires = made["expires_at"]
    assert client.get("/api/v1/datasets", headers=auth(made["key"])).status_code == 200
    with Session(get_engine(settings)) as s:
        row = crud.get_api_key(session=s, prefix=made["prefix"])
        assert abs((key_cases.list_keys(session=s, project_name="a")[1].expires_at - utcnow()).total_seconds()
                   - 43200) < 60, expires
        row.expires_at = utcnow()
        s.add(row)
        s.commit()
    body = _problem(client.get("/api/v1/datasets", headers=auth(made["key"])), 401)
    assert f"the API key {made['prefix']} expired at" in body["detail"]


def test_failed_authentication_is_throttled_per_address(client, keys, monkeypatch):
    """After the burst of 401s an address gets 429 with Retry-After, before its key is checked; others do not."""
    monkeypatch.setenv("CROWDQA_AUTH_FAILURE_BURST", "5")
    get_settings.cache_clear()
    client.app.state.auth_throttle = None
    assert client.get("/api/v1/datasets", headers=auth(keys["a"])).status_code == 200  # successes cost nothing
    codes = [client.get("/api/v1/datasets", headers=auth(keys["a"] + "x")).status_code for _ in range(6)]
    assert codes == [401] * 5 + [429]
    body = _problem(client.get("/api/v1/datasets", headers=auth(keys["a"])), 429)
    assert "too many failed authentications" in body["detail"]
    assert 1 <= int(client.get("/api/v1/jobs").headers["retry-after"]) <= 6  # 10 a minute: one back in 6 s
    with TestClient(client.app, client=("192.0.2.7", 40000)) as other:
        assert other.get("/api/v1/datasets", headers=auth(keys["b"])).status_code == 200


def test_a_throttled_address_earns_attempts_back():
    now = [0.0]
    throttle = FailureThrottle(burst=2, per_minute=6, clock=lambda: now[0], max_clients=2)
    for _ in range(2):
        assert throttle.retry_after("a") == 0
        throttle.failed("a")
    assert throttle.retry_after("a") == 10  # one token per 10 s
    now[0] = 9.0
    assert throttle.retry_after("a") == 1
    now[0] = 10.0
    assert throttle.retry_after("a") == 0
    throttle.failed("b")
    throttle.failed("c")  # at most two addresses remembered: the quietest ("a") is forgotten
    assert throttle.retry_after("a") == 0 and set(throttle._buckets) == {"b", "c"}


def test_the_key_check_is_a_function_of_the_raw_header(settings, keys):
    """check_authorization takes the Authorization header and a session (an ASGI middleware can call it)."""
    from crowdqa.api.deps import check_authorization
    from crowdqa.api.errors import ProblemError

    with Session(get_engine(settings)) as s:
        caller = check_authorization(f"Bearer {keys['a']}", session=s)
        assert caller.project.name == "a" and caller.key.admin
        for header in (None, "", "Bearer", f"Basic {keys['a']}", f"Bearer {keys['a']}x"):
            with pytest.raises(ProblemError) as refused:
                check_authorization(header, session=s)
            assert refused.value.status == 401 and refused.value.headers == {"WWW-Authenticate": "Bearer"}
