"""Store fixtures: an initialised engine on SQLite and on a real PostgreSQL started here."""

from __future__ import annotations

import pytest
from sqlmodel import Session, SQLModel

from crowdqa.store.db import init_db, make_engine
from crowdqa.store.settings import Settings


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request, tmp_path):
    """A fresh, initialised database: a SQLite file, or a PostgreSQL database emptied after the test."""
    if request.param == "sqlite":
        settings = Settings(data_dir=tmp_path / "data")
    else:
        settings = Settings(data_dir=tmp_path / "data", database_url=request.getfixturevalue("postgres_url"))
    eng = make_engine(settings)
    init_db(eng)
    yield eng
    SQLModel.metadata.drop_all(eng)
    eng.dispose()


@pytest.fixture
def session(engine):
    with Session(engine) as s:
        yield s
