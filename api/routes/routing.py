"""Routing: which documents of a finished job the experts should label next (``crowdqa route``'s job action)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from crowdqa.api.deps import OwnedJobDep, SettingsDep
from crowdqa.api.errors import problem_responses
from crowdqa.api.openapi import download_response
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.ingest.formats import ROUTING_EXPORTS
from crowdqa.jobs.routing import RoutingOptions, route_job, routing_bytes
from crowdqa.store.models import RoutingPublic

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=StrictJSONRoute)

#: Download formats: media type and file suffix.
DOWNLOADS: dict[str, tuple[str, str]] = {
    "csv": ("text/csv; charset=utf-8", "-routing.csv"),
    "label-studio": ("application/json", "-routing-label-studio.json"),
    "doccano": ("application/x-ndjson", "-routing-doccano.jsonl"),
    "spans-jsonl": ("application/x-ndjson", "-routing.jsonl"),
}


Budget = Annotated[int, Query(ge=1, le=1_000_000, description="Documents to rank (a whole number >= 1).")]
HalfWidth = Annotated[float, Query(gt=0, le=0.5, description="SLiCE's target half-width of every interval; "
                                                             "narrower intervals gain nothing.")]
WorkerWeight = Annotated[float, Query(ge=0, le=1e6, description="Weight of the crowd workers' intervals together, "
                                                                "against the aggregate's.")]
CorrectionWeight = Annotated[float, Query(ge=0, le=1e6, description="Weight of the aggregate's expected errors the "
                                                                    "experts would correct.")]
LinkTemplate = Annotated[str | None, Query(max_length=2000, description="Adds a link per document: the template "
                                                                        "with {doc_id} replaced.")]


@router.get("/{job_id}/routing", responses=problem_responses(404, 409))
def get_routing(job: OwnedJobDep, settings: SettingsDep, budget: Budget, half_width: HalfWidth = 0.05,
                worker_weight: WorkerWeight = 1.0, correction_weight: CorrectionWeight = 1.0,
                link_template: LinkTemplate = None) -> RoutingPublic:
    """Rank the finished job's documents without expert labels for the experts (see crowdqa.quality.routing)."""
    options = RoutingOptions(budget=budget, half_width=half_width, worker_weight=worker_weight,
                             correction_weight=correction_weight, link_template=link_template)
    routed, _, _ = route_job(settings=settings, job=job, options=options)
    return RoutingPublic.model_validate(routed.summary())


@router.get(
    "/{job_id}/routing/export",
    response_class=Response,
    responses={**problem_responses(404, 409),
               200: download_response("The routing list as a file.", *(m for m, _ in DOWNLOADS.values()))},
)
def export_routing(
    job: OwnedJobDep, settings: SettingsDep, budget: Budget, half_width: HalfWidth = 0.05,
    worker_weight: WorkerWeight = 1.0, correction_weight: CorrectionWeight = 1.0, link_template: LinkTemplate = None,
    format: Annotated[Literal[ROUTING_EXPORTS], Query(  # type: ignore[valid-type]
        description="csv: the task CSV for Mechanical Turk / Upwork (doc_id, text, link, rank, reason, score, "
                    "tokens); label-studio / doccano: import tasks whose export reads back as the expert upload "
                    "(id column doc_id; Label Studio gets the aggregate as a prediction); spans-jsonl: the "
                    "aggregate's spans of the routed documents.")] = "csv",
) -> Response:
    """The routing list of a finished job as a file: the task CSV or annotation tasks for the experts."""
    options = RoutingOptions(budget=budget, half_width=half_width, worker_weight=worker_weight,
                             correction_weight=correction_weight, link_template=link_template)
    routed, corpus, labels = route_job(settings=settings, job=job, options=options)
    media, suffix = DOWNLOADS[format]
    return Response(routing_bytes(routed, corpus, labels, format=format), media_type=media,
                    headers={"Content-Disposition": f'attachment; filename="{job.id}{suffix}"'})
