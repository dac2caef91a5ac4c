"""Dashboard sign-in: an API key becomes a signed, HttpOnly, SameSite=Strict session cookie.

The cookie names the key (its public prefix), an expiry and a random nonce, signed with
HMAC-SHA256 under the key's stored hash, a secret the server holds and the browser never
sees. So a session:

* works in every API process (no server-side session table, no shared secret to configure);
* belongs to one key, hence one project: every page looks rows up with that project's id,
  exactly as the API does with a Bearer key, so a cookie never reaches another project;
* dies with its key (a revoked key has no row to verify against) or at its expiry.

Every form carries a CSRF token derived from the same nonce (synchronizer token); the
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
from typing import Annotated

from fastapi import Depends, Request
from sqlmodel import Session

from crowdqa.api.deps import SessionDep
from crowdqa.store import crud
from crowdqa.store.models import Project

__all__ = ["SESSION_COOKIE", "LOGIN_COOKIE", "COOKIE_PATH", "SESSION_SECONDS", "DashboardSession",
           "SignInRequired", "CsrfError", "new_session_cookie", "read_session", "check_csrf", "DashSessionDep",
           "check_same_origin"]

SESSION_COOKIE = "crowdqa_session"
LOGIN_COOKIE = "crowdqa_login"
COOKIE_PATH = "/ui"
SESSION_SECONDS = 8 * 3600
_VERSION = "v1"


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


def _mac(secret: str, *parts: str) -> str:
    return hmac.new(secret.encode("ascii"), "|".join(parts).encode("utf-8"), hashlib.sha256).hexdigest()


def new_session_cookie(*, session: Session, key: str, now: float | None = None) -> tuple[str, Project] | None:
    """A session cookie value for a valid API key (and its project), or None for an unknown key."""
    project = crud.authenticate(session=session, key=key.strip())
    if project is None:
        return None
    prefix = key.strip().split("_", 2)[1]
    row = crud.get_api_key(session=session, prefix=prefix)
    if row is None:
        return None
    expires = str(int((time.time() if now is None else now) + SESSION_SECONDS))
    nonce = secrets.token_urlsafe(18)
    return ".".join((_VERSION, prefix, expires, nonce, _mac(row.key_hash, "session", prefix, expires, nonce))), project


def read_session(*, session: Session, cookie: str | None, now: float | None = None) -> DashboardSession | None:
    """The session a cookie value stands for, or None (malformed, forged, expired, or its key revoked)."""
    if not cookie or len(cookie) > 300:
        return None
    parts = cookie.split(".")
    if len(parts) != 5 or parts[0] != _VERSION or not parts[2].isdigit():
        return None
    _, prefix, expires, nonce, mac = parts
    if int(expires) < (time.time() if now is None else now):
        return None
    row = crud.get_api_key(session=session, prefix=prefix)
    if row is None or not hmac.compare_digest(mac, _mac(row.key_hash, "session", prefix, expires, nonce)):
        return None
    project = crud.get_project(session=session, project_id=row.project_id)
    if project is None:
        return None
    return DashboardSession(project=project, key_prefix=prefix, csrf=_mac(row.key_hash, "csrf", prefix, nonce))


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
