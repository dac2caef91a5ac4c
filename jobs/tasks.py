"""The job function rq runs, and the callback for jobs whose worker died.

``run_job(job_id)`` receives only the database id: it loads the job's corpus snapshot
from the store, runs :func:`crowdqa.jobs.pipeline.run_pipeline`, publishes progress (stage, EM
iteration, log-likelihood) and heartbeats to the job row while it runs, and saves the
labels, posteriors, worker models and the report. Bad input (an unknown parameter, no
crowd labels) fails the job for good with its reason; an unexpected error is retried by
rq's retry policy while retries are left, then fails the job. A job that uses more CPU time than
``CROWDQA_JOB_CPU_SECONDS`` fails for good at its next checkpoint (between EM iterations and stages).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
from typing import Any

from rq import get_current_job
from rq.exceptions import AbandonedJobError
from rq.timeouts import JobTimeoutException
from sqlmodel import Session

from crowdqa.jobs import cancel
from crowdqa.jobs.batches import start_from_job
from crowdqa.jobs.compare import AutoChoice, choose_method, requested_use_experts, run_comparison
from crowdqa.jobs.errors import BudgetExceededError, JobCancelled
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.jobs.uploads import job_corpus
from crowdqa.quality.json_data import plain_json
from crowdqa.store import crud
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.db import get_engine, outage, with_session_retry
from crowdqa.store.errors import ArtifactMissingError
from crowdqa.store.models import Job, JobStatus, aware, queued_progress, utcnow
from crowdqa.store.settings import Settings, get_settings

__all__ = ["run_job", "on_job_failure", "fail_or_requeue", "run_pre_annotation", "on_pre_annotation_failure"]

logger = logging.getLogger(__name__)

#: Errors that say the input is wrong: retrying cannot help (an IngestError is a ValueError).
INPUT_ERRORS = (ValueError, TypeError, ArtifactMissingError, KeyError)

_PROGRESS_EVERY = 0.25  # seconds between progress writes; EM iterations can be much faster
_AFTER_FIT = ("scoring", "writing")  # the stages that keep the fit's last iteration and log-likelihood

#: Seconds a job's claim, result and failure writes wait out a database outage (a PostgreSQL restart) before the
#: job fails; progress and heartbeat writes are skipped meanwhile, and the job keeps computing.
DB_PATIENCE = 120.0


class _Heartbeat(threading.Thread):
    """Stamp ``heartbeat_at`` every ``interval`` seconds while the job runs."""

    def __init__(self, settings: Settings, job_id: str) -> None:
        super().__init__(name=f"heartbeat-{job_id}", daemon=True)
        self.settings, self.job_id = settings, job_id
        self.stop = threading.Event()

    def run(self) -> None:
        down = False
        while not self.stop.wait(self.settings.heartbeat_interval):
            try:
                with Session(get_engine(self.settings)) as s:
                    crud.update_job(session=s, job_id=self.job_id, only_if=JobStatus.running, heartbeat_at=utcnow())
                down = False
            except Exception as exc:  # noqa: BLE001 - a missed heartbeat must not kill the job
                if not outage(exc):
                    logger.exception("heartbeat of job %s failed", self.job_id)
                elif not down:  # one line per outage (with_session_retry logs its end)
                    logger.warning("heartbeat of job %s skipped: the database is unreachable", self.job_id)
                down = outage(exc)


class _Progress:
    """Write the pipeline's progress to the job row, at most every 0.25 s (and at every stage change).

    The row's ``progress`` holds the current stage (with its EM iteration and log-likelihood while
    fitting, the fit's last ones while scoring and writing), ``stage_seconds`` (seconds so far in it) and
    ``stages``: seconds of every finished stage.
    """

    def __init__(self, settings: Settings, job_id: str) -> None:
        self.settings, self.job_id = settings, job_id
        # The job's CPU time is its thread's: the fit runs in the thread that calls back (one BLAS thread, see
        # aggregation._base), the embedded worker's or the work horse's main thread.
        self.cpu_start = time.thread_time()
        self.last_write = 0.0
        self.stage: str | None = None
        self.started = time.monotonic()
        self.stages: dict[str, float] = {}
        self.state: dict[str, Any] = {}

    def checkpoint(self) -> None:
        """Stop here if the job was deleted or the service is stopping (:func:`crowdqa.jobs.cancel.checkpoint`), or
        fail it if it is past its CPU-time budget: what the pipeline calls between stages and EM iterations."""
        cancel.checkpoint(self.job_id)
        used = time.thread_time() - self.cpu_start
        if used > self.settings.job_cpu_seconds:
            raise BudgetExceededError(
                f"stopped while {self.stage or 'starting'} after {used:.1f} CPU seconds, past the job's budget of "
                f"{self.settings.job_cpu_seconds:g} (CROWDQA_JOB_CPU_SECONDS): lower max_iter or n_restarts, or "
                f"split the dataset")

    def __call__(self, stage: str, iteration: int | None, log_likelihood: float | None, **extra: Any) -> None:
        now = time.monotonic()
        if stage != self.stage:
            if self.stage is not None:
                self.stages[self.stage.replace("-", "_")] = round(now - self.started, 6)
            self.started = now
        # Scoring and writing follow the fit: they keep its last EM iteration and log-likelihood, so a job being
        # scored does not look as if it had never been fitted.
        fitted = {k: self.state[k] for k in ("iteration", "log_likelihood") if k in self.state} \
            if stage in _AFTER_FIT else {}
        self.state = {"stage": stage, "stage_seconds": round(now - self.started, 3), "stages": dict(self.stages),
                      **fitted, **extra}
        if iteration is not None:
            self.state.update(iteration=iteration, log_likelihood=log_likelihood)
        if stage != self.stage or now - self.last_write >= _PROGRESS_EVERY:
            self.flush()
            self.stage, self.last_write = stage, now

    def method(self, method: str | None, index: int, total: int) -> None:
        """A comparison's progress: the method being fitted (``method``, ``method_index`` from 1, ``methods``), then
        the scoring; each is a stage of its own (``fitting <method id>``), so ``stages`` keeps every fit's seconds."""
        if method is None:
            self("comparing: scoring", None, None, methods=total)
        else:
            self(f"comparing: fitting {method}", None, None, method=method, method_index=index + 1, methods=total)

    def flush(self) -> None:
        try:
            with Session(get_engine(self.settings)) as s:
                still = crud.update_job(session=s, job_id=self.job_id, only_if=JobStatus.running,
                                        progress=dict(self.state), heartbeat_at=utcnow())
        except Exception as exc:
            if outage(exc):  # progress is not worth failing the job for: the next write catches up
                return
            raise
        if not still:  # deleted (or failed as abandoned) by another process: stop computing
            raise JobCancelled("the job row was deleted or left the running state")


def fail_or_requeue(settings: Settings, job_id: str, *, reason: str, retries_left: int) -> None:
    """After a failure: back to queued when rq will retry, else failed with ``reason`` (only from running)."""
    if retries_left > 0:
        values = {"status": JobStatus.queued, "error": f"{reason} (retrying; {retries_left} retries left)",
                  "progress": queued_progress()}
    else:
        values = {"status": JobStatus.failed, "error": reason, "finished_at": utcnow()}
    with_session_retry(settings, lambda s: crud.update_job(session=s, job_id=job_id, only_if=JobStatus.running,
                                                           **values),
                       what=f"recording the failure of job {job_id}", patience=DB_PATIENCE)


def _save_results(settings: Settings, job: Job, result, timings: dict[str, float]) -> None:
    """Store the result arrays and the report, and finish the job. The writing stage's seconds cover both, up
    to the database's encoding of the report itself (which cannot time itself into the report)."""
    store = ArtifactStore(settings.data_dir)
    t0 = time.perf_counter()
    # The calibrated scores travel with the labels they score (token, span in decode order, document) and the
    # calibrated marginals with the model's (crowdqa.jobs.calibration).
    c = result.confidence
    scores = {} if c is None else {"token_score": c.token, "span_score": c.span, "document_score": c.document}
    labels = store.put_arrays(labels=result.labels, clamped=result.clamped, **scores)
    proba = store.put_arrays(proba=result.proba, **({} if c is None else {"calibrated": c.proba}))
    confusion = store.put_arrays(worker_confusion=result.worker_confusion)
    # The fitted state a later batch can start from (``from_job``); methods without one keep none.
    model = store.put_arrays(**result.model) if result.model is not None else None
    # The report as plain JSON data in QualityReport's shape (build_report_data), stored as it is: validating
    # it into the typed model and dumping that again would cost seconds for thousands of workers.
    stored = crud.stored_report(job_id=job.id, report=result.report_data)
    fit = stored.body["fit"]  # the report's fit block keeps every stage's seconds
    fit["stages"]["reading"] = timings["load"]
    timings["save"] = fit["stages"]["writing"] = round(time.perf_counter() - t0, 6)
    history = fit.get("log_likelihood") or [None]
    progress = {"stage": "done", "iteration": fit.get("iterations"), "log_likelihood": history[-1],
                "stages": dict(fit["stages"]), "converged": fit.get("converged"),
                "convergence_note": fit.get("convergence_note")}
    artifacts = {"labels": labels.as_dict(), "proba": proba.as_dict(), "worker_confusion": confusion.as_dict(),
                 **({"model": model.as_dict()} if model is not None else {})}
    finished = with_session_retry(
        settings, lambda s: crud.finish_job(session=s, job_id=job.id, report=stored, timings=plain_json(timings),
                                            progress=progress, artifacts=artifacts,
                                            use_experts=bool(stored.body["experts_used_in_fit"])),
        what=f"saving the results of job {job.id}", patience=DB_PATIENCE)
    if not finished:
        raise JobCancelled("the job row was deleted or left the running state")


def _run_comparison(settings: Settings, job: Job, corpus, progress: _Progress, blocked: frozenset[str],
                    timings: dict[str, float]) -> str:
    """A ``compare`` job: fit and score its methods, keep the comparison as a JSON file, finish without a report."""
    t0 = time.perf_counter()
    params = job.params or {}
    comparison = run_comparison(corpus, methods=params.get("methods"), params_for=params.get("params_for"),
                                use_experts=job.use_experts, expert_variants=bool(params.get("expert_variants")),
                                reference=job.reference, progress=progress.method,
                                checkpoint=progress.checkpoint, blocked=blocked)
    timings["compare"] = round(time.perf_counter() - t0, 6)
    progress.checkpoint()
    progress("writing", None, None)
    t1 = time.perf_counter()
    stored = ArtifactStore(settings.data_dir).put_bytes(json.dumps(plain_json(comparison)).encode(), kind="results",
                                                        suffix=".json")
    timings["save"] = round(time.perf_counter() - t1, 6)
    done = {"stage": "done", "stages": dict(progress.stages), "recommended": comparison["recommended"]}
    with Session(get_engine(settings)) as s:
        if not crud.finish_job(session=s, job_id=job.id, report=None, timings=plain_json(timings), progress=done,
                               artifacts={"comparison": stored.as_dict()}):
            raise JobCancelled("the job row was deleted or left the running state")
    return JobStatus.finished.value


def run_job(job_id: str) -> str:
    """Run the database job ``job_id`` end to end; return its final status."""
    settings = get_settings()
    rq_job = get_current_job()
    worker = (getattr(rq_job, "worker_name", None) or "")[:200] if rq_job is not None else None
    # Running here from before the claim: a delete once the row says running flags this job; the block's end forgets
    # the flag whether the job ran or was found gone.
    with cancel.running(job_id):
        job = with_session_retry(settings, lambda s: crud.claim_job(session=s, job_id=job_id, worker_name=worker),
                                 what=f"claiming job {job_id}", patience=DB_PATIENCE)
        if job is None:
            logger.info("job %s is not queued (deleted, finished or failed meanwhile); nothing to do", job_id)
            return "skipped"
        heartbeat = _Heartbeat(settings, job_id)
        heartbeat.start()
        try:
            return _run_claimed(settings, job, rq_job)
        finally:
            heartbeat.stop.set()


def _run_claimed(settings: Settings, job: Job, rq_job) -> str:
    job_id = job.id
    try:
        t0 = time.perf_counter()
        progress = _Progress(settings, job_id)
        progress.checkpoint()  # between stages: deleted or stopping before it starts
        progress("reading", None, None)
        corpus, unmatched = job_corpus(ArtifactStore(settings.data_dir), job.corpus_sha256)
        blocked = with_session_retry(  # the list as the job starts
            settings, lambda s: crud.blocked_annotators(session=s, project_id=job.project_id),
            what=f"reading the block list for job {job_id}", patience=DB_PATIENCE)
        timings = {"load": round(time.perf_counter() - t0, 6)}
        if str(job.method) == "compare":
            return _run_comparison(settings, job, corpus, progress, blocked, timings)
        choice = AutoChoice(str(job.method), None, "", use_experts=job.use_experts)
        if choice.method == "auto":  # the comparison's fit of the method it chooses is reused, not made again
            asked = requested_use_experts(method="auto", params=job.params, use_experts=job.use_experts)
            choice = choose_method(corpus, use_experts=asked, reference=job.reference, blocked=blocked,
                                   progress=progress.method, checkpoint=progress.checkpoint)
        # Auto clamps the experts when the job asks, or when the job left it to auto (params expert_variants) and
        # the rule chose a clamped fit: the row's use_experts becomes what the fit did as the job finishes.
        result = run_pipeline(corpus, method=choice.method,
                              params={} if str(job.method) == "auto" else job.params, use_experts=choice.use_experts,
                              reference=job.reference,
                              progress=progress, checkpoint=progress.checkpoint, blocked=blocked,
                              start=start_from_job(settings, job), unmatched_expert_documents=unmatched,
                              prior=choice.fit)
        if choice.method != str(job.method):
            result.report_data.update(method_choice=f"method auto: {choice.why}", comparison=choice.comparison)
        timings.update(result.timings)
        progress.checkpoint()
        progress("writing", None, None)
        _save_results(settings, job, result, timings)
        return JobStatus.finished.value
    except JobCancelled as exc:
        if exc.requeue:  # the server is stopping: back to the queue, to run at the next start
            with Session(get_engine(settings)) as s:
                crud.update_job(session=s, job_id=job_id, only_if=JobStatus.running, status=JobStatus.queued,
                                progress=queued_progress(), started_at=None, heartbeat_at=None,
                                error=f"interrupted: {exc}; it was queued again")
        logger.info("job %s stopped: %s", job_id, exc)
        return "cancelled"
    except INPUT_ERRORS as exc:
        fail_or_requeue(settings, job_id, reason=f"{type(exc).__name__}: {exc}", retries_left=0)
        return JobStatus.failed.value
    except BudgetExceededError as exc:  # running it again would use the same time: fail for good
        fail_or_requeue(settings, job_id, reason=f"CPU budget exceeded: {exc}", retries_left=0)
        return JobStatus.failed.value
    except BaseException as exc:
        retries = int(getattr(rq_job, "retries_left", 0) or 0) if rq_job is not None else 0
        reason = f"{type(exc).__name__}: {exc}".strip()
        if isinstance(exc, JobTimeoutException):
            # Running it again would time out again: fail for good (rq's retry then finds it not queued).
            retries = 0
            reason = f"timed out after {settings.job_timeout} s (CROWDQA_JOB_TIMEOUT): {exc}"
        logger.error("job %s failed: %s\n%s", job_id, reason, traceback.format_exc())
        fail_or_requeue(settings, job_id, reason=reason, retries_left=retries)
        raise


def on_job_failure(rq_job, connection, exc_type, exc_value, tb) -> None:
    """rq failure callback: a job abandoned by a dead worker (found by rq's registry cleanup) fails or re-queues."""
    if exc_type is None or not issubclass(exc_type, AbandonedJobError):
        return  # run_job recorded its own failure
    settings = get_settings()
    with Session(get_engine(settings)) as s:
        row = crud.load_job(session=s, job_id=rq_job.id)
    beat = aware(row.heartbeat_at) if row is not None else None
    if beat is not None and (utcnow() - beat).total_seconds() < 3 * settings.heartbeat_interval:
        # A live run of the same id (a re-run) is heartbeating: the stale registry entry was an older run's.
        return
    fail_or_requeue(settings, rq_job.id,
                    reason="abandoned: the worker running the job died (rq found it in the started registry)",
                    retries_left=int(rq_job.retries_left or 0))


def run_pre_annotation(prediction_id: str) -> str:
    """Label the documents of the pre-annotation ``prediction_id`` with its job's model
    (:func:`crowdqa.jobs.preannotate.label_prediction`); return its final status.

    Its progress is its stage (reading, labelling, writing, then done with every stage's seconds). Bad input (the
    job or its model gone) fails it with the reason; an unexpected error fails it too (labelling is quick and
    deterministic: running it again would fail again) and is raised for rq's failed registry.
    """
    from crowdqa.jobs.preannotate import label_prediction

    settings = get_settings()
    rq_job = get_current_job()
    worker = (getattr(rq_job, "worker_name", None) or "")[:200] if rq_job is not None else None
    prediction = with_session_retry(
        settings, lambda s: crud.claim_prediction(session=s, prediction_id=prediction_id, worker_name=worker),
        what=f"claiming pre-annotation {prediction_id}", patience=DB_PATIENCE)
    if prediction is None:
        logger.info("pre-annotation %s is not queued (deleted meanwhile); nothing to do", prediction_id)
        return "skipped"
    stages: dict[str, float] = {}
    clock = {"stage": "starting", "at": time.perf_counter()}

    def progress(stage: str) -> None:
        now = time.perf_counter()
        stages[str(clock["stage"])] = round(now - float(clock["at"]), 6)
        clock.update(stage=stage, at=now)
        with Session(get_engine(settings)) as s:
            crud.update_prediction(session=s, prediction_id=prediction_id, only_if=JobStatus.running,
                                   progress={"stage": stage, "stages": dict(stages)})

    def finish(**values: Any) -> bool:
        return with_session_retry(
            settings, lambda s: crud.update_prediction(session=s, prediction_id=prediction_id,
                                                       only_if=JobStatus.running, finished_at=utcnow(), **values),
            what=f"recording pre-annotation {prediction_id}", patience=DB_PATIENCE)

    try:
        artifacts = label_prediction(settings, prediction, progress=progress)
    except INPUT_ERRORS as exc:
        finish(status=JobStatus.failed, error=f"{type(exc).__name__}: {exc}")
        return JobStatus.failed.value
    except BaseException as exc:
        reason = f"timed out after {settings.job_timeout} s (CROWDQA_JOB_TIMEOUT)" \
            if isinstance(exc, JobTimeoutException) else f"{type(exc).__name__}: {exc}".strip()
        logger.error("pre-annotation %s failed: %s\n%s", prediction_id, reason, traceback.format_exc())
        finish(status=JobStatus.failed, error=reason)
        raise
    stages[str(clock["stage"])] = round(time.perf_counter() - float(clock["at"]), 6)
    if not finish(status=JobStatus.finished, artifacts=artifacts, progress={"stage": "done", "stages": stages}):
        return "cancelled"  # deleted while it ran: its files go with the next collection
    return JobStatus.finished.value


def on_pre_annotation_failure(rq_job, connection, exc_type, exc_value, tb) -> None:
    """rq failure callback: a pre-annotation abandoned by a dead worker fails with that reason."""
    if exc_type is None or not issubclass(exc_type, AbandonedJobError):
        return  # run_pre_annotation recorded its own failure
    with Session(get_engine(get_settings())) as s:
        crud.update_prediction(session=s, prediction_id=rq_job.id, only_if=JobStatus.running,
                               status=JobStatus.failed, finished_at=utcnow(),
                               error="abandoned: the worker running it died; upload the documents again")
