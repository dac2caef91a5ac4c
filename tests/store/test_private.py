"""Private files: the data directory 0700, the SQLite file and its -wal/-shm 0600, artifacts and secrets 0600."""

from __future__ import annotations

import os
import stat

import pytest
from sqlalchemy import text

from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.db import _engine_for, get_engine
from crowdqa.store.errors import ConfigurationError
from crowdqa.store.private import SECRET_NAME, _secret_of, make_private_dir, server_secret, write_private_file
from crowdqa.store.settings import Settings


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def loose_umask():
    """The usual umask 022, under which files are created 0644 unless the code asks for less."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_data_directory_and_database_are_private(tmp_path, loose_umask):
    """Issue 35 item 5: crowdqa.db and its -wal/-shm were created 0644 in a 0755 data directory."""
    data = tmp_path / "deep" / "data"
    settings = Settings(data_dir=data)
    engine = get_engine(settings)
    try:
        with engine.begin() as conn:  # a write, so SQLite makes its WAL and shared-memory files
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
            conn.execute(text("INSERT INTO t VALUES (1)"))
            names = {p.name for p in data.iterdir()}
            assert {"crowdqa.db", "crowdqa.db-wal", "crowdqa.db-shm"} <= names
            for name in ("crowdqa.db", "crowdqa.db-wal", "crowdqa.db-shm"):
                assert _mode(data / name) == 0o600, name
        assert _mode(data) == 0o700
        artifact = ArtifactStore(data).put_stream([b"some bytes"], kind="uploads", suffix=".txt")
        assert _mode(data / artifact.path) == 0o600
    finally:
        engine.dispose()
        _engine_for.cache_clear()


def test_an_existing_readable_database_is_narrowed(tmp_path, loose_umask):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("crowdqa.db", "crowdqa.db-wal"):
        (data / name).touch(mode=0o644)
        os.chmod(data / name, 0o644)
    engine = get_engine(Settings(data_dir=data))
    try:
        assert _mode(data / "crowdqa.db") == 0o600
        assert _mode(data / "crowdqa.db-wal") == 0o600
        assert _mode(data) == 0o755  # a folder the operator made keeps the mode they chose
    finally:
        engine.dispose()
        _engine_for.cache_clear()


def test_the_server_secret_is_made_once_0600(tmp_path, loose_umask):
    _secret_of.cache_clear()
    first = server_secret(tmp_path / "data")
    assert len(first) == 32 and _mode(tmp_path / "data" / SECRET_NAME) == 0o600
    assert _mode(tmp_path / "data") == 0o700
    _secret_of.cache_clear()  # as another process would read it
    assert server_secret(tmp_path / "data") == first
    (tmp_path / "data" / SECRET_NAME).write_bytes(b"short")
    _secret_of.cache_clear()
    with pytest.raises(ConfigurationError, match="fewer than the 32"):
        server_secret(tmp_path / "data")
    _secret_of.cache_clear()


def test_a_data_directory_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "data").write_text("not a folder")
    with pytest.raises(ConfigurationError, match="is not a directory; point CROWDQA_DATA_DIR"):
        make_private_dir(tmp_path / "data")
    with pytest.raises(ConfigurationError, match="is not a directory"):
        make_private_dir(tmp_path / "data" / "inner")


def test_private_files_are_written_0600(tmp_path, loose_umask):
    path = write_private_file(tmp_path / "f.txt", "hello\n")
    assert path.read_text() == "hello\n" and _mode(path) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_the_serve_lock_is_private_and_an_old_readable_one_is_narrowed(tmp_path, loose_umask):
    """serve.lock (who holds the data directory: pid, host, port) was created 0644 in the 0700 folder."""
    from crowdqa.store.datadir_lock import acquire_data_dir, release_data_dir

    for data, old in ((tmp_path / "new", None), (tmp_path / "old", 0o644)):
        if old is not None:
            make_private_dir(data)
            (data / "serve.lock").write_text("{}", encoding="utf-8")
            os.chmod(data / "serve.lock", old)
        lock = acquire_data_dir(data, port=8123)
        try:
            assert _mode(lock) == 0o600 and _mode(data) == 0o700
            assert '"port": 8123' in lock.read_text(encoding="utf-8")
        finally:
            release_data_dir(data)
