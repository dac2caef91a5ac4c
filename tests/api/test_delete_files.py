"""DELETE removes the stored files only the deleted rows used; files other rows share stay readable."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import Session

from crowdqa.store.db import get_engine
from crowdqa.store.models import Job
from tests.api.conftest import auth, sample_dataset, wait_job

KINDS = ("uploads", "docs", "corpora", "results")


def _files(data_dir: Path) -> set[str]:
    return {p.relative_to(data_dir).as_posix() for k in KINDS for p in (data_dir / k).glob("??/*") if p.is_file()}


def _job(client, key: str, ds: str) -> str:
    r = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "mv"})
    assert r.status_code == 202, r.text
    assert wait_job(client, r.json()["id"], key)["status"] == "finished"
    return r.json()["id"]


@pytest.fixture
def no_grace(monkeypatch, settings):
    from crowdqa.store.settings import get_settings

    monkeypatch.setenv("CROWDQA_GC_GRACE", "0")
    get_settings.cache_clear()
    return get_settings()


def test_delete_job_then_datasets_removes_exactly_their_files(no_grace, client, keys):
    """Oracle: the file set before and after each deletion, from the rows' own paths."""
    key, data = keys["a"], no_grace.data_dir
    crowd_only = sample_dataset(client, key, experts=False)  # shares the crowd file's bytes with `full`
    full = sample_dataset(client, key)
    kept_job, full_job = _job(client, key, crowd_only), _job(client, key, full)
    before = _files(data)
    with Session(get_engine(no_grace)) as session:
        result_files, shared = ({a["path"] for a in session.get(Job, j).artifacts.values()}
                                for j in (full_job, kept_job))

    assert client.delete(f"/api/v1/jobs/{full_job}", headers=auth(key)).status_code == 204
    after_job = _files(data)
    # The two MV fits see the same crowd labels: their labels and posteriors are one file each, kept.
    assert before - after_job == result_files - shared and len(result_files - shared) >= 1
    assert client.get(f"/api/v1/jobs/{kept_job}/labels", headers=auth(key)).status_code == 200

    assert client.delete(f"/api/v1/datasets/{full}", headers=auth(key)).status_code == 204
    after_full = _files(data)
    gone = after_job - after_full
    # The expert file and the merged corpus of `full` go; the shared crowd bytes and their corpus stay.
    assert any(p.startswith("uploads/") for p in gone) and any(p.startswith("corpora/") for p in gone)
    assert any(p.startswith("uploads/") for p in after_full) and any(p.startswith("corpora/") for p in after_full)
    assert client.get(f"/api/v1/jobs/{kept_job}/labels", headers=auth(key)).status_code == 200
    assert client.get(f"/api/v1/jobs/{kept_job}/report", headers=auth(key)).status_code == 200

    assert client.delete(f"/api/v1/datasets/{crowd_only}", headers=auth(key)).status_code == 204
    assert _files(data) == set()


def test_young_files_wait_for_the_grace_period(client, keys, settings):
    """With the default grace, files written moments ago stay (an identical upload may be in flight)."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    before = _files(settings.data_dir)
    assert client.delete(f"/api/v1/datasets/{ds}", headers=auth(key)).status_code == 204
    assert _files(settings.data_dir) == before and settings.gc_grace == 900


def test_a_refused_upload_leaves_no_file_it_made(client, keys, settings):
    """A file upload refused when it merges (labels of another kind: 409) removes the raw file and the corpus it
    stored; refused with the bytes another dataset keeps, it leaves that dataset's files alone."""
    key, data = keys["a"], Path(settings.data_dir)
    made = [client.post("/api/v1/datasets", headers=auth(key), json={"name": n}).json()["id"] for n in "ab"]

    def upload(ds: str, rows: str):
        return client.post(f"/api/v1/datasets/{ds}/uploads", headers=auth(key), data={"format": "categorical"},
                           files={"file": ("f.csv", ("item,annotator,label\n" + rows).encode(), "text/csv")})

    assert upload(made[0], "1,w1,pos\n2,w1,neg\n").status_code == 201
    kept = _files(data)
    r = upload(made[0], "1,w2,yes\n2,w2,no\n")
    assert r.status_code == 409, r.text
    assert _files(data) == kept
    assert upload(made[1], "1,w2,yes\n2,w2,no\n").status_code == 201
    kept = _files(data)
    assert upload(made[0], "1,w2,yes\n2,w2,no\n").status_code == 409
    assert _files(data) == kept
    assert client.get(f"/api/v1/datasets/{made[1]}", headers=auth(key)).json()["summary"]["documents"] == 2
