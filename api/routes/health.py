"""Health: is the database reachable, is the queue reachable (no key needed)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel

from crowdqa.api.deps import QueueDep, SessionDep, SettingsDep
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.jobs.queue import queue_available
from crowdqa.store import crud

router = APIRouter(tags=["health"], route_class=StrictJSONRoute)


class Health(BaseModel):
    status: str
    database: bool
    queue: bool
    embedded: bool


_DEGRADED = {503: {"model": Health, "description": "Degraded: the database or the job queue does not answer."}}


@router.get("/health", responses=_DEGRADED)
def health(session: SessionDep, queue: QueueDep, settings: SettingsDep, response: Response) -> Health:
    """Report whether the database and the job queue answer: 200 when both do, 503 when degraded."""
    db = crud.database_available(session=session)
    up = queue_available(queue)
    if not (up and db):
        response.status_code = 503
    return Health(status="ok" if up and db else "degraded", database=db, queue=up, embedded=settings.embedded)
