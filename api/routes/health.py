"""Health: is the database reachable, is the queue reachable (no key needed)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy import text

from api.deps import QueueDep, SessionDep, SettingsDep
from jobs.queue import queue_available

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str
    database: bool
    queue: bool
    embedded: bool


@router.get("/health")
def health(session: SessionDep, queue: QueueDep, settings: SettingsDep) -> Health:
    """Report whether the database and the job queue answer."""
    session.exec(text("SELECT 1"))
    up = queue_available(queue)
    return Health(status="ok" if up else "degraded", database=True, queue=up, embedded=settings.embedded)
