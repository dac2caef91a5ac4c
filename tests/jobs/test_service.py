"""Service functions: uploads merge safely across processes; docs zips are unpacked safely."""

from __future__ import annotations

import json
import multiprocessing as mp
from pathlib import Path

from sqlmodel import Session

from crowdqa.store import crud
from crowdqa.store.db import init_db, make_engine
from crowdqa.store.models import Dataset, DatasetCreate
from crowdqa.store.settings import Settings

SAMPLE = Path(__file__).resolve().parents[2] / "api" / "sample"


def _upload_in_process(data_dir: str, dataset_id: str, path: str, barrier) -> None:
    from crowdqa.jobs import service

    settings = Settings(data_dir=data_dir)
    engine = make_engine(settings)
    barrier.wait()
    with Session(engine) as s, open(path, "rb") as fh:
        dataset = s.get(Dataset, dataset_id)
        service.add_upload(session=s, settings=settings, dataset=dataset, stream=fh, filename="e.jsonl",
                           format="spans-jsonl", role="expert", options={})


def test_uploads_from_several_processes_all_merge(tmp_path):
    """Four processes upload to one SQLite dataset at the same moment; the merged corpus holds all four
    (the dataset write lock serialises read-merge-write across processes, where a thread lock cannot)."""
    settings = Settings(data_dir=tmp_path / "data")
    engine = make_engine(settings)
    init_db(engine)
    with Session(engine) as s:
        p = crud.create_project(session=s, name="p")
        ds = crud.create_dataset(session=s, project_id=p.id, dataset_in=DatasetCreate(name="d"))
        dataset_id = ds.id
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


def test_jsonable_makes_strict_json():
    """numpy scalars/arrays become Python values and NaN/inf become null, so PostgreSQL's json type accepts it."""
    import numpy as np

    from crowdqa.jobs.service import jsonable

    value = {"a": np.float64("nan"), "b": [np.int64(3), float("inf"), (1, 2)], "c": np.arange(2), 4: True}
    assert json.dumps(jsonable(value), allow_nan=False) == '{"a": null, "b": [3, null, [1, 2]], "c": [0, 1], "4": true}'
