"""Uploads and job requests a new user met. An upload does not re-merge what is stored;
one dataset holds one kind of labels; rejected MTurk assignments and what a reader
assumed are in the summary; parameters and form fields are checked at the request, and a
re-run takes new parameters; re-uploading a file says so; one upload can be deleted."""

from __future__ import annotations

import csv
import json

import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.ingest.summary import summarize
from crowdqa.store.artifacts import ArtifactStore
from tests.api.conftest import SAMPLE, auth, sample_dataset, upload, wait_job
from tests.utils.factories import synthetic_corpus


def _problem(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    return r.json()


def _mturk(path, statuses):
    """A categorical MTurk batch: 3 HITs x 4 workers, with the given AssignmentStatus per row."""
    rows, k = [], 0
    for hit in ("h1", "h2", "h3"):
        for w in ("W1", "W2", "W3", "W4"):
            rows.append([hit, f"A{k}", w, statuses[k], "-", "AB"[(k * 7) % 2]])
            k += 1
    with open(path, "w", encoding="utf-8", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "Input.input", "Answer.output"])
        out.writerows(rows)
    return path


def test_an_upload_reads_and_writes_nothing_of_what_is_stored(client, keys, settings, tmp_path, monkeypatch):
    """Defect 3: adding a small file to a dataset holding a large upload loads no stored corpus and writes
    nothing but the new file's own corpus (before: the whole merged corpus was loaded, merged, re-saved)."""
    key = keys["a"]
    big = tmp_path / "big.npz"
    corpus = synthetic_corpus(n_docs=400, doc_len=50, n_crowd=20, crowd_per_doc=5, seed=2)
    corpus.save(big)
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "d"}).json()["id"]
    assert upload(client, key, ds, big, format="corpus").status_code == 201
    loads = []
    monkeypatch.setattr(Corpus, "load", classmethod(lambda cls, *a, **k: loads.append(a) or (_ for _ in ()).throw(
        AssertionError("a stored corpus was loaded during an upload"))))
    root = settings.data_dir / "corpora"
    before = {p: p.stat().st_size for p in root.rglob("*.npz")}
    small = tmp_path / "small.jsonl"
    small.write_text(json.dumps({"doc_id": "extra", "annotator": "x", "start": 0, "end": 3, "label": "w",
                                 "text": "abc def"}) + "\n", encoding="utf-8")
    r = upload(client, key, ds, small)
    assert r.status_code == 201, r.text
    new = {p: p.stat().st_size for p in root.rglob("*.npz") if p not in before}
    assert not loads and len(new) == 1 and sum(new.values()) < 10_000, new
    info = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    assert info["summary"]["documents"] == corpus.n_docs + 1 and info["n_uploads"] == 2


def test_the_dataset_is_the_merge_of_its_uploads(client, keys, settings):
    """Defect 3, oracle: the dataset's summary (computed from the uploads' indexes) equals ingest.summarize of
    merge_corpora over the files read directly, and a job runs on exactly that merged corpus."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    crowd = read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus
    expert = read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus
    merged = merge_corpora([crowd, expert])
    info = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    assert info["summary"] == json.loads(json.dumps(summarize(merged)))
    from crowdqa.jobs.uploads import load_job_corpus

    assert load_job_corpus(ArtifactStore(settings.data_dir), info["corpus_sha256"]).equals(merged)
    rows = client.get(f"/api/v1/datasets/{ds}/uploads", headers=auth(key)).json()
    assert rows["count"] == 2


def test_one_dataset_holds_one_kind_of_labels(client, keys, tmp_path):
    """Defect 4: a categorical upload (MTurk A-E answers) next to span uploads is refused with 409 naming both
    kinds, and the dataset is unchanged (before: accepted, the report read as categorical with F1 = 1.0)."""
    key = keys["a"]
    ds = sample_dataset(client, key, experts=False)
    before = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    body = _problem(upload(client, key, ds, _mturk(tmp_path / "b.csv", ["Approved"] * 12), format="mturk-csv"), 409)
    assert "span labels" in body["detail"] and "categorical answers" in body["detail"]
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json() == before
    other = client.post("/api/v1/datasets", headers=auth(key), json={"name": "cat"}).json()["id"]
    assert upload(client, key, other, _mturk(tmp_path / "b.csv", ["Approved"] * 12), format="mturk-csv"
                  ).status_code == 201
    table = tmp_path / "c.csv"
    table.write_text("item,worker,label\nh1,Z,yes\nh2,Z,no\n", encoding="utf-8")
    body = _problem(upload(client, key, other, table, format="categorical"), 409)
    assert "share no label" in body["detail"]


def test_rejected_assignments_are_counted_and_listed(client, keys, tmp_path):
    """Defect 6: rejected MTurk assignments are left out, and the summary says how many and which lines
    (before: `skipped 0` and nothing else); keep_rejected keeps them."""
    key = keys["a"]
    statuses = ["Approved"] * 12
    statuses[1] = statuses[6] = statuses[11] = "Rejected"
    path = _mturk(tmp_path / "batch.csv", statuses)
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "m"}).json()["id"]
    r = upload(client, key, ds, path, format="mturk-csv")
    assert r.status_code == 201, r.text
    summary = r.json()["summary"]
    assert summary["annotations"] == 9 and summary["dropped"] == {"rejected": 3}
    assert any("3 rejected assignments" in n and "lines 3, 8, 13" in n for n in summary["notes"]), summary
    ds2 = client.post("/api/v1/datasets", headers=auth(key), json={"name": "m2"}).json()["id"]
    kept = upload(client, key, ds2, path, format="mturk-csv", keep_rejected="true").json()["summary"]
    assert kept["annotations"] == 12 and "dropped" not in kept


def test_the_summary_says_what_was_assumed(client, keys, tmp_path):
    """Defect 7: a categorical CSV whose header names no column is read by position, and the summary says
    so, naming the columns; an MTurk batch without Input.id says its documents are HITs."""
    key = keys["a"]
    table = tmp_path / "t.csv"
    table.write_text("foo,bar,baz\ni1,a,x\ni1,b,y\ni2,a,x\n", encoding="utf-8")
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "t"}).json()["id"]
    notes = upload(client, key, ds, table, format="categorical").json()["summary"]["notes"]
    assert any("read by position" in n and "item = 'foo'" in n and "label = 'baz'" in n for n in notes), notes
    ds2 = client.post("/api/v1/datasets", headers=auth(key), json={"name": "m"}).json()["id"]
    notes = upload(client, key, ds2, _mturk(tmp_path / "b.csv", ["Approved"] * 12), format="mturk-csv"
                   ).json()["summary"]["notes"]
    assert any("HITId" in n for n in notes), notes


def test_ebm_nlp_with_role_expert_is_refused(client, keys, tmp_path):
    """Defect 7: role=expert on an ebm-nlp upload would turn its crowd folders into experts: 422 saying
    that the roles come from the folders (before: accepted, every crowd worker became an expert)."""
    root = tmp_path / "ebm_nlp_2_00"
    (root / "documents").mkdir(parents=True)
    (root / "documents" / "1.tokens").write_text("a\nb\nc\n", encoding="utf-8")
    for kind, wid in (("crowd", "00015"), ("gold", "0001")):
        folder = root / "annotations" / "individual" / "phase_1" / "participants" / "test" / kind
        folder.mkdir(parents=True)
        (folder / f"1.{wid}.ann").write_text("0\n1\n1\n", encoding="utf-8")
    import shutil

    archive = shutil.make_archive(str(tmp_path / "ebm"), "zip", tmp_path, "ebm_nlp_2_00")
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "e"}).json()["id"]
    from pathlib import Path

    body = _problem(upload(client, key, ds, Path(archive), format="ebm-nlp", role="expert"), 422)
    assert "roles from its folders" in body["detail"]
    r = upload(client, key, ds, Path(archive), format="ebm-nlp")
    assert r.status_code == 201 and r.json()["summary"]["annotators"] == {"crowd": 1, "expert": 1}


@pytest.mark.parametrize("params, field", [({"max_iter": "ten"}, "max_iter"), ({"max_iter": 0}, "max_iter"),
                                           ({"model": "three-coin"}, "model"), ({"bogus": 1}, "bogus")])
def test_method_parameters_are_checked_at_the_request(client, keys, params, field):
    """Defect 8: a parameter of the wrong type or value, or unknown, answers 422 naming params.<field>, and no
    job is created (before: 202, then a failed job that a re-run could not fix)."""
    key = keys["a"]
    ds = sample_dataset(client, key, experts=False)
    body = _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                                json={"method": "ds", "params": params}), 422)
    assert f"params.{field}" in body["detail"]
    assert client.get("/api/v1/jobs", headers=auth(key)).json()["count"] == 0


@pytest.mark.parametrize("field, hint", [("bogus_option", None), ("text_colum", "text_column")])
def test_unknown_upload_form_fields_are_refused(client, keys, field, hint):
    """Defect 8: an upload form field the API does not take (a typo) answers 422 naming it (before: ignored)."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "d"}).json()["id"]
    body = _problem(upload(client, key, ds, SAMPLE / "crowd.jsonl", **{field: "1"}), 422)
    assert repr(field) in body["detail"] and (hint is None or f"did you mean {hint!r}" in body["detail"])
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 0


def test_rerun_takes_new_parameters(client, keys):
    """Defect 8: POST /jobs/{id}/rerun with a body changes the parameters (checked like a new job's)."""
    key = keys["a"]
    ds = sample_dataset(client, key, experts=False)
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                      json={"method": "ds", "params": {"max_iter": 2}}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    _problem(client.post(f"/api/v1/jobs/{job}/rerun", headers=auth(key), json={"params": {"max_iter": "x"}}), 422)
    r = client.post(f"/api/v1/jobs/{job}/rerun", headers=auth(key), json={"params": {"max_iter": 7}})
    assert r.status_code == 202 and r.json()["params"] == {"max_iter": 7}
    body = wait_job(client, job, key)
    assert body["status"] == "finished" and body["params"] == {"max_iter": 7}
    assert client.post(f"/api/v1/jobs/{job}/rerun", headers=auth(key)).status_code == 202  # no body: as it was


def test_reupload_says_already_uploaded_and_one_upload_can_be_deleted(client, keys):
    """The same file twice answers 409 "already uploaded" with the first upload's id (not "duplicate
    assignment"); DELETE of one upload leaves the dataset as the other uploads alone."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    ups = client.get(f"/api/v1/datasets/{ds}/uploads", headers=auth(key)).json()["data"]
    body = _problem(upload(client, key, ds, SAMPLE / "expert.jsonl", role="expert"), 409)
    assert "already uploaded" in body["detail"] and ups[1]["id"] in body["detail"]
    assert client.delete(f"/api/v1/datasets/{ds}/uploads/{ups[1]['id']}", headers=auth(key)).status_code == 204
    info = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    crowd = read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus
    assert info["n_uploads"] == 1 and info["summary"] == json.loads(json.dumps(summarize(crowd)))
    assert client.delete(f"/api/v1/datasets/{ds}/uploads/{ups[1]['id']}", headers=auth(key)).status_code == 404
    assert upload(client, key, ds, SAMPLE / "expert.jsonl", role="expert").status_code == 201
