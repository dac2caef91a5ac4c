"""The caller's project's API keys: list them, create another, revoke one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Path, Response, status
from pydantic import BaseModel, Field

from crowdqa.api.deps import CurrentProjectDep, SessionDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.jobs import keys

router = APIRouter(prefix="/keys", tags=["keys"])


class KeyPublic(BaseModel):
    prefix: str = Field(description="The part after cqa_ that names the key; the secret is never shown again.")
    project: str
    created_at: datetime


class KeysPublic(BaseModel):
    data: list[KeyPublic]
    count: int


class KeyCreated(KeyPublic):
    key: str = Field(description="The new key, shown once.")


@router.get("", responses=problem_responses())
def list_keys(session: SessionDep, project: CurrentProjectDep) -> KeysPublic:
    """The project's keys, oldest first (prefixes only)."""
    rows = keys.list_keys(session=session, project_id=project.id)
    return KeysPublic(data=[KeyPublic(prefix=k.prefix, project=k.project, created_at=k.created_at) for k in rows],
                      count=len(rows))


@router.post("", status_code=status.HTTP_201_CREATED, responses=problem_responses())
def create_key(session: SessionDep, project: CurrentProjectDep) -> KeyCreated:
    """Create another key for the project (to rotate: create, switch clients, revoke the old one)."""
    made = keys.create_key(session=session, project=project)
    return KeyCreated(prefix=made.prefix, project=made.project, created_at=made.created_at, key=made.key)


@router.delete("/{prefix}", status_code=status.HTTP_204_NO_CONTENT, responses=problem_responses(404))
def revoke_key(prefix: Annotated[str, Path(max_length=64)], session: SessionDep,
               project: CurrentProjectDep) -> Response:
    """Revoke one of the project's keys (the one in use too: later requests with it answer 401)."""
    if not keys.revoke_key(session=session, prefix=prefix, project_id=project.id):
        raise ProblemError(404, f"no key with prefix {prefix!r} in this project")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
