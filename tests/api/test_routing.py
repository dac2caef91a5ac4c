"""Routing as a job action (GET /jobs/{id}/routing) and as ``crowdqa route``: embedded, and on real Redis/rq."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from sqlmodel import Session

from crowdqa.api.cli import main
from tests.api.conftest import SAMPLE, auth, sample_dataset, wait_job
from tests.api.test_redis_flow import redis_client, redis_settings, start_worker  # noqa: F401 - fixtures


def _problem(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == status and body["detail"]
    return body


def _finished_job(client, key: str, method: str = "ds") -> str:
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": method})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["id"], key)
    assert body["status"] == "finished", body
    return body["id"]


def _expert_docs() -> set[str]:
    return {json.loads(line)["doc_id"] for line in (SAMPLE / "expert.jsonl").read_text().splitlines() if line}


def test_routing_a_finished_job_equals_the_command_line(client, keys, tmp_path, capsys):
    """The API and the CLI give one ranking: the job's stored Dawid-Skene aggregate and `crowdqa route` refitting it."""
    key = keys["a"]
    job = _finished_job(client, key)
    r = client.get(f"/api/v1/jobs/{job}/routing?budget=6", headers=auth(key))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["count"] == 6 and [row["rank"] for row in body["data"]] == [1, 2, 3, 4, 5, 6]
    assert body["candidates"] == 20 and set(body["widths"]) == {"aggregate:precision", "aggregate:recall"}
    ranked = [row["doc_id"] for row in body["data"]]
    assert not set(ranked) & _expert_docs()
    scores = [row["score"] for row in body["data"]]
    assert scores == sorted(scores, reverse=True)
    out = tmp_path / "next.csv"
    assert main(["route", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                 str(SAMPLE / "expert.jsonl"), "--budget", "6", "--output", str(out), "--quiet"]) == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [row["doc_id"] for row in rows] == ranked
    assert list(rows[0]) == ["doc_id", "text", "rank", "reason", "score", "tokens"]
    assert rows[0]["reason"] == body["data"][0]["reason"]


def test_routing_downloads(client, keys):
    key = keys["a"]
    job = _finished_job(client, key)
    r = client.get(f"/api/v1/jobs/{job}/routing/export?budget=3&format=csv&link_template=https://x.org/d/{{doc_id}}",
                   headers=auth(key))
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [row["rank"] for row in rows] == ["1", "2", "3"]
    assert rows[0]["link"] == f"https://x.org/d/{rows[0]['doc_id']}"
    ls = client.get(f"/api/v1/jobs/{job}/routing/export?budget=3&format=label-studio", headers=auth(key))
    assert ls.status_code == 200 and ls.headers["content-type"].startswith("application/json")
    assert [t["data"]["doc_id"] for t in ls.json()] == [row["doc_id"] for row in rows]
    dc = client.get(f"/api/v1/jobs/{job}/routing/export?budget=3&format=doccano", headers=auth(key))
    assert [json.loads(line)["doc_id"] for line in dc.text.splitlines()] == [row["doc_id"] for row in rows]


def test_routing_errors_are_problems(client, keys, settings):
    key = keys["a"]
    job = _finished_job(client, key, method="mv")
    url = f"/api/v1/jobs/{job}/routing"
    for query in ("budget=0", "budget=-2", "budget=2.5", "budget=x", "", "budget=2&half_width=0.9",
                  "budget=2&worker_weight=-1"):
        _problem(client.get(f"{url}?{query}", headers=auth(key)), 422)
        _problem(client.get(f"{url}/export?{query}", headers=auth(key)), 422)
    body = _problem(client.get(f"{url}?budget=2&link_template=https://x.org", headers=auth(key)), 422)
    assert "link_template must contain {doc_id}" in body["detail"]
    _problem(client.get(f"{url}/export?budget=2&format=conll", headers=auth(key)), 422)
    _problem(client.get(f"{url}?budget=2", headers=auth(keys["b"])), 404)
    from crowdqa.store import crud
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import JobCreate

    with Session(get_engine(settings)) as s:  # a job that was never run
        project = crud.authenticate(session=s, key=key)
        dataset = crud.list_datasets(session=s, project_id=project.id)[0][0]
        queued = crud.create_job(session=s, dataset=dataset, job_in=JobCreate(method="mv")).id
    body = _problem(client.get(f"/api/v1/jobs/{queued}/routing?budget=2", headers=auth(key)), 409)
    assert "not finished" in body["detail"]


def test_openapi_documents_routing(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/api/v1/jobs/{job_id}/routing", "/api/v1/jobs/{job_id}/routing/export"):
        op = paths[path]["get"]
        assert {"200", "401", "404", "409", "422"} <= set(op["responses"])
        assert {p["name"] for p in op["parameters"]} >= {"budget", "half_width", "link_template"}
    assert "format" in {p["name"] for p in paths["/api/v1/jobs/{job_id}/routing/export"]["get"]["parameters"]}


@pytest.mark.parametrize("budget", ["0", "-1", "2.5", "ten"])
def test_cli_refuses_a_bad_budget_in_one_line(budget, tmp_path, capsys):
    code = main(["route", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--budget", budget,
                 "--output", str(tmp_path / "n.csv")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("crowdqa: error: --budget must be a whole number of documents >= 1")
    assert not (tmp_path / "n.csv").exists()


@pytest.mark.parametrize(("params", "message"), [
    ("[1]", "--params must be a JSON object, found list"),
    ("{nope", "--params must be a JSON object: "),
    ('{"nope": 1}', "params.nope: "),
])
def test_cli_refuses_bad_params_in_one_line_as_aggregate_does(params, message, tmp_path, capsys):
    """Oracle: ``crowdqa aggregate``'s message for the same --params (one reading of the flag for both)."""
    args = [str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--method", "ds", "--params", params]
    assert main(["aggregate", *args, "--output", str(tmp_path / "a.jsonl")]) == 2
    expected = capsys.readouterr().err
    assert main(["route", *args, "--budget", "2", "--output", str(tmp_path / "r.csv")]) == 2
    err = capsys.readouterr().err
    assert err == expected and err.count("\n") == 1 and err.startswith(f"crowdqa: error: {message}")
    assert not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("tool", ["label-studio", "doccano"])
def test_exported_tasks_come_back_as_the_expert_upload(tool, tmp_path):
    """Round trip: route, let a (simulated) expert label the exported tasks in the tool, read its export back
    with --id-column doc_id: the expert's labels land on the routed documents of the crowd's corpus."""
    out, export = tmp_path / "next.csv", tmp_path / f"next.{tool}"
    assert main(["route", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                 str(SAMPLE / "expert.jsonl"), "--budget", "4", "--output", str(out), "--export", str(export),
                 "--export-format", tool, "--quiet"]) == 0
    ranked = [row["doc_id"] for row in csv.DictReader(out.open(encoding="utf-8"))]
    back = tmp_path / ("export.json" if tool == "label-studio" else "md1.jsonl")
    if tool == "label-studio":  # the expert accepts the prediction: Label Studio exports it as an annotation
        tasks = json.loads(export.read_text(encoding="utf-8"))
        for i, t in enumerate(tasks):
            t["id"] = i + 1
            t["annotations"] = [{"completed_by": "md1", "result": t.pop("predictions")[0]["result"]}]
        back.write_text(json.dumps(tasks), encoding="utf-8")
    else:  # the expert marks the first word of every document
        lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
        for line in lines:
            line["label"] = [[0, line["text"].index(" "), "Participants"]]
        back.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    from crowdqa.ingest import read_merged

    merged = read_merged([
        dict(path=SAMPLE / "crowd.jsonl", format="spans-jsonl", role="crowd"),
        dict(path=back, format=tool, role="expert", id_column="doc_id"),
    ]).corpus
    expert_docs = {merged.doc_ids[d] for d in np.unique(merged.obs_doc[np.isin(merged.worker,
                                                                              merged.workers_with_role("expert"))])}
    assert expert_docs == set(ranked)
    assert merged.n_docs == 40  # the expert's documents are the crowd's, not new ones


@pytest.mark.redis
def test_routing_on_redis_with_a_worker_process(redis_client, keys, start_worker):  # noqa: F811
    start_worker()
    key = keys["a"]
    job = _finished_job(redis_client, key)
    r = redis_client.get(f"/api/v1/jobs/{job}/routing?budget=5", headers=auth(key))
    assert r.status_code == 200, r.text
    assert r.json()["count"] == 5
