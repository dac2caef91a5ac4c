"""Typed dependencies: settings, database session, queue, the caller's project and owned resources.

Dependencies that do no blocking work are ``async``: FastAPI runs a plain ``def`` dependency in a worker thread,
and under load each hand-over to a thread and back waited for the CPU (a poll passed through nine of them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from rq import Queue
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from crowdqa.api.errors import ProblemError
from crowdqa.api.throttle import FailureThrottle, client_address, throttle_of
from crowdqa.jobs import keys
from crowdqa.jobs.errors import KeyRefusedError, KeyScopeError
from crowdqa.jobs.queue import get_queue
from crowdqa.store import crud
from crowdqa.store.db import open_read_session, open_session
from crowdqa.store.models import ApiKey, Dataset, Job, Project
from crowdqa.store.settings import Settings, get_settings

__all__ = ["SettingsDep", "SessionDep", "QueueDep", "Caller", "CallerDep", "AdminCallerDep", "CurrentProjectDep",
           "OwnedDatasetDep", "OwnedJobDep", "JobId", "owned_job", "check_authorization", "authenticate_client",
           "GATE_CALLER", "READ_METHODS", "Offset", "Limit"]

#: A list's page: every list endpoint takes ``offset`` and ``limit`` and answers ``{"data": [...], "count": n}``.
Offset = Annotated[int, Query(ge=0, le=10**9, description="Rows to skip.")]
Limit = Annotated[int, Query(ge=1, le=1000, description="Rows to return (at most 1000).")]

#: The key of ``scope["state"]`` under which the request gate leaves the caller it authenticated for this request.
GATE_CALLER = "crowdqa.caller"
#: Methods that never write (the reconciler corrects job rows, not a GET): their requests read without a transaction.
READ_METHODS = frozenset({"GET", "HEAD"})


async def _settings() -> Settings:
    return get_settings()


SettingsDep = Annotated[Settings, Depends(_settings)]


async def get_session(request: Request, settings: SettingsDep) -> AsyncIterator[Session]:
    """A database session for one request: a read-only one (:func:`crowdqa.store.db.open_read_session`) for a GET
    or HEAD. Made without touching the database; closed (its connection back to the pool) in a worker thread."""
    session = open_read_session(settings) if request.method in READ_METHODS else open_session(settings)
    try:
        yield session
    finally:
        await run_in_threadpool(session.close)


SessionDep = Annotated[Session, Depends(get_session)]


async def get_job_queue(settings: SettingsDep) -> Queue:
    """The job queue (Redis, or the embedded fakeredis); made without a round trip to Redis."""
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


async def get_caller(request: Request, session: SessionDep,
                     _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Caller:
    """The key and project of the request's Bearer key; 401 without a valid key, 429 after too many failures.

    When the request gate checked the key against the database for this very request, its caller is taken
    (:data:`GATE_CALLER`) instead of asking the database the same question twice; otherwise (the gate remembered
    the key as valid, or there is no gate) the key is checked here.
    """
    caller = request.scope.get("state", {}).get(GATE_CALLER)
    if isinstance(caller, Caller):
        return caller
    return await run_in_threadpool(authenticate_client, request.headers.get("authorization"), session=session,
                                   client=client_address(request.scope), throttle=throttle_of(request.app))


CallerDep = Annotated[Caller, Depends(get_caller)]


async def get_current_project(caller: CallerDep) -> Project:
    """The project of the request's Bearer key; 401 without a valid key."""
    return caller.project


async def get_admin_caller(caller: CallerDep) -> Caller:
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


JobId = Annotated[str, Path(max_length=64)]


def owned_job(*, session: Session, project: Project, job_id: str) -> Job:
    """The project's job; ProblemError 404 when it does not exist or belongs to another project."""
    job = crud.get_job(session=session, project_id=project.id, job_id=job_id)
    if job is None:
        raise ProblemError(404, f"no job {job_id!r} in this project")
    return job


def get_owned_job(job_id: JobId, session: SessionDep, project: CurrentProjectDep) -> Job:
    """The caller's job; 404 when it does not exist or belongs to another project."""
    return owned_job(session=session, project=project, job_id=job_id)


OwnedJobDep = Annotated[Job, Depends(get_owned_job)]
