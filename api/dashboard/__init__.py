"""The web dashboard inside ``crowdqa serve``: server-rendered pages under ``/ui`` (``/`` for browsers).

A third entry point beside the API and the CLI: its handlers parse forms and query strings, call
the same use cases as the API (``crowdqa.jobs``: uploads, service, exports, review, blocklist, results; rows
through ``crowdqa.store.crud``) and render Jinja2 templates shipped in this package; charts are plain SVG
and the one script (live job progress) is a static file, so every page runs under a Content-Security-Policy
without ``'unsafe-inline'``.
See :mod:`crowdqa.api.dashboard.auth` for sign-in and CSRF.
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from crowdqa.api.dashboard import (  # noqa: F401  (register their pages on the router)
    label_studio,
    predictions,
    report,
    review,
    routing,
)
from crowdqa.api.dashboard.auth import CsrfError, SignInRequired
from crowdqa.api.dashboard.errors import error_page, install_error_pages, is_dashboard_path
from crowdqa.api.dashboard.pages import router
from crowdqa.api.dashboard.web import PREFIX, SECURITY_HEADERS, PageError

__all__ = ["install", "router"]


class DashboardMiddleware:
    """Send browsers asking for ``/`` to the dashboard (API clients keep their JSON there), and give every
    dashboard response the security headers."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if path == "/" and scope.get("method") in ("GET", "HEAD"):
            accept = dict(scope.get("headers") or []).get(b"accept", b"").decode("latin-1").lower()
            if "text/html" in accept:
                await RedirectResponse(PREFIX + "/", status_code=303)(scope, receive, send)
                return
        if not is_dashboard_path(path):
            await self.app(scope, receive, send)
            return

        async def secured(message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.decode("latin-1").lower() not in {h.lower() for h in SECURITY_HEADERS}]
                headers += [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, secured)


def install(app: FastAPI) -> None:
    """Mount the dashboard on the app: its pages, its static files and its error pages (:mod:`.errors`: install
    it after the API's error handlers)."""
    app.include_router(router)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=str(files("crowdqa.api.dashboard") / "static")),
              name="dashboard-static")
    app.add_middleware(DashboardMiddleware)

    @app.exception_handler(SignInRequired)
    async def _sign_in(request: Request, _: SignInRequired):
        return RedirectResponse(f"{PREFIX}/signin", status_code=303)

    install_error_pages(app)  # the API's handlers answer a page at a dashboard address

    @app.exception_handler(CsrfError)
    async def _csrf(request: Request, exc: CsrfError):
        return error_page(request, 403, str(exc))

    @app.exception_handler(PageError)
    async def _page(request: Request, exc: PageError):
        return error_page(request, exc.status, exc.detail)
