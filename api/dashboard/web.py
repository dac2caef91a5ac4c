"""Templates, security headers and the small pieces every dashboard page shares."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from jinja2 import Environment, PackageLoader, StrictUndefined

from crowdqa.api.dashboard.auth import DashboardSession

__all__ = ["PREFIX", "CSP", "SECURITY_HEADERS", "PageError", "render", "redirect", "fmt", "fmt_count", "pct"]

PREFIX = "/ui"

#: Nothing inline, nothing from elsewhere: scripts, styles and images come from this origin only,
#: forms post only here, and no other site may frame a page.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class PageError(Exception):
    """A page that cannot be shown (no such dataset in this project, a job not finished): an HTML error page."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def fmt(value: Any, digits: int = 3) -> str:
    """A score for people: ``0.972``, or ``-`` for a missing one."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_count(value: Any) -> str:
    """A count, or a statistic of counts (a median of annotators per document): ``5`` for ``5.0``, else as
    :func:`fmt` (``4.500``)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else fmt(value)


def pct(value: Any) -> str:
    """A share as a percentage (``-`` when missing)."""
    return "-" if value is None else f"{100 * float(value):.1f}%"


def _interval(block: Any, name: str) -> str:
    ci = block.get(f"{name}_ci" if name else "ci") if isinstance(block, dict) else None
    return f"{ci[0]:.3f}-{ci[1]:.3f}" if isinstance(ci, list | tuple) and len(ci) == 2 else "-"


_env = Environment(loader=PackageLoader("crowdqa.api.dashboard", "templates"), autoescape=True,
                   undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_env.filters.update(fmt=fmt, fmt_count=fmt_count, pct=pct, interval=_interval, q=lambda s: quote(str(s), safe=""))
templates = Jinja2Templates(env=_env)


def render(request: Request, name: str, context: dict[str, Any], *, dash: DashboardSession | None = None,
           status_code: int = 200) -> HTMLResponse:
    """Render a page; every page gets the prefix, the signed-in project and its CSRF token."""
    base = {"prefix": PREFIX, "dash": dash, "csrf": dash.csrf if dash else "", "error": None,
            "standalone": False}
    return templates.TemplateResponse(request, name, {**base, **context}, status_code=status_code)


def redirect(path: str) -> RedirectResponse:
    """303 See Other to a dashboard path (after a form post: the reload does not post again)."""
    return RedirectResponse(PREFIX + path, status_code=303)
