"""Determinism: the same uploads and parameters give byte-identical results across runs and databases.

Compared byte for byte: the labels in every download format, the worker score listing, the stored
label/posterior/confusion artifacts (by sha256) and the report (its one wall-clock field, the fit's
``seconds``, blanked). Oracle: the labels the pipeline computes in-process, written by ``write_labels``.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session

from crowdqa.ingest import read_corpus
from crowdqa.ingest.merge import merge_corpora
from crowdqa.ingest.writers import LabelScores, write_labels
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.store.db import get_engine
from crowdqa.store.models import Job
from crowdqa.store.settings import get_settings
from tests.api.conftest import SAMPLE, auth, sample_dataset, wait_job
from tests.utils.factories import project_with_key

JOBS = [{"method": "mv"}, {"method": "ds", "params": {"max_iter": 40}},
        {"method": "hmm-crowd", "params": {"max_iter": 5}}, {"method": "ds", "use_experts": True}]
# Wall-clock seconds: the fit's and every stage's (fit.stages, issue 14).
_SECONDS = re.compile(rb'"(?:seconds|reading|fitting|cross_fitting|scoring|writing)":\s*[-+0-9.eE]+')


def _results(tmp_path, monkeypatch, name: str, database_url: str | None = None) -> list[dict]:
    """Run every job of JOBS on a fresh service (own data dir, and database); return what a client reads."""
    monkeypatch.setenv("CROWDQA_DATA_DIR", str(tmp_path / name))
    if database_url:
        monkeypatch.setenv("CROWDQA_DATABASE_URL", database_url)
    else:
        monkeypatch.delenv("CROWDQA_DATABASE_URL", raising=False)
    get_settings.cache_clear()
    settings = get_settings()
    from crowdqa.api.main import app

    with Session(get_engine(settings)) as s:
        _, key = project_with_key(s, f"det-{name}")
    out = []
    with TestClient(app) as client:
        ds = sample_dataset(client, key)
        for body in JOBS:
            job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json=body).json()["id"]
            assert wait_job(client, job, key, timeout=120)["status"] == "finished"
            get = lambda url: client.get(url, headers=auth(key)).content  # noqa: E731
            with Session(get_engine(settings)) as s:
                artifacts = {k: v["sha256"] for k, v in s.get(Job, job).artifacts.items()}
            out.append({
                "labels": {f: get(f"/api/v1/jobs/{job}/labels?format={f}") for f in ("spans-jsonl", "conll")},
                "report": _SECONDS.sub(b'"seconds":0', get(f"/api/v1/jobs/{job}/report")),
                "workers": get(f"/api/v1/jobs/{job}/workers?sort=f1&order=desc&limit=1000"),
                "artifacts": artifacts,
            })
    if database_url:
        from sqlmodel import SQLModel

        from crowdqa.store.db import _engine_for

        SQLModel.metadata.drop_all(get_engine(settings))
        get_engine(settings).dispose()
        _engine_for.cache_clear()
    get_settings.cache_clear()
    return out


def _oracle_labels(tmp_path, body: dict) -> bytes:
    corpus = merge_corpora([read_corpus(SAMPLE / "crowd.jsonl", format="spans-jsonl").corpus,
                            read_corpus(SAMPLE / "expert.jsonl", format="spans-jsonl", role="expert").corpus])
    direct = run_pipeline(corpus, method=body["method"], params=body.get("params"),
                          use_experts=body.get("use_experts", False))
    path = tmp_path / "oracle.jsonl"
    c = direct.confidence
    write_labels(direct.labels, corpus, path, format="spans-jsonl",
                 scores=LabelScores(token=c.token, span=c.span, proba=c.proba))
    return path.read_bytes()


def test_two_runs_are_byte_identical(tmp_path, monkeypatch, tally):
    """Two services from scratch on SQLite: every byte a client reads is the same, and equals the oracle."""
    first = _results(tmp_path, monkeypatch, "one")
    second = _results(tmp_path, monkeypatch, "two")
    assert first == second
    for body, got in zip(JOBS, first, strict=True):
        assert got["labels"]["spans-jsonl"] == _oracle_labels(tmp_path, body), body
    tally(len(JOBS) * 2)


@pytest.mark.postgres
def test_sqlite_and_postgres_are_byte_identical(tmp_path, monkeypatch, postgres_url, tally):
    """The same jobs on SQLite and on a real PostgreSQL: byte-identical labels, reports and worker listings."""
    lite = _results(tmp_path, monkeypatch, "lite")
    pg = _results(tmp_path, monkeypatch, "pg", database_url=postgres_url)
    for body, a, b in zip(JOBS, lite, pg, strict=True):
        assert a == b, body
    tally(len(JOBS) * 2)
