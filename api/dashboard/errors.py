"""The dashboard's error pages: an error at a ``/ui`` address answers an HTML page in the dashboard's style.

A mistyped address is a 404 page ("no such page", a link home), an unexpected error a 500 page (an apology and
the request id the server log names), any other refusal a page with its status and reason. Every API path keeps
its problem+json: the API's exception handlers (:mod:`crowdqa.api.errors`) still decide the status, the words
and the headers, and :func:`install_error_pages` wraps each so that, for a dashboard address only, the problem
document it made is shown as a page.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from crowdqa.api.dashboard.web import PREFIX, render
from crowdqa.api.errors import PROBLEM_JSON

__all__ = ["install_error_pages", "error_page", "is_dashboard_path"]

#: Headers of a problem response that a page keeps (the others describe the JSON body).
_KEPT_HEADERS = ("retry-after", "allow")


def is_dashboard_path(path: str) -> bool:
    """True for the dashboard's addresses (``/ui`` and below)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


def error_page(request: Request, status: int, detail: str | None = None, *,
               headers: dict[str, str] | None = None) -> HTMLResponse:
    """The dashboard's page for an error ``status`` (its ``detail`` shown as one line, except a 500's, which
    shows the request id instead: the server log has the rest)."""
    request_id = getattr(request.state, "request_id", None)
    page = render(request, "error.html", {"status": status, "reason": HTTPStatus(status).phrase,
                                          "detail": detail, "path": request.url.path, "request_id": request_id},
                  status_code=status)
    page.headers.update(headers or {})
    return page


def _as_page(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler``, answering an HTML page instead of its problem document at a dashboard address."""

    async def handle(request: Request, exc: Exception) -> Response:
        if inspect.iscoroutinefunction(handler):
            response = await handler(request, exc)
        else:
            response = await run_in_threadpool(handler, request, exc)
        if (not isinstance(response, Response) or response.media_type != PROBLEM_JSON
                or not is_dashboard_path(request.url.path)):
            return response
        problem = json.loads(bytes(response.body))
        kept = {k: v for k, v in response.headers.items() if k.lower() in _KEPT_HEADERS}
        return error_page(request, response.status_code, problem.get("detail"), headers=kept)

    return handle


def install_error_pages(app: FastAPI) -> None:
    """Make every exception handler of ``app`` installed so far answer a page at a dashboard address."""
    for exc_class, handler in list(app.exception_handlers.items()):
        app.exception_handlers[exc_class] = _as_page(handler)
