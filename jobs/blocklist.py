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

__all__ = ["block_workers", "block_rows", "read_block_list", "unblock_worker", "list_blocked", "project_named"]


def block_workers(*, session: Session, project_id: str, annotators: list[str], reason: str = ""
                  ) -> list[tuple[BlockedWorker, bool]]:
    """Put annotators on the project's block list (their later jobs fit without them; they are still scored);
    each row and whether it is new. A worker blocked again keeps one row, with the new reason."""
    rows = [BlockedWorkerCreate(annotator=a, reason=reason) for a in annotators]  # all checked before any write
    return [crud.block_worker(session=session, project_id=project_id, worker_in=r) for r in rows]


def block_rows(*, session: Session, project_id: str, rows: list[dict[str, str]]
               ) -> list[tuple[BlockedWorker, bool]]:
    """Put a block list (``annotator`` and ``reason`` of each row, as a review writes it) on the project's block
    list; each row and whether it is new."""
    checked = [BlockedWorkerCreate(annotator=r["annotator"], reason=r.get("reason") or "") for r in rows]
    return [crud.block_worker(session=session, project_id=project_id, worker_in=r) for r in checked]


def read_block_list(data: bytes, *, source: str) -> list[dict[str, str]]:
    """The rows of a block-list CSV (``annotator[,reason]`` with a header, as ``crowdqa review --block-list``
    writes it; cells written safe for spreadsheets are read back as written); ValueError naming the file and
    line of a row without an annotator."""
    import csv
    import io

    from crowdqa.ingest.writers import csv_unescape

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{source}: not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip().lower() for h in next(reader, [])]
    if "annotator" not in header:
        raise ValueError(f"{source}:1: a block list's header names an 'annotator' column (and 'reason'), found "
                         f"{', '.join(header) or 'nothing'}")
    at, why = header.index("annotator"), header.index("reason") if "reason" in header else None
    rows = []
    for values in reader:
        if not any(v.strip() for v in values):
            continue
        annotator = csv_unescape(values[at]).strip() if at < len(values) else ""
        if not annotator:
            raise ValueError(f"{source}:{reader.line_num}: no annotator")
        reason = csv_unescape(values[why]).strip() if why is not None and why < len(values) else ""
        rows.append({"annotator": annotator, "reason": reason})
    return rows


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
