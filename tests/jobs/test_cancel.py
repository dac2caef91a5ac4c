"""Tests for crowdqa.jobs.cancel: the flags a running job's checkpoint turns into JobCancelled.

The API tests delete running jobs and stop the server with jobs in flight; here the module's contract on its own,
each rule once: a delete stops the job (not to run again), a shutdown stops only the jobs running at that moment
(and sends them back to the queue), and leaving the ``running`` block forgets every flag of the job. Job ids are
fresh per test: the flags are the process's.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from crowdqa.jobs import cancel
from crowdqa.jobs.errors import JobCancelled


def _job() -> str:
    return f"test-cancel-{uuid.uuid4().hex}"


def test_a_job_nobody_stopped_passes_its_checkpoints():
    job = _job()
    with cancel.running(job):
        cancel.checkpoint(job)
        cancel.checkpoint(job)
    cancel.checkpoint(job)


def test_a_deleted_job_stops_at_its_next_checkpoint_and_is_not_requeued():
    job, other = _job(), _job()
    with cancel.running(job), cancel.running(other):
        cancel.request_cancel(job)
        with pytest.raises(JobCancelled, match="deleted while it ran") as caught:
            cancel.checkpoint(job)
        assert caught.value.requeue is False
        cancel.checkpoint(other)  # only the deleted job
    cancel.checkpoint(job)  # the block's end forgot the flag


def test_a_shutdown_requeues_the_jobs_running_then_and_no_later_one():
    first, second, later = _job(), _job(), _job()
    with cancel.running(first), cancel.running(second):
        assert {first, second} <= cancel.running_here()
        cancel.request_shutdown()
        for job in (first, second):
            with pytest.raises(JobCancelled, match="service stopped") as caught:
                cancel.checkpoint(job)
            assert caught.value.requeue is True
        with cancel.running(later):
            cancel.checkpoint(later)  # started after the shutdown was asked for
    assert not {first, second, later} & cancel.running_here()


def test_a_delete_wins_over_a_shutdown():
    job = _job()
    with cancel.running(job):
        cancel.request_shutdown()
        cancel.request_cancel(job)
        with pytest.raises(JobCancelled) as caught:
            cancel.checkpoint(job)
        assert caught.value.requeue is False  # deleted: running it again would bring back a deleted job


def test_the_flag_reaches_a_job_running_in_another_thread():
    """The embedded worker runs jobs in threads of the serving process; the request comes from another thread."""
    job = _job()
    started, asked, outcome = threading.Event(), threading.Event(), []

    def run() -> None:
        with cancel.running(job):
            started.set()
            asked.wait(timeout=30)
            try:
                cancel.checkpoint(job)
                outcome.append("passed")
            except JobCancelled as exc:
                outcome.append(str(exc))

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(timeout=30)
    assert job in cancel.running_here()
    cancel.request_cancel(job)
    asked.set()
    thread.join(timeout=30)
    assert outcome == ["deleted while it ran"] and job not in cancel.running_here()


def test_a_cancel_for_a_job_not_running_here_keeps_nothing():
    """A job deleted before it ran (or running in another process) leaves no flag behind in this process: the
    flags are read from the module's set itself, the one place a leak would show."""
    job = _job()
    cancel.request_cancel(job)
    assert job not in cancel._cancelled
    with cancel.running(job):
        cancel.checkpoint(job)  # a job of that id starting later is not stopped by a stale flag


@pytest.mark.redis
def test_a_job_deleted_while_the_worker_claims_it_leaves_no_flag(settings, monkeypatch):
    """The delete arrives while the worker claims the job and the claim finds it gone: ``run_job`` skips it, and
    the flag the delete raised is forgotten with it."""
    from crowdqa.jobs import tasks

    job = _job()

    def claim_of_a_deleted_job(**_):
        assert job in cancel.running_here()  # running here from before the claim: the delete is seen
        cancel.request_cancel(job)
        return None

    monkeypatch.setattr(tasks.crud, "claim_job", claim_of_a_deleted_job)
    assert tasks.run_job(job) == "skipped"
    assert job not in cancel._cancelled and job not in cancel.running_here()


@pytest.mark.redis
def test_deleting_a_job_whose_row_says_running_elsewhere_keeps_no_flag(settings):
    """Through the service: a job row left running by a worker of another process is deleted from this one; the
    stop request sent to it leaves no id in this process."""
    from sqlmodel import Session

    from crowdqa.jobs import service
    from crowdqa.jobs.queue import get_queue
    from crowdqa.store import crud
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import JobStatus
    from tests.jobs.test_queue import _start

    job_id = _start(settings, method="mv")
    with Session(get_engine(settings)) as s:
        crud.update_job(session=s, job_id=job_id, status=JobStatus.running)
        job = crud.load_job(session=s, job_id=job_id)
        service.delete_job(session=s, settings=settings, queue=get_queue(settings), job=job)
    assert job_id not in cancel._cancelled
