"""gold-mv learns from the experts' labels only: a job without use_experts is refused when it is asked for
(422, before it is queued), and with use_experts it runs on a dataset whose experts came with the crowd file."""

from __future__ import annotations

from tests.api.conftest import auth, sample_dataset, upload, wait_job


def test_gold_mv_without_use_experts_is_a_422_naming_the_switch(client, keys):
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "gold-mv"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith("gold-mv learns each worker's skill from the experts' labels")
    assert '"use_experts": true' in r.json()["detail"]
    assert client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()["data"] == []  # nothing queued


def test_gold_mv_with_the_gold_column_of_one_categorical_upload(client, keys, tmp_path):
    key = keys["a"]
    rows = ["task,worker,label,gold"]
    for item in range(30):
        truth = "xy"[item % 3 == 0]
        rows += [f"i{item},w{w},{truth if (item + w) % 4 else 'xy'[truth == 'x']},{truth if w == 0 else ''}"
                 for w in range(3)]
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "gold"}).json()["id"]
    assert upload(client, key, ds, path, format="categorical").status_code == 201
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "gold-mv", "use_experts": True})
    assert r.status_code == 202, r.text
    job = wait_job(client, r.json()["id"], key)
    assert job["status"] == "finished", job
    report = client.get(f"/api/v1/jobs/{job['id']}/report", headers=auth(key)).json()
    assert report["experts_used_in_fit"] is True and report["aggregate_vs_expert"]["accuracy"]["compared"] == 30
