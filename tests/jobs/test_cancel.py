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
