"""The rq plumbing on a real redis-server: JSON only, ids, timeouts, retries, abandoned jobs."""

from __future__ import annotations

import json
import zlib
from datetime import timedelta

import pytest
from rq import SimpleWorker
from rq.exceptions import AbandonedJobError
from rq.job import Job as RqJob
from rq.serializers import JSONSerializer
from sqlmodel import Session

from crowdqa.jobs import service, tasks
from crowdqa.jobs.queue import get_queue
from crowdqa.store import crud
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.db import get_engine
from crowdqa.store.models import DatasetCreate, Job, JobCreate, JobStatus, utcnow
from tests.utils.factories import synthetic_corpus

pytestmark = pytest.mark.redis


def _dataset(settings):
    store = ArtifactStore(settings.data_dir)
    art = store.put_corpus(synthetic_corpus(seed=5))
    with Session(get_engine(settings)) as s:
        p = crud.get_or_create_project(session=s, name="p")
        ds = crud.create_dataset(session=s, project_id=p.id, dataset_in=DatasetCreate(name="d"))
        ds.corpus_sha256 = art.sha256
        ds.summary = {"annotators": {"crowd": 6, "expert": 1}}
        s.add(ds)
        s.commit()
        s.refresh(ds)
        return ds


def _start(settings, method="ds", params=None):
    ds = _dataset(settings)
    with Session(get_engine(settings)) as s:
        job = service.start_job(session=s, settings=settings, queue=get_queue(settings),
                                dataset=s.merge(ds), job_in=JobCreate(method=method, params=params or {}))
        return job.id


def _work(settings):
    queue = get_queue(settings)
    SimpleWorker([queue], connection=queue.connection, serializer=JSONSerializer).work(burst=True)


def _row(settings, job_id) -> Job:
    with Session(get_engine(settings)) as s:
        return s.get(Job, job_id)


def test_redis_holds_only_json_with_the_database_id(settings):
    """The rq job id is the database id, its payload is JSON (no pickle), with timeout, retry and callback set."""
    job_id = _start(settings)
    queue = get_queue(settings)
    assert queue.job_ids == [job_id]
    raw = queue.connection.hget(f"rq:job:{job_id}", "data")
    payload = json.loads(zlib.decompress(raw))
    assert payload[0] == "crowdqa.jobs.tasks.run_job" and payload[2] == [job_id]
    assert not raw.startswith(b"\x80")  # a pickle stream starts with the PROTO opcode
    rq_job = RqJob.fetch(job_id, connection=queue.connection, serializer=JSONSerializer)
    assert rq_job.timeout == settings.job_timeout
    assert rq_job.retries_left == settings.job_retries
    assert rq_job.failure_callback is tasks.on_job_failure
    _work(settings)
    row = _row(settings, job_id)
    assert row.status == JobStatus.finished and row.attempts == 1
    assert rq_job.get_status(refresh=True) == "finished"
    assert not any(key.startswith(b"crowdqa") for key in queue.connection.keys())  # results live in the database


def test_unexpected_error_is_retried_then_succeeds(settings, monkeypatch):
    """An unexpected error (here: the disk refusing the first write) re-queues the job; the retry finishes it."""
    calls = {"n": 0}
    original = tasks._save_results

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(28, "No space left on device")
        return original(*args, **kwargs)

    monkeypatch.setattr(tasks, "_save_results", flaky)
    job_id = _start(settings)
    _work(settings)
    row = _row(settings, job_id)
    assert calls["n"] == 2
    assert row.status == JobStatus.finished and row.attempts == 2 and row.error is None


def test_unexpected_error_without_retries_fails_with_reason(settings, monkeypatch):
    """With the retries used up the job ends failed, naming the error."""
    monkeypatch.setattr(tasks, "_save_results", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "disk full")))
    job_id = _start(settings)
    _work(settings)
    row = _row(settings, job_id)
    assert row.status == JobStatus.failed and "disk full" in row.error and row.attempts == 1 + settings.job_retries


def test_input_errors_fail_at_once(settings, monkeypatch):
    """An input error at run time fails the job on the first attempt (no retry). (Parameters are checked at
    the request now, so the error is raised by the fit here.)"""
    job_id = _start(settings)

    def refuse(*a, **k):
        raise ValueError("the aggregator refused the corpus")

    monkeypatch.setattr("crowdqa.aggregation.dawid_skene.DawidSkene.fit", refuse)
    _work(settings)
    row = _row(settings, job_id)
    assert row.status == JobStatus.failed and row.attempts == 1 and row.error.startswith("ValueError")


def test_abandoned_callback_fails_a_running_job(settings):
    """rq's abandoned-job cleanup calls on_job_failure: the running job fails with the reason, once."""
    job_id = _start(settings)
    with Session(get_engine(settings)) as s:
        crud.claim_job(session=s, job_id=job_id, worker_name="gone")
    rq_job = RqJob.fetch(job_id, connection=get_queue(settings).connection, serializer=JSONSerializer)
    rq_job.retries_left = 0
    # A run that is still heartbeating (a re-run of the same id) is left alone.
    tasks.on_job_failure(rq_job, rq_job.connection, AbandonedJobError, AbandonedJobError(), None)
    assert _row(settings, job_id).status == JobStatus.running
    with Session(get_engine(settings)) as s:
        crud.update_job(session=s, job_id=job_id, heartbeat_at=utcnow() - timedelta(seconds=60))
    tasks.on_job_failure(rq_job, rq_job.connection, AbandonedJobError, AbandonedJobError(), None)
    row = _row(settings, job_id)
    assert row.status == JobStatus.failed and "worker running the job died" in row.error
    # A finished job is never overwritten by a late callback.
    with Session(get_engine(settings)) as s:
        crud.update_job(session=s, job_id=job_id, status=JobStatus.finished)
    tasks.on_job_failure(rq_job, rq_job.connection, AbandonedJobError, AbandonedJobError(), None)
    assert _row(settings, job_id).status == JobStatus.finished


def test_a_job_runs_once(settings):
    """A job enqueued twice by mistake runs once: the second run finds it no longer queued."""
    job_id = _start(settings, method="mv")
    assert tasks.run_job(job_id) == "finished"
    assert tasks.run_job(job_id) == "skipped"
    assert _row(settings, job_id).attempts == 1
