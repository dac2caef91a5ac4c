"""New batches: aggregate with an earlier job's fitted model, frozen or as the start of EM.

The use case behind a job's ``from_job`` / ``frozen`` (``POST /datasets/{id}/jobs``, the dashboard's
job form) and behind ``crowdqa aggregate --from-model`` / ``--save-model``: check that the earlier
fit can serve (finished, same method, a stored model), load its fitted state, and give the
pipeline a :class:`crowdqa.jobs.pipeline.ModelStart`. A job keeps its fitted state as the
``model`` artifact (:func:`crowdqa.aggregation.batches.fitted_state` plus the class names), an
``.npz`` of plain arrays read without pickle.
"""

from __future__ import annotations

import functools
import io
import os
import zipfile
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from sqlmodel import Session

from crowdqa.ingest._inflate import read_npz_arrays
from crowdqa.ingest.formats import missing_path
from crowdqa.jobs.errors import JobModelMissingError, JobNotFinishedError
from crowdqa.jobs.finished import check_finished
from crowdqa.jobs.pipeline import ModelStart
from crowdqa.store import crud
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.db import get_engine
from crowdqa.store.models import Dataset, Job, JobCreate, JobStatus
from crowdqa.store.settings import Settings

__all__ = ["batch_methods", "check_start", "start_candidates", "start_from_job", "load_model_file", "save_model_file",
           "job_model", "model_bytes"]


def batch_methods() -> tuple[str, ...]:
    """The methods whose fit a new batch can start from."""
    from crowdqa.aggregation.registry import METHODS

    return _batch_methods(tuple(METHODS))


@functools.cache
def _batch_methods(methods: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`batch_methods` of these registered methods (each module imported once)."""
    from crowdqa.aggregation import make_aggregator
    from crowdqa.aggregation.batches import supports_batches

    return tuple(m for m in methods if supports_batches(make_aggregator(m, {})))


def _check_method(method: str) -> None:
    if method not in batch_methods():
        raise ValueError(f"method {method!r} keeps no model a new batch can start from; use one of "
                         f"{', '.join(batch_methods())}")


def check_start(*, session: Session, dataset: Dataset, job_in: JobCreate) -> None:
    """Refuse, before a job is queued, a ``from_job`` that cannot serve: ValueError (422), or JobNotFinishedError
    (409) for an earlier job that has not finished."""
    if job_in.from_job is None:
        if job_in.frozen:
            raise ValueError("frozen needs from_job: the finished job whose model predicts this batch")
        return
    earlier = crud.get_job(session=session, project_id=dataset.project_id, job_id=job_in.from_job)
    if earlier is None:
        raise ValueError(f"from_job: no job {job_in.from_job!r} in this project")
    try:
        check_finished(earlier)
    except JobNotFinishedError as exc:
        raise JobNotFinishedError(f"from_job: {exc}") from None
    if earlier.method != job_in.method:
        raise ValueError(f"from_job: job {earlier.id} was fitted by {earlier.method}, this job's method is "
                         f"{job_in.method}: a model starts only its own method")
    _check_method(str(job_in.method))
    if "model" not in (earlier.artifacts or {}):
        raise ValueError(f"from_job: job {earlier.id} kept no fitted model (it finished before crowdqa kept them): "
                         "re-run it first")


def start_candidates(*, session: Session, project_id: str, limit: int = 100) -> list[Job]:
    """The project's jobs a new batch can start from (finished, by a method that keeps a model, the model kept),
    newest first: what the dashboard's job form offers as ``from_job``."""
    _, count = crud.list_jobs(session=session, project_id=project_id, status=JobStatus.finished, limit=1)
    jobs, _ = crud.list_jobs(session=session, project_id=project_id, status=JobStatus.finished,
                             offset=max(count - 10 * limit, 0), limit=10 * limit)
    return [j for j in reversed(jobs) if j.method in batch_methods() and "model" in (j.artifacts or {})][:limit]


def job_model(settings: Settings, job: Job) -> dict[str, NDArray]:
    """The fitted state a finished job kept; JobModelMissingError when it kept none, JobNotFinishedError before it
    finished (both 409 through the API)."""
    check_finished(job)
    artifact = (job.artifacts or {}).get("model")
    if artifact is None:
        raise JobModelMissingError(f"job {job.id} kept no fitted model ({job.method} keeps none, or the job "
                                   "finished before crowdqa kept them)")
    return ArtifactStore(settings.data_dir).load_arrays(artifact)


def start_from_job(settings: Settings, job: Job) -> ModelStart | None:
    """The earlier model a queued job starts from, or None; ValueError when it is gone (the job then fails)."""
    if job.from_job is None:
        return None
    with Session(get_engine(settings)) as s:
        earlier = s.get(Job, job.from_job)
        if earlier is None or earlier.project_id != job.project_id:
            raise ValueError(f"from_job: job {job.from_job} was deleted; start this batch from another job")
        try:
            state = job_model(settings, earlier)
        except (JobModelMissingError, JobNotFinishedError) as exc:
            raise ValueError(f"from_job: {exc}") from None
    return ModelStart(state=state, frozen=bool(job.frozen), source=f"job {earlier.id}")


def save_model_file(state: dict[str, NDArray], path: str | os.PathLike) -> None:
    """Write a fitted state as ``.npz`` (``crowdqa aggregate --save-model``)."""
    Path(path).write_bytes(model_bytes(state))


def model_bytes(state: dict[str, NDArray]) -> bytes:
    """A fitted state as the bytes of an ``.npz`` file."""
    buf = io.BytesIO()
    np.savez(buf, **state)
    return buf.getvalue()


def load_model_file(path: str | os.PathLike, *, method: str, frozen: bool) -> ModelStart:
    """Read ``--from-model``'s file; ValueError naming the file for anything but a crowdqa model of ``method``."""
    from crowdqa.aggregation import make_aggregator
    from crowdqa.aggregation.batches import restore_state

    _check_method(method)
    if not Path(path).exists():  # said as the other inputs' are (a bare FileNotFoundError printed the name alone)
        raise ValueError(missing_path(path, option="--from-model"))
    try:
        state = read_npz_arrays(Path(path))  # bounded like every upload: a deflate bomb is refused, not inflated
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{path}: not a crowdqa model file (.npz from --save-model): {exc}") from None
    try:
        restore_state(make_aggregator(method, {}), state)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if "class_names" not in state:
        raise ValueError(f"{path}: not a crowdqa model file (no class_names)")
    return ModelStart(state=state, frozen=frozen, source=Path(path).name)
