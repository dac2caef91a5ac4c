"""Files only the service's own user may read: the data directory, the SQLite database, the secrets.

The data directory is created 0700; the SQLite file is created 0600 before SQLite first opens
it, and SQLite gives its ``-wal`` and ``-shm`` files the database file's mode, so they are 0600
too (an existing database left 0644 by an older version is narrowed at start). Stored artifacts
are already 0600 (``tempfile.mkstemp``), and so is ``serve.lock`` (:mod:`crowdqa.store.datadir_lock`). Two
secrets live in the data directory as 0600 files:

* ``server-secret``: 32 random bytes, made once, that sign dashboard session cookies. It is
  never in the database, so a copy of the database (or of one ``apikey`` row) cannot forge a
  session. Every API process that shares the data directory reads the same file.
* ``first-key.txt``: the API key ``crowdqa serve`` makes on a first start, for its operator.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from functools import lru_cache
from pathlib import Path

from sqlalchemy.engine import make_url

from crowdqa.store.errors import ConfigurationError

__all__ = ["SECRET_NAME", "FIRST_KEY_NAME", "make_private_dir", "prepare_sqlite_file", "write_private_file",
           "open_private_file", "server_secret"]

logger = logging.getLogger(__name__)

SECRET_NAME = "server-secret"
FIRST_KEY_NAME = "first-key.txt"
_SECRET_BYTES = 32


def make_private_dir(path: str | os.PathLike) -> Path:
    """Create ``path`` (and missing parents) 0700 if it does not exist; an existing folder keeps its mode.

    Raises :class:`ConfigurationError` when ``path`` (or a parent) is a file.
    """
    folder = Path(path)
    if folder.is_dir():
        return folder
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700)
    except FileExistsError:  # made by another process meanwhile, or a file of that name
        if not folder.is_dir():
            raise ConfigurationError(f"{folder.resolve()} is not a directory; point CROWDQA_DATA_DIR (or the "
                                     "SQLite URL) at a folder") from None
    return folder


def _narrow(path: Path) -> None:
    """Take group and other permissions off ``path`` if it exists and has any."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if mode & 0o077:
        path.chmod(mode & 0o700)
        logger.warning("%s was readable by other users (mode %o); narrowed to %o", path, mode, mode & 0o700)


def prepare_sqlite_file(url: str) -> None:
    """Create the database file of a SQLite ``url`` 0600 in a 0700 folder, or narrow an existing one.

    SQLite takes the mode of its ``-wal``/``-shm`` files from the database file (unix VFS), so a
    database created here 0600 never has a readable journal. In-memory URLs are left alone.
    """
    name = make_url(url).database
    if not name or name == ":memory:" or name.startswith("file:"):
        return
    path = Path(name)
    make_private_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return
    except FileExistsError:
        pass
    for suffix in ("", "-wal", "-shm", "-journal"):
        _narrow(path.with_name(path.name + suffix))


def open_private_file(path: str | os.PathLike, flags: int = os.O_RDWR | os.O_APPEND) -> int:
    """Open ``path`` with ``flags``, creating it 0600 (in a 0700 folder) or narrowing an existing readable one as the
    database is narrowed; return the file descriptor."""
    final = Path(path)
    make_private_dir(final.parent)
    _narrow(final)
    return os.open(final, flags | os.O_CREAT, 0o600)


def write_private_file(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` as a new 0600 file (replacing any old one), whole or not at all."""
    final = Path(path)
    make_private_dir(final.parent)
    tmp = final.with_name(f".{final.name}.{secrets.token_hex(6)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


@lru_cache(maxsize=8)
def _secret_of(folder: str) -> bytes:
    path = Path(folder) / SECRET_NAME
    if not path.exists():
        make_private_dir(folder)
        tmp = path.with_name(f".{SECRET_NAME}.{secrets.token_hex(6)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(_SECRET_BYTES))
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # fails if another process made it first: then its secret is everyone's
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    _narrow(path)
    data = path.read_bytes()
    if len(data) < _SECRET_BYTES:
        raise ConfigurationError(f"{path} holds {len(data)} bytes, fewer than the {_SECRET_BYTES} of a server secret; "
                         "delete it to make a new one (every dashboard session ends)")
    return data


def server_secret(data_dir: str | os.PathLike) -> bytes:
    """The data directory's server secret, made (0600) on first use; the same bytes in every process after."""
    return _secret_of(str(Path(data_dir).resolve()))
