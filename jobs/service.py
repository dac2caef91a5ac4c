"""A job's life: start one on a dataset, re-run it, delete it (stopping it if it runs).

A job row is committed, with its input checked, before it is enqueued, so the queue never holds a job the
database does not know; a job the queue refuses fails at once with the reason. The API routes and the
dashboard call these; a dataset's uploads are :mod:`crowdqa.jobs.uploads`'.
"""

from __future__ import annotations

import redis
from rq import Queue
from rq.command import send_stop_job_command
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.serializers import JSONSerializer
from sqlmodel import Session

from crowdqa.aggregation.memory import Shape
from crowdqa.aggregation.registry import check_memory
from crowdqa.jobs import cancel
from crowdqa.jobs.batches import check_start
from crowdqa.jobs.compare import check_methods, parse_methods, requested_use_experts
from crowdqa.jobs.errors import JobNotRunnableError, QueueUnavailableError
from crowdqa.jobs.params import EXAMPLE_METHOD, check_data_kind, data_kind, validate_params
from crowdqa.jobs.queue import cancel_job, enqueue_job
from crowdqa.jobs.quotas import check_job_quota
from crowdqa.jobs.reconcile import reconcile_job
from crowdqa.jobs.uploads import check_dataset_vocabularies, collect_garbage
from crowdqa.quality.references import RULES
from crowdqa.store import crud
from crowdqa.store.models import Dataset, Job, JobCreate, JobRerun, JobStatus, queued_progress, utcnow
from crowdqa.store.settings import Settings

__all__ = ["run_job_here", "start_job", "rerun_job", "delete_job", "stop_running_job"]


def _check_job_input(session: Session, dataset: Dataset, job_in: JobCreate) -> None:
    if not dataset.corpus_sha256:
        raise JobNotRunnableError(f"dataset {dataset.id} has no uploads yet: upload a crowd file first")
    roles = (dataset.summary or {}).get("annotators") or {}
    has_experts = not (isinstance(roles, dict) and roles.get("expert") in (0, None, {}, []))
    if job_in.expert_variants and str(job_in.method) != "compare":
        raise ValueError(f"expert_variants is for a comparison (method compare), not for method {job_in.method}: "
                         "method auto compares both kinds of fit when use_experts is not given")
    if str(job_in.method) in ("auto", "compare"):
        check_comparison_job(job_in, has_experts=has_experts)
    else:
        if job_in.methods is not None:
            raise ValueError(f"methods is for a comparison (method compare), not for method {job_in.method}")
        validate_params(str(job_in.method), dict(job_in.params))  # JobParamsError naming the field
        check_data_kind(str(job_in.method), **data_kind(dataset.summary), use_experts=bool(job_in.use_experts))
    coverage = (dataset.summary or {}).get("coverage") or {}
    if (isinstance(roles, dict) and roles.get("crowd") and roles.get("expert")
            and coverage.get("documents_with_expert") == 0 and coverage.get("expert_documents_without_crowd")):
        raise ValueError(f"none of the dataset's {coverage['expert_documents_without_crowd']} expert documents "
                         "(items) matches a crowd document by id: the expert labels would grade nothing; upload "
                         "experts' labels with the crowd's ids, or delete the expert upload")
    if job_in.use_experts and not has_experts:
        raise ValueError("use_experts needs expert labels: upload a file with role 'expert' first")
    if job_in.reference not in RULES:
        experts = crud.annotator_ids(session=session, dataset_id=dataset.id, role="expert")
        if job_in.reference not in experts:
            rules = ", ".join(repr(r) for r in RULES)
            raise ValueError(f"reference must be {rules} or an expert of the dataset {sorted(experts)}, "
                             f"found {job_in.reference!r}")
    check_start(session=session, dataset=dataset, job_in=job_in)  # from_job / frozen: a new batch
    shape = Shape.of_summary(dataset.summary or {})
    if shape is not None:  # the stored summary's sizes: refused now (422), not after the worker loads the corpus
        compared = (job_in.methods or (job_in.params or {}).get("methods")) if str(job_in.method) == "compare" else None
        # auto and compare without a list fit the methods that apply: each is checked when the job starts them
        for method in compared or ([None] if str(job_in.method) in ("auto", "compare") else [str(job_in.method)]):
            check_memory(method, shape)


#: The keys of a compare job's ``params`` as the job keeps them (:func:`comparison_params`).
STORED_COMPARISON = frozenset({"methods", "params_for", "expert_variants"})


def check_comparison_job(job_in: JobCreate, *, has_experts: bool) -> None:
    """A ``compare`` job: its methods and their parameters (``params`` by method id); ``auto``: no parameters
    (each method runs with its defaults), no earlier model. ValueError (422) or JobParamsError naming the field."""
    if job_in.from_job is not None:
        raise ValueError(f"from_job needs one method; method {job_in.method} chooses it from the data")
    if str(job_in.method) == "auto":
        if job_in.params or job_in.methods is not None:
            raise ValueError("method auto compares every method that applies with its defaults: give no params or "
                             "methods (a compare job takes them)")
        return
    if not has_experts:
        raise ValueError("a comparison scores the methods against the experts: upload a file with role 'expert' "
                         "first")
    params = job_in.params
    if set(params) <= STORED_COMPARISON and params:  # as stored: a re-run keeps the job's params
        methods, params = params.get("methods"), params.get("params_for") or {}
        variants = bool(job_in.params.get("expert_variants")) or job_in.expert_variants
    else:
        methods, variants = job_in.methods, job_in.expert_variants
    if variants and job_in.use_experts:
        raise ValueError("expert_variants compares each method with and without the experts; use_experts clamps "
                         "them in every fit: give one of the two")
    if not all(isinstance(v, dict) for v in params.values()):
        raise ValueError("params of a compare job are each method's parameters by method id, e.g. "
                         f"{{\"{EXAMPLE_METHOD}\": {{\"max_iter\": 50}}}}")
    check_methods(parse_methods(methods), params, use_experts=job_in.use_experts or variants)


def comparison_params(job_in: JobCreate) -> JobCreate:
    """A job's request as the job row keeps it: a compare job's methods and per-method parameters in ``params``;
    an auto job not told whether to use the experts (``use_experts`` not given) as ``{"expert_variants": true}``
    in ``params`` (it compares both kinds of candidates) and ``use_experts`` false until it finishes, when the
    row takes what the fit did; any other job's ``use_experts`` not given as false."""
    if str(job_in.method) == "auto" and job_in.use_experts is None:
        return job_in.model_copy(update={"params": {"expert_variants": True}, "use_experts": False})
    if job_in.use_experts is None:
        job_in = job_in.model_copy(update={"use_experts": False})
    if str(job_in.method) != "compare" or set(job_in.params) <= STORED_COMPARISON and job_in.params:
        return job_in
    methods = parse_methods(job_in.methods)
    variants = {"expert_variants": True} if job_in.expert_variants else {}
    return job_in.model_copy(update={"params": {"methods": methods, "params_for": dict(job_in.params), **variants},
                                     "methods": None, "expert_variants": False})


def _enqueue_or_fail(*, session: Session, settings: Settings, queue: Queue, job: Job) -> Job:
    try:
        enqueue_job(queue, job.id, settings=settings)
    except QueueUnavailableError as exc:
        crud.update_job(session=session, job_id=job.id, only_if=JobStatus.queued, status=JobStatus.failed,
                        finished_at=utcnow(), error=f"not queued: {exc}; re-run the job when the queue is back")
        raise
    crud.update_job(session=session, job_id=job.id, enqueued_at=utcnow())
    session.refresh(job)
    return job


def start_job(*, session: Session, settings: Settings, queue: Queue, dataset: Dataset, job_in: JobCreate) -> Job:
    """Create a job on the dataset's current corpus, commit it, then enqueue it."""
    _check_job_input(session, dataset, job_in)
    check_dataset_vocabularies(session=session, settings=settings, dataset=dataset)
    check_job_quota(session=session, settings=settings, project_id=dataset.project_id)
    job = crud.create_job(session=session, dataset=dataset, job_in=comparison_params(job_in))
    return _enqueue_or_fail(session=session, settings=settings, queue=queue, job=job)


def run_job_here(*, session: Session, settings: Settings, queue: Queue, dataset: Dataset, job_in: JobCreate,
                 poll: float = 1.0) -> Job:
    """Start a job as :func:`start_job` does and return it once it has finished or failed: run in this process
    when the queue is embedded (a command line's own queue, which no worker serves; if this process does run an
    embedded worker, whichever claims the job first runs it), waited for (polling the row every ``poll`` seconds,
    up to ``CROWDQA_JOB_TIMEOUT``) when Redis's workers run it."""
    import time

    job = start_job(session=session, settings=settings, queue=queue, dataset=dataset, job_in=job_in)
    if settings.embedded:
        from crowdqa.jobs.tasks import run_job  # the fit's modules load only here

        run_job(job.id)  # "skipped" at once when a worker claimed it first
    ends = time.monotonic() + settings.job_timeout + settings.stale_after
    session.refresh(job)
    while job.status not in (JobStatus.finished, JobStatus.failed) and time.monotonic() < ends:
        time.sleep(poll)
        session.refresh(job)
    return job


def rerun_job(*, session: Session, settings: Settings, queue: Queue, job: Job,
              changes: JobRerun | None = None) -> Job:
    """Run a finished or failed job again on the same dataset snapshot, with the settings in ``changes``
    (method, params, use_experts, reference; checked like a new job's) or the job's own."""
    reconcile_job(session=session, settings=settings, queue=queue, job=job)  # an abandoned or lost job has failed
    if job.status in (JobStatus.queued, JobStatus.running):
        raise JobNotRunnableError(f"job {job.id} is {job.status.value}; only finished or failed jobs can be re-run")
    given = changes.model_dump(exclude_unset=True, exclude_none=True) if changes is not None else {}
    # An auto job that left the experts to auto asks that again (its row's use_experts says what the last run did).
    asked = requested_use_experts(method=str(job.method), params=job.params, use_experts=job.use_experts)
    if given:
        current = JobCreate(method=job.method, params={} if asked is None else job.params, use_experts=asked,
                            reference=job.reference)
        job_in = JobCreate.model_validate({**current.model_dump(), **given})
        _check_job_input(session, crud.get_dataset(session=session, project_id=job.project_id,
                                                   dataset_id=job.dataset_id), job_in)
        job_in = comparison_params(job_in)
        given = {k: getattr(job_in, k) for k in {*given, "params", "use_experts"}}
    elif asked is None:
        given = {"use_experts": False}  # undecided until it finishes again
    check_job_quota(session=session, settings=settings, project_id=job.project_id)  # it becomes queued again
    crud.clear_report(session=session, job_id=job.id)
    crud.update_job(session=session, job_id=job.id, status=JobStatus.queued, error=None, progress=queued_progress(),
                    timings={}, artifacts={}, started_at=None, finished_at=None, heartbeat_at=None,
                    enqueued_at=None, **given)
    session.refresh(job)
    return _enqueue_or_fail(session=session, settings=settings, queue=queue, job=job)


def delete_job(*, session: Session, settings: Settings, queue: Queue, job: Job) -> None:
    """Delete a job's rows and result files; a queued job leaves the queue, a running one is stopped.

    A job running on a ``crowdqa worker`` gets rq's stop-job command (its work horse is killed at
    once); a job on the embedded worker stops at its next checkpoint (between EM iterations and
    stages). Either way its row is gone, so nothing it computed is saved, and the worker takes
    the next queued job.
    """
    if job.status == JobStatus.running:
        stop_running_job(queue=queue, settings=settings, job_id=job.id)
    else:
        try:
            cancel_job(queue, job.id)
        except QueueUnavailableError:
            if job.status == JobStatus.queued:
                raise
    crud.delete_job(session=session, job=job)
    collect_garbage(session=session, settings=settings)


def stop_running_job(*, queue: Queue, settings: Settings, job_id: str) -> None:
    """Ask whoever runs ``job_id`` to stop it now (see :func:`delete_job`)."""
    cancel.request_cancel(job_id)  # the embedded worker, if the job runs in this process
    if settings.embedded:
        return
    try:
        send_stop_job_command(queue.connection, job_id, serializer=JSONSerializer)
    except (InvalidJobOperation, NoSuchJobError):
        pass  # not on a worker (yet): the deleted row makes its claim or its next checkpoint fail
    except redis.exceptions.RedisError as exc:
        raise QueueUnavailableError(f"the job queue is unavailable, cannot stop job {job_id}: {exc}") from exc
