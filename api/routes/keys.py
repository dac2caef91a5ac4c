"""The caller's project's API keys: list them, and (with an admin key) create another or revoke one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Body, Path, Response, status
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from crowdqa.api.deps import AdminCallerDep, CurrentProjectDep, Limit, Offset, SessionDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.jobs import keys

router = APIRouter(prefix="/keys", tags=["keys"], route_class=StrictJSONRoute)


class KeyPublic(BaseModel):
    prefix: str = Field(description="The part after cqa_ that names the key; the secret is never shown again.")
    project: str
    created_at: datetime
    admin: bool = Field(description="An admin key may also create and revoke the project's keys.")
    expires_at: datetime | None = Field(description="When the key stops working (null: never).")


class KeysPublic(BaseModel):
    data: list[KeyPublic]
    count: int


class KeyCreate(BaseModel):
    """Body of ``POST /keys`` (optional: an ordinary key that never expires)."""

    model_config = ConfigDict(extra="forbid")
    admin: StrictBool = Field(default=False, description="Make an admin key (it may create and revoke keys).")
    expires_in_days: float | None = Field(default=None, gt=0, le=keys.MAX_EXPIRES_IN_DAYS,
                                          description="Days until the key stops working (null: never).")


class KeyCreated(KeyPublic):
    key: str = Field(description="The new key, shown once.")


def _public(k: keys.KeyInfo) -> KeyPublic:
    return KeyPublic(prefix=k.prefix, project=k.project, created_at=k.created_at, admin=k.admin,
                     expires_at=k.expires_at)


@router.get("", responses=problem_responses())
def list_keys(session: SessionDep, project: CurrentProjectDep, offset: Offset = 0, limit: Limit = 100) -> KeysPublic:
    """The project's keys, oldest first (prefixes, scopes and expiry only), a page of them as every list."""
    rows = keys.list_keys(session=session, project_id=project.id)
    return KeysPublic(data=[_public(k) for k in rows[offset:offset + limit]], count=len(rows))


@router.post("", status_code=status.HTTP_201_CREATED, responses=problem_responses(403))
def create_key(session: SessionDep, caller: AdminCallerDep,
               body: Annotated[KeyCreate | None, Body()] = None) -> KeyCreated:
    """Create another key for the project (to rotate: create, switch clients, revoke the old one); admin keys only."""
    body = body or KeyCreate()
    made = keys.create_key(session=session, project=caller.project, admin=body.admin,
                           expires_in_days=body.expires_in_days)
    return KeyCreated(**_public(made).model_dump(), key=made.key)


@router.delete("/{prefix}", status_code=status.HTTP_204_NO_CONTENT, responses=problem_responses(403, 404))
def revoke_key(prefix: Annotated[str, Path(max_length=64)], session: SessionDep, caller: AdminCallerDep) -> Response:
    """Revoke one of the project's keys (the one in use too: later requests with it answer 401); admin keys only."""
    if not keys.revoke_key(session=session, prefix=prefix, project_id=caller.project.id):
        raise ProblemError(404, f"no key with prefix {prefix!r} in this project")
    return Response(status_code=status.HTTP_204_NO_CONTENT)
