"""Hostile uploads through the API: 201 or a 4xx problem+json, never a 500; earlier results stay readable."""

from __future__ import annotations

import pytest

from crowdqa.store.settings import get_settings
from tests.api.conftest import auth, sample_dataset, wait_job
from tests.reliability.conftest import time_bound
from tests.reliability.hostile import TEXT, cases, zip_bytes

DOCS_ZIP = zip_bytes({"d1.txt": TEXT.encode()})


@pytest.fixture(autouse=True)
def _no_project_limits(monkeypatch):
    """Every hostile case is an upload of one project, by the hundred: above the per-project limits (tested in
    tests/api/test_quotas.py), which would answer 429 before the readers under test. Set before ``settings``."""
    monkeypatch.setenv("CROWDQA_MAX_UPLOADS_PER_HOUR", "100000")
    monkeypatch.setenv("CROWDQA_MAX_ACTIVE_JOBS", "100000")


def _snapshot(client, key: str, ds: str, job: str) -> dict:
    """What a user reads back of a dataset and its finished job (bytes, so any change shows)."""
    get = lambda url: client.get(url, headers=auth(key))  # noqa: E731
    uploads = get(f"/api/v1/datasets/{ds}/uploads").json()["data"]
    return {
        "uploads": [(u["id"], u["sha256"], u["summary"]) for u in uploads[:2]],
        "job": {k: v for k, v in get(f"/api/v1/jobs/{job}").json().items() if k != "progress"},
        "report": get(f"/api/v1/jobs/{job}/report").content,
        "workers": get(f"/api/v1/jobs/{job}/workers?sort=f1").content,
        "labels": get(f"/api/v1/jobs/{job}/labels?format=spans-jsonl").content,
        "conll": get(f"/api/v1/jobs/{job}/labels?format=conll").content,
    }


@pytest.fixture
def finished(client, keys):
    """Project A's sample dataset with a finished DS job."""
    key = keys["a"]
    ds = sample_dataset(client, key)
    job = client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key), json={"method": "ds"}).json()["id"]
    assert wait_job(client, job, key)["status"] == "finished"
    return key, ds, job


def test_every_hostile_case_through_the_api(client, finished, tally):
    """Each catalogue case uploaded to a fresh dataset and to the dataset of a finished job: 201, 413 or 422
    problem+json, 409 for categorical answers into the span dataset (never 500, each within 30 s); afterwards the
    earlier uploads, report and labels read back byte for byte as before."""
    key, ds, job = finished
    before = _snapshot(client, key, ds, job)
    bad = []
    for case in cases():
        files = {"file": (f"upload{case.suffix}", case.payload())}
        if case.docs:
            files["docs"] = ("docs.zip", DOCS_ZIP)
        for target in ("fresh", ds):
            if target == "fresh":
                target = client.post("/api/v1/datasets", headers=auth(key), json={"name": case.name}).json()["id"]
            with time_bound(30, case.name):
                r = client.post(f"/api/v1/datasets/{target}/uploads", headers=auth(key), files=files,
                                data={"format": case.format, "role": "crowd", **case.options})
            tally()
            # 409: answers of another kind than the dataset's span labels (issue 13: one kind per dataset).
            if r.status_code not in (201, 413, 422) and not (r.status_code == 409 and target == ds):
                bad.append(f"{case.name}: {r.status_code} {r.text[:200]}")
            elif r.status_code != 201 and not r.headers["content-type"].startswith("application/problem+json"):
                bad.append(f"{case.name}: {r.status_code} without problem+json")
            elif case.expect == "error" and r.status_code == 201:
                bad.append(f"{case.name}: accepted, expected a refusal")
    assert not bad, "\n".join(bad)
    assert _snapshot(client, key, ds, job) == before


def test_chunked_upload_over_the_limit(client, finished, monkeypatch, tally):
    """A body streamed without Content-Length past CROWDQA_MAX_UPLOAD_BYTES: 413 problem+json, nothing stored,
    and the earlier results unchanged."""
    key, ds, job = finished
    before = _snapshot(client, key, ds, job)
    monkeypatch.setenv("CROWDQA_MAX_UPLOAD_BYTES", "100000")
    get_settings.cache_clear()
    boundary = "crowdqa-boundary"

    def body():
        yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"format\"\r\n\r\nspans-jsonl\r\n"
               f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.jsonl\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n").encode()
        for _ in range(100):
            yield b"x" * 10_000
        yield f"\r\n--{boundary}--\r\n".encode()

    r = client.post(f"/api/v1/datasets/{ds}/uploads", content=body(),
                    headers={**auth(key), "content-type": f"multipart/form-data; boundary={boundary}"})
    tally()
    assert r.status_code == 413, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    get_settings.cache_clear()
    monkeypatch.delenv("CROWDQA_MAX_UPLOAD_BYTES")
    assert client.get(f"/api/v1/datasets/{ds}", headers=auth(key)).json()["n_uploads"] == 2
    assert _snapshot(client, key, ds, job) == before
