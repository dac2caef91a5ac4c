"""New batches as a job option (from_job, frozen) and ``crowdqa aggregate --save-model / --from-model``."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from crowdqa.api.cli import main
from tests.api.conftest import SAMPLE, auth, upload, wait_job
from tests.api.test_redis_flow import redis_client, redis_settings, start_worker  # noqa: F401 - fixtures


def _problem(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    return r.json()


def _halves(tmp_path):
    """The sample's crowd file split into two batches of documents (the expert file goes with the second)."""
    lines = (SAMPLE / "crowd.jsonl").read_text().splitlines()
    docs = sorted({json.loads(line)["doc_id"] for line in lines})
    first = set(docs[: len(docs) // 2])
    a, b = tmp_path / "batch1.jsonl", tmp_path / "batch2.jsonl"
    a.write_text("".join(line + "\n" for line in lines if json.loads(line)["doc_id"] in first))
    b.write_text("".join(line + "\n" for line in lines if json.loads(line)["doc_id"] not in first))
    return a, b


def _dataset(client, key, path, *, experts: bool) -> str:
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": path.stem}).json()["id"]
    assert upload(client, key, ds, path).status_code == 201
    if experts:
        assert upload(client, key, ds, SAMPLE / "expert.jsonl", role="expert").status_code == 201
    return ds


def _job(client, key, ds, **body) -> dict:
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds", **body})
    assert r.status_code == 202, r.text
    done = wait_job(client, r.json()["id"], key)
    assert done["status"] == "finished", done
    return done


def test_a_second_batch_starts_from_the_first_jobs_model(client, keys, tmp_path):
    key = keys["a"]
    one, two = _halves(tmp_path)
    first = _job(client, key, _dataset(client, key, one, experts=False))
    ds2 = _dataset(client, key, two, experts=True)
    frozen = _job(client, key, ds2, from_job=first["id"], frozen=True)
    warm = _job(client, key, ds2, from_job=first["id"])
    assert frozen["from_job"] == first["id"] and frozen["frozen"] is True
    rep = client.get(f"/api/v1/jobs/{frozen['id']}/report", headers=auth(key)).json()
    assert rep["fit"]["start"]["mode"] == "frozen" and rep["fit"]["iterations"] == 0
    assert rep["fit"]["start"]["workers_seen_before"] == 10 and rep["fit"]["start"]["workers_new"] == 0
    assert client.get(f"/api/v1/jobs/{warm['id']}/report", headers=auth(key)).json()["fit"]["start"]["mode"] == \
        "warm start"
    # The model downloads as .npz and, with the CLI, predicts the same labels as the frozen job.
    r = client.get(f"/api/v1/jobs/{first['id']}/model", headers=auth(key))
    assert r.status_code == 200 and r.headers["content-type"] == "application/octet-stream"
    with np.load(io.BytesIO(r.content), allow_pickle=False) as npz:
        assert {"worker_confusion_", "worker_ids_", "class_names"} <= set(npz.files)
    model = tmp_path / "model.npz"
    model.write_bytes(r.content)
    out = tmp_path / "frozen.jsonl"
    assert main(["aggregate", str(two), "--format", "spans-jsonl", "--method", "ds", "--from-model", str(model),
                 "--frozen", "--output", str(out), "--quiet"]) == 0
    api_labels = client.get(f"/api/v1/jobs/{frozen['id']}/labels?format=spans-jsonl", headers=auth(key)).text

    def spans(text: str) -> list[tuple]:
        # The scores differ: the job's dataset has experts, which fit its temperature; the command's has none.
        return sorted(tuple((k, v) for k, v in json.loads(line).items() if k != "score") for line in text.splitlines())

    assert spans(out.read_text()) == spans(api_labels)


def test_bad_starts_are_problems(client, keys, tmp_path):
    key = keys["a"]
    one, two = _halves(tmp_path)
    ds1 = _dataset(client, key, one, experts=False)
    first = _job(client, key, ds1)
    mv = client.post(f"/api/v1/datasets/{ds1}/jobs", headers=auth(key), json={"method": "mv"}).json()
    wait_job(client, mv["id"], key)
    ds2 = _dataset(client, key, two, experts=True)
    url = f"/api/v1/datasets/{ds2}/jobs"
    body = _problem(client.post(url, headers=auth(key), json={"method": "ds", "frozen": True}), 422)
    assert "frozen needs from_job" in body["detail"]
    body = _problem(client.post(url, headers=auth(key), json={"method": "ds", "from_job": "nope"}), 422)
    assert "no job 'nope'" in body["detail"]
    body = _problem(client.post(url, headers=auth(key), json={"method": "hmm-crowd", "from_job": first["id"]}), 422)
    assert "was fitted by ds" in body["detail"]
    body = _problem(client.post(url, headers=auth(key), json={"method": "mv", "from_job": mv["id"]}), 422)
    assert "keeps no model" in body["detail"]
    body = _problem(client.post(url, headers=auth(keys["b"]), json={"method": "ds", "from_job": first["id"]}), 404)
    _problem(client.get(f"/api/v1/jobs/{mv['id']}/model", headers=auth(key)), 409)
    _problem(client.get(f"/api/v1/jobs/{first['id']}/model", headers=auth(keys["b"])), 404)
    op = client.get("/openapi.json").json()["paths"]["/api/v1/jobs/{job_id}/model"]["get"]
    assert {"200", "401", "404", "409"} <= set(op["responses"])


def test_cli_save_and_start_from_a_model(tmp_path, capsys):
    one, two = _halves(tmp_path)
    model = tmp_path / "m.npz"
    assert main(["aggregate", str(one), "--format", "spans-jsonl", "--method", "ds", "--output",
                 str(tmp_path / "a.jsonl"), "--save-model", str(model), "--quiet"]) == 0
    assert main(["aggregate", str(two), "--format", "spans-jsonl", "--method", "ds", "--output",
                 str(tmp_path / "b.jsonl"), "--from-model", str(model), "--quiet"]) == 0
    capsys.readouterr()
    for args, message in (
            (["--frozen"], "--frozen needs --from-model PATH"),
            (["--from-model", str(tmp_path / "a.jsonl")], "not a crowdqa model file"),
            # the name alone before ("crowdqa: error: /tmp/.../none.npz"), unlike every other missing input
            (["--from-model", str(tmp_path / "none.npz")], f"--from-model {tmp_path / 'none.npz'}: no such file"),
            (["--method", "mv", "--save-model", str(tmp_path / "x.npz")], "keeps no model"),
    ):
        argv = ["aggregate", str(two), "--format", "spans-jsonl", "--method", "ds", "--output",
                str(tmp_path / "c.jsonl"), *args, "--quiet"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


@pytest.mark.redis
def test_a_new_batch_on_redis_with_a_worker_process(redis_client, keys, start_worker, tmp_path):  # noqa: F811
    start_worker()
    key = keys["a"]
    one, two = _halves(tmp_path)
    first = _job(redis_client, key, _dataset(redis_client, key, one, experts=False))
    warm = _job(redis_client, key, _dataset(redis_client, key, two, experts=True), from_job=first["id"])
    assert warm["from_job"] == first["id"]
