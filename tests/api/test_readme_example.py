"""The README example, run exactly as written (api/sample/README_example.sh) against `crowdqa serve`."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.utils.services import free_port, wait_for_port

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "api" / "sample" / "README_example.sh"
BIN = Path(sys.executable).parent


def _dashboard_home(port: int, key: str) -> str:
    """The dashboard's home page after signing in with ``key`` through its form."""
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base, headers={"Origin": base}) as browser:
        form = browser.get("/ui/signin").text
        token = re.search(r'name="login_token" value="([^"]+)"', form)[1]
        signed = browser.post("/ui/signin", data={"key": key, "login_token": token})
        assert signed.status_code == 303, signed.text
        return browser.get("/ui/").text


@pytest.mark.skipif(not (BIN / "crowdqa").exists(), reason="crowdqa is not installed in this environment")
def test_readme_example_against_crowdqa_serve(tmp_path):
    """`crowdqa serve` (embedded) writes a first key; the README steps upload, run HMM-Crowd and fetch a report."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env.update(PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", CROWDQA_DATA_DIR=str(tmp_path / "crowdqa-data"),
               CROWDQA_API=f"http://127.0.0.1:{port}/api/v1", PYTHONUNBUFFERED="1")
    server = subprocess.Popen([str(BIN / "crowdqa"), "serve", "--port", str(port), "--log-level", "warning"],
                              env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, timeout=60)
        out = subprocess.run(["bash", str(SCRIPT)], env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=180)
        assert out.returncode == 0, out.stdout + out.stderr
        assert re.search(r"job [0-9a-f]{32}: finished", out.stdout), out.stdout
        # The report is written to a temporary folder of its own, never into the folder the example runs in.
        assert not (tmp_path / "report.json").exists()
        report_path = Path(re.search(r"^report: (\S+)$", out.stdout, flags=re.M)[1])
        assert not report_path.is_relative_to(tmp_path)
        report = __import__("json").loads(report_path.read_text())
        # The last line says how to see the job in the dashboard: the demo project's key, not the first key.
        dashboard = re.search(r"^dashboard: open (\S+) and sign in with the demo project's key (cqa_\S+)$", out.stdout,
                              flags=re.M)
        assert dashboard and dashboard[1] == f"http://127.0.0.1:{port}/ui/", out.stdout
        assert report["method"] == "hmm-crowd" and report["experts_used_in_fit"] is False
        token = report["aggregate_vs_expert"]["token"]
        assert 0.5 < token["f1"] <= 1.0 and token["tp"] > 0  # the sample is built to give meaningful numbers
        rows = [line for line in out.stdout.splitlines() if line.startswith(("mturk:", "upwork:"))]
        assert len(rows) == 5 and "mturk:A10SPAM" in rows[0]  # the spammer has the lowest F1
        # The README shows this run's output (the job lines aside, their id is new each run): its figures were
        # pasted from a manual run, now they are what the script prints.
        readme = (REPO / "README.md").read_text(encoding="utf-8")
        shown = readme.split("two parse summaries, then", 1)[1].split("```\n", 1)[1].split("\n```", 1)[0]
        # The job id, the report's temporary folder and the key are new each run.
        expected = [line for line in shown.splitlines() if not line.startswith(("job ", "report: ", "dashboard: "))]
        printed = out.stdout.splitlines()
        assert expected[0] in printed, out.stdout
        start = printed.index(expected[0])
        assert printed[start:start + len(expected)] == expected, out.stdout
        # What the README says about the dashboard: the demo key shows the example's dataset, the first key (the
        # project "default") shows none.
        first_key = re.findall(r"^cqa_\S+$", (tmp_path / "crowdqa-data" / "first-key.txt").read_text(), flags=re.M)
        assert _dashboard_home(port, dashboard[2]).count(">sample<") == 1
        assert "No datasets yet" in _dashboard_home(port, first_key[0])
    finally:
        server.send_signal(signal.SIGTERM)
        log, _ = server.communicate(timeout=30)
    # uvicorn shuts down gracefully, then re-raises the SIGTERM it caught (hence -15).
    assert server.returncode in (0, -signal.SIGTERM) and "Traceback" not in log, log
    # Issue 35 item 6: the first key goes to a 0600 file in the data directory, not into the (non-tty) log.
    first = tmp_path / "crowdqa-data" / "first-key.txt"
    keys = re.findall(r"^cqa_\S+$", first.read_text(), flags=re.M)
    assert len(keys) == 1 and os.stat(first).st_mode & 0o777 == 0o600
    assert keys[0] not in log and "cqa_" not in log and str(first) in log, log
    # The first-start key is a working key of the project "default".
    server = subprocess.Popen([str(BIN / "crowdqa"), "serve", "--port", str(port), "--log-level", "warning"],
                              env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, timeout=60)
        r = httpx.get(f"http://127.0.0.1:{port}/api/v1/datasets", headers={"Authorization": f"Bearer {keys[0]}"})
        assert r.status_code == 200 and r.json() == {"data": [], "count": 0}
    finally:
        server.send_signal(signal.SIGTERM)
        log, _ = server.communicate(timeout=30)
    assert "first start" not in log and first.read_text().strip() == keys[0]  # no new key on the second start
