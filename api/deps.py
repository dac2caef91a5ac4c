"""Typed dependencies: settings, database session, queue, the caller's project and owned resources."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from rq import Queue
from sqlmodel import Session

from crowdqa.api.errors import ProblemError
from crowdqa.api.throttle import FailureThrottle, client_address, throttle_of
from crowdqa.jobs import keys
from crowdqa.jobs.errors import KeyRefusedError, KeyScopeError
from crowdqa.jobs.queue import get_queue
from crowdqa.store import crud
from crowdqa.store.db import open_session
from crowdqa.store.models import ApiKey, Dataset, Job, Project
from crowdqa.store.settings import Settings, get_settings

__all__ = ["SettingsDep", "SessionDep", "QueueDep", "Caller", "CallerDep", "AdminCallerDep", "CurrentProjectDep",
           "OwnedDatasetDep", "OwnedJobDep", "check_authorization", "authenticate_client"]

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
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


@dataclass(frozen=True)
class Caller:
    """Who sent a request: the key (its row: prefix, scope, expiry) and its project."""

    key: ApiKey
    project: Project


def check_authorization(authorization: str | None, *, session: Session) -> Caller:
    """The caller named by a raw ``Authorization`` header; ProblemError 401 (with a Bearer challenge) otherwise.

    A plain function of the header, so an ASGI middleware can check the key before a body is read.
    """
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ProblemError(401, "send 'Authorization: Bearer <key>'", headers=dict(_CHALLENGE))
    try:
        key, project = keys.check_key(session=session, key=token.strip())
    except KeyRefusedError as exc:
        raise ProblemError(401, str(exc), headers=dict(_CHALLENGE)) from None
    return Caller(key=key, project=project)


def authenticate_client(authorization: str | None, *, session: Session, client: str,
                        throttle: FailureThrottle) -> Caller:
    """:func:`check_authorization`, throttled: 429 with Retry-After while ``client`` has failed too often."""
    wait = throttle.retry_after(client)
    if wait:
        raise ProblemError(429, f"too many failed authentications from {client}; retry in {wait} s",
                           headers={"Retry-After": str(wait)})
    try:
        return check_authorization(authorization, session=session)
    except ProblemError:
        throttle.failed(client)
        raise


def get_caller(request: Request, session: SessionDep,
               _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Caller:
    """The key and project of the request's Bearer key; 401 without a valid key, 429 after too many failures."""
    return authenticate_client(request.headers.get("authorization"), session=session,
                               client=client_address(request.scope), throttle=throttle_of(request.app))


CallerDep = Annotated[Caller, Depends(get_caller)]


def get_current_project(caller: CallerDep) -> Project:
    """The project of the request's Bearer key; 401 without a valid key."""
    return caller.project


def get_admin_caller(caller: CallerDep) -> Caller:
    """The caller, if its key is an admin key; 403 otherwise."""
    try:
        keys.require_admin(caller.key)
    except KeyScopeError as exc:
        raise ProblemError(403, str(exc)) from None
    return caller


AdminCallerDep = Annotated[Caller, Depends(get_admin_caller)]
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
