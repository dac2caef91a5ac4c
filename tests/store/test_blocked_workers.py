"""The per-project block list in the store (SQLite and a real PostgreSQL)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from crowdqa.store import crud
from crowdqa.store.models import BlockedWorkerCreate


def test_block_list_is_per_project_and_idempotent(session):
    a = crud.create_project(session=session, name="a").id
    b = crud.create_project(session=session, name="b").id
    row, created = crud.block_worker(session=session, project_id=a,
                                     worker_in=BlockedWorkerCreate(annotator="mturk:W2", reason="spam"))
    assert created and row.reason == "spam"
    row, created = crud.block_worker(session=session, project_id=a,
                                     worker_in=BlockedWorkerCreate(annotator="mturk:W2", reason="spam, twice"))
    assert not created and row.reason == "spam, twice"
    crud.block_worker(session=session, project_id=a, worker_in=BlockedWorkerCreate(annotator="mturk:W1"))
    crud.block_worker(session=session, project_id=b, worker_in=BlockedWorkerCreate(annotator="mturk:W9"))
    rows, count = crud.list_blocked_workers(session=session, project_id=a)
    assert count == 2 and [r.annotator for r in rows] == ["mturk:W1", "mturk:W2"]
    assert crud.blocked_annotators(session=session, project_id=b) == frozenset({"mturk:W9"})
    assert crud.unblock_worker(session=session, project_id=b, annotator="mturk:W2") is False  # a's, not b's
    assert crud.unblock_worker(session=session, project_id=a, annotator="mturk:W2") is True
    assert crud.blocked_annotators(session=session, project_id=a) == frozenset({"mturk:W1"})


@pytest.mark.parametrize("body", [{"annotator": ""}, {"annotator": "a\nb"}, {"annotator": "w", "extra": 1},
                                  {"annotator": "x" * 301}])
def test_bad_block_requests_are_refused(body):
    with pytest.raises(ValidationError):
        BlockedWorkerCreate.model_validate(body)
