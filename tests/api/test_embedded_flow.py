"""The whole flow on the embedded service: fakeredis queue, in-process worker, SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.jobs.pipeline import run_pipeline
from tests.api.conftest import SAMPLE, auth, sample_dataset, upload, wait_job


def _problem(r, status):
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == status and body["title"]
    return body


def test_upload_job_report_labels(client, keys):
    """Upload crowd + expert, run DS, and get what the pipeline computes directly (the oracle).

    Oracle: ``run_pipeline`` called in-process on the same files read with ``read_corpus``
    gives the same labels, the same report and the same worker rows as the service.
    """
    key = keys["a"]
    ds = sample_dataset(client, key)
    info = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    assert info["n_uploads"] == 2 and info["summary"]["annotators"] == {"crowd": 10, "expert": 1}
    ups = client.get(f"/api/v1/datasets/{ds}/uploads", headers=auth(key)).json()
    assert ups["count"] == 2 and [u["role"] for u in ups["data"]] == ["crowd", "expert"]

    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                    json={"method": "ds", "params": {"max_iter": 30}, "use_experts": False})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    assert r.headers["location"] == f"/api/v1/jobs/{job_id}"
    body = wait_job(client, job_id, key)
    assert body["status"] == "finished", body
    assert body["progress"]["stage"] == "done" and body["attempts"] == 1
    assert set(body["timings"]) >= {"load", "fit", "report", "save"}
    # Issue 14: the progress names every stage with its seconds, and the report's fit block keeps them.
    assert set(body["progress"]["stages"]) == {"reading", "fitting", "scoring", "writing"}

    corpus = merge_corpora([read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus,
                            read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus])
    direct = run_pipeline(corpus, method="ds", params={"max_iter": 30})
    report = client.get(f"/api/v1/jobs/{job_id}/report", headers=auth(key)).json()
    assert report["experts_used_in_fit"] is False
    assert report["fit"]["stages"] == body["progress"]["stages"]
    # Stored losslessly: the whole report equals the direct run's, except the fit's wall-clock seconds.
    expected = direct.report.model_dump(mode="json")
    report["fit"].pop("seconds"), expected["fit"].pop("seconds")
    report["fit"].pop("stages"), expected["fit"].pop("stages")
    assert report == expected

    workers = client.get(f"/api/v1/jobs/{job_id}/workers?sort=f1&order=asc", headers=auth(key)).json()
    assert workers["count"] == 11
    f1 = [w["f1"] for w in workers["data"] if w["f1"] is not None]
    assert f1 == sorted(f1)
    expected = {w.annotator: w.vs_expert.f1 for w in direct.report.workers if w.vs_expert}
    assert {w["annotator"]: w["f1"] for w in workers["data"] if w["f1"] is not None} == pytest.approx(expected)
    page = client.get(f"/api/v1/jobs/{job_id}/workers?sort=f1&order=desc&offset=2&limit=3", headers=auth(key))
    assert [w["annotator"] for w in page.json()["data"]] == [
        w["annotator"] for w in workers["data"] if w["f1"] is not None][::-1][2:5]

    r = client.get(f"/api/v1/jobs/{job_id}/labels?format=spans-jsonl", headers=auth(key))
    assert r.status_code == 200
    spans = [json.loads(line) for line in r.text.splitlines()]
    assert spans and set(spans[0]) >= {"doc_id", "start", "end", "label"}
    r = client.get(f"/api/v1/jobs/{job_id}/labels?format=conll", headers=auth(key))
    lines = [line for line in r.text.splitlines() if line.strip()]
    assert sum(line.startswith("-DOCSTART-") for line in lines) == corpus.n_docs
    tags = [line.split()[-1] for line in lines if not line.startswith("-DOCSTART-")]
    bare = [t.removeprefix("B-").removeprefix("I-") for t in tags]
    assert bare == [corpus.class_names[k] for k in direct.labels.tolist()]
    r = client.get(f"/api/v1/jobs/{job_id}/labels?format=ebm-nlp", headers=auth(key))
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(r.content)) as zf:
        assert len([n for n in zf.namelist() if n.endswith(".ann")]) == corpus.n_docs
    # Span documents are not categorical items: a 422 problem, not a 500.
    _problem(client.get(f"/api/v1/jobs/{job_id}/labels?format=categorical-csv", headers=auth(key)), 422)
    _problem(client.get(f"/api/v1/jobs/{job_id}/labels?format=xml", headers=auth(key)), 422)


def test_use_experts_clamps_and_reports_it(client, keys):
    """With use_experts the report says so, and scores the aggregate on held-out (cross-fitted) predictions."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv", "use_experts": True})
    body = wait_job(client, r.json()["id"], key)
    assert body["status"] == "finished", body
    report = client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key)).json()
    assert report["experts_used_in_fit"] is True
    # Every expert-labelled token is clamped in the returned fit, so the aggregate is scored on
    # cross-fitted predictions: every expert token is compared, none of them seen by its fit.
    assert report["aggregate_scored_on"] == "held-out predictions (cross-fitting)"
    assert report["aggregate_vs_expert"]["token"]["tokens"] == report["counts"]["clamped_tokens"] > 0
    assert report["fit"]["cross_fit"]["folds"] == 4
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv", "reference": "upwork:md1"})
    assert r.status_code == 202 and wait_job(client, r.json()["id"], key)["status"] == "finished"


def test_bad_requests_are_problems(client, keys, settings):
    """Bad input answers 4xx application/problem+json, never 500."""
    key = keys["a"]
    _problem(client.get("/api/v1/datasets"), 401)
    _problem(client.get("/api/v1/datasets", headers=auth("cqa_nope_nope")), 401)
    _problem(client.get("/api/v1/datasets/unknown", headers=auth(key)), 404)
    _problem(client.get("/api/v1/nowhere", headers=auth(key)), 404)
    body = _problem(client.post("/api/v1/datasets", headers=auth(key), json={"nam": "x"}), 422)
    assert body["errors"]
    _problem(client.post("/api/v1/datasets", headers={**auth(key), "content-type": "application/json"},
                         content=b"{not json"), 422)
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "x"}).json()["id"]
    _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}), 409)
    _problem(upload(client, key, ds, SAMPLE / "crowd.jsonl", format="no-such-format"), 422)
    _problem(upload(client, key, ds, SAMPLE / "make_sample.py", format="spans-jsonl"), 422)
    _problem(upload(client, key, ds, SAMPLE / "crowd.jsonl", role="boss"), 422)
    _problem(upload(client, key, ds, SAMPLE / "crowd.jsonl", on_error="ignore"), 422)
    _problem(client.post(f"/api/v1/datasets/{ds}/uploads", headers=auth(key), data={"format": "conll"}), 422)
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 0
    assert upload(client, key, ds, SAMPLE / "crowd.jsonl").status_code == 201
    # An expert file whose document texts disagree with the crowd's does not merge.
    bad = settings.data_dir.parent / "clash.jsonl"
    bad.write_text(json.dumps({"doc_id": "trial-000", "annotator": "x", "start": 0, "end": 2, "label": "Participants",
                               "text": "another text"}) + "\n")
    _problem(upload(client, key, ds, bad, role="expert"), 422)
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 1
    # Refused uploads leave no raw file behind: only the accepted crowd file is kept.
    kept = [p for p in (settings.data_dir / "uploads").rglob("*") if p.is_file()]
    assert [p.name for p in kept] == [client.get(f"/api/v1/datasets/{ds}/uploads", headers=auth(key)).json()[
        "data"][0]["sha256"] + ".jsonl"]
    _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "em"}), 422)
    _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                         json={"method": "ds", "params": {"max_iterations": 3}}), 422)
    _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                         json={"method": "ds", "use_experts": True}), 422)
    body = _problem(client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                                json={"method": "ds", "reference": "mturk:A1CAREFUL"}), 422)
    assert "reference must be" in body["detail"]
    _problem(client.get("/api/v1/datasets?limit=0", headers=auth(key)), 422)
    _problem(client.get("/api/v1/jobs/nope/report", headers=auth(key)), 404)


def test_upload_size_limit(client, keys, settings, monkeypatch):
    """An upload over CROWDQA_MAX_UPLOAD_BYTES answers 413 problem+json and stores nothing."""
    from crowdqa.store.settings import get_settings

    monkeypatch.setenv("CROWDQA_MAX_UPLOAD_BYTES", "1000")
    get_settings.cache_clear()
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "x"}).json()["id"]
    r = upload(client, key, ds, SAMPLE / "crowd.jsonl")
    _problem(r, 413)
    assert "limit of 1000 bytes" in r.json()["detail"]
    small = settings.data_dir.parent / "small.jsonl"
    lines = (SAMPLE / "crowd.jsonl").read_bytes().splitlines(keepends=True)
    small.write_bytes(b"".join(lines[:9]))
    assert 1400 < small.stat().st_size < 1400 + 64 * 1024
    monkeypatch.setenv("CROWDQA_MAX_UPLOAD_BYTES", "1400")
    get_settings.cache_clear()
    # Under the middleware's allowance for form overhead but over the file limit: refused while streaming.
    _problem(upload(client, key, ds, small), 413)
    assert not list((settings.data_dir / "uploads").rglob("*.jsonl"))


def test_failed_job_reason_and_rerun(client, keys):
    """A job that fails at fit time fails with the reason; deleting works; re-run finishes. (Parameters of the
    wrong type are refused at the request since issue 13; an unknown reference expert fails at fit time.)"""
    key = keys["a"]
    ds = sample_dataset(client, key, experts=False)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                    json={"method": "ds", "params": {"max_iter": "many"}})
    _problem(r, 422)
    from sqlmodel import Session

    from crowdqa.store import crud
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import JobCreate
    from crowdqa.store.settings import get_settings

    with Session(get_engine(get_settings())) as s:  # a job the request checks would refuse, as if stored earlier
        project = crud.authenticate(session=s, key=key)
        dataset = crud.get_dataset(session=s, project_id=project.id, dataset_id=ds)
        bad = crud.create_job(session=s, dataset=dataset, job_in=JobCreate(method="ds", params={"max_iter": "many"}))
        bad_id = bad.id
    from crowdqa.jobs.queue import enqueue_job, get_queue

    enqueue_job(get_queue(get_settings()), bad_id, settings=get_settings())
    body = wait_job(client, bad_id, key)
    assert body["status"] == "failed", body
    assert body["error"].startswith(("TypeError", "ValueError")), body
    _problem(client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key)), 409)
    ok = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()
    assert wait_job(client, ok["id"], key)["status"] == "finished"
    again = client.post(f"/api/v1/jobs/{ok['id']}/rerun", headers=auth(key))
    assert again.status_code == 202
    assert wait_job(client, ok["id"], key)["attempts"] == 2
    jobs = client.get(f"/api/v1/datasets/{ds}/jobs", headers=auth(key)).json()
    assert jobs["count"] == 2
    assert client.delete(f"/api/v1/jobs/{body['id']}", headers=auth(key)).status_code == 204
    assert client.get(f"/api/v1/jobs/{body['id']}", headers=auth(key)).status_code == 404
    assert client.delete(f"/api/v1/datasets/{ds}", headers=auth(key)).status_code == 204
    assert client.get("/api/v1/jobs", headers=auth(key)).json()["count"] == 0


def test_results_are_saved_as_artifacts(client, keys, settings):
    """Labels, posteriors and worker models are npz files under the data dir, checked by sha256."""
    from sqlmodel import Session

    from crowdqa.store.artifacts import ArtifactStore
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import Job

    key = keys["a"]
    ds = sample_dataset(client, key)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds"})
    assert wait_job(client, r.json()["id"], key)["status"] == "finished"
    with Session(get_engine(settings)) as s:
        job = s.get(Job, r.json()["id"])
    store = ArtifactStore(settings.data_dir)
    from crowdqa.jobs.uploads import load_job_corpus

    corpus: Corpus = load_job_corpus(store, job.corpus_sha256)
    labels = store.load_arrays(job.artifacts["labels"])["labels"]
    proba = store.load_arrays(job.artifacts["proba"])["proba"]
    conf = store.load_arrays(job.artifacts["worker_confusion"])["worker_confusion"]
    assert labels.shape == (corpus.n_tokens,) and proba.shape == (corpus.n_tokens, corpus.n_classes)
    assert conf.shape == (corpus.n_workers, corpus.n_classes, corpus.n_classes)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.postgres
def test_flow_on_postgres(pg_settings):
    """The same upload -> job -> report flow with the rows in a real PostgreSQL."""
    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.store.db import get_engine
    from tests.utils.factories import project_with_key

    with Session(get_engine(pg_settings)) as s:
        _, key = project_with_key(s, "pg")
    with TestClient(app) as client:
        ds = sample_dataset(client, key)
        r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "hmm-crowd"})
        body = wait_job(client, r.json()["id"], key)
        assert body["status"] == "finished", body
        workers = client.get(f"/api/v1/jobs/{body['id']}/workers?sort=f1&order=desc", headers=auth(key)).json()
        scored = [w["annotator"] for w in workers["data"] if w["f1"] is not None]
        assert workers["count"] == 11 and scored[-1] == "mturk:A10SPAM"
        # PostgreSQL's json column gives the report back exactly (oracle: the pipeline run in-process).
        report = client.get(f"/api/v1/jobs/{body['id']}/report", headers=auth(key)).json()
        corpus = merge_corpora([read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus,
                                read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus])
        direct = run_pipeline(corpus, method="hmm-crowd").report.model_dump(mode="json")
        report["fit"].pop("seconds"), direct["fit"].pop("seconds")
        report["fit"].pop("stages"), direct["fit"].pop("stages")  # wall-clock seconds too
        assert report == direct
        assert body["created_at"].endswith(("Z", "+00:00"))
        # Hostile names (NUL, very long) are stored, not a 500: PostgreSQL text cannot hold NUL.
        odd = "w\x00" + "y" * 500
        rows = [json.loads(line) for line in (SAMPLE / "crowd.jsonl").read_text().splitlines()[:5]]
        body = "".join(json.dumps({**r, "annotator": odd + r["annotator"]}) + "\n" for r in rows).encode()
        r = client.post(f"/api/v1/datasets/{ds}/uploads", headers=auth(key),
                        files={"file": ("\x00" + "n" * 400 + ".jsonl", body)}, data={"format": "spans-jsonl"})
        assert r.status_code == 201, r.text
        r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
        assert wait_job(client, r.json()["id"], key)["status"] == "finished"
        r = client.post("/api/v1/datasets", headers=auth(key), json={"name": "a\x00b"})
        assert r.status_code == 422


def test_job_timeout_in_the_embedded_worker(settings, keys, monkeypatch, tmp_path):
    """The embedded thread worker enforces CROWDQA_JOB_TIMEOUT (TimerDeathPenalty): the job fails with the reason."""
    from fastapi.testclient import TestClient

    from crowdqa.api.main import app
    from crowdqa.store.settings import get_settings
    from tests.utils.factories import synthetic_corpus

    monkeypatch.setenv("CROWDQA_JOB_TIMEOUT", "1")
    get_settings.cache_clear()
    path = tmp_path / "big.npz"
    synthetic_corpus(n_docs=4000, doc_len=50, n_crowd=20, crowd_per_doc=5, seed=2).save(path)
    key = keys["a"]
    with TestClient(app) as client:
        ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "big"}).json()["id"]
        assert upload(client, key, ds, path, format="corpus").status_code == 201
        r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                        json={"method": "ds", "params": {"max_iter": 1000, "tol": 0.0}})
        body = wait_job(client, r.json()["id"], key, timeout=60)
        assert body["status"] == "failed" and body["error"].startswith("timed out after 1 s"), body
        assert body["attempts"] == 1
        small = sample_dataset(client, key, experts=False)
        ok = client.post(f"/api/v1/datasets/{small}/jobs", headers=auth(key), json={"method": "mv"}).json()
        assert wait_job(client, ok["id"], key)["status"] == "finished"  # the worker thread survived


def _docs_zip(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def test_upload_with_a_docs_zip(client, keys, settings):
    """Span rows without texts take them from a docs zip; member paths never reach the filesystem."""
    rows = [json.loads(line) for line in (SAMPLE / "crowd.jsonl").read_text().splitlines()]
    texts = {r["doc_id"]: r.pop("text") for r in rows}
    body = "".join(json.dumps(r) + "\n" for r in rows).encode()
    members = {f"texts/{d}.txt": t.encode() for d, t in texts.items()}
    members["../../evil.txt"] = b"outside"  # reduced to its base name inside the temp folder
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "docs"}).json()["id"]
    r = client.post(f"/api/v1/datasets/{ds}/uploads", headers=auth(key),
                    files={"file": ("c.jsonl", body), "docs": ("docs.zip", _docs_zip(members))},
                    data={"format": "spans-jsonl", "role": "crowd"})
    assert r.status_code == 201, r.text
    assert r.json()["summary"]["documents"] == 40 and len(r.json()["options"]["docs_sha256"]) == 64
    assert not (settings.data_dir.parent / "evil.txt").exists()
    # Without the docs there is no text: a 4xx problem, nothing stored.
    ds2 = client.post("/api/v1/datasets", headers=auth(key), json={"name": "nodocs"}).json()["id"]
    _problem(client.post(f"/api/v1/datasets/{ds2}/uploads", headers=auth(key), files={"file": ("c.jsonl", body)},
                         data={"format": "spans-jsonl"}), 422)
    _problem(client.post(f"/api/v1/datasets/{ds2}/uploads", headers=auth(key),
                         files={"file": ("c.jsonl", body), "docs": ("docs.zip", b"not a zip")},
                         data={"format": "spans-jsonl"}), 422)


def test_docs_zip_bomb_is_refused(tmp_path):
    """The decompressed bytes, not the zip headers, are counted against the bound."""
    from crowdqa.ingest.errors import IngestError
    from crowdqa.jobs.uploads import extract_docs

    path = tmp_path / "bomb.zip"
    path.write_bytes(_docs_zip({"a.txt": b"0" * 5_000_000}))
    assert path.stat().st_size < 50_000
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(IngestError, match="expands to more than"):
        extract_docs(path, out, max_bytes=1_000_000)


def test_concurrent_uploads_all_merge(client, keys, settings):
    """Eight threads upload disjoint expert files to one dataset at once: every upload is in the merged corpus."""
    from concurrent.futures import ThreadPoolExecutor

    rows = [json.loads(line) for line in (SAMPLE / "expert.jsonl").read_text().splitlines()]
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "race"}).json()["id"]
    files = []
    for i in range(8):
        path = settings.data_dir.parent / f"expert{i}.jsonl"
        path.write_text("".join(json.dumps({**r, "annotator": f"expert:{i}"}) + "\n" for r in rows))
        files.append(path)
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda p: upload(client, key, ds, p, role="expert").status_code, files))
    assert codes == [201] * 8
    info = client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()
    assert info["n_uploads"] == 8 and info["summary"]["annotators"]["expert"] == 8


def test_categorical_dataset(client, keys, settings):
    """A categorical CSV with a gold column: DS job, item,label CSV out, gold reported as the expert.

    Oracle: with three reliable workers and one who always answers "b", the majority answer of each item.
    """
    lines = ["item,annotator,label,gold"]
    truth = {f"q{i}": "ab"[i % 2] for i in range(30)}
    for item, t in truth.items():
        for w in ("w1", "w2", "w3"):
            lines.append(f"{item},{w},{t},{t}")
        lines.append(f"{item},w4,b,{t}")
    path = settings.data_dir.parent / "cat.csv"
    path.write_text("\n".join(lines) + "\n")
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "cat"}).json()["id"]
    r = upload(client, key, ds, path, format="categorical")
    assert r.status_code == 201, r.text
    assert r.json()["summary"]["annotators"] == {"crowd": 4, "expert": 1}
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds"}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    r = client.get(f"/api/v1/jobs/{job}/labels?format=categorical-csv", headers=auth(key))
    assert r.text.splitlines()[0] == "item,label,score"
    rows = [line.split(",") for line in r.text.strip().splitlines()[1:]]
    assert {item: label for item, label, _ in rows} == truth
    workers = client.get(f"/api/v1/jobs/{job}/workers", headers=auth(key)).json()["data"]  # by accuracy
    assert workers[0]["annotator"] == "w4"


def test_categorical_columns_by_option_and_a_separate_gold_file(client, keys, settings):
    """Answers with unrecognised headers (chosen by form fields) plus a crowd-kit ``task,true_label`` gold upload.

    Oracle: the same answers as test_categorical_dataset; worker w4 (always "b") is right on half the items.
    """
    truth = {f"q{i}": "ab"[i % 2] for i in range(30)}
    answers = ["when,who,what,which,hit"] + [f"t,{w},{t if w != 'w4' else 'b'},{item},h"
                                             for item, t in truth.items() for w in ("w1", "w2", "w3", "w4")]
    gold = ["task,true_label"] + [f"{item},{t}" for item, t in truth.items()]
    folder = settings.data_dir.parent
    (folder / "answers.csv").write_text("\n".join(answers) + "\n")
    (folder / "truth.csv").write_text("\n".join(gold) + "\n")
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "cat2"}).json()["id"]
    r = upload(client, key, ds, folder / "answers.csv", format="categorical")
    assert r.status_code == 422 and r.json()["detail"].startswith("answers.csv:1: cannot tell the item, annotator")
    assert "annotator_column" in r.json()["detail"] and str(settings.data_dir) not in r.json()["detail"]
    r = upload(client, key, ds, folder / "answers.csv", format="categorical", annotator_column="who",
               answer_column="what", id_column="which")
    assert r.status_code == 201, r.text
    r = upload(client, key, ds, folder / "truth.csv", format="categorical", role="expert")
    assert r.status_code == 201, r.text
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    report = client.get(f"/api/v1/jobs/{job}/report", headers=auth(key)).json()
    assert report["kind"] == "categorical" and report["aggregate_vs_expert"]["accuracy"]["value"] == 1.0
    workers = client.get(f"/api/v1/jobs/{job}/workers?sort=accuracy&order=asc", headers=auth(key)).json()["data"]
    assert (workers[0]["annotator"], workers[0]["accuracy"]) == ("w4", 0.5)


@pytest.mark.parametrize("kind", ["zip", "gztar"])
def test_ebm_nlp_archive_upload_runs_end_to_end(client, keys, tmp_path, kind):
    """An EBM-NLP folder zipped, or tarred as the corpus is distributed, is an ordinary upload: crowd and gold
    folders give crowd and expert annotators."""
    import shutil

    from tests.ingest.test_ebm_nlp import _layout

    key = keys["a"]
    _layout(tmp_path / "src")
    archive = Path(shutil.make_archive(str(tmp_path / "ebm"), kind, root_dir=tmp_path / "src"))
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "ebm"}).json()["id"]
    r = upload(client, key, ds, archive, format="ebm-nlp", category="participants")
    assert r.status_code == 201, r.text
    assert r.json()["summary"]["annotators"] == {"crowd": 2, "expert": 1}
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
    assert wait_job(client, r.json()["id"], key)["status"] == "finished"


def test_upload_errors_and_skipped_rows_name_the_clients_file(client, keys, settings):
    """Messages name the file as sent (without its folders), never the server's storage path."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "names"}).json()["id"]
    path = settings.data_dir.parent / "my answers.csv"
    path.write_text("item,annotator,label\nq1,w1,a\nq1,w1,b\nq2,w1,a\n")
    with open(path, "rb") as fh:
        r = client.post(f"/api/v1/datasets/{ds}/uploads", headers=auth(key),
                        files={"file": ("C:\\Users\\me\\my answers.csv", fh, "text/csv")},
                        data={"format": "categorical", "on_error": "skip", "repeats": "refuse"})
    assert r.status_code == 201, r.text
    assert r.json()["problems"] == ["my answers.csv:3: duplicate row: annotator 'w1' labelled item 'q1' twice"]
    other = client.post("/api/v1/datasets", headers=auth(key), json={"name": "again"}).json()["id"]
    # the same bytes in ds would be "already uploaded"
    r = upload(client, key, other, path, format="categorical", repeats="refuse")
    assert r.status_code == 422
    assert r.json()["detail"] == "my answers.csv:3: duplicate row: annotator 'w1' labelled item 'q1' twice"


def test_repeated_rows_are_counted_in_the_upload_summary(client, keys, settings):
    """A categorical upload with repeated (item, annotator) rows is taken: the summary counts them in its notes and
    dropped rows; ``repeats`` is a form field of the one upload check (an unknown value: 422 naming it)."""
    key = keys["a"]
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "repeats"}).json()["id"]
    path = settings.data_dir.parent / "answers.csv"
    path.write_text("item,annotator,label\nq1,w1,a\nq1,w1,b\nq2,w1,a\nq2,w1,a\nq2,w2,b\n")
    r = upload(client, key, ds, path, format="categorical", repeats="last")
    assert r.status_code == 201, r.text
    body = r.json()["summary"]
    assert body["dropped"] == {"repeated (item, annotator)": 2}
    assert any(n.startswith("2 (item, annotator) pairs are answered more than once (2 rows left out): 1 with the "
                            "same answer each time, counted once; 1 with differing answers, kept the last answer")
               for n in body["notes"]), body["notes"]
    other = client.post("/api/v1/datasets", headers=auth(key), json={"name": "repeats 2"}).json()["id"]
    r = upload(client, key, other, path, format="categorical", repeats="mean")
    assert r.status_code == 422 and "repeats must be 'first', 'last', 'drop' or 'refuse'" in r.text
