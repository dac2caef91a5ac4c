"""Projects and their API keys: the use cases behind ``crowdqa keys`` and ``/api/v1/keys``.

A key is shown once, when it is made; the store keeps its sha256 and its public prefix (the part
after ``cqa_``), by which it is listed and revoked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session

from crowdqa.store import crud
from crowdqa.store.models import Project, aware

__all__ = ["KeyInfo", "NewKey", "create_key", "list_keys", "revoke_key", "ensure_first_key", "key_prefix"]


@dataclass(frozen=True)
class KeyInfo:
    """A key as it may be shown: its prefix, its project and when it was made (never the secret)."""

    prefix: str
    project: str
    project_id: str
    created_at: datetime


@dataclass(frozen=True)
class NewKey(KeyInfo):
    """A key just made, with its secret (shown to its owner once)."""

    key: str


def _info(key, project: Project) -> KeyInfo:
    return KeyInfo(prefix=key.prefix, project=project.name, project_id=project.id, created_at=aware(key.created_at))


def create_key(*, session: Session, project_name: str | None = None, project: Project | None = None) -> NewKey:
    """Make a key for ``project`` (or the project named ``project_name``, created if new).

    Raises ValueError for a project name that is empty or longer than 200 characters.
    """
    if project is None:
        name = (project_name or "").strip()
        if not name or len(name) > 200:
            raise ValueError("the project name must have 1 to 200 characters")
        project = crud.get_or_create_project(session=session, name=name)
    secret = crud.create_api_key(session=session, project_id=project.id)
    row = crud.get_api_key(session=session, prefix=key_prefix(secret))
    return NewKey(**vars(_info(row, project)), key=secret)


def list_keys(*, session: Session, project_name: str | None = None, project_id: str | None = None) -> list[KeyInfo]:
    """The keys, oldest first; optionally of one project (by name or id)."""
    return [_info(k, p) for k, p in crud.list_api_keys(session=session, project_name=project_name,
                                                         project_id=project_id)]


def key_prefix(text: str) -> str:
    """The prefix of a whole key (``cqa_<prefix>_<secret>``), or ``text`` itself when it is a prefix already."""
    parts = text.split("_", 2)
    return parts[1] if len(parts) == 3 and parts[0] == crud.KEY_PREFIX else text


def revoke_key(*, session: Session, prefix: str, project_id: str | None = None) -> bool:
    """Delete the key with this prefix (or this whole key), optionally only within a project; True if one went."""
    return crud.revoke_api_key(session=session, prefix=key_prefix(prefix), project_id=project_id)


def ensure_first_key(*, session: Session) -> str | None:
    """On a first start (no key at all), make project ``default`` and a key for it; return the key, else None."""
    if crud.any_api_key(session=session):
        return None
    return create_key(session=session, project_name="default").key
