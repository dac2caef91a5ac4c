"""Store tests, each run on SQLite and on a real PostgreSQL (started by the fixtures)."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import update
from sqlmodel import Session, select

from crowdqa.store import crud
from crowdqa.store.db import init_db
from crowdqa.store.errors import SchemaVersionError
from crowdqa.store.models import (
    Annotator,
    ApiKey,
    DatasetCreate,
    Job,
    JobCreate,
    JobStatus,
    SchemaInfo,
    Upload,
    WorkerScore,
    utcnow,
)
from tests.utils.factories import report_with_workers, synthetic_corpus, worker_score


def _dataset(session, project_id, name="d", sha="a" * 64):
    ds = crud.create_dataset(session=session, project_id=project_id, dataset_in=DatasetCreate(name=name))
    ds.corpus_sha256 = sha
    session.add(ds)
    session.commit()
    return ds


def test_schema_version_recorded_and_checked(engine):
    """init_db records SCHEMA_VERSION once and refuses a database stamped with another version."""
    init_db(engine)  # idempotent
    with Session(engine) as s:
        assert len(s.exec(select(SchemaInfo)).all()) == 1
        s.exec(update(SchemaInfo).values(version=999))
        s.commit()
    with pytest.raises(SchemaVersionError, match="found 999"):
        init_db(engine)


def test_api_keys_are_hashed_and_checked(session):
    """Only sha256(key) is stored; the right key finds its project, a wrong or malformed one finds none."""
    a = crud.create_project(session=session, name="a")
    b = crud.create_project(session=session, name="b")
    key_a = crud.create_api_key(session=session, project_id=a.id)
    key_b = crud.create_api_key(session=session, project_id=b.id)
    rows = session.exec(select(ApiKey)).all()
    assert len(rows) == 2
    assert {r.key_hash for r in rows} == {hashlib.sha256(k.encode()).hexdigest() for k in (key_a, key_b)}
    assert all(key_a not in (r.key_hash, r.prefix) for r in rows)
    assert crud.authenticate(session=session, key=key_a).id == a.id
    assert crud.authenticate(session=session, key=key_b).id == b.id
    assert crud.authenticate(session=session, key=key_a[:-1] + ("x" if key_a[-1] != "x" else "y")) is None
    assert crud.authenticate(session=session, key="nonsense") is None
    assert crud.authenticate(session=session, key="cqa_" + key_a.split("_")[1] + "_") is None


def test_an_expired_key_authenticates_nothing(session):
    """Issue 35 item 6: the expiry is a stored, timezone-aware moment, compared the same on SQLite and PostgreSQL."""
    p = crud.create_project(session=session, name="a")
    end = utcnow() + timedelta(hours=1)
    key = crud.create_api_key(session=session, project_id=p.id, expires_at=end)
    assert crud.authenticate(session=session, key=key).id == p.id
    assert crud.authenticate(session=session, key=key, now=end - timedelta(seconds=1)).id == p.id
    assert crud.authenticate(session=session, key=key, now=end) is None
    row = crud.find_api_key(session=session, key=key)
    assert row.admin is False and crud.key_expired(row, now=end + timedelta(days=1))


def test_datasets_are_per_project_and_paged(session):
    """A project lists and reads only its datasets; pages and counts are exact."""
    a = crud.create_project(session=session, name="a")
    b = crud.create_project(session=session, name="b")
    made = [_dataset(session, a.id, name=f"d{i}") for i in range(5)]
    other = _dataset(session, b.id, name="theirs")
    page, count = crud.list_datasets(session=session, project_id=a.id, offset=1, limit=2)
    assert count == 5
    assert [d.name for d in page] == ["d1", "d2"]
    assert crud.get_dataset(session=session, project_id=a.id, dataset_id=other.id) is None
    assert crud.get_dataset(session=session, project_id=b.id, dataset_id=other.id).name == "theirs"
    assert crud.get_dataset(session=session, project_id=a.id, dataset_id=made[0].id).name == "d0"


def test_annotators_and_uploads(session):
    """The annotator rows count documents and tokens per annotator (from the corpus index, crowdqa.ingest.index)."""
    from crowdqa.ingest.index import annotator_counts, index_corpus

    p = crud.create_project(session=session, name="p")
    ds = _dataset(session, p.id)
    corpus = synthetic_corpus(n_docs=4, doc_len=5, n_crowd=3, crowd_per_doc=2, seed=1)
    up = Upload(dataset_id=ds.id, filename="f.jsonl", format="spans-jsonl", role="crowd", size=3, sha256="b" * 64,
                raw_path="uploads/x", corpus_sha256="c" * 64)
    crud.replace_uploads(session=session, dataset=ds, removed=[], added=[up], corpus_sha256="d" * 64,
                         summary={"documents": 4}, annotators=annotator_counts([index_corpus(corpus)]))
    rows = {a.external_id: a for a in session.exec(select(Annotator).where(Annotator.dataset_id == ds.id)).all()}
    assert set(rows) == set(corpus.worker_ids)
    for w, wid in enumerate(corpus.worker_ids):
        # Oracle: a plain Python count over the triplets.
        toks = [t for t, ww in zip(corpus.token.tolist(), corpus.worker.tolist(), strict=True) if ww == w]
        docs = {corpus.token_doc[t] for t in toks}
        assert (rows[wid].tokens, rows[wid].documents) == (len(toks), len(docs))
    uploads, count = crud.list_uploads(session=session, dataset_id=ds.id)
    assert count == 1 and uploads[0].filename == "f.jsonl"
    session.refresh(ds)
    assert ds.n_uploads == 1 and ds.corpus_sha256 == "d" * 64


def test_claim_job_once_and_stale_jobs(session):
    """A queued job is claimed by exactly one worker; a silent running job is marked failed with a reason."""
    p = crud.create_project(session=session, name="p")
    ds = _dataset(session, p.id)
    job = crud.create_job(session=session, dataset=ds, job_in=JobCreate(method="ds", params={"max_iter": 3}))
    assert job.status == JobStatus.queued and job.corpus_sha256 == "a" * 64
    claimed = crud.claim_job(session=session, job_id=job.id, worker_name="w1")
    assert claimed is not None and claimed.status == JobStatus.running and claimed.attempts == 1
    assert crud.claim_job(session=session, job_id=job.id, worker_name="w2") is None
    assert crud.mark_stale_jobs(session=session, stale_after=60) == 0
    crud.update_job(session=session, job_id=job.id, heartbeat_at=utcnow() - timedelta(seconds=120))
    assert crud.mark_stale_jobs(session=session, stale_after=60) == 1
    session.refresh(job)
    assert job.status == JobStatus.failed and "abandoned" in job.error
    assert crud.mark_stale_jobs(session=session, stale_after=60) == 0


def test_worker_scores_sorted_with_nulls_last(session):
    """Worker rows sort by any score column, nulls last in both orders, ties by annotator id."""
    p = crud.create_project(session=session, name="p")
    ds = _dataset(session, p.id)
    job = crud.create_job(session=session, dataset=ds, job_in=JobCreate(method="mv"))
    f1 = {"w1": 0.5, "w2": None, "w3": 0.9, "w4": 0.5}
    workers = [{"annotator": w, "role": "crowd", "documents": 1, "tokens": 10,
                "vs_expert": None if v is None else worker_score(v), "vs_aggregate": worker_score(1.0)}
               for w, v in f1.items()]
    crud.save_report(session=session, job_id=job.id, report=report_with_workers(workers, method="mv"))
    session.commit()
    asc, count = crud.list_worker_scores(session=session, job_id=job.id, sort="f1", order="asc")
    assert count == 4 and [r.annotator for r in asc] == ["w1", "w4", "w3", "w2"]
    desc, _ = crud.list_worker_scores(session=session, job_id=job.id, sort="f1", order="desc")
    assert [r.annotator for r in desc] == ["w3", "w1", "w4", "w2"]
    page, _ = crud.list_worker_scores(session=session, job_id=job.id, sort="f1", order="desc", offset=1, limit=2)
    assert [r.annotator for r in page] == ["w1", "w4"]
    assert crud.get_report(session=session, job_id=job.id).body["method"] == "mv"
    with pytest.raises(ValueError, match="sort must be one of"):
        crud.list_worker_scores(session=session, job_id=job.id, sort="drop table")


def test_worker_accuracy_columns_come_from_the_flat_report_blocks(session):
    """Rows take accuracy (vs experts) and agreement_accuracy (vs the aggregate) as build_report writes them."""
    p = crud.create_project(session=session, name="p")
    job = crud.create_job(session=session, dataset=_dataset(session, p.id), job_in=JobCreate(method="mv"))
    acc = {"w1": 0.7, "w2": None, "w3": 0.9}
    workers = [{"annotator": w, "role": "crowd", "documents": 2, "tokens": 2,
                "vs_expert": None if v is None else worker_score(0.1, accuracy=v),
                "vs_aggregate": worker_score(0.2, accuracy=0.5)}
               for w, v in acc.items()]
    crud.save_report(session=session, job_id=job.id, report=report_with_workers(workers))
    session.commit()
    rows, _ = crud.list_worker_scores(session=session, job_id=job.id, sort="accuracy", order="desc")
    assert [(r.annotator, r.accuracy, r.agreement_accuracy) for r in rows] == [
        ("w3", 0.9, 0.5), ("w1", 0.7, 0.5), ("w2", None, 0.5)]


def test_stored_rows_are_the_worker_score_columns():
    """A worker's row is one of ``WorkerScore``'s columns for every key (P, R, F1 from the report model's
    ``LabelScore``, accuracies, span F1), each side's scores from its block; no database work."""
    workers = [{"annotator": "w1", "role": "crowd", "documents": 2, "tokens": 2,
                "vs_expert": worker_score(0.25, accuracy=0.5), "vs_aggregate": worker_score(0.75)},
               {"annotator": "w2", "role": "crowd", "documents": 1, "tokens": 1, "vs_expert": None,
                "vs_aggregate": worker_score(None, accuracy=1.0)}]
    rows = crud.stored_report(job_id="j", report=report_with_workers(workers)).rows
    columns = set(WorkerScore.model_fields) - {"id"}
    assert [set(r) for r in rows] == [columns, columns]
    assert {k: rows[0][k] for k in ("precision", "recall", "f1", "accuracy", "agreement_f1",
                                    "agreement_accuracy")} == {"precision": 0.25, "recall": 0.25, "f1": 0.25,
                                                               "accuracy": 0.5, "agreement_f1": 0.75,
                                                               "agreement_accuracy": None}
    assert (rows[1]["f1"], rows[1]["accuracy"], rows[1]["agreement_precision"], rows[1]["agreement_accuracy"]) == (
        None, None, None, 1.0)


def test_delete_dataset_cascades(session):
    """Deleting a dataset removes its uploads, annotators, jobs, reports and worker rows, and nothing else."""
    p = crud.create_project(session=session, name="p")
    keep, gone = _dataset(session, p.id, name="keep"), _dataset(session, p.id, name="gone")
    for ds in (keep, gone):
        job = crud.create_job(session=session, dataset=ds, job_in=JobCreate(method="mv"))
        crud.save_report(session=session, job_id=job.id, report=report_with_workers([
            {"annotator": "w", "role": "crowd", "documents": 1, "tokens": 1, "vs_expert": None, "vs_aggregate": None}]))
        session.commit()
    crud.delete_dataset(session=session, dataset=gone)
    assert [j.dataset_id for j in session.exec(select(Job)).all()] == [keep.id]
    assert len(session.exec(select(WorkerScore)).all()) == 1


def test_referenced_artifacts_names_every_file_a_row_needs(session):
    """Oracle: the paths written into the rows by hand; deleting the dataset leaves only the other's."""
    p = crud.create_project(session=session, name="p")
    ds = _dataset(session, p.id, sha="d" * 64)
    _dataset(session, p.id, name="other", sha="e" * 64)
    session.add(Upload(dataset_id=ds.id, filename="f.csv", format="spans-csv", role="crowd", size=1, sha256="1" * 64,
                       raw_path=f"uploads/11/{'1' * 64}.csv", corpus_sha256="2" * 64,
                       options={"docs_sha256": "3" * 64}))
    job = crud.create_job(session=session, dataset=ds, job_in=JobCreate(method="mv"))
    job.corpus_sha256 = "4" * 64
    job.artifacts = {"labels": {"path": f"results/55/{'5' * 64}.npz", "sha256": "5" * 64, "size": 1}}
    session.add(job)
    session.commit()
    assert crud.referenced_artifacts(session=session) == {
        f"uploads/11/{'1' * 64}.csv", f"corpora/22/{'2' * 64}.npz", f"docs/33/{'3' * 64}.zip",
        f"corpora/44/{'4' * 64}.npz", f"results/55/{'5' * 64}.npz", f"corpora/dd/{'d' * 64}.npz",
        f"corpora/ee/{'e' * 64}.npz",
        # A dataset's or job's sha256 may name a snapshot (a list of upload corpora) instead of a corpus.
        f"snapshots/44/{'4' * 64}.json", f"snapshots/dd/{'d' * 64}.json", f"snapshots/ee/{'e' * 64}.json",
    }
    crud.delete_dataset(session=session, dataset=ds)
    assert crud.referenced_artifacts(session=session) == {f"corpora/ee/{'e' * 64}.npz",
                                                          f"snapshots/ee/{'e' * 64}.json"}


_names = st.text(alphabet="abcdefghij0123456789", min_size=1, max_size=6)


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scores=st.dictionaries(_names, st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=12),
       order=st.sampled_from(["asc", "desc"]), offset=st.integers(0, 13), limit=st.integers(1, 13))
def test_worker_score_pages_match_a_python_sort(session, scores, order, offset, limit):
    """Oracle: Python's sorted() with nulls last and ties by annotator id, sliced [offset:offset+limit]."""
    p = crud.get_or_create_project(session=session, name="prop")
    ds = _dataset(session, p.id)
    job = crud.create_job(session=session, dataset=ds, job_in=JobCreate(method="mv"))
    workers = [{"annotator": a, "role": "crowd", "documents": 1, "tokens": 1,
                "vs_expert": None if v is None else worker_score(v), "vs_aggregate": None}
               for a, v in scores.items()]
    crud.save_report(session=session, job_id=job.id, report=report_with_workers(workers))
    session.commit()
    rows, count = crud.list_worker_scores(session=session, job_id=job.id, sort="f1", order=order,
                                          offset=offset, limit=limit)
    sign = -1 if order == "desc" else 1
    known = sorted((a for a, v in scores.items() if v is not None), key=lambda a: (sign * scores[a], a))
    expected = (known + sorted(a for a, v in scores.items() if v is None))[offset:offset + limit]
    assert count == len(scores)
    assert [r.annotator for r in rows] == expected


def test_dataset_uploads_of_ids_loads_the_requested_rows_of_the_dataset_in_one_query(session):
    """merge_uploads finds the uploads it removes with one ``SELECT ... WHERE dataset_id = ? AND id IN (...)``: the
    dataset's rows of those ids alone, in upload order; another dataset's id, or an unknown one, finds nothing."""
    from sqlalchemy import event

    p = crud.create_project(session=session, name="p")
    ds, other = _dataset(session, p.id, name="d"), _dataset(session, p.id, name="o")

    def upload(dataset, k):
        return Upload(dataset_id=dataset.id, filename=f"f{k}.jsonl", format="spans-jsonl", role="crowd", size=1,
                      sha256=f"{k:064x}", raw_path=f"uploads/{k}", corpus_sha256="c" * 64,
                      created_at=utcnow() + timedelta(seconds=k))

    mine = [upload(ds, k) for k in range(5)]
    theirs = upload(other, 9)
    crud.replace_uploads(session=session, dataset=ds, removed=[], added=mine, corpus_sha256=None, summary=None,
                         annotators=[])
    crud.replace_uploads(session=session, dataset=other, removed=[], added=[theirs], corpus_sha256=None,
                         summary=None, annotators=[])
    ids, their_id, ds_id, other_id = [u.id for u in mine], theirs.id, ds.id, other.id
    wanted = [ids[3], ids[1], their_id, "no-such-upload"]
    session.expunge_all()  # rows are loaded from the database, not found in the session
    loaded, statements = [], []

    def on_load(row, _context):
        loaded.append(row.id)

    def on_execute(_conn, _cursor, statement, *_):
        statements.append(statement)

    engine = session.get_bind()
    event.listen(Upload, "load", on_load)
    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        rows = crud.dataset_uploads(session=session, dataset_id=ds_id, upload_ids=wanted)
        assert crud.dataset_uploads(session=session, dataset_id=ds_id, upload_ids=[]) == []
    finally:
        event.remove(Upload, "load", on_load)
        event.remove(engine, "before_cursor_execute", on_execute)
    assert [r.id for r in rows] == [ids[1], ids[3]]  # upload order, this dataset's only
    assert sorted(loaded) == sorted(r.id for r in rows)
    assert len(statements) == 1 and " IN " in statements[0].upper(), statements
    assert [r.id for r in crud.dataset_uploads(session=session, dataset_id=other_id, upload_ids=wanted)] == [their_id]
