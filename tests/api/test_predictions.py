"""Pre-annotation through the API (api/routes/predictions.py, jobs/preannotate.py): a finished job's model labels
uploaded documents nobody annotated, on the job queue, and the labels come back as the command line writes them."""

from __future__ import annotations

import json

import pytest

from crowdqa.api.cli import main
from tests.api.conftest import SAMPLE, auth, sample_dataset, upload, wait_job

PROBLEM = "application/problem+json"


def tagger_job(client, key: str, *, method: str = "hmm-crowd-tagger") -> str:
    """A finished job of ``method`` on the bundled sample (crowd labels only)."""
    ds = sample_dataset(client, key, experts=False)
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": method})
    assert r.status_code == 202, r.text
    body = wait_job(client, r.json()["id"], key, timeout=120)
    assert body["status"] == "finished", body
    return body["id"]


def post_documents(client, key: str, job_id: str, name: str, data: bytes, *, format: str = "spans-jsonl",
                   **options):
    return client.post(f"/api/v1/jobs/{job_id}/predictions", headers=auth(key),
                       files={"file": (name, data, "application/octet-stream")}, data={"format": format, **options})


def wait_prediction(client, key: str, location: str, *, timeout: float = 60.0) -> dict:
    import time

    deadline = time.monotonic() + timeout
    while True:
        body = client.get(location, headers=auth(key)).json()
        if body["status"] in ("finished", "failed") or time.monotonic() > deadline:
            return body
        time.sleep(0.1)


def command_line_predictions(tmp_path, model: bytes, docs, *, format: str = "spans-jsonl") -> str:
    """What ``crowdqa aggregate --from-model MODEL --frozen --predict DOCS --predictions OUT`` writes."""
    (tmp_path / "model.npz").write_bytes(model)
    out = tmp_path / "cli-predictions.jsonl"
    assert main(["aggregate", str(SAMPLE / "crowd.jsonl"), "--format", format, "--method", "hmm-crowd-tagger",
                 "--from-model", str(tmp_path / "model.npz"), "--frozen", "--output", str(tmp_path / "agg.jsonl"),
                 "--predict", str(docs), "--predictions", str(out), "--output-format", "spans-jsonl",
                 "--quiet"]) == 0
    return out.read_text(encoding="utf-8")


def check_predictions_equal_the_command_line(client, key: str, tmp_path) -> None:
    """Oracle: the command line's ``--from-model --frozen --predict`` on the job's downloaded model and the same
    documents. The API's labels equal its file byte for byte."""
    job = tagger_job(client, key)
    docs = SAMPLE / "expert.jsonl"  # its labels are not read: only its texts
    r = post_documents(client, key, job, "expert.jsonl", docs.read_bytes())
    assert r.status_code == 202, r.text
    assert r.headers["location"] == f"/api/v1/predictions/{r.json()['id']}"
    assert r.json()["status"] == "queued" and r.json()["progress"] == {"stage": "queued"}
    assert (r.json()["documents"], r.json()["method"], r.json()["job_id"]) == (20, "hmm-crowd-tagger", job)
    body = wait_prediction(client, key, r.headers["location"])
    assert body["status"] == "finished", body
    assert body["progress"]["stage"] == "done"
    assert {"reading", "labelling", "writing"} <= set(body["progress"]["stages"])
    labels = client.get(f"{r.headers['location']}/labels", headers=auth(key))
    assert labels.status_code == 200, labels.text
    assert labels.headers["content-disposition"] == f'attachment; filename="{body["id"]}-predictions.jsonl"'
    model = client.get(f"/api/v1/jobs/{job}/model", headers=auth(key)).content
    expected = command_line_predictions(tmp_path, model, docs)
    assert labels.text == expected and expected.count("\n") > 0
    spans = [json.loads(line) for line in expected.splitlines()]
    assert {s["doc_id"] for s in spans} <= {json.loads(line)["doc_id"] for line in docs.read_text().splitlines()}
    listed = client.get(f"/api/v1/jobs/{job}/predictions", headers=auth(key)).json()
    assert listed["count"] == 1 and listed["data"][0]["id"] == body["id"]


def test_predictions_equal_the_command_line_on_sqlite(client, keys, tmp_path):
    check_predictions_equal_the_command_line(client, keys["a"], tmp_path)


@pytest.mark.postgres
def test_predictions_equal_the_command_line_on_postgres(pg_settings, tmp_path):
    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.store.db import get_engine
    from tests.utils.factories import project_with_key

    with Session(get_engine(pg_settings)) as s:
        _, key = project_with_key(s, "pg")
    with TestClient(app) as client:
        check_predictions_equal_the_command_line(client, key, tmp_path)


def test_documents_without_labels_in_every_shape_are_read(client, keys, tmp_path):
    """Uploads without labels are what pre-annotation takes: JSONL of doc_id and text (read as spans-jsonl or as
    doccano), CoNLL tokens alone, Label Studio tasks without annotations. The same words get the same labels whichever
    way they came (oracle: the four files written as CoNLL agree token for token). As a dataset's upload, the same
    JSONL holds no labels and is refused."""
    key = keys["a"]
    job = tagger_job(client, key)
    texts = [json.loads(line) for line in (SAMPLE / "expert.jsonl").read_text().splitlines()]
    bare = "".join(json.dumps({"doc_id": t["doc_id"], "text": t["text"]}) + "\n" for t in texts).encode()
    conll = "\n\n".join("\n".join(t["text"].split()) for t in texts).encode() + b"\n"
    tasks = json.dumps([{"id": i, "data": {"text": t["text"]}} for i, t in enumerate(texts)]).encode()
    runs = {}
    for name, data, fmt, options in (("bare.jsonl", bare, "spans-jsonl", {}),
                                     ("bare.jsonl", bare, "doccano", {"id_column": "doc_id"}),
                                     ("tokens.conll", conll, "conll", {}), ("tasks.json", tasks, "label-studio", {})):
        r = post_documents(client, key, job, name, data, format=fmt, **options)
        assert r.status_code == 202, r.text
        assert (r.json()["documents"], r.json()["tokens"]) == (20, sum(len(t["text"].split()) for t in texts))
        body = wait_prediction(client, key, r.headers["location"])
        assert body["status"] == "finished", body
        runs[fmt] = client.get(f"{r.headers['location']}/labels?format=conll", headers=auth(key)).text

    def tags(text: str) -> list[list[str]]:  # the documents' tags, without the -DOCSTART- lines (their ids differ)
        return [[line.split("\t")[-1] for line in block.splitlines()]
                for block in text.strip().split("\n\n") if not block.startswith("-DOCSTART-")]

    assert tags(runs["conll"]) == tags(runs["doccano"]) == tags(runs["label-studio"]) == tags(runs["spans-jsonl"])
    assert any(t != "O" for doc in tags(runs["conll"]) for t in doc)
    (tmp_path / "bare.jsonl").write_bytes(bare)
    ds = client.post("/api/v1/datasets", headers=auth(key), json={"name": "texts only"}).json()["id"]
    r = upload(client, key, ds, tmp_path / "bare.jsonl")
    assert r.status_code == 422 and r.headers["content-type"].startswith(PROBLEM)
    assert "the file holds no labels" in r.json()["detail"]


def test_refusals_are_problems(client, keys, settings, monkeypatch):
    """Every refusal is a 4xx application/problem+json with a message that says what to do, and nothing is queued."""
    key = keys["a"]
    docs = (SAMPLE / "expert.jsonl").read_bytes()
    mv = tagger_job(client, key, method="mv")
    r = post_documents(client, key, mv, "d.jsonl", docs)
    assert r.status_code == 409 and r.headers["content-type"].startswith(PROBLEM)
    assert "mv, whose model labels only what annotators labelled" in r.json()["detail"]
    assert "hmm-crowd-tagger" in r.json()["detail"]
    job = tagger_job(client, key)
    for data, fmt, status, message in (
            (b"", "spans-jsonl", 422, "no document with tokens to label"),
            (b"\n\n", "conll", 422, "empty.jsonl: no sentences found"),
            (b"{not json\n", "spans-jsonl", 422, "empty.jsonl"),
            (b"\x00\x01\x02binary", "spans-jsonl", 422, "empty.jsonl"),
    ):
        r = post_documents(client, key, job, "empty.jsonl", data, format=fmt)
        assert r.status_code == status and r.headers["content-type"].startswith(PROBLEM), (data, r.text)
        assert message in r.json()["detail"], (data, r.json())
    r = post_documents(client, key, job, "d.jsonl", docs, format="no-such-format")
    assert r.status_code == 422 and r.headers["content-type"].startswith(PROBLEM)
    r = post_documents(client, key, job, "d.jsonl", docs, role="expert")
    assert r.status_code == 422 and r.headers["content-type"].startswith(PROBLEM)
    assert client.get(f"/api/v1/jobs/{job}/predictions", headers=auth(key)).json()["count"] == 0
    r = post_documents(client, keys["b"], job, "d.jsonl", docs)  # another project's job
    assert r.status_code == 404 and r.headers["content-type"].startswith(PROBLEM)
    r = client.get("/api/v1/predictions/" + "0" * 32, headers=auth(key))
    assert r.status_code == 404 and r.headers["content-type"].startswith(PROBLEM)


def test_tenant_limits(client, keys, monkeypatch):
    """Over the document bounds: 422 naming the setting; over the upload size: 413; over the project's active
    limit: 429 with Retry-After (each read from its setting); labels of a pre-annotation not finished: 409."""
    from crowdqa.store.settings import get_settings

    key = keys["a"]
    job = tagger_job(client, key)
    docs = (SAMPLE / "expert.jsonl").read_bytes()
    monkeypatch.setenv("CROWDQA_MAX_DOCUMENT_TOKENS", "5")
    get_settings.cache_clear()
    r = post_documents(client, key, job, "d.jsonl", docs)
    assert r.status_code == 422 and r.headers["content-type"].startswith(PROBLEM)
    assert "CROWDQA_MAX_DOCUMENT_TOKENS" in r.json()["detail"]
    monkeypatch.delenv("CROWDQA_MAX_DOCUMENT_TOKENS")
    monkeypatch.setenv("CROWDQA_MAX_UPLOAD_BYTES", "1000")
    get_settings.cache_clear()
    r = post_documents(client, key, job, "d.jsonl", docs)
    assert r.status_code == 413 and r.headers["content-type"].startswith(PROBLEM)
    monkeypatch.delenv("CROWDQA_MAX_UPLOAD_BYTES")
    monkeypatch.setenv("CROWDQA_MAX_ACTIVE_JOBS", "1")
    settings = get_settings.cache_clear() or get_settings()
    queued = waiting_prediction(settings, job)
    r = post_documents(client, key, job, "d.jsonl", docs)
    assert r.status_code == 429 and r.headers["content-type"].startswith(PROBLEM) and "retry-after" in r.headers
    assert "CROWDQA_MAX_ACTIVE_JOBS" in r.json()["detail"]
    r = client.get(f"/api/v1/predictions/{queued}/labels", headers=auth(key))  # not finished yet
    assert r.status_code == 409 and r.headers["content-type"].startswith(PROBLEM) and "is queued" in r.json()["detail"]


def waiting_prediction(settings, job_id: str) -> str:
    """A queued pre-annotation row of ``job_id`` that no queue holds (so it stays queued); its id."""
    from sqlmodel import Session

    from crowdqa.store import crud
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import Job, Prediction

    with Session(get_engine(settings)) as s:
        job = s.get(Job, job_id)
        return crud.create_prediction(session=s, prediction=Prediction(
            project_id=job.project_id, job_id=job.id, method=job.method, filename="d.jsonl", format="spans-jsonl",
            size=1, documents_sha256="0" * 64)).id


def test_unfinished_prediction_and_formats_and_delete(client, keys, settings):
    """A job not finished yet is refused (409); labels in a format the job's labels do not have are 422, and the
    others are written; a re-run of the job leaves a finished pre-annotation's labels as they were; a deleted
    pre-annotation is gone (404)."""
    from sqlmodel import Session

    from crowdqa.store import crud
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import Dataset, Job, JobCreate

    key = keys["a"]
    job = tagger_job(client, key)
    with Session(get_engine(settings)) as s:  # a job row no queue holds: it stays queued
        dataset = s.get(Dataset, s.get(Job, job).dataset_id)
        waiting = crud.create_job(session=s, dataset=dataset, job_in=JobCreate(method="hmm-crowd-tagger")).id
    r = post_documents(client, key, waiting, "d.jsonl", (SAMPLE / "expert.jsonl").read_bytes())
    assert r.status_code == 409 and r.headers["content-type"].startswith(PROBLEM)
    assert f"job {waiting} is queued, not finished" in r.json()["detail"]
    r = post_documents(client, key, job, "d.jsonl", (SAMPLE / "expert.jsonl").read_bytes())
    body = wait_prediction(client, key, r.headers["location"])
    assert body["status"] == "finished"
    for fmt in ("categorical-csv", "token-scores"):  # another kind's; scores a prediction does not have
        r = client.get(f"/api/v1/predictions/{body['id']}/labels?format={fmt}", headers=auth(key))
        assert r.status_code == 422 and r.headers["content-type"].startswith(PROBLEM)
        assert "format must be one of spans-jsonl, conll, tokens-csv, tokens-jsonl, ebm-nlp for these labels" in \
            r.json()["detail"], r.json()
    for fmt in ("conll", "tokens-csv", "tokens-jsonl", "ebm-nlp"):
        r = client.get(f"/api/v1/predictions/{body['id']}/labels?format={fmt}", headers=auth(key))
        assert r.status_code == 200 and len(r.content) > 0, (fmt, r.text)
    # The labels keep their class names: a re-run of the job with another method changes nothing of them.
    before = client.get(f"/api/v1/predictions/{body['id']}/labels", headers=auth(key)).text
    r = client.post(f"/api/v1/jobs/{job}/rerun", headers=auth(key), json={"method": "mv"})
    assert r.status_code == 202 and wait_job(client, job, key)["status"] == "finished"
    assert client.get(f"/api/v1/predictions/{body['id']}/labels", headers=auth(key)).text == before != ""
    r = post_documents(client, key, job, "d.jsonl", (SAMPLE / "expert.jsonl").read_bytes())  # now an mv job
    assert r.status_code == 409 and "ran mv" in r.json()["detail"]
    assert client.delete(f"/api/v1/predictions/{body['id']}", headers=auth(key)).status_code == 204
    assert client.get(f"/api/v1/predictions/{body['id']}", headers=auth(key)).status_code == 404


def test_an_embedded_server_finishes_what_a_stopped_one_left(settings, keys):
    """The embedded queue lives in memory: at the next start a queued pre-annotation is queued again and labelled,
    and one left running fails as abandoned (what jobs do: jobs/embedded.py recover_jobs)."""
    from fastapi.testclient import TestClient
    from sqlmodel import Session

    from crowdqa.api.main import app
    from crowdqa.ingest import read_corpus
    from crowdqa.store import crud
    from crowdqa.store.artifacts import ArtifactStore
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import Job, JobStatus, Prediction

    key = keys["a"]
    with TestClient(app) as client:
        job = tagger_job(client, key)
    documents = ArtifactStore(settings.data_dir).put_corpus(
        read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl").corpus)
    with Session(get_engine(settings)) as s:
        row = s.get(Job, job)
        made = {state: crud.create_prediction(session=s, prediction=Prediction(
            project_id=row.project_id, job_id=job, method=row.method, filename="expert.jsonl", format="spans-jsonl",
            size=1, documents_sha256=documents.sha256, status=state, summary={"documents": 20})).id
            for state in (JobStatus.queued, JobStatus.running)}
    with TestClient(app) as client:
        queued = wait_prediction(client, key, f"/api/v1/predictions/{made[JobStatus.queued]}")
        assert queued["status"] == "finished", queued
        labels = client.get(f"/api/v1/predictions/{queued['id']}/labels", headers=auth(key))
        assert labels.status_code == 200 and labels.text.count("\n") > 0
        running = client.get(f"/api/v1/predictions/{made[JobStatus.running]}", headers=auth(key)).json()
        assert running["status"] == "failed" and running["error"].startswith("abandoned: the service stopped")
