"""Projects and their API keys: the use cases behind ``crowdqa keys`` and ``/api/v1/keys``.

A key is shown once, when it is made; the store keeps its sha256 and its public prefix (the part
after ``cqa_``), by which it is listed and revoked. A key is an *admin* key or an ordinary one:
both reach all of their project's data, and only an admin key may create or revoke keys, so a
leaked ordinary key cannot mint a successor that survives its revocation. A project's first key
is an admin key. A key may expire (``expires_in_days``); an expired key answers like an unknown one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session

from crowdqa.jobs.errors import KeyRefusedError, KeyScopeError
from crowdqa.store import crud
from crowdqa.store.models import ApiKey, Project, aware, utcnow

__all__ = ["KeyInfo", "NewKey", "create_key", "list_keys", "revoke_key", "ensure_first_key", "key_prefix",
           "check_key", "require_admin", "MAX_EXPIRES_IN_DAYS"]

#: The longest lifetime a key can be given (ten years); longer is "never", which is the default.
MAX_EXPIRES_IN_DAYS = 3650


@dataclass(frozen=True)
class KeyInfo:
    """A key as it may be shown: its prefix, project, scope, creation and expiry (never the secret)."""

    prefix: str
    project: str
    project_id: str
    created_at: datetime
    admin: bool
    expires_at: datetime | None


@dataclass(frozen=True)
class NewKey(KeyInfo):
    """A key just made, with its secret (shown to its owner once)."""

    key: str


def _info(key: ApiKey, project: Project) -> KeyInfo:
    return KeyInfo(prefix=key.prefix, project=project.name, project_id=project.id, created_at=aware(key.created_at),
                   admin=bool(key.admin), expires_at=aware(key.expires_at))


def create_key(*, session: Session, project_name: str | None = None, project: Project | None = None,
               admin: bool = False, expires_in_days: float | None = None) -> NewKey:
    """Make a key for ``project`` (or the project named ``project_name``, created if new).

    The project's first key is an admin key whatever ``admin`` says (somebody has to be able to
    make the others). Raises ValueError for a project name that is empty or longer than 200
    characters, or a lifetime that is not between 0 and :data:`MAX_EXPIRES_IN_DAYS` days.
    """
    if expires_in_days is not None and not 0 < expires_in_days <= MAX_EXPIRES_IN_DAYS:
        raise ValueError(f"expires_in_days must be more than 0 and at most {MAX_EXPIRES_IN_DAYS}, "
                         f"found {expires_in_days:g}")
    if project is None:
        name = (project_name or "").strip()
        if not name or len(name) > 200:
            raise ValueError("the project name must have 1 to 200 characters")
        project = crud.get_or_create_project(session=session, name=name)
    first = not crud.any_api_key(session=session, project_id=project.id)
    expires_at = None if expires_in_days is None else utcnow() + timedelta(days=expires_in_days)
    secret = crud.create_api_key(session=session, project_id=project.id, admin=admin or first,
                                 expires_at=expires_at)
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
    """Delete the key with this prefix (or this whole key), optionally only within a project; True if one went.

    Its dashboard sessions go with it.
    """
    return crud.revoke_api_key(session=session, prefix=key_prefix(prefix), project_id=project_id)


def check_key(*, session: Session, key: str, now: datetime | None = None) -> tuple[ApiKey, Project]:
    """The row and project of a valid whole key; :class:`KeyRefusedError` saying why otherwise."""
    found = crud.find_api_key_and_project(session=session, key=key.strip())
    if found is None:
        raise KeyRefusedError("unknown API key")
    row, project = found
    if crud.key_expired(row, now=now):
        raise KeyRefusedError(f"the API key {row.prefix} expired at {aware(row.expires_at):%Y-%m-%d %H:%M:%S} UTC")
    return row, project


def require_admin(key: ApiKey) -> None:
    """Refuse (:class:`KeyScopeError`) a key that is not an admin key."""
    if not key.admin:
        raise KeyScopeError(f"the key {key.prefix} is not an admin key: only an admin key creates or revokes keys "
                            "(`crowdqa keys create --admin`)")


def ensure_first_key(*, session: Session) -> str | None:
    """On a first start (no key at all), make project ``default`` and an admin key for it; return it, else None."""
    if crud.any_api_key(session=session):
        return None
    return create_key(session=session, project_name="default", admin=True).key
