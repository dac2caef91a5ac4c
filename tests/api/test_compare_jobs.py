"""The service's comparison (issue 29 item 5): a compare job polled like any other, with progress per method,
GET /jobs/{id}/comparison, and an auto job that aggregates with the recommended method."""

from __future__ import annotations

import pytest

from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.jobs.compare import run_comparison
from tests.api.conftest import SAMPLE, auth, sample_dataset, wait_job
from tests.api.test_redis_flow import redis_settings, start_worker  # noqa: F401  (fixtures)


def _sample_corpus():
    return merge_corpora([read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus,
                          read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus])


def test_a_compare_job_reports_its_comparison(client, keys):
    key = keys["a"]
    ds = sample_dataset(client, key)
    body = {"method": "compare", "methods": ["mv", "ds", "hmm-crowd"], "params": {"ds": {"max_iter": 20}}}
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json=body)
    assert r.status_code == 202, r.text
    assert r.json()["params"] == {"methods": ["mv", "ds", "hmm-crowd"], "params_for": {"ds": {"max_iter": 20}}}
    job = wait_job(client, r.json()["id"], key)
    assert job["status"] == "finished", job
    stages = job["progress"]["stages"]
    assert {"comparing: fitting mv", "comparing: fitting ds", "comparing: fitting hmm_crowd"} <= set(stages)
    assert job["progress"]["recommended"]
    got = client.get(f"/api/v1/jobs/{job['id']}/comparison", headers=auth(key))
    assert got.status_code == 200, got.text
    comparison = got.json()
    direct = run_comparison(_sample_corpus(), methods=["mv", "ds", "hmm-crowd"], params_for={"ds": {"max_iter": 20}})
    assert comparison["recommended"] == direct["recommended"] == job["progress"]["recommended"]
    assert [(m["method"], m["f1"]) for m in comparison["methods"]] == [(m["method"], m["f1"])
                                                                       for m in direct["methods"]]
    report = client.get(f"/api/v1/jobs/{job['id']}/report", headers=auth(key))
    assert report.status_code == 409 and report.headers["content-type"].startswith("application/problem+json")


def test_a_compare_jobs_missing_aggregate_is_a_409_at_every_door(client, keys):
    """A compare job keeps only its comparison: its labels and routing were a 500 (KeyError on the absent labels
    artifact), its workers an empty 200. Every endpoint now answers the same 409 pointing at the comparison."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "compare", "methods": ["mv"]})
    job = wait_job(client, r.json()["id"], key)
    assert job["status"] == "finished", job
    endpoints = {endpoint: client.get(f"/api/v1/jobs/{job['id']}/{endpoint}", headers=auth(key))
             for endpoint in ("report", "workers", "workers.csv", "labels?format=conll", "routing?budget=2",
                          "routing/export?budget=2&format=csv")}
    for endpoint, got in endpoints.items():
        assert got.status_code == 409, (endpoint, got.status_code, got.text)
        assert got.headers["content-type"].startswith("application/problem+json"), endpoint
        assert got.json()["detail"].startswith(f"job {job['id']} is a comparison of methods"), endpoint
        assert f"/api/v1/jobs/{job['id']}/comparison" in got.json()["detail"], endpoint


def test_an_auto_job_aggregates_with_the_recommended_method(client, keys):
    """Issue 46: an auto job not told whether to use the experts compares both kinds of candidates (as compare
    --expert-variants) and fits the recommended one as compared; the row keeps the request in params
    ({"expert_variants": true}) and use_experts false until it finishes, then what the fit did, as the
    comparison's recommended_use_experts and the report's experts_used_in_fit do. Oracle: the CLI's own
    comparison with expert_variants of the same corpus."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "auto"})
    assert r.status_code == 202, r.text
    assert r.json()["params"] == {"expert_variants": True} and r.json()["use_experts"] is False
    job = wait_job(client, r.json()["id"], key)
    assert job["status"] == "finished", job
    report = client.get(f"/api/v1/jobs/{job['id']}/report", headers=auth(key)).json()
    comparison = client.get(f"/api/v1/jobs/{job['id']}/comparison", headers=auth(key)).json()
    assert report["method"] == comparison["recommended"] == report["comparison"]["recommended"]
    assert report["method_choice"].startswith("method auto: ")
    assert {m["method"] for m in comparison["methods"]} >= {"mv", "ds", "hmm-crowd", "bsc-seq"}
    assert comparison["expert_variants"] and {m["use_experts"] for m in comparison["methods"]} == {False, True}
    direct = run_comparison(_sample_corpus(), expert_variants=True)
    assert (comparison["recommended"], comparison["recommended_use_experts"]) == (
        direct["recommended"], direct["recommended_use_experts"])
    clamped = comparison["recommended_use_experts"]
    assert report["experts_used_in_fit"] is job["use_experts"] is clamped
    assert report["aggregate_scored_on"] == ("held-out predictions (cross-fitting)" if clamped
                                             else "all expert tokens")
    assert "expected points behind it" in comparison["reason"] and comparison["converged_legend"]
    # The dashboard's job page: the candidates by name, their expected scores, and what converged "-" means.
    import re

    form = client.get("/ui/signin").text
    token = re.search(r'name="login_token" value="([^"]+)"', form)[1]
    assert client.post("/ui/signin", data={"key": key, "login_token": token},
                       follow_redirects=False).status_code == 303
    page = client.get(f"/ui/jobs/{job['id']}").text
    assert "<th>ds</th>" in page and "<th>points behind</th>" in page
    assert 'id="converged-legend"' in page and "the fit has no convergence test" in page
    assert ("experts used in the fit" if clamped else "experts not used in the fit") in page
    # A re-run lets auto decide again (the row is undecided until it finishes); one that gives use_experts asks
    # for that kind only, and the request leaves params.
    again = client.post(f"/api/v1/jobs/{job['id']}/rerun", headers=auth(key))
    assert again.status_code == 202, again.text
    assert again.json()["params"] == {"expert_variants": True} and again.json()["use_experts"] is False
    assert wait_job(client, job["id"], key)["use_experts"] is clamped
    told = client.post(f"/api/v1/jobs/{job['id']}/rerun", headers=auth(key), json={"use_experts": False})
    assert told.status_code == 202, told.text
    assert told.json()["params"] == {} and told.json()["use_experts"] is False
    done = wait_job(client, job["id"], key)
    again = client.get(f"/api/v1/jobs/{job['id']}/comparison", headers=auth(key)).json()
    assert not again["expert_variants"] and not any(m["use_experts"] for m in again["methods"])
    assert done["use_experts"] is False


@pytest.mark.parametrize("use_experts", [False, True])
def test_an_auto_job_told_about_the_experts_compares_that_kind_and_says_so_everywhere(client, keys, use_experts):
    """An auto job told to use the experts compares only clamped fits (scored by cross-fitting: no score on a
    label the fit saw) and fits the chosen one clamped; told not to, only crowd-only fits. The job row, the
    comparison and the report agree, and the request is the row's use_experts (params stay empty)."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                    json={"method": "auto", "use_experts": use_experts})
    assert r.status_code == 202, r.text
    assert r.json()["params"] == {} and r.json()["use_experts"] is use_experts
    job = wait_job(client, r.json()["id"], key)
    assert job["status"] == "finished", job
    report = client.get(f"/api/v1/jobs/{job['id']}/report", headers=auth(key)).json()
    comparison = client.get(f"/api/v1/jobs/{job['id']}/comparison", headers=auth(key)).json()
    assert not comparison["expert_variants"] and comparison["methods"]
    assert all(m["use_experts"] is use_experts for m in comparison["methods"])
    assert report["experts_used_in_fit"] is comparison["recommended_use_experts"] is job["use_experts"] is use_experts


def test_a_compare_job_with_expert_variants_fits_each_method_both_ways(client, keys):
    """The API's compare job takes the CLI's --expert-variants: every method on the crowd alone and (where clamping
    can change its labels) with the experts clamped; the oracle is the CLI's own comparison of the same corpus."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    body = {"method": "compare", "methods": ["mv", "ds"], "expert_variants": True}
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json=body)
    assert r.status_code == 202, r.text
    assert r.json()["params"] == {"methods": ["mv", "ds"], "params_for": {}, "expert_variants": True}
    job = wait_job(client, r.json()["id"], key)
    assert job["status"] == "finished", job
    comparison = client.get(f"/api/v1/jobs/{job['id']}/comparison", headers=auth(key)).json()
    assert comparison["expert_variants"] and not comparison["use_experts"]
    got = sorted((m["method"], m["use_experts"], m["f1"]) for m in comparison["methods"])
    direct = run_comparison(_sample_corpus(), methods=["mv", "ds"], expert_variants=True)
    assert got == sorted((m["method"], m["use_experts"], m["f1"]) for m in direct["methods"])
    assert {(m, e) for m, e, _ in got} == {("mv", False), ("ds", False), ("ds", True)}
    rerun = client.post(f"/api/v1/jobs/{job['id']}/rerun", headers=auth(key), json={"use_experts": True})
    assert rerun.status_code == 422 and "give one of the two" in rerun.json()["detail"]
    schema = client.get("/openapi.json").json()["components"]["schemas"]["JobCreate"]["properties"]
    assert schema["expert_variants"]["type"] == "boolean" and "--expert-variants" in schema["expert_variants"][
        "description"]


def test_an_auto_job_without_experts_says_it_took_the_default(client, keys):
    key = keys["a"]
    ds = sample_dataset(client, key, experts=False)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "auto"})
    job = wait_job(client, r.json()["id"], key)
    report = client.get(f"/api/v1/jobs/{job['id']}/report", headers=auth(key)).json()
    assert report["method"] == "bsc-seq" and "no expert labels" in report["method_choice"]
    got = client.get(f"/api/v1/jobs/{job['id']}/comparison", headers=auth(key))
    assert got.status_code == 409 and "without expert labels" in got.json()["detail"]


@pytest.mark.parametrize(("body", "experts", "detail"), [
    ({"method": "compare", "methods": ["mv", "nope"]}, True, "unknown 'nope'"),
    ({"method": "compare", "params": {"ds": {"max_iter": 0}}}, True, "max_iter"),
    ({"method": "compare"}, False, "a comparison scores the methods against the experts"),
    ({"method": "auto", "params": {"max_iter": 3}}, True, "method auto compares every method"),
    ({"method": "ds", "methods": ["mv"]}, True, "methods is for a comparison"),
    ({"method": "compare", "expert_variants": True, "use_experts": True}, True, "give one of the two"),
    ({"method": "auto", "expert_variants": True}, True, "expert_variants is for a comparison"),
    ({"method": "ds", "expert_variants": True}, True, "expert_variants is for a comparison"),
    ({"method": "compare", "expert_variants": 1.5}, True, "expert_variants"),
])
def test_bad_comparison_jobs_are_a_422_before_queueing(client, keys, body, experts, detail):
    key = keys["a"]
    ds = sample_dataset(client, key, experts=experts)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json=body)
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json"), r.text
    assert detail in r.json()["detail"]
    assert client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()["data"] == []


def test_a_single_method_job_has_no_comparison_and_openapi_says_so(client, keys):
    key = keys["a"]
    ds = sample_dataset(client, key)
    job = wait_job(client, client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                                       json={"method": "mv"}).json()["id"], key)
    got = client.get(f"/api/v1/jobs/{job['id']}/comparison", headers=auth(key))
    assert got.status_code == 409 and "only a compare job" in got.json()["detail"]
    assert client.get("/api/v1/jobs/nope/comparison", headers=auth(key)).status_code == 404
    op = client.get("/openapi.json").json()["paths"]["/api/v1/jobs/{job_id}/comparison"]["get"]
    assert op["operationId"] == "get_comparison"
    assert op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/MethodsComparison")
    assert {"404", "409", "422"} <= set(op["responses"])


@pytest.mark.redis
def test_compare_and_auto_jobs_on_postgres_redis_and_a_worker_process(
        pg_settings, redis_settings, start_worker):  # noqa: F811 - the fixtures imported above
    """The production parts: rows in PostgreSQL (its job-method enum holds compare and auto), jobs on Redis, run by
    a separate `crowdqa worker` (a forked work horse per job)."""
    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.store.db import get_engine
    from crowdqa.store.settings import get_settings
    from tests.utils.factories import project_with_key

    with Session(get_engine(get_settings())) as s:
        _, key = project_with_key(s, "prod")
    start_worker()
    with TestClient(app) as client:
        ds = sample_dataset(client, key)
        compare = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                              json={"method": "compare", "methods": ["mv", "ds"], "use_experts": True}).json()
        auto = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "auto"}).json()
        compared = wait_job(client, compare["id"], key, timeout=120)
        assert compared["status"] == "finished", compared
        body = client.get(f"/api/v1/jobs/{compare['id']}/comparison", headers=auth(key)).json()
        assert body["use_experts"] is True and [m["method"] for m in body["methods"]] != []
        assert all(m["cross_fit_seconds"] > 0 for m in body["methods"])
        done = wait_job(client, auto["id"], key, timeout=120)
        assert done["status"] == "finished", done
        report = client.get(f"/api/v1/jobs/{auto['id']}/report", headers=auth(key)).json()
        assert report["method"] == report["comparison"]["recommended"]
