"""A project's block list: the workers whose labels the project's later jobs fit without.

The use cases behind ``crowdqa blocked``, the ``/blocked-workers`` routes and the dashboard's Block buttons. A
blocked worker is still scored in the reports and marked there; a job reads the list as it starts
(:func:`crowdqa.store.crud.blocked_annotators`), and so does the review of a stored job
(:func:`crowdqa.jobs.exports.review_job`) or of a file with ``crowdqa review --project``. This module reads and
writes rows only, so ``crowdqa blocked`` loads none of the review.
"""

from __future__ import annotations

from sqlmodel import Session

from crowdqa.store import crud
from crowdqa.store.models import BlockedWorker, BlockedWorkerCreate, Project

__all__ = ["block_workers", "unblock_worker", "list_blocked", "project_named"]


def block_workers(*, session: Session, project_id: str, annotators: list[str], reason: str = ""
                  ) -> list[tuple[BlockedWorker, bool]]:
    """Put annotators on the project's block list (their later jobs fit without them; they are still scored);
    each row and whether it is new. A worker blocked again keeps one row, with the new reason."""
    rows = [BlockedWorkerCreate(annotator=a, reason=reason) for a in annotators]  # all checked before any write
    return [crud.block_worker(session=session, project_id=project_id, worker_in=r) for r in rows]


def project_named(*, session: Session, name: str) -> Project:
    """The project named ``name``; LookupError when there is none (the command line names projects)."""
    project = crud.find_project(session=session, name=name)
    if project is None:
        raise LookupError(f"no project named {name!r} here")
    return project


def unblock_worker(*, session: Session, project_id: str, annotator: str) -> None:
    """Take an annotator off the project's block list; LookupError when it is not on it."""
    if not crud.unblock_worker(session=session, project_id=project_id, annotator=annotator):
        raise LookupError(f"{annotator!r} is not on this project's block list")


def list_blocked(*, session: Session, project_id: str, offset: int = 0, limit: int = 100
                 ) -> tuple[list[BlockedWorker], int]:
    """One page of the project's block list (by annotator id) and its length."""
    return crud.list_blocked_workers(session=session, project_id=project_id, offset=offset, limit=limit)
