"""One "is the job finished" check (crowdqa.jobs.finished) behind every endpoint that needs a finished job.

Oracle: the message :func:`crowdqa.jobs.finished.check_finished` builds for the job row, compared word for word
with the ``detail`` of each endpoint's problem (report, workers, labels, model, routing, review, a new batch
from the job), and the modules a fresh interpreter has loaded after importing the review use case.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlmodel import Session

from crowdqa.jobs.errors import JobNotFinishedError
from crowdqa.jobs.finished import check_finished
from crowdqa.store import crud
from crowdqa.store.db import get_engine
from crowdqa.store.models import Job, JobCreate, JobStatus
from tests.api.conftest import auth, sample_dataset


def test_check_finished_names_the_status_and_a_failed_jobs_reason():
    check_finished(Job(id="j1", status=JobStatus.finished))
    with pytest.raises(JobNotFinishedError, match=r"^job j2 is running, not finished$"):
        check_finished(Job(id="j2", status=JobStatus.running))
    with pytest.raises(JobNotFinishedError, match=r"^job j3 is failed, not finished: out of memory$"):
        check_finished(Job(id="j3", status=JobStatus.failed, error="out of memory"))


@pytest.mark.parametrize("status", ["queued", "failed"])
def test_every_door_refuses_an_unfinished_job_with_the_same_409(client, keys, settings, status):
    key = keys["a"]
    ds = sample_dataset(client, key, experts=False)
    with Session(get_engine(settings)) as s:  # a job that never ran, or failed
        dataset = crud.get_dataset(session=s, project_id=crud.authenticate(session=s, key=key).id, dataset_id=ds)
        job = crud.create_job(session=s, dataset=dataset, job_in=JobCreate(method="ds"))
        if status == "failed":
            crud.update_job(session=s, job_id=job.id, status=JobStatus.failed, error="the worker died")
        s.refresh(job)
        with pytest.raises(JobNotFinishedError) as expected:
            check_finished(job)
    message = str(expected.value)
    endpoints = {
        "report": client.get(f"/api/v1/jobs/{job.id}/report", headers=auth(key)),
        "workers": client.get(f"/api/v1/jobs/{job.id}/workers", headers=auth(key)),
        "labels": client.get(f"/api/v1/jobs/{job.id}/labels", headers=auth(key)),
        "model": client.get(f"/api/v1/jobs/{job.id}/model", headers=auth(key)),
        "routing": client.get(f"/api/v1/jobs/{job.id}/routing?budget=2", headers=auth(key)),
        "review": client.post(f"/api/v1/jobs/{job.id}/review", headers=auth(key), json={"reject_below": 0.2}),
        "new batch": client.post(f"/api/v1/datasets/{ds}/jobs", headers=auth(key),
                                 json={"method": "ds", "from_job": job.id}),
    }
    for endpoint, r in endpoints.items():
        assert r.status_code == 409, (endpoint, r.text)
        assert r.headers["content-type"].startswith("application/problem+json"), endpoint
        prefix = "from_job: " if endpoint == "new batch" else ""
        assert r.json()["detail"] == prefix + message, endpoint


def test_the_review_use_case_loads_no_queue():
    """The use cases commands import (``crowdqa review``: jobs.review; ``crowdqa route``: jobs.routing, which asks
    the finished check, as jobs.batches does) load no queue: the finished check must not bring rq or redis."""
    code = ("import sys, crowdqa.jobs.review, crowdqa.jobs.batches, crowdqa.jobs.routing\n"
            "print(' '.join(sys.modules))")
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert "crowdqa.jobs.finished" in loaded
    assert not {"rq", "redis", "fakeredis", "crowdqa.jobs.queue", "crowdqa.jobs.service"} & loaded
