"""Typed dependencies: settings, database session, queue, the caller's project and owned resources."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from rq import Queue
from sqlmodel import Session

from crowdqa.api.errors import ProblemError
from crowdqa.jobs.queue import get_queue
from crowdqa.store import crud
from crowdqa.store.db import open_session
from crowdqa.store.models import Dataset, Job, Project
from crowdqa.store.settings import Settings, get_settings

__all__ = ["SettingsDep", "SessionDep", "QueueDep", "CurrentProjectDep", "OwnedDatasetDep", "OwnedJobDep"]

SettingsDep = Annotated[Settings, Depends(get_settings)]


def get_session(settings: SettingsDep) -> Iterator[Session]:
    """A database session for one request."""
    with open_session(settings) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]


def get_job_queue(settings: SettingsDep) -> Queue:
    """The job queue (Redis, or the embedded fakeredis)."""
    return get_queue(settings)


QueueDep = Annotated[Queue, Depends(get_job_queue)]

_bearer = HTTPBearer(auto_error=False, description="An API key from `crowdqa keys create --project NAME`.")


def get_current_project(
    session: SessionDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> Project:
    """The project of the request's Bearer key; 401 without a valid key."""
    challenge = {"WWW-Authenticate": "Bearer"}
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise ProblemError(401, "send 'Authorization: Bearer <key>'", headers=challenge)
    project = crud.authenticate(session=session, key=credentials.credentials)
    if project is None:
        raise ProblemError(401, "unknown API key", headers=challenge)
    return project


CurrentProjectDep = Annotated[Project, Depends(get_current_project)]


def get_owned_dataset(
    dataset_id: Annotated[str, Path(max_length=64)], session: SessionDep, project: CurrentProjectDep
) -> Dataset:
    """The caller's dataset; 404 when it does not exist or belongs to another project."""
    dataset = crud.get_dataset(session=session, project_id=project.id, dataset_id=dataset_id)
    if dataset is None:
        raise ProblemError(404, f"no dataset {dataset_id!r} in this project")
    return dataset


OwnedDatasetDep = Annotated[Dataset, Depends(get_owned_dataset)]


def get_owned_job(job_id: Annotated[str, Path(max_length=64)], session: SessionDep,
                  project: CurrentProjectDep) -> Job:
    """The caller's job; 404 when it does not exist or belongs to another project."""
    job = crud.get_job(session=session, project_id=project.id, job_id=job_id)
    if job is None:
        raise ProblemError(404, f"no job {job_id!r} in this project")
    return job


OwnedJobDep = Annotated[Job, Depends(get_owned_job)]
