"""Dashboard page of a finished job's routing list: which documents the experts should label next.

It parses the query string, calls the routing use case (:mod:`crowdqa.jobs.routing`, the one the API's
``GET /jobs/{id}/routing`` calls) and renders the list with links to each document and the downloads.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response

from crowdqa.api.dashboard.auth import DashSessionDep
from crowdqa.api.dashboard.pages import job_dataset, owned_job, router
from crowdqa.api.dashboard.web import PageError, render
from crowdqa.api.deps import SessionDep, SettingsDep
from crowdqa.ingest.formats import ROUTING_EXPORTS
from crowdqa.jobs.errors import JobNotFinishedError
from crowdqa.jobs.routing import RoutingOptions, route_job, routing_bytes

__all__ = ["routing_page", "download_routing"]

#: Largest budget the page lists (the API and the CLI take any).
MAX_BUDGET = 5000
_TYPES = {"csv": ("text/csv; charset=utf-8", "-routing.csv"),
          "label-studio": ("application/json", "-routing-label-studio.json"),
          "doccano": ("application/x-ndjson", "-routing-doccano.jsonl"),
          "spans-jsonl": ("application/x-ndjson", "-routing.jsonl")}


def _options(budget: str, half_width: str, worker_weight: str, correction_weight: str) -> RoutingOptions:
    """The form's values as routing options; a PageError (422) naming the field otherwise."""
    from crowdqa.jobs.routing import parse_budget

    try:
        n = parse_budget(budget)
        if n > MAX_BUDGET:
            raise ValueError(f"budget must be at most {MAX_BUDGET} here (the API and crowdqa route take more)")
        values = {"half_width": half_width, "worker_weight": worker_weight, "correction_weight": correction_weight}
        numbers = {k: float(v) for k, v in values.items()}
        bad = next((k for k, v in numbers.items() if not math.isfinite(v)), None)
        if bad is not None:
            raise ValueError(f"{bad} must be a finite number, found {values[bad]!r}")
        return RoutingOptions(budget=n, **numbers)
    except ValueError as exc:
        raise PageError(422, str(exc)) from None


Text = Annotated[str, Query(max_length=40)]


def _route(session, dash, settings, job_id: str, options: RoutingOptions):
    job = owned_job(session, dash, job_id)
    try:
        return job, *route_job(settings=settings, job=job, options=options)
    except JobNotFinishedError as exc:
        raise PageError(409, str(exc)) from None


@router.get("/jobs/{job_id}/routing")
def routing_page(request: Request, job_id: str, session: SessionDep, settings: SettingsDep, dash: DashSessionDep,
                 budget: Text = "20", half_width: Text = "0.05", worker_weight: Text = "1",
                 correction_weight: Text = "1") -> HTMLResponse:
    """The documents without expert labels, ranked for the experts, with why and the downloads."""
    options = _options(budget, half_width, worker_weight, correction_weight)
    job, routed, corpus, _ = _route(session, dash, settings, job_id, options)
    query = {"budget": budget, "half_width": half_width, "worker_weight": worker_weight,
             "correction_weight": correction_weight}
    context: dict[str, Any] = {"job": job, "dataset": job_dataset(session, dash, job), "routed": routed,
                               "rows": routed.rows, "query": query, "exports": ROUTING_EXPORTS,
                               "has_outside": corpus.has_outside}
    return render(request, "routing.html", context, dash=dash)


@router.get("/jobs/{job_id}/routing/download")
def download_routing(job_id: str, session: SessionDep, settings: SettingsDep, dash: DashSessionDep,
                     format: Annotated[Literal[ROUTING_EXPORTS], Query()] = "csv",  # type: ignore[valid-type]
                     budget: Text = "20", half_width: Text = "0.05", worker_weight: Text = "1",
                     correction_weight: Text = "1") -> Response:
    """The routing list as the task CSV or as annotation tasks (the API's formats)."""
    options = _options(budget, half_width, worker_weight, correction_weight)
    job, routed, corpus, labels = _route(session, dash, settings, job_id, options)
    media, suffix = _TYPES[format]
    return Response(routing_bytes(routed, corpus, labels, format=format), media_type=media,
                    headers={"Content-Disposition": f'attachment; filename="{job.id}{suffix}"'})
