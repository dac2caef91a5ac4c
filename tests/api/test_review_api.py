"""POST /jobs/{id}/review and the block list, on the embedded service and on real Redis with a worker process.

Oracle: the command line's review of the same file with the same rules (:func:`crowdqa.jobs.review.review_file`)
gives the same bytes as the service's review of the uploaded batch (same pipeline, same report), and the
batch of :mod:`tests.jobs.review_data` whose workers are known by construction.
"""

from __future__ import annotations

import csv
import io

import pytest

from crowdqa.jobs.review import review_file
from crowdqa.quality.review_rules import ReviewRules
from tests.api.conftest import auth, upload, wait_job
from tests.api.test_redis_flow import redis_client, redis_settings, start_worker  # noqa: F401 - fixtures
from tests.jobs.review_data import batch_bytes, batch_rows

API = "/api/v1"


def _batch_job(client, key, tmp_path, *, method="mv") -> tuple[str, str, object]:
    path = tmp_path / "Batch_7_batch_results.csv"
    path.write_bytes(batch_bytes(batch_rows(spammer_status="Approved")))
    ds = client.post(f"{API}/datasets", headers=auth(key), json={"name": "batch 7"}).json()["id"]
    r = upload(client, key, ds, path, format="mturk-csv")
    assert r.status_code == 201, r.text
    r = client.post(f"{API}/datasets/{ds}/jobs", headers=auth(key), json={"method": method})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["id"], key, timeout=120)
    assert body["status"] == "finished", body
    return ds, body["id"], path


def test_review_job_summary_batch_and_bonuses(client, keys, tmp_path):
    key = keys["a"]
    _, job, path = _batch_job(client, key, tmp_path)
    rules = {"reject_below": 0.5, "min_tokens": 50, "bonus": "0.50", "bonus_above": 0.9}
    r = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json=rules)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json", r.text
    summary = r.json()
    assert summary["assignments"] == {"approved": 36, "rejected": 23, "left": {"already approved": 1},
                                      "malformed_lines": []}
    assert {d["worker"]: d["verdict"] for d in summary["decisions"]} == {
        "AGOOD1": "approve", "AGOOD2": "approve", "AMISS3": "approve", "AWHOLE4": "reject", "ASPAM5": "reject"}
    assert summary["bonus_total"] == "1.00" and summary["rules"]["metric"] == "f1"
    expected, _ = review_file(path, ReviewRules(**rules), method="mv")
    r = client.post(f"{API}/jobs/{job}/review/batch", headers=auth(key), json=rules)
    assert r.status_code == 200 and r.headers["content-type"] == "text/csv; charset=utf-8"
    assert r.headers["x-review-rejected"] == "23" and "attachment" in r.headers["content-disposition"]
    assert r.content == expected.reviewed_csv()
    assert r.content.startswith(b"\xef\xbb\xbf")  # the upload's byte-order mark is kept
    r = client.post(f"{API}/jobs/{job}/review/bonuses", headers=auth(key), json=rules)
    rows = list(csv.DictReader(io.StringIO(r.text)))
    assert [(b["WorkerId"], b["BonusAmount"]) for b in rows] == [("AGOOD1", "0.50"), ("AGOOD2", "0.50")]


@pytest.mark.parametrize("body, where", [
    ({"reject_below": 1.5}, "body.reject_below"),
    ({"reject_below": 0.2, "min_tokens": -1}, "body.min_tokens"),
    ({"reject_below": 0.2, "bonus": "-0.5", "bonus_above": 0.8}, "body.bonus"),
    ({"reject_below": 0.2, "bonus": "0.505", "bonus_above": 0.8}, "body.bonus"),
    ({"reject_below": 0.2, "bonus": "0.5"}, "bonus and bonus_above go together"),
    ({"reject_below": 0.2, "metric": "kappa"}, "body.metric"),
    ({"reject_below": 0.2, "surprise": 1}, "body.surprise"),
    ({}, "body.reject_below"),
])
def test_bad_rules_are_422_problems(client, keys, tmp_path, body, where):
    key = keys["a"]
    _, job, _ = _batch_job(client, key, tmp_path)
    r = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json=body)
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json", r.text
    assert where in r.json()["detail"]


def test_review_errors_name_what_is_wrong(client, keys, tmp_path):
    key = keys["a"]
    ds, job, _ = _batch_job(client, key, tmp_path)
    rules = {"reject_below": 0.2}
    r = client.post(f"{API}/jobs/{job}/review", headers=auth(keys["b"]), json=rules)
    assert r.status_code == 404  # another project's job
    r = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json={**rules, "upload_id": "nope"})
    assert r.status_code == 404 and "no upload 'nope'" in r.json()["detail"]
    r = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json={**rules, "against": "expert"})
    assert r.status_code == 200 and r.json()["workers"]["rejected"] == 0  # no expert overlap: nobody judged
    # A dataset without a batch file is reviewed worker by worker; there is no batch to write back: 409.
    from tests.api.conftest import sample_dataset

    other = sample_dataset(client, key, experts=False)
    j = client.post(f"{API}/datasets/{other}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
    assert wait_job(client, j, key)["status"] == "finished"
    r = client.post(f"{API}/jobs/{j}/review", headers=auth(key), json=rules)
    assert r.status_code == 200 and r.json()["assignments"] is None and r.json()["decisions"]
    r = client.post(f"{API}/jobs/{j}/review/batch", headers=auth(key), json=rules)
    assert r.status_code == 409 and "no mturk-csv crowd upload" in r.json()["detail"]
    # An upload added after the job ran is not in its snapshot: 409.
    extra = tmp_path / "Batch_8.csv"
    others = [(*r[:2], "Z" + r[2], "Z" + r[3], *r[4:]) for r in batch_rows()]  # new workers, same documents
    extra.write_bytes(batch_bytes(others))
    up = upload(client, key, ds, extra, format="mturk-csv").json()
    r = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json={**rules, "upload_id": up["id"]})
    assert r.status_code == 409 and "added after job" in r.json()["detail"]
    r = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json=rules)
    assert r.status_code == 422 and "name one with upload_id" in r.json()["detail"]


def test_block_list_endpoints_and_later_jobs_fit_without_the_blocked(client, keys, tmp_path):
    key = keys["a"]
    ds, first, _ = _batch_job(client, key, tmp_path)
    r = client.post(f"{API}/blocked-workers", headers=auth(key), json={"annotator": "mturk:ASPAM5",
                                                                        "reason": "spam"})
    assert r.status_code == 201 and r.json()["annotator"] == "mturk:ASPAM5"
    r = client.post(f"{API}/blocked-workers", headers=auth(key), json={"annotator": "mturk:ASPAM5",
                                                                        "reason": "spam again"})
    assert r.status_code == 200 and r.json()["reason"] == "spam again"
    assert client.get(f"{API}/blocked-workers", headers=auth(keys["b"])).json() == {"data": [], "count": 0}
    listed = client.get(f"{API}/blocked-workers", headers=auth(key)).json()
    assert listed["count"] == 1 and listed["data"][0]["annotator"] == "mturk:ASPAM5"
    # The earlier job is as it was; a re-run (a later fit) leaves the worker out and marks it.
    before = client.get(f"{API}/jobs/{first}/report", headers=auth(key)).json()
    assert before["blocked_workers"] == []
    r = client.post(f"{API}/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
    later = wait_job(client, r.json()["id"], key)["id"]
    report = client.get(f"{API}/jobs/{later}/report", headers=auth(key)).json()
    assert report["blocked_workers"] == ["mturk:ASPAM5"]
    spam = next(w for w in report["workers"] if w["annotator"] == "mturk:ASPAM5")
    assert spam["blocked"] is True and spam["vs_aggregate"]["f1"] == 0.0  # still scored
    summary = client.post(f"{API}/jobs/{later}/review", headers=auth(key),
                          json={"reject_below": 0.2}).json()
    assert next(d for d in summary["decisions"] if d["worker"] == "ASPAM5")["blocked"] is True
    # Unblock; again is a 404 problem.
    assert client.delete(f"{API}/blocked-workers/mturk:ASPAM5", headers=auth(keys["b"])).status_code == 404
    assert client.delete(f"{API}/blocked-workers/mturk:ASPAM5", headers=auth(key)).status_code == 204
    r = client.delete(f"{API}/blocked-workers/mturk:ASPAM5", headers=auth(key))
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    r = client.post(f"{API}/blocked-workers", headers=auth(key), json={"annotator": ""})
    assert r.status_code == 422


def test_cli_review_of_a_file_with_project_applies_its_block_list_as_a_job_does(client, keys, tmp_path, capsys):
    """``crowdqa review FILE --project a`` reads project a's block list from the server's store and decides as the
    review of a job of that project does. Oracle: the API's review of a job run with the same block list (same
    pipeline, same report), decision for decision."""
    import json

    from crowdqa.api.cli import main

    key = keys["a"]
    r = client.post(f"{API}/blocked-workers", headers=auth(key), json={"annotator": "mturk:ASPAM5"})
    assert r.status_code == 201
    _, job, path = _batch_job(client, key, tmp_path)
    rules = {"reject_below": 0.5, "min_tokens": 50, "bonus": "0.50", "bonus_above": 0.9}
    api = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json={**rules}).json()
    assert next(d for d in api["decisions"] if d["worker"] == "ASPAM5")["blocked"] is True

    def cli(*extra: str) -> dict:
        out = tmp_path / "summary.json"
        assert main(["review", str(path), "--method", "mv", "--reject-below", "0.5", "--bonus", "0.50",
                     "--bonus-above", "0.9", "--dry-run", "--quiet", "--summary", str(out), *extra]) == 0
        return json.loads(out.read_text())

    with_list = cli("--project", "a")
    assert with_list["decisions"] == api["decisions"] and with_list["assignments"] == api["assignments"]
    assert "blocked: 1 worker on the project's block list: ASPAM5" in capsys.readouterr().out
    without = cli()
    assert not any(d["blocked"] for d in without["decisions"])
    assert main(["review", str(path), "--method", "mv", "--reject-below", "0.5", "--dry-run", "--project",
                 "nope"]) == 2
    assert "no project named 'nope'" in capsys.readouterr().err


@pytest.mark.redis
def test_review_on_redis_with_a_worker_process(redis_client, keys, start_worker, tmp_path):  # noqa: F811
    """The same action when a separate `crowdqa worker` ran the job through a real redis-server."""
    start_worker()
    key = keys["a"]
    r = redis_client.post(f"{API}/blocked-workers", headers=auth(key), json={"annotator": "mturk:AWHOLE4"})
    assert r.status_code == 201
    _, job, path = _batch_job(redis_client, key, tmp_path, method="ds")
    report = redis_client.get(f"{API}/jobs/{job}/report", headers=auth(key)).json()
    assert report["blocked_workers"] == ["mturk:AWHOLE4"]
    r = redis_client.post(f"{API}/jobs/{job}/review/batch", headers=auth(key), json={"reject_below": 0.2})
    assert r.status_code == 200, r.text
    rows = list(csv.DictReader(io.StringIO(r.content.decode("utf-8-sig"), newline="")))
    rejected = {row["WorkerId"] for row in rows if row["Reject"]}
    assert rejected == {"ASPAM5"} and sum(row["Approve"] == "x" for row in rows) == 48


def test_review_of_any_format_gives_decisions_a_block_list_and_applies_it(client, keys, tmp_path, capsys):
    """A categorical dataset (no batch file): the review's decisions and block list as CSV, ``/review/block`` puts the
    block list on the project's list; ``crowdqa blocked add --from-file`` reads the same CSV."""
    from crowdqa.api.cli import main
    from tests.jobs.test_review_formats import _categorical

    key = keys["a"]
    path = tmp_path / "answers.csv"
    _categorical(path, __import__("numpy").random.default_rng(5))
    ds = client.post(f"{API}/datasets", headers=auth(key), json={"name": "answers"}).json()["id"]
    assert upload(client, key, ds, path, format="categorical").status_code == 201
    job = client.post(f"{API}/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds"}).json()["id"]
    assert wait_job(client, job, key, timeout=120)["status"] == "finished"
    rules = {"reject_below": 0.5, "min_tokens": 20}
    summary = client.post(f"{API}/jobs/{job}/review", headers=auth(key), json=rules).json()
    assert summary["format"] == "categorical" and summary["block_list"][0]["annotator"] == "spam"
    decisions = client.post(f"{API}/jobs/{job}/review/decisions", headers=auth(key), json=rules)
    assert decisions.status_code == 200 and decisions.text.startswith("annotator,decision,reason,score")
    listed = client.post(f"{API}/jobs/{job}/review/block-list", headers=auth(key), json=rules)
    assert listed.text.splitlines()[1].startswith("spam,")
    done = client.post(f"{API}/jobs/{job}/review/block", headers=auth(key), json=rules).json()
    assert done["count"] == 1 and done["data"][0]["annotator"] == "spam"
    rows = client.get(f"{API}/blocked-workers", headers=auth(key)).json()["data"]
    assert [r["annotator"] for r in rows] == ["spam"] and rows[0]["reason"].startswith("answers do not depend")
    # The same CSV through the command line, on the server's data directory.
    file = tmp_path / "blocked.csv"
    file.write_bytes(listed.content.replace(b"spam,", b"other,"))
    assert main(["blocked", "add", "--project", "a", "--from-file", str(file)]) == 0
    assert "blocked: other" in capsys.readouterr().out
    rows = client.get(f"{API}/blocked-workers", headers=auth(key)).json()["data"]
    assert sorted(r["annotator"] for r in rows) == ["other", "spam"]
