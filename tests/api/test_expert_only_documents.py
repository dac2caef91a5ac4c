"""Documents (items) that only the experts labelled are not aggregated. An expert file whose
ids match no crowd item used to add phantom items to the aggregate (labelled with the prior's top class) and
to the summary's ``documents_with_expert``; now they are left out and counted, and an expert file that matches
nothing is refused (CLI exit 2 in one line, API 422 problem+json on the expert upload or on the job)."""

from __future__ import annotations

import csv
import json

from crowdqa.api.cli import main
from tests.api.conftest import SAMPLE, auth, upload, wait_job


def _answers(path, items=range(30)):
    """Categorical answers: 4 workers on each item, mostly the truth ('a' on even items, 'b' on odd)."""
    rows = ["item,worker,label"]
    for i in items:
        truth = "ab"[i % 2]
        rows += [f"{i},w{w},{truth if (i + w) % 4 else 'ab'[(i + 1) % 2]}" for w in range(4)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _truth(path, ids):
    path.write_text("item,label\n" + "".join(f"{i},{'ab'[n % 2]}\n" for n, i in ids), encoding="utf-8")
    return path


def _problem(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    return r.json()


def test_cli_expert_items_without_crowd_answers_are_left_out_and_counted(tmp_path, capsys):
    """10 of 25 expert items match no crowd item: the aggregate has the 30 crowd items only, stderr says 10 were
    left out, the report counts them, and 15 items are scored (before: 40 items written, 25 scored)."""
    crowd = _answers(tmp_path / "answers.csv")
    truth = _truth(tmp_path / "truth.csv", [(n, str(n)) for n in range(15)] + [(n, f"Q{n}") for n in range(10)])
    out, report = tmp_path / "labels.csv", tmp_path / "report.json"
    assert main(["aggregate", str(crowd), "--format", "categorical", "--expert", str(truth), "--method", "ds",
                 "--output", str(out), "--report", str(report)]) == 0
    err = capsys.readouterr().err
    assert "note: 10 expert document(s) (items) matched no crowd document" in err, err
    written = list(csv.reader(out.open(encoding="utf-8")))[1:]
    assert sorted(r[0] for r in written) == sorted(str(i) for i in range(30))
    body = json.loads(report.read_text())
    assert body["counts"]["documents"] == 30 and body["counts"]["expert_documents_without_crowd"] == 10
    assert body["aggregate_vs_expert"]["accuracy"]["compared"] == 15


def test_cli_expert_file_that_matches_no_crowd_item_is_refused(tmp_path, capsys):
    """Every expert id prefixed 'Q': exit 2 with one line naming the expert file and example ids; nothing written."""
    crowd = _answers(tmp_path / "answers.csv")
    truth = _truth(tmp_path / "truth.csv", [(n, f"Q{n}") for n in range(30)])
    out = tmp_path / "labels.csv"
    status = main(["aggregate", str(crowd), "--format", "categorical", "--expert", str(truth), "--method", "mv",
                   "--output", str(out), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"crowdqa: error: {truth}: none of the 30 expert documents (items) matches"), err
    assert "'Q0'" in err[0] and not out.exists()


def test_cli_spans_expert_only_documents_are_not_aggregated(tmp_path, capsys):
    """Spans: an expert file with two documents the crowd never saw: the aggregate and the ingest summary
    hold the crowd's documents only, and the summary counts the two."""
    lines = (SAMPLE / "expert.jsonl").read_text(encoding="utf-8").splitlines()
    extra = [json.dumps({"doc_id": f"extra-{k}", "annotator": "upwork:md1", "start": 0, "end": 5,
                         "label": "Participants", "text": "Women with asthma ."}) for k in range(2)]
    expert = tmp_path / "expert.jsonl"
    expert.write_text("\n".join(lines + extra) + "\n", encoding="utf-8")
    out = tmp_path / "agg.jsonl"
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert", str(expert),
                 "--method", "mv", "--output", str(out), "--quiet"]) == 0
    assert not any("extra-" in line for line in out.read_text(encoding="utf-8").splitlines())
    capsys.readouterr()
    assert main(["ingest", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--expert", str(expert),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    crowd_only = json.loads(_ingest_json(capsys))
    assert summary["documents"] == crowd_only["documents"]
    assert any("2 expert document(s)" in n for n in summary["notes"])


def _ingest_json(capsys) -> str:
    assert main(["ingest", str(SAMPLE / "crowd.jsonl"), "--format", "spans-jsonl", "--json"]) == 0
    return capsys.readouterr().out


def test_api_expert_upload_that_matches_no_crowd_item_is_422(client, keys, settings, tmp_path):
    """After a crowd upload, an expert upload whose ids match none is refused (422 problem+json) and the
    dataset is unchanged; one that matches some is accepted, and its summary counts matched and unmatched apart
    (before: 201, ``documents_with_expert`` 30 for 30 phantom items)."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "cat"}).json()["id"]
    assert upload(client, key, ds, _answers(tmp_path / "answers.csv"), format="categorical").status_code == 201
    before = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    body = _problem(upload(client, key, ds, _truth(tmp_path / "q.csv", [(n, f"Q{n}") for n in range(30)]),
                           format="categorical", role="expert"), 422)
    assert "none of the dataset's 30 expert documents (items) matches a crowd document" in body["detail"]
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json() == before
    partly = _truth(tmp_path / "t.csv", [(n, str(n)) for n in range(12)] + [(n, f"Q{n}") for n in range(5)])
    assert upload(client, key, ds, partly, format="categorical", role="expert").status_code == 201
    coverage = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["summary"]["coverage"]
    assert coverage["documents_with_expert"] == 12 and coverage["expert_documents_without_crowd"] == 5
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds"})
    assert job.status_code == 202, job.text
    done = wait_job(client, job.json()["id"], key)
    assert done["status"] == "finished", done
    report = client.get(f"/api/v1/jobs/{done['id']}/report", headers=auth(key)).json()
    assert report["counts"]["documents"] == 30 and report["counts"]["expert_documents_without_crowd"] == 5
    assert report["aggregate_vs_expert"]["accuracy"]["compared"] == 12
    labels = client.get(f"/api/v1/jobs/{done['id']}/labels?format=categorical-csv", headers=auth(key)).text
    assert len(labels.strip().splitlines()) == 31 and "Q" not in labels  # a header and the 30 crowd items
    # A job stored before expert-only items were left out has labels on all 35: it reads the corpus it ran on.
    from crowdqa.jobs.uploads import load_job_corpus
    from crowdqa.store.artifacts import ArtifactStore

    sha = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["corpus_sha256"]
    store = ArtifactStore(settings.data_dir)
    assert load_job_corpus(store, sha).n_docs == 30 and load_job_corpus(store, sha, n_tokens=35).n_docs == 35


def test_api_expert_upload_first_is_accepted_and_the_job_refuses_a_mismatch(client, keys, tmp_path):
    """Experts first is still possible (201); when the crowd's ids then match none of them, the job request is
    422 problem+json naming the mismatch (before: 202 and 30 phantom items)."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "cat"}).json()["id"]
    truth = _truth(tmp_path / "q.csv", [(n, f"Q{n}") for n in range(30)])
    assert upload(client, key, ds, truth, format="categorical", role="expert").status_code == 201
    assert upload(client, key, ds, _answers(tmp_path / "answers.csv"), format="categorical").status_code == 201
    body = _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}), 422)
    assert "none of the dataset's 30 expert documents (items) matches a crowd document" in body["detail"]
