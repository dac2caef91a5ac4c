"""Robustness: arbitrary uploads and job bodies never give a 500; a restarted service recovers its jobs."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlmodel import Session

from crowdqa.store import crud
from crowdqa.store.db import get_engine
from crowdqa.store.models import JobCreate, JobStatus
from tests.api.conftest import auth, sample_dataset, wait_job

FORMATS = ["spans-jsonl", "spans-csv", "conll", "categorical", "mturk-csv", "corpus", "doccano", "label-studio",
           "brat", "pico-jsonl", "ebm-nlp"]

_json_rows = st.lists(st.fixed_dictionaries({}, optional={
    "doc_id": st.one_of(st.text(max_size=5), st.integers()), "annotator": st.text(max_size=5),
    "start": st.one_of(st.integers(-5, 50), st.floats(allow_nan=True), st.none(), st.text(max_size=3)),
    "end": st.one_of(st.integers(-5, 50), st.none()), "label": st.one_of(st.text(max_size=4), st.none()),
    "text": st.text(max_size=40)}), max_size=6).map(lambda rows: "\n".join(json.dumps(r) for r in rows).encode())


@pytest.fixture(autouse=True)
def _no_project_limits(monkeypatch):
    """Each fuzz test sends a project's uploads or jobs by the dozen: above the per-project limits (tested in
    test_quotas.py), which would answer 429 before the parsers under test are reached. Set before ``settings``."""
    monkeypatch.setenv("CROWDQA_MAX_UPLOADS_PER_HOUR", "100000")
    monkeypatch.setenv("CROWDQA_MAX_ACTIVE_JOBS", "100000")


@hsettings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(FORMATS), body=st.one_of(st.binary(max_size=400), _json_rows),
       role=st.sampled_from(["crowd", "expert"]))
def test_any_upload_is_201_or_a_4xx_problem(client, keys, fmt, body, role):
    """Random bytes and near-valid span rows, in every format: 201, or 4xx problem+json; never a 500."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "fuzz"}).json()["id"]
    r = client.post(f"/api/v1/datasets/{ds}/uploads", headers=auth(key), files={"file": ("f", body)},
                    data={"format": fmt, "role": role})
    assert r.status_code in (201, 413, 422), (fmt, body[:80], r.status_code, r.text)
    if r.status_code != 201:
        assert r.headers["content-type"].startswith("application/problem+json")
        assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 0


@pytest.fixture
def sample_ds(client, keys):
    """Project A's dataset with the sample (one for all the examples of a hypothesis test)."""
    return sample_dataset(client, keys["a"])


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(st.sampled_from(["method", "params", "use_experts", "reference", "extra"]),
                            st.one_of(st.sampled_from(["mv", "ds", "hmm-crowd", "x"]), st.integers(), st.none(),
                                      st.booleans(), st.dictionaries(st.sampled_from(["max_iter", "tol", "zz"]),
                                                                     st.integers(-2, 3), max_size=2)),
                            max_size=5))
def test_any_job_body_is_202_or_a_4xx_problem(client, keys, sample_ds, body):
    """Arbitrary job bodies: 202, or 409/422 problem+json; never a 500."""
    key = keys["a"]
    r = client.post(f"/api/v1/datasets/{sample_ds}/jobs", headers=auth(key), json=body)
    assert r.status_code in (202, 409, 422), (body, r.status_code, r.text)
    if r.status_code != 202:
        assert r.headers["content-type"].startswith("application/problem+json")


def test_restart_recovers_jobs(settings, keys):
    """On start the embedded service fails jobs left running by a dead process (with the reason) and runs the
    queued ones it lost with its in-memory queue."""
    from crowdqa.api.main import app

    key = keys["a"]
    with TestClient(app) as client:
        ds = sample_dataset(client, key)
    with Session(get_engine(settings)) as s:
        dataset = crud.get_dataset(session=s, project_id=crud.authenticate(session=s, key=key).id, dataset_id=ds)
        left_running = crud.create_job(session=s, dataset=dataset, job_in=JobCreate(method="mv"))
        # An embedded worker of a process that is gone (this server holds the data directory's lock now).
        crud.claim_job(session=s, job_id=left_running.id, worker_name="embedded.host.1.dead")
        left_queued = crud.create_job(session=s, dataset=dataset, job_in=JobCreate(method="mv"))
        ids = left_running.id, left_queued.id
    with TestClient(app) as client:
        body = client.get(f"/api/v1/jobs/{ids[0]}", headers=auth(key)).json()
        assert body["status"] == JobStatus.failed and "service stopped while the job ran" in body["error"]
        assert wait_job(client, ids[1], key)["status"] == "finished"


def test_a_body_that_is_not_json_says_so_in_words(client, keys):
    """Found walking the README: a truncated JSON body answered 'body.11: JSON decode error' (11 is the
    character where parsing stopped); the detail now says what is wrong and where."""
    r = client.post("/api/v1/datasets", headers={**auth(keys["a"]), "Content-Type": "application/json"},
                    content=b'{"name": ')
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["detail"] == "the request body is not valid JSON: Expecting value (at character 9)"
    assert r.json()["errors"][0]["type"] == "json_invalid"
