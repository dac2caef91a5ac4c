"""Dashboard fixtures: a real ``crowdqa serve`` subprocess, keys of two projects, headless Chromium.

The browser is Debian's chromium (``scripts/test.sh`` installs it when missing and root), driven by
Playwright for Python pointed at that executable: nothing is downloaded. Screenshots go to
``test-artifacts/dashboard`` (or ``$CROWDQA_TEST_ARTIFACTS/dashboard``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.conftest import client, keys, pg_settings, settings  # noqa: F401  (the API's TestClient fixtures, reused)
from tests.utils.services import crowdqa_serve

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("CROWDQA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(os.environ.get("CROWDQA_TEST_ARTIFACTS", REPO / "test-artifacts")) / "dashboard"


def _crowdqa(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "crowdqa"
    return subprocess.run([str(exe), *args], env=env, capture_output=True, text=True, timeout=120, check=True)


class Server:
    """A running ``crowdqa serve`` (embedded queue, SQLite in a temp dir) and one key per project."""

    def __init__(self, url: str, project_keys: dict[str, str], data_dir: Path) -> None:
        self.url, self.keys, self.data_dir = url, project_keys, data_dir


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``crowdqa serve`` on a free port with projects ``a`` and ``b``; stopped (and its log shown on failure)."""
    data = tmp_path_factory.mktemp("dash") / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(CROWDQA_DATA_DIR=str(data), CROWDQA_HEARTBEAT_INTERVAL="0.5")
    made = {name: _crowdqa("keys", "create", "--project", name, env=env).stdout.strip().splitlines()[-1]
            for name in ("a", "b")}
    with crowdqa_serve(env, log_path=data.parent / "serve.log") as (_, port):
        yield Server(f"http://127.0.0.1:{port}", made, data)


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium from the system package, driven by Playwright (skips with a message where absent)."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CROWDQA_CHROMIUM)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[test])")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Watched:
    """A page whose console errors, page errors and dialogs (alert, confirm) are recorded."""

    def __init__(self, page) -> None:
        self.page, self.errors, self.dialogs = page, [], []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("dialog", self._dialog)

    def _dialog(self, dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def page_of(browser):
    """``page_of()`` opens a fresh browser context (its own cookies) and returns a watched page."""
    contexts = []

    def make(width: int = 1200, height: int = 900) -> Watched:
        ctx = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(ctx)
        return Watched(ctx.new_page())

    yield make
    for ctx in contexts:
        ctx.close()


def sign_in(w: Watched, server: Server, project: str) -> None:
    """Sign in through the form with the project's key."""
    w.page.goto(server.url + "/")
    w.page.fill("#key", server.keys[project])
    w.page.click("#signin-form button[type=submit]")
    w.page.wait_for_selector("#project-name")
