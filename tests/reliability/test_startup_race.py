"""Several processes starting on a new database at once (serve, workers, ``keys create``) all succeed."""

from __future__ import annotations

import multiprocessing as mp

from sqlmodel import Session, select

from crowdqa.store.db import make_engine
from crowdqa.store.models import SchemaInfo
from crowdqa.store.settings import Settings


def _start(data_dir: str, barrier) -> None:
    from crowdqa.store.db import init_db

    engine = make_engine(Settings(data_dir=data_dir))
    barrier.wait()
    init_db(engine)


def test_concurrent_first_start(tmp_path):
    """Regression: 6 processes run init_db on one fresh SQLite file together; none fails (the benchmark's
    `keys create` beside two starting workers used to), and one version row is recorded."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(6)
    procs = [ctx.Process(target=_start, args=(str(tmp_path / "data"), barrier)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 6
    with Session(make_engine(Settings(data_dir=tmp_path / "data"))) as s:
        assert len(s.exec(select(SchemaInfo)).all()) == 1
