"""A job's progress through the API names each stage with its seconds (issue 14)."""

from __future__ import annotations

import copy
from datetime import datetime

from crowdqa.store import crud
from tests.api.conftest import auth, sample_dataset, wait_job

STAGES = ["reading", "fitting", "scoring", "writing"]


def test_progress_names_each_stage_with_its_seconds(client, keys, monkeypatch):
    """While a job runs, its progress row names the stage it is in, the seconds spent in it, and the seconds of
    every stage before it; the finished job's progress (what GET /jobs/{id} shows) and its report's fit block
    hold all four stages with the EM iterations, and the stages' seconds fit in the job's own run (from
    started_at to finished_at: the writing stage counts the report's storage, not only the arrays)."""
    written: list[dict] = []
    update_job = crud.update_job

    def recording(**values):
        if "progress" in values:
            written.append(copy.deepcopy(values["progress"]))
        return update_job(**values)

    monkeypatch.setattr(crud, "update_job", recording)
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds", "params": {"max_iter": 30}})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["id"], key)
    assert body["status"] == "finished", body

    assert list(dict.fromkeys(p["stage"] for p in written)) == STAGES
    for p in written:
        before = STAGES[:STAGES.index(p["stage"])]
        assert list(p["stages"]) == before and all(s >= 0 for s in p["stages"].values()) and p["stage_seconds"] >= 0
    final = body["progress"]
    assert final["stage"] == "done" and sorted(final["stages"]) == sorted(STAGES)
    assert final["iteration"] >= 1 and final["log_likelihood"] is not None
    # Found walking the README (the dashboard's running job read "stage scoring · EM iteration - · log-likelihood -"
    # after five iterations): scoring and writing keep the fit's last iteration and log-likelihood.
    after_fit = [(p.get("iteration"), p.get("log_likelihood")) for p in written if p["stage"] in ("scoring", "writing")]
    assert after_fit and set(after_fit) == {(final["iteration"], final["log_likelihood"])}
    report = client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key))
    assert report.headers["content-type"] == "application/json"
    fit = report.json()["fit"]
    assert fit["stages"] == final["stages"] and fit["iterations"] == final["iteration"]
    run = datetime.fromisoformat(body["finished_at"]) - datetime.fromisoformat(body["started_at"])
    assert sum(final["stages"].values()) <= run.total_seconds() + 0.01
    assert body["timings"]["save"] == final["stages"]["writing"]


def test_a_job_stopped_at_max_iter_says_so_in_its_progress_and_report(client, keys):
    """Issue 28: a fit that reaches max_iter is reported in words by GET /jobs/{id} (progress.converged and
    progress.convergence_note) and in the report's fit block, not only as a converged flag."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds", "params": {"max_iter": 1}})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["id"], key)
    assert body["status"] == "finished", body
    final = body["progress"]
    assert final["converged"] is False and "max_iter=1" in final["convergence_note"]
    fit = client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key)).json()["fit"]
    assert fit["convergence_note"] == final["convergence_note"]
