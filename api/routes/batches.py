"""New batches: download a finished job's fitted model (for ``crowdqa aggregate --from-model``).

A job starts from an earlier job's model with ``from_job`` (and ``frozen``) in ``POST /datasets/{id}/jobs``.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from crowdqa.api.deps import OwnedJobDep, SettingsDep
from crowdqa.api.errors import problem_responses
from crowdqa.api.openapi import download_response
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.jobs.batches import job_model, model_bytes

router = APIRouter(prefix="/jobs", tags=["jobs"], route_class=StrictJSONRoute)


@router.get(
    "/{job_id}/model",
    response_class=Response,
    responses={**problem_responses(404, 409),
               200: download_response("The fitted model as .npz (plain arrays; annotators by id).",
                                      "application/octet-stream")},
)
def get_model(job: OwnedJobDep, settings: SettingsDep) -> Response:
    """The finished job's fitted model: what a later batch starts from (``from_job``, ``--from-model``)."""
    return Response(model_bytes(job_model(settings, job)), media_type="application/octet-stream",
                    headers={"Content-Disposition": f'attachment; filename="{job.id}-model.npz"'})
