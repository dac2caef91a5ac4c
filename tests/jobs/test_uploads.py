"""crowdqa.jobs.uploads: uploads merge safely across processes, and what they store is strict JSON."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

import pytest
from sqlmodel import Session

from crowdqa.store import crud
from crowdqa.store.db import init_db, make_engine
from crowdqa.store.models import Dataset, DatasetCreate
from crowdqa.store.settings import Settings

SAMPLE = Path(__file__).resolve().parents[2] / "api" / "sample"


def _upload_in_process(data_dir: str, dataset_id: str, path: str, barrier) -> None:
    from crowdqa.jobs import uploads

    settings = Settings(data_dir=data_dir)
    engine = make_engine(settings)
    barrier.wait()
    with Session(engine) as s, open(path, "rb") as fh:
        dataset = s.get(Dataset, dataset_id)
        uploads.add_upload(session=s, settings=settings, dataset=dataset, stream=fh, filename="e.jsonl",
                           format="spans-jsonl", role="expert", options={})


def _empty_dataset(tmp_path: Path) -> tuple[Settings, object, str]:
    """Settings on a new SQLite database under ``tmp_path``, its engine, and the id of an empty dataset."""
    settings = Settings(data_dir=tmp_path / "data")
    engine = make_engine(settings)
    init_db(engine)
    with Session(engine) as s:
        p = crud.create_project(session=s, name="p")
        return settings, engine, crud.create_dataset(session=s, project_id=p.id,
                                                     dataset_in=DatasetCreate(name="d")).id


def test_uploads_from_several_processes_all_merge(tmp_path):
    """Four processes upload to one SQLite dataset at the same moment; the merged corpus holds all four
    (the dataset write lock serialises read-merge-write across processes, where a thread lock cannot)."""
    settings, engine, dataset_id = _empty_dataset(tmp_path)
    rows = [json.loads(line) for line in (SAMPLE / "expert.jsonl").read_text().splitlines()]
    paths = []
    for i in range(4):
        path = tmp_path / f"e{i}.jsonl"
        path.write_text("".join(json.dumps({**r, "annotator": f"expert:{i}"}) + "\n" for r in rows))
        paths.append(str(path))
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_upload_in_process, args=(str(settings.data_dir), dataset_id, p, barrier))
             for p in paths]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    with Session(engine) as s:
        ds = s.get(Dataset, dataset_id)
        assert ds.n_uploads == 4 and ds.summary["annotators"]["expert"] == 4


def test_stored_summaries_are_strict_json():
    """What an upload's and a job's rows store (``plain_json``): numpy scalars/arrays become Python values and
    NaN/inf become null, so PostgreSQL's json type accepts it."""
    import numpy as np

    from crowdqa.quality.json_data import plain_json

    value = {"a": np.float64("nan"), "b": [np.int64(3), float("inf"), (1, 2)], "c": np.arange(2), 4: True}
    assert (json.dumps(plain_json(value), allow_nan=False)
            == '{"a": null, "b": [3, null, [1, 2]], "c": [0, 1], "4": true}')


def test_an_upload_onto_an_index_of_the_old_hashing_merges(tmp_path):
    """A dataset whose first upload kept an index from before ``ingest.index.HASHING`` (SHA-1 per document,
    no ``hashing`` field) takes a second upload of the same documents: the old index is made again from its
    corpus, never compared with the new hashes (which would read as "a different text")."""
    import hashlib

    import numpy as np

    from crowdqa.ingest.index import CorpusIndex
    from crowdqa.jobs import uploads
    from crowdqa.store.artifacts import ArtifactStore

    settings, engine, dataset_id = _empty_dataset(tmp_path)
    with Session(engine) as s:
        ds = s.get(Dataset, dataset_id)
        with open(SAMPLE / "crowd.jsonl", "rb") as fh:
            first = uploads.add_upload(session=s, settings=settings, dataset=ds, stream=fh, filename="c.jsonl",
                                       format="spans-jsonl", role="crowd", options={})
        store = ArtifactStore(settings.data_dir)
        path = store.index_path(first.corpus_sha256)
        ix = CorpusIndex.load(path)
        old = {k: v for k, v in ix.__dict__.items() if isinstance(v, np.ndarray)}
        old["text_hash"] = np.array([hashlib.sha1(str(t).encode()).hexdigest() for t in ix.doc_ids])
        np.savez(path, **old, scheme=np.array(ix.scheme), has_outside=np.array(ix.has_outside),
                 n_obs=np.array(ix.n_obs))
        assert not CorpusIndex.load(path).current
        with open(SAMPLE / "expert.jsonl", "rb") as fh:
            uploads.add_upload(session=s, settings=settings, dataset=ds, stream=fh, filename="e.jsonl",
                               format="spans-jsonl", role="expert", options={})
        s.refresh(ds)
        assert ds.n_uploads == 2 and ds.summary["annotators"] == {"crowd": 10, "expert": 1}
        assert CorpusIndex.load(path).current


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_settings(request, tmp_path):
    """Settings on a fresh SQLite file, or on the session's real PostgreSQL (its tables dropped after the test)."""
    from sqlmodel import SQLModel

    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = Settings(data_dir=tmp_path / "data", database_url=url)
    engine = make_engine(settings)
    init_db(engine)
    yield settings, engine
    SQLModel.metadata.drop_all(engine)
    engine.dispose()


def test_removing_uploads_loads_those_rows_alone_and_leaves_another_datasets_upload(db_settings, tmp_path):
    """merge_uploads (a Label Studio pull swapping its uploads) loaded every upload row of the dataset to find the
    ones it removes; it now loads the removed ones alone. An id of another dataset's upload is left alone, as
    before: that upload stays, and this dataset counts only its own removed."""
    from sqlalchemy import event

    from crowdqa.jobs import uploads
    from crowdqa.store.artifacts import ArtifactStore
    from crowdqa.store.models import Upload

    settings, engine = db_settings
    rows = [json.loads(line) for line in (SAMPLE / "expert.jsonl").read_text().splitlines()]

    def add(session, dataset, role, name, lines):
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        with open(path, "rb") as fh:
            return uploads.add_upload(session=session, settings=settings, dataset=dataset, stream=fh, filename=name,
                                      format="spans-jsonl", role=role, options={}).id

    with Session(engine) as s:
        p = crud.create_project(session=s, name="p")
        mine, theirs = (crud.create_dataset(session=s, project_id=p.id, dataset_in=DatasetCreate(name=n))
                        for n in ("mine", "theirs"))
        crowd = [json.loads(line) for line in (SAMPLE / "crowd.jsonl").read_text().splitlines()]
        add(s, mine, "crowd", "c.jsonl", crowd)
        experts = [add(s, mine, "expert", f"e{i}.jsonl", [{**r, "annotator": f"expert:{i}"} for r in rows])
                   for i in range(3)]
        their_upload = add(s, theirs, "expert", "t.jsonl", rows)
        mine_id, theirs_id = mine.id, theirs.id
    loaded = []

    def on_load(row, _context):
        loaded.append(row.id)

    event.listen(Upload, "load", on_load)
    try:
        with Session(engine) as s:
            uploads.merge_uploads(session=s, store=ArtifactStore(settings.data_dir), dataset=s.get(Dataset, mine_id),
                                  added=[], removed=[experts[1], their_upload])
    finally:
        event.remove(Upload, "load", on_load)
    assert loaded == [experts[1]]
    with Session(engine) as s:
        left = crud.list_uploads(session=s, dataset_id=mine_id)[0]
        assert {u.id for u in left} == set(experts) - {experts[1]} | {u.id for u in left if u.role == "crowd"}
        assert s.get(Dataset, mine_id).n_uploads == 3 == len(left)
        assert s.get(Dataset, mine_id).summary["annotators"]["expert"] == 2
        assert s.get(Upload, their_upload) is not None and s.get(Dataset, theirs_id).n_uploads == 1
