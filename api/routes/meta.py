"""What the service is: ``/`` and ``/api/v1`` describe it, ``/docs`` serves Swagger UI from the package,
``/favicon.ico`` its icon."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from crowdqa.api.strict_json import StrictJSONRoute

__all__ = ["install_docs", "index_router"]

#: Swagger UI and ReDoc assets shipped in a Python package, so /docs works without the internet.
_ASSETS = "/static/docs"

index_router = APIRouter(include_in_schema=False, route_class=StrictJSONRoute)

#: The service's icon (a white tick on the dashboard's blue), an SVG small enough to need no file.
ICON_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" '
            'fill="#2b6cb0"/><path d="M4 8.5l2.5 2.5L12 5" stroke="#fff" stroke-width="2" fill="none"/></svg>')


def _endpoints(app: FastAPI, prefix: str) -> list[dict[str, Any]]:
    """The documented operations under ``prefix``, from the OpenAPI document (one source of truth)."""
    out = []
    for path, operations in app.openapi()["paths"].items():
        if path.startswith(prefix):
            for method, op in operations.items():
                out.append({"method": method.upper(), "path": path, "summary": op.get("summary", "")})
    return out


@index_router.get("/")
def root(request: Request) -> dict[str, Any]:
    """Where things are."""
    app = request.app
    return {"name": app.title, "version": app.version, "summary": app.summary, "api": "/api/v1",
            "docs": "/docs", "openapi": app.openapi_url, "health": "/api/v1/health", "dashboard": "/ui/"}


@index_router.get("/favicon.ico")
def favicon() -> Response:
    """The icon browsers ask for at ``/favicon.ico`` (and dashboard pages link to), an SVG."""
    return Response(ICON_SVG, media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"})


@index_router.get("/api/v1")
def api_index(request: Request) -> dict[str, Any]:
    """The API's endpoints (method, path, summary); every one but health needs ``Authorization: Bearer``."""
    app = request.app
    return {"name": app.title, "version": app.version, "docs": "/docs", "openapi": app.openapi_url,
            "auth": "Authorization: Bearer <key> (crowdqa keys create --project NAME)",
            "endpoints": _endpoints(app, "/api/v1")}


def install_docs(app: FastAPI) -> None:
    """Serve /docs (Swagger UI) and /redoc from assets inside the installed package, not a CDN."""
    static = files("fastapi_offline") / "static"
    app.mount(_ASSETS, StaticFiles(directory=str(static)), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title=f"{app.title} - API",
                                   oauth2_redirect_url="/docs/oauth2-redirect",
                                   swagger_js_url=f"{_ASSETS}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{_ASSETS}/swagger-ui.css",
                                   swagger_favicon_url=f"{_ASSETS}/favicon.png")

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    def swagger_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=app.openapi_url, title=f"{app.title} - API",
                              redoc_js_url=f"{_ASSETS}/redoc.standalone.js", redoc_favicon_url=f"{_ASSETS}/favicon.png")
