"""The request gate: the caller's credential and the body's size are checked before a body is read.

FastAPI reads and parses a request's body before it runs the route's dependencies, so the key check
of :func:`crowdqa.api.deps.get_current_project` alone came after a whole body had been received (an
unauthenticated 100 MB JSON body raised the server to 1.28 GB before its 401, issue 35). This ASGI
middleware runs first, on the request line and headers only:

* ``/api/v1``: every path but the public ones (those the OpenAPI document lists without a security
  requirement, i.e. ``/health``) needs ``Authorization: Bearer <key>``, checked by the routes' own
  :func:`crowdqa.api.deps.authenticate_client` (expiry and the throttling of failures included); without
  a valid key the answer is the route's own 401 (or 429) problem+json, sent without reading the body;
* ``/ui``: a request that may carry a body (any method but GET, HEAD and OPTIONS) needs a valid session
  cookie (:func:`crowdqa.api.dashboard.auth.read_session`), except the sign-in form; without one the
  answer is the dashboard's redirect to the sign-in page;
* every request: its body may hold at most ``CROWDQA_MAX_UPLOAD_BYTES`` (plus room for the form's other
  fields) on an upload route and ``CROWDQA_MAX_BODY_BYTES`` (1 MiB) on any other; a larger
  ``Content-Length`` is answered 413 at once, and a body sent without one is cut off (413) as soon as
  it passes the limit.

A refusal the gate sends itself (the 401 or 429 of a key, the 413 of a ``Content-Length``) is problem+json,
and at a ``/ui`` address the dashboard's error page (:func:`crowdqa.api.dashboard.errors.error_page`), as the
app's own handlers answer there.

The routes still check the key themselves (the gate is a first line, not the only one), so the gate may
remember a key it found valid for :data:`KEY_MEMORY_SECONDS` (by its sha256; never a refusal): a key revoked
within that window still gets its body read once more, and its 401 from the route. When the gate did ask the
database for this request, it leaves the caller it found in the request's scope (``state``,
:data:`crowdqa.api.deps.GATE_CALLER`) and the route takes it instead of asking again: either way, every
request's key is checked against the database exactly once.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from crowdqa.api.dashboard.auth import SESSION_COOKIE, read_session
from crowdqa.api.dashboard.errors import error_page, is_dashboard_path
from crowdqa.api.dashboard.web import PREFIX as UI_PREFIX
from crowdqa.api.deps import GATE_CALLER, Caller, authenticate_client
from crowdqa.api.errors import ProblemError, problem_response
from crowdqa.api.throttle import FailureThrottle, client_address, throttle_of
from crowdqa.jobs.uploads import FORM_OVERHEAD, UploadLimits
from crowdqa.store.db import open_read_session
from crowdqa.store.errors import UploadTooLargeError
from crowdqa.store.settings import Settings, get_settings

__all__ = ["RequestGate", "API_PREFIX", "FORM_OVERHEAD", "KEY_MEMORY_SECONDS"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

API_PREFIX = "/api/v1"
_BODYLESS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Seconds the gate remembers a key it found valid (the second database lookup cost ~10 ms a request).
KEY_MEMORY_SECONDS = 2.0
_KEY_MEMORY_SIZE = 10_000
#: Dashboard paths that take a body without a session (the sign-in form).
_UI_PUBLIC = frozenset({f"{UI_PREFIX}/signin"})


def _template(path: str) -> re.Pattern[str]:
    """A regular expression for an OpenAPI path template (``/datasets/{dataset_id}`` -> one segment)."""
    return re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path)) + "$")


class _Routes:
    """Which paths are public and which take uploads, read once from the app's OpenAPI document."""

    def __init__(self, app: Any) -> None:
        public, uploads = [], [_template(f"{UI_PREFIX}/datasets/{{dataset_id}}/uploads"),
                               _template(f"{UI_PREFIX}/jobs/{{job_id}}/predictions")]
        for path, ops in app.openapi().get("paths", {}).items():
            for method, op in ops.items():
                if not path.startswith(API_PREFIX + "/"):
                    continue
                if not op.get("security"):
                    public.append((method.upper(), _template(path)))
                if "multipart/form-data" in op.get("requestBody", {}).get("content", {}):
                    uploads.append(_template(path))
        self.public, self.uploads = public, uploads

    def is_public(self, method: str, path: str) -> bool:
        return any((m == method or (m == "GET" and method == "HEAD")) and p.match(path) for m, p in self.public)

    def is_upload(self, path: str) -> bool:
        return any(p.match(path) for p in self.uploads)


def _header(scope: Scope, name: bytes) -> str | None:
    for header, value in scope.get("headers") or []:
        if header == name:
            return value.decode("latin-1")
    return None


def _cookie(scope: Scope, name: str) -> str | None:
    for part in (_header(scope, b"cookie") or "").split(";"):
        key, _, val = part.strip().partition("=")
        if key == name:
            return val
    return None


def _refused(scope: Scope, status: int, detail: str, headers: dict[str, str] | None = None) -> Response:
    """The gate's refusal: the dashboard's error page at a dashboard address, else the problem document."""
    if is_dashboard_path(scope.get("path", "")):
        return error_page(Request(scope), status, detail, headers=headers)
    return problem_response(status, detail, headers=headers)


def _authenticate(settings: Settings, authorization: str | None, client: str, throttle: FailureThrottle) -> Caller:
    """The API's own key check (expiry, throttling of failures included); ProblemError 401/429 when refused."""
    with open_read_session(settings) as session:
        return authenticate_client(authorization, session=session, client=client, throttle=throttle)


def _session_is_valid(settings: Settings, cookie: str) -> bool:
    with open_read_session(settings) as session:
        return read_session(session=session, cookie=cookie) is not None


class RequestGate:
    """ASGI middleware: authenticate, then bound the body, before the app reads a byte of it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._routes: _Routes | None = None
        self._valid_keys: dict[str, float] = {}  # sha256 of a key -> until when it is taken as valid

    async def _key_refusal(self, scope: Scope, settings: Settings):
        """The 401 (or 429) problem response for the request's ``Authorization`` header, or None when it is valid."""
        authorization = _header(scope, b"authorization")
        digest, now = hashlib.sha256((authorization or "").encode()).hexdigest(), time.monotonic()
        if self._valid_keys.get(digest, 0.0) > now:
            return None
        try:
            caller = await run_in_threadpool(_authenticate, settings, authorization, client_address(scope),
                                             throttle_of(scope["app"]))
        except ProblemError as exc:
            return _refused(scope, exc.status, exc.detail, exc.headers)
        scope.setdefault("state", {})[GATE_CALLER] = caller
        if len(self._valid_keys) >= _KEY_MEMORY_SIZE:
            self._valid_keys.clear()
        self._valid_keys[digest] = now + KEY_MEMORY_SECONDS
        return None

    def _table(self, scope: Scope) -> _Routes:
        if self._routes is None:
            self._routes = _Routes(scope["app"])
        return self._routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        settings = get_settings()
        method, path = scope.get("method", "GET"), scope.get("path", "")
        refusal = await self._refusal(scope, settings, method, path)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if self._table(scope).is_upload(path):
            limits = UploadLimits.of(settings)  # the one place an upload's limits are made
            limit, error = limits.request, UploadTooLargeError(limits.file)
        else:
            limit = settings.max_body_bytes
            error = UploadTooLargeError(limit, setting="CROWDQA_MAX_BODY_BYTES", what="the request body")
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await _refused(scope, 413, f"{error.what} exceeds the limit of {error.limit} bytes ({error.setting})")(
                scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise error
            return message

        await self.app(scope, counted, send)

    async def _refusal(self, scope: Scope, settings: Settings, method: str, path: str):
        """The response that refuses a request for want of a credential, or None to let it through."""
        if path.startswith(API_PREFIX + "/") and path != API_PREFIX + "/":  # (the index, /api/v1, is public)
            if self._table(scope).is_public(method, path):
                return None
            return await self._key_refusal(scope, settings)
        if path.startswith(UI_PREFIX + "/") and method not in _BODYLESS and path not in _UI_PUBLIC:
            cookie = _cookie(scope, SESSION_COOKIE)
            if cookie is None or not await run_in_threadpool(_session_is_valid, settings, cookie):
                return RedirectResponse(f"{UI_PREFIX}/signin", status_code=303)
        return None
