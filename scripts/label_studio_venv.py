"""Install the test suite's Label Studio (locks/label-studio.txt) into its own cached venv, when it is not there yet.

    python3 scripts/label_studio_venv.py      # prints the label-studio executable; exit 1 with the reason if not

The one place of the rule both callers follow, ``scripts/test.sh`` (before the suite, so the 1 GB install is not
timed by a test) and ``tests/utils/label_studio.py`` (when a test needs the server and the venv is absent):
the venv is ``$CROWDQA_LABEL_STUDIO_VENV``, else ``$XDG_CACHE_HOME/crowdqa-tests/label-studio-1.23``
(``~/.cache`` without XDG_CACHE_HOME); it keeps the sha256 of the lock it was made from in ``.crowdqa-lock``, and
is made again from scratch (``python -m venv``, then ``pip install --require-hashes -r`` the lock) when that digest
differs from the lock's or its ``bin/label-studio`` is missing. A failed install leaves no venv behind.
Needs only Python 3.11+ (the standard library).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "locks" / "label-studio.txt"
#: The file in the venv that holds the digest of the lock it was made from.
STAMP = ".crowdqa-lock"
INSTALL_TIMEOUT = 1800.0


class LabelStudioInstallError(RuntimeError):
    """The venv could not be made: the message names the command, its exit status and its last line of output."""


def venv_dir() -> Path:
    """Where the Label Studio venv is kept."""
    if os.environ.get("CROWDQA_LABEL_STUDIO_VENV"):
        return Path(os.environ["CROWDQA_LABEL_STUDIO_VENV"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "crowdqa-tests" / "label-studio-1.23"


def lock_digest(lock: Path = LOCK) -> str:
    """The sha256 of the lock file's bytes, as the venv's stamp keeps it."""
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def ensure_venv(venv: Path | None = None, *, lock: Path = LOCK, python: str = sys.executable) -> Path:
    """Return the venv's ``label-studio`` executable, making the venv first when it is absent or from another lock.

    Raises
    ------
    LabelStudioInstallError
        If ``python -m venv`` or the pip install fails (the venv is removed).
    """
    venv = venv_dir() if venv is None else venv
    exe, stamp, want = venv / "bin" / "label-studio", venv / STAMP, lock_digest(lock)
    if exe.is_file() and stamp.is_file() and stamp.read_text().strip() == want:
        return exe
    shutil.rmtree(venv, ignore_errors=True)
    steps = [[python, "-m", "venv", str(venv)],
             [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
              "--no-deps", "--require-hashes", "-r", str(lock)]]
    for cmd in steps:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            shutil.rmtree(venv, ignore_errors=True)
            raise LabelStudioInstallError(f"{' '.join(cmd)} took over {INSTALL_TIMEOUT:.0f} s") from None
        except OSError as error:  # no such interpreter
            shutil.rmtree(venv, ignore_errors=True)
            raise LabelStudioInstallError(f"{' '.join(cmd)} could not start: {error}") from None
        if done.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise LabelStudioInstallError(f"{' '.join(cmd)} exited {done.returncode}: {tail[0]}")
    if not exe.is_file():
        shutil.rmtree(venv, ignore_errors=True)
        raise LabelStudioInstallError(f"{lock} installed no bin/label-studio")
    stamp.write_text(want + "\n")
    return exe


def main() -> int:
    try:
        print(ensure_venv())
    except LabelStudioInstallError as error:
        print(f"scripts/label_studio_venv.py: label-studio not installed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
