"""Isolation: a key of project B reaches none of project A's datasets or jobs (each endpoint answers 404)."""

from __future__ import annotations

import pytest

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


def test_no_key_gets_401_everywhere(client, keys, a_resources):
    """Without a key (or with a wrong scheme) every endpoint answers 401 with a Bearer challenge."""
    ds, job = a_resources
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
