"""scripts/label_studio_venv.py: the one installer of the test suite's Label Studio venv (scripts/test.sh and
tests/utils/label_studio.py both run it).

Oracle: the rule as written in the script's docstring, checked on a real venv made by ``python -m venv`` and pip
from a lock of one local wheel (a stand-in for Label Studio with a ``label-studio`` command, installed offline and
hash-checked as the real lock is): made when absent, kept while the lock's digest is the stamp's, made again when
the lock changes or the stamp is missing, and nothing left behind when the install fails.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.utils.label_studio import _installer

REPO = Path(__file__).resolve().parents[1]


def _wheel(folder: Path, version: str) -> Path:
    """A pure-Python wheel ``fake_ls`` whose console script ``label-studio`` prints its version."""
    files = {
        "fake_ls/__init__.py": f"def main():\n    print('fake label-studio {version}')\n",
        f"fake_ls-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: fake-ls\nVersion: {version}\n",
        f"fake_ls-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
                                               "Tag: py3-none-any\n",
        f"fake_ls-{version}.dist-info/entry_points.txt": "[console_scripts]\nlabel-studio = fake_ls:main\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append(f"fake_ls-{version}.dist-info/RECORD,,")
    path = folder / f"fake_ls-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as whl:
        for name, text in files.items():
            whl.writestr(name, text)
        whl.writestr(f"fake_ls-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def _lock(folder: Path, wheel: Path) -> Path:
    """A lock in the real one's form: one pinned requirement with its sha256."""
    lock = folder / "label-studio.txt"
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    lock.write_text(f"fake-ls @ {wheel.as_uri()} \\\n    --hash=sha256:{digest}\n")
    return lock


def _run(exe: Path) -> str:
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.strip()


def test_the_venv_is_made_kept_and_made_again_when_the_lock_changes(tmp_path, monkeypatch):
    installer = _installer()
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # nothing but the local wheel: no network
    venv = tmp_path / "venv"
    lock = _lock(tmp_path, _wheel(tmp_path, "1.0"))
    exe = installer.ensure_venv(venv, lock=lock)
    assert exe == venv / "bin" / "label-studio" and _run(exe) == "fake label-studio 1.0"
    assert (venv / ".crowdqa-lock").read_text().strip() == hashlib.sha256(lock.read_bytes()).hexdigest()

    marker = venv / "kept"
    marker.write_text("")
    assert installer.ensure_venv(venv, lock=lock) == exe and marker.exists()  # same lock: not touched

    lock = _lock(tmp_path, _wheel(tmp_path, "2.0"))  # a renewed lock: a new venv
    assert _run(installer.ensure_venv(venv, lock=lock)) == "fake label-studio 2.0" and not marker.exists()

    (venv / ".crowdqa-lock").unlink()  # a venv made before stamps existed (or half made) is made again; here the
    with pytest.raises(installer.LabelStudioInstallError, match="no-python -m venv .* could not start"):
        installer.ensure_venv(venv, lock=lock, python=str(tmp_path / "no-python"))  # interpreter is missing
    assert not venv.exists()  # and the failure leaves nothing behind


def test_the_command_line_prints_the_executable_or_the_reason(tmp_path):
    """What scripts/test.sh runs: the executable on stdout, or exit 1 and one line naming the failure."""
    env = {**os.environ, "CROWDQA_LABEL_STUDIO_VENV": str(tmp_path / "venv"), "PIP_NO_INDEX": "1"}
    stamp = tmp_path / "venv" / ".crowdqa-lock"
    stamp.parent.mkdir()
    (tmp_path / "venv" / "bin").mkdir()
    exe = tmp_path / "venv" / "bin" / "label-studio"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    stamp.write_text(hashlib.sha256((REPO / "locks" / "label-studio.txt").read_bytes()).hexdigest() + "\n")
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "label_studio_venv.py")], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == str(exe)

    env["CROWDQA_LABEL_STUDIO_VENV"] = str(exe / "venv")  # a folder under a file: no venv can be made there
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "label_studio_venv.py")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("scripts/label_studio_venv.py: label-studio not installed: ")
    assert "-m venv" in done.stderr and len(done.stderr.strip().splitlines()) == 1
