"""Reconciling job rows with their workers and the queue (issue 15: a GET never writes)."""

from __future__ import annotations

import time
from datetime import timedelta

from crowdqa.jobs import reconcile
from crowdqa.jobs.queue import enqueue_job, get_queue
from crowdqa.store import crud
from crowdqa.store.db import open_session
from crowdqa.store.models import DatasetCreate, JobCreate, JobStatus, utcnow


def _job(session, *, name: str):
    project = crud.create_project(session=session, name=name)
    dataset = crud.create_dataset(session=session, project_id=project.id, dataset_in=DatasetCreate(name="d"))
    dataset.corpus_sha256 = "a" * 64
    session.add(dataset)
    session.commit()
    return crud.create_job(session=session, dataset=dataset, job_in=JobCreate(method="mv"))


def test_observe_reads_and_reconcile_writes(settings):
    """A silent running job and a queued job Redis lost read as failed (abandoned, lost) while their rows stay
    as they were; one reconcile pass then fails both rows, and a second pass finds nothing."""
    queue = get_queue(settings)
    with open_session(settings) as session:
        silent = _job(session, name="p1")
        crud.claim_job(session=session, job_id=silent.id, worker_name="w")
        crud.update_job(session=session, job_id=silent.id, heartbeat_at=utcnow() - timedelta(seconds=3600))
        lost = _job(session, name="p2")
        crud.update_job(session=session, job_id=lost.id, enqueued_at=utcnow() - timedelta(seconds=3600))
        kept = _job(session, name="p3")  # queued and held by Redis: nothing to say
        enqueue_job(queue, kept.id, settings=settings)
        crud.update_job(session=session, job_id=kept.id, enqueued_at=utcnow() - timedelta(seconds=3600))
        for job in (silent, lost, kept):
            session.refresh(job)

        seen = {job.id: reconcile.observe(job, settings=settings, queue=queue) for job in (silent, lost, kept)}
        assert seen[silent.id].status == JobStatus.failed and seen[silent.id].error.startswith("abandoned")
        assert seen[lost.id].status == JobStatus.failed and seen[lost.id].error == reconcile.LOST
        assert seen[kept.id].status == JobStatus.queued
        session.expire_all()
        assert [crud.load_job(session=session, job_id=j.id).status for j in (silent, lost, kept)] == [
            JobStatus.running, JobStatus.queued, JobStatus.queued]

        assert reconcile.reconcile_jobs(session=session, settings=settings, queue=queue) == (1, 1)
        session.expire_all()
        rows = {j.id: crud.load_job(session=session, job_id=j.id) for j in (silent, lost, kept)}
        assert rows[silent.id].status == JobStatus.failed and rows[silent.id].error == seen[silent.id].error
        assert rows[lost.id].status == JobStatus.failed and rows[lost.id].error == reconcile.LOST
        assert rows[kept.id].status == JobStatus.queued
        assert reconcile.reconcile_jobs(session=session, settings=settings, queue=queue) == (0, 0)


def test_reconciler_thread_fails_a_lost_job(settings):
    """The API's background reconciler corrects the row on its own, without anyone reading the job."""
    queue = get_queue(settings)
    with open_session(settings) as session:
        job_id = _job(session, name="p").id
        crud.update_job(session=session, job_id=job_id, enqueued_at=utcnow() - timedelta(seconds=3600))
    reconciler = reconcile.Reconciler(settings, interval=0.05).start()
    try:
        deadline = time.monotonic() + 10
        with open_session(settings) as session:
            while time.monotonic() < deadline:
                session.expire_all()
                if crud.load_job(session=session, job_id=job_id).status == JobStatus.failed:
                    break
                time.sleep(0.05)
            assert crud.load_job(session=session, job_id=job_id).error == reconcile.LOST
    finally:
        reconciler.stop()
    assert queue.count == 0


def test_one_gone_silent_rule_for_the_verdict_and_the_rows(settings):
    """crud.gone_silent, the reconciler's verdict and the rows reconcile_jobs fails agree job by job.

    Oracle: the heartbeat ages, chosen by hand on both sides of ``stale_after`` (a job without a heartbeat, and
    a queued job with an old one, are not judged); a pass with nothing silent issues no UPDATE.
    """
    from sqlalchemy import event

    from crowdqa.store.db import get_engine

    queue = get_queue(settings)
    stale = settings.stale_after
    ages = {"fresh": 1.0, "just_alive": stale - 5, "just_silent": stale + 5, "long_silent": 3600.0, "no_beat": None}
    with open_session(settings) as session:
        jobs = {}
        for name, age in ages.items():
            job = _job(session, name=name)
            crud.claim_job(session=session, job_id=job.id, worker_name="w")
            crud.update_job(session=session, job_id=job.id,
                            heartbeat_at=None if age is None else utcnow() - timedelta(seconds=age))
            jobs[name] = job
        queued = _job(session, name="queued")  # held by Redis; an old heartbeat does not make it silent
        enqueue_job(queue, queued.id, settings=settings)
        crud.update_job(session=session, job_id=queued.id, heartbeat_at=utcnow() - timedelta(seconds=3600))
        jobs["queued"] = queued
        for job in jobs.values():
            session.refresh(job)
        silent = {n for n, j in jobs.items() if crud.gone_silent(j, stale_after=stale)}
        assert silent == {"just_silent", "long_silent"}
        judged = {n for n, j in jobs.items() if (reconcile.verdict(j, settings=settings, queue=queue) or "")
                  .startswith("abandoned")}
        assert judged == silent
        assert reconcile.reconcile_jobs(session=session, settings=settings, queue=queue) == (2, 0)
        session.expire_all()
        failed = {n for n, j in jobs.items() if crud.load_job(session=session, job_id=j.id).status == JobStatus.failed}
        assert failed == silent

        updates = []

        def count(conn, cursor, statement, *args):
            if statement.lstrip().upper().startswith("UPDATE"):
                updates.append(statement)

        engine = get_engine(settings)
        event.listen(engine, "before_cursor_execute", count)
        try:
            assert crud.mark_stale_jobs(session=session, stale_after=stale) == 0
        finally:
            event.remove(engine, "before_cursor_execute", count)
        assert updates == []
