"""Dashboard sign-in: an API key becomes a signed, HttpOnly, SameSite=Strict session cookie.

Signing in records a session row (:class:`~crowdqa.store.models.WebSession`) holding the sha256
of a random token, the key it was made with and its end; the cookie carries the token and an
HMAC-SHA256 of it under the server secret (``<data dir>/server-secret``, 0600, never in the
database). So a session:

* cannot be forged from the database: a copy of it (or of one ``apikey`` row) holds neither the
  secret nor any token, only hashes;
* works in every API process that shares the data directory and the database;
* belongs to one key, hence one project: every page looks rows up with that project's id,
  exactly as the API does with a Bearer key, so a cookie never reaches another project;
* ends at sign-out (its row is deleted, so a replayed cookie finds nothing), when its key is
  revoked (the row goes with the key) or expires, or after :data:`SESSION_SECONDS`.

Every form carries a CSRF token derived from the session's token (synchronizer token); the
sign-in form, used before a session exists, checks a random double-submit cookie instead.
The cookie's path is ``/ui``: it is never sent to ``/api/v1``, whose only credential stays
the ``Authorization`` header.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from crowdqa.api.deps import SessionDep
from crowdqa.jobs import keys
from crowdqa.store import crud
from crowdqa.store.models import Project, aware
from crowdqa.store.private import server_secret
from crowdqa.store.settings import get_settings

__all__ = ["SESSION_COOKIE", "LOGIN_COOKIE", "COOKIE_PATH", "SESSION_SECONDS", "DashboardSession",
           "SignInRequired", "CsrfError", "new_session_cookie", "read_session", "end_session", "check_csrf",
           "DashSessionDep", "check_same_origin", "cookie_secure"]

SESSION_COOKIE = "crowdqa_session"
LOGIN_COOKIE = "crowdqa_login"
COOKIE_PATH = "/ui"
SESSION_SECONDS = 8 * 3600
_VERSION = "v2"


class SignInRequired(Exception):
    """No valid session: the page answers with a redirect to the sign-in form."""


class CsrfError(Exception):
    """A form without the session's CSRF token, or from another origin."""


@dataclass(frozen=True)
class DashboardSession:
    """A signed-in browser: its project and the CSRF token its forms must send back."""

    project: Project
    key_prefix: str
    csrf: str


def _mac(secret: bytes, *parts: str) -> str:
    return hmac.new(secret, "|".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()


def _secret() -> bytes:
    return server_secret(get_settings().data_dir)


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def _token_of(cookie: str | None, secret: bytes) -> str | None:
    """The session token of a well-formed cookie whose MAC is the server's, else None."""
    if not cookie or len(cookie) > 200 or not cookie.isascii():
        return None
    parts = cookie.split(".")
    if len(parts) != 3 or parts[0] != _VERSION:
        return None
    _, token, mac = parts
    return token if hmac.compare_digest(mac, _mac(secret, "session", token)) else None


def new_session_cookie(*, session: Session, key: str, now: float | None = None) -> tuple[str, Project]:
    """Sign in with an API key: record a session; return its cookie value and the key's project.

    Raises :class:`~crowdqa.jobs.errors.KeyRefusedError` (its message says why) for an unknown or
    expired key. The session ends after :data:`SESSION_SECONDS` or when the key expires, if sooner.
    """
    moment = time.time() if now is None else now
    row, project = keys.check_key(session=session, key=key, now=datetime.fromtimestamp(moment, UTC))
    ends = datetime.fromtimestamp(moment + SESSION_SECONDS, UTC)
    if row.expires_at is not None:
        ends = min(ends, aware(row.expires_at))
    token = secrets.token_urlsafe(32)
    crud.create_web_session(session=session, token_hash=_token_hash(token), key_id=row.id, expires_at=ends)
    return ".".join((_VERSION, token, _mac(_secret(), "session", token))), project


def read_session(*, session: Session, cookie: str | None, now: float | None = None) -> DashboardSession | None:
    """The session a cookie value stands for, or None (malformed, forged, ended, or its key revoked or expired)."""
    secret = _secret()
    token = _token_of(cookie, secret)
    if token is None:
        return None
    found = crud.get_web_session(session=session, token_hash=_token_hash(token))
    if found is None:
        return None
    row, key = found
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    if aware(row.expires_at) <= moment or crud.key_expired(key, now=moment):
        return None
    project = crud.get_project(session=session, project_id=key.project_id)
    if project is None:
        return None
    return DashboardSession(project=project, key_prefix=key.prefix, csrf=_mac(secret, "csrf", token))


def end_session(*, session: Session, cookie: str | None) -> bool:
    """Sign out: delete the session of this cookie, so the cookie opens nothing again; True if it existed."""
    token = _token_of(cookie, _secret())
    return token is not None and crud.delete_web_session(session=session, token_hash=_token_hash(token))


def cookie_secure(request: Request) -> bool:
    """Whether the dashboard's cookies get ``Secure``: https as seen (or forwarded by a trusted proxy), or forced."""
    return request.url.scheme == "https" or get_settings().cookie_secure


def check_same_origin(request: Request) -> None:
    """Refuse a state-changing request whose Origin (or Referer) names another site."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if origin is None or origin == "null":
        if origin == "null":
            raise CsrfError("the form was sent from an opaque origin")
        return  # old browsers send neither; the CSRF token still has to match
    from urllib.parse import urlsplit

    seen = urlsplit(origin)
    if (seen.scheme, seen.netloc) != (request.url.scheme, request.url.netloc):
        raise CsrfError("the form was sent from another site")


def check_csrf(request: Request, dash: DashboardSession, token: str | None) -> None:
    """Refuse a form whose CSRF token is not this session's, or that came from another origin."""
    check_same_origin(request)
    if not token or not hmac.compare_digest(token, dash.csrf):
        raise CsrfError("the form's CSRF token is missing or stale; reload the page and try again")


def get_dash_session(request: Request, session: SessionDep) -> DashboardSession:
    """The signed-in session of this request; SignInRequired (a redirect to sign in) otherwise."""
    dash = read_session(session=session, cookie=request.cookies.get(SESSION_COOKIE))
    if dash is None:
        raise SignInRequired()
    return dash


DashSessionDep = Annotated[DashboardSession, Depends(get_dash_session)]
