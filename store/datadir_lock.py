"""One embedded server per data directory: an exclusive lock held for the server's life.

In embedded mode the job queue lives in the serving process, so a second ``crowdqa serve`` on
the same data directory would take the first one's running jobs for abandoned ones. The server
takes an exclusive ``flock`` on ``<data_dir>/serve.lock`` before it touches the database and
keeps it until it exits; the kernel drops the lock when the process dies, however it dies, so a
lock is never left stale. The file records who holds it (pid, host, port, start time), which
the refusal names.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
from pathlib import Path

from crowdqa.store.errors import DataDirLockedError
from crowdqa.store.private import make_private_dir, open_private_file

__all__ = ["LOCK_NAME", "acquire_data_dir", "held_data_dirs", "release_data_dir"]

LOCK_NAME = "serve.lock"

#: data directory (resolved) -> open lock file of this process (a process takes the lock once).
_held: dict[str, object] = {}
_guard = threading.Lock()


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    where = f"pid {info.get('pid', '?')}" + (f" on {info['host']}" if info.get("host") else "")
    if info.get("port"):
        where += f", port {info['port']}"
    if info.get("started"):
        where += f", started {info['started']}"
    return f"another crowdqa serve ({where})"


def acquire_data_dir(data_dir: str | os.PathLike, *, port: int | None = None) -> Path:
    """Take the data directory's serve lock for the life of this process; return the lock file.

    Re-entrant within one process. Raises :class:`DataDirLockedError`, naming the directory and
    the process that holds it, when another process holds it; nothing is touched then.
    """
    folder = Path(data_dir).resolve()
    key = str(folder)
    with _guard:
        if key in _held:
            return folder / LOCK_NAME
        make_private_dir(folder)
        path = folder / LOCK_NAME
        fh = os.fdopen(open_private_file(path), "a+", encoding="utf-8")  # held open for the process' life; 0600
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise DataDirLockedError(
                f"the data directory {folder} is in use by {_holder(path)}; stop it first, or give this server "
                "its own CROWDQA_DATA_DIR"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "port": port,
                             "started": time.strftime("%Y-%m-%d %H:%M:%S")}))
        fh.flush()
        _held[key] = fh
        return path


def release_data_dir(data_dir: str | os.PathLike) -> None:
    """Give the lock up (tests; a process that exits releases it anyway)."""
    with _guard:
        fh = _held.pop(str(Path(data_dir).resolve()), None)
    if fh is not None:
        fh.close()  # type: ignore[attr-defined]


def held_data_dirs() -> set[str]:
    """The data directories whose serve lock this process holds."""
    with _guard:
        return set(_held)
