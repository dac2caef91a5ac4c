"""Issue 35 item 4: fair scheduling in the embedded worker. A job of max_iter 1e9 held the single embedded worker
and another project's job stayed queued until it was deleted; now one project's long jobs hold one thread at most
(CROWDQA_EMBEDDED_WORKERS, default 2) and another project's job runs beside them."""

from __future__ import annotations

import time

from tests.api.conftest import auth, sample_dataset, wait_job

#: Minutes of work within the parameters' bounds (100 MACE restarts of 10,000 iterations; tol None runs them all).
LONG_JOB = {"method": "mace", "params": {"n_restarts": 100, "max_iter": 10000}}


def test_another_projects_job_runs_while_a_long_job_holds_the_worker(client, keys):
    a, b = keys["a"], keys["b"]
    ds_a, ds_b = sample_dataset(client, a, experts=False), sample_dataset(client, b, experts=False)
    long_jobs = [client.post(f"/api/v1/datasets/{ds_a}/jobs", headers=auth(a), json=LONG_JOB).json()["id"]
                 for _ in range(2)]
    first = wait_job(client, long_jobs[0], a, timeout=60, until=("running", "finished", "failed"))
    assert first["status"] == "running", first
    t0 = time.monotonic()
    small = client.post(f"/api/v1/datasets/{ds_b}/jobs", headers=auth(b), json={"method": "mv"}).json()["id"]
    assert wait_job(client, small, b, timeout=90)["status"] == "finished"
    took = time.monotonic() - t0
    states = [client.get(f"/api/v1/jobs/{j}", headers=auth(a)).json()["status"] for j in long_jobs]
    # The first long job still runs; project a's second one waited (it may not take the other thread).
    assert states == ["running", "queued"], (states, took)
    for job_id in long_jobs:
        assert client.delete(f"/api/v1/jobs/{job_id}", headers=auth(a)).status_code == 204


def test_projects_take_turns_and_a_busy_project_waits(settings):
    """FairShare's order: queued a1 a2 a3 a4 b1 b2 (a's batch first) run as a1 b1 a2 b2 a3 a4, and while a job of
    a project runs, that project's next job is not taken even by an idle thread."""
    from sqlmodel import Session

    from crowdqa.jobs.embedded import FairShare
    from crowdqa.jobs.queue import enqueue_job, get_queue
    from crowdqa.store import crud
    from crowdqa.store.db import get_engine
    from crowdqa.store.models import DatasetCreate, JobCreate
    from tests.utils.factories import project_with_key

    names = {}
    with Session(get_engine(settings)) as s:
        order = []
        for project, n in (("a", 4), ("b", 2)):
            project_id, _ = project_with_key(s, project)
            ds = crud.create_dataset(session=s, project_id=project_id, dataset_in=DatasetCreate(name=project))
            ds.corpus_sha256 = "0" * 64
            for k in range(n):
                job = crud.create_job(session=s, dataset=ds, job_in=JobCreate(method="mv"))
                names[job.id] = f"{project}{k + 1}"
                order.append(job.id)
    queue = get_queue(settings)
    for job_id in order:
        enqueue_job(queue, job_id, settings=settings)
    share = FairShare(settings)
    first, _ = share.take(queue)
    second, _ = share.take(queue)
    assert (names[first.id], names[second.id]) == ("a1", "b1")
    assert len(share.running_projects()) == 2
    assert share.take(queue) is None  # a2 and b2 wait: their projects have a job running
    share.done(first.id)
    share.done(second.id)
    taken = []
    while (picked := share.take(queue)) is not None:
        taken.append(names[picked[0].id])
        share.done(picked[0].id)
    assert taken == ["a2", "b2", "a3", "a4"]
