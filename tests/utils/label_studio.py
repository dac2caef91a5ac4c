"""A real Label Studio server for tests: its own cached virtual environment, started offline in a temp dir.

``label-studio`` 1.23.x (about 1 GB with Django and its frontend) is installed by scripts/label_studio_venv.py
into ``$CROWDQA_LABEL_STUDIO_VENV``, else ``$XDG_CACHE_HOME/crowdqa-tests/label-studio-1.23`` (``~/.cache``
without XDG_CACHE_HOME), on first use only, and reused until locks/label-studio.txt changes (``scripts/test.sh``
runs the same installer beforehand). The server
starts with an admin user and a legacy token made from environment variables (``LABEL_STUDIO_USERNAME``,
``_PASSWORD``, ``_USER_TOKEN``; legacy tokens enabled for the organization so the harness can make a personal
access token with it), no version check and no network: ``label-studio start --no-browser --port P
--data-dir D`` answers ``/health`` in about a minute on 2 cores.

A test skips (with the command and its error) only when the install is impossible.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.utils.services import free_port

SPEC = "label-studio>=1.23,<1.24"  # the range scripts/lock.sh compiles into LOCK
LOCK = Path(__file__).resolve().parents[2] / "locks" / "label-studio.txt"
ADMIN = "admin@example.com"
LEGACY_TOKEN = "crowdqa0test0legacy0token0000000000000000"
START_TIMEOUT = 300.0


def _installer():
    """scripts/label_studio_venv.py, the one installer of the venv (scripts/test.sh runs it too)."""
    import importlib.util

    name = "crowdqa_label_studio_venv"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, LOCK.parents[1] / "scripts" / "label_studio_venv.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def venv_dir() -> Path:
    """Where the label-studio virtual environment is kept."""
    return _installer().venv_dir()


def ensure_installed() -> Path:
    """The ``label-studio`` executable of the cached venv, installed from the lock if absent or made from another
    lock (scripts/label_studio_venv.py); skip if that is impossible."""
    installer = _installer()
    try:
        return installer.ensure_venv(lock=LOCK)
    except installer.LabelStudioInstallError as error:
        pytest.skip(f"cannot install {SPEC} ({error})")


@dataclass
class LabelStudioServer:
    """A running server: its URL, the admin's legacy token and personal access token (a refresh token)."""

    url: str
    legacy_token: str
    personal_token: str

    def api(self, method: str, path: str, **kw) -> httpx.Response:
        """One request as the admin (legacy token)."""
        r = httpx.request(method, self.url + path, headers={"Authorization": f"Token {self.legacy_token}"},
                          timeout=60, **kw)
        assert r.status_code < 400, f"{method} {path}: {r.status_code} {r.text[:300]}"
        return r

    def set_legacy_tokens(self, enabled: bool) -> None:
        """Enable or disable legacy tokens for the organization (1.23 disables them by default)."""
        r = httpx.post(self.url + "/api/jwt/settings", timeout=60,
                       headers={"Authorization": f"Bearer {self.access_token()}"},
                       json={"api_tokens_enabled": True, "legacy_api_tokens_enabled": enabled})
        assert r.status_code < 400, r.text

    def access_token(self) -> str:
        r = httpx.post(self.url + "/api/token/refresh/", json={"refresh": self.personal_token}, timeout=60)
        assert r.status_code == 200, r.text
        return r.json()["access"]


@contextmanager
def label_studio_server() -> Iterator[LabelStudioServer]:
    """Start Label Studio in a temp data dir on a free port; yield it once ``/health`` answers and a personal
    access token is made; stop it (its whole process group) afterwards."""
    exe = ensure_installed()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="crowdqa-label-studio-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        env = {**os.environ, "LABEL_STUDIO_USERNAME": ADMIN, "LABEL_STUDIO_PASSWORD": "crowdqa-test-password",
               "LABEL_STUDIO_USER_TOKEN": LEGACY_TOKEN, "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
               "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true", "LATEST_VERSION_CHECK": "false",
               "LABEL_STUDIO_BASE_DATA_DIR": str(data), "DJANGO_DB": "sqlite", "SENTRY_DSN": "",
               "FRONTEND_SENTRY_DSN": "", "COLLECT_ANALYTICS": "false"}
        log = open(Path(tmp) / "server.log", "wb")
        proc = subprocess.Popen([str(exe), "start", "--no-browser", "--port", str(port), "--data-dir", str(data)],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc, Path(tmp) / "server.log")
            r = httpx.post(url + "/api/token/", headers={"Authorization": f"Token {LEGACY_TOKEN}"}, timeout=60)
            assert r.status_code < 400, r.text
            yield LabelStudioServer(url=url, legacy_token=LEGACY_TOKEN, personal_token=r.json()["token"])
        finally:
            try:
                os.killpg(proc.pid, 15)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, 9)
                proc.wait()
            log.close()


def _die_with_parent() -> None:
    """In the server's process: ask Linux to end it when the test process dies (a killed pytest leaves no
    server behind on a shared machine). Elsewhere a no-op."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _wait_healthy(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"label-studio exited {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(1)
    raise TimeoutError(f"label-studio did not answer /health in {START_TIMEOUT} s: "
                       f"{log.read_text(errors='replace')[-2000:]}")
