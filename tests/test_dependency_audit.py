"""Issue 35 item 7: the installed dependencies have no known vulnerability (pip-audit), where advisories are reachable.

pip-audit asks PyPI's JSON API for the advisories of each installed release. Where that API does not serve
them (a mirror or a registry proxy: pip-audit then reports every package as "not found on PyPI" and exits 0,
which reads as a clean audit), the test skips and says so. The probe is a release with a known advisory:
setuptools 65.5.0 (PYSEC-2022-43012, CVE-2022-40897).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
from importlib import metadata
from pathlib import Path

import pytest

PROBE = "https://pypi.org/pypi/setuptools/65.5.0/json"


def _advisories_reachable() -> str | None:
    """None when PyPI serves advisories; otherwise why not (for the skip message)."""
    import httpx

    try:
        r = httpx.get(PROBE, timeout=10, follow_redirects=True)
    except httpx.HTTPError as exc:
        return f"{PROBE} unreachable ({type(exc).__name__}: {exc})"
    if r.status_code != 200:
        return f"{PROBE} answered {r.status_code}"
    if not r.json().get("vulnerabilities"):
        return f"{PROBE} lists no advisories for a release known to have one"
    return None


def _closure(root: str) -> set[str]:
    """The normalized names of ``root`` and every distribution it requires (its ``test`` extra included)."""
    norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
    seen: set[str] = set()
    todo = [(root, {"test"})]
    while todo:
        name, extras = todo.pop()
        if norm(name) in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        seen.add(norm(name))
        for req in dist.requires or []:
            spec, _, marker = req.partition(";")
            wanted = re.match(r"\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?", spec)
            if wanted is None:
                continue
            extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
            if extra and extra.group(1) not in extras:
                continue
            sub = set((wanted.group(2) or "[]")[1:-1].replace(" ", "").split(",")) - {""}
            todo.append((wanted.group(1), sub))
    return seen


def test_no_known_vulnerabilities_in_the_dependencies(tmp_path):
    """Every distribution crowdqa installs (with its test extra) and setuptools: no advisory pip-audit knows."""
    exe = Path(sys.executable).parent / "pip-audit"
    if not exe.is_file() and shutil.which("pip-audit") is None:
        pytest.skip("pip-audit is not installed (pip install -e '.[test]')")
    why = _advisories_reachable()
    if why is not None:
        pytest.skip(f"pip-audit's advisory source (PyPI's JSON API) is not reachable from here: {why}")
    out = tmp_path / "audit.json"
    done = subprocess.run([str(exe if exe.is_file() else shutil.which("pip-audit")), "--local", "--skip-editable",
                           "--progress-spinner", "off", "--format", "json", "--output", str(out)],
                          capture_output=True, text=True, timeout=600)
    if not out.is_file():
        pytest.fail(f"pip-audit did not write its report: {done.stderr[-2000:]}")
    report = json.loads(out.read_text())
    # pip is the installer a venv starts with, not something crowdqa installs (pip-audit's own pip-api names it):
    # its advisories are shown, not failed on; upgrade it with `python -m pip install -U pip`.
    ours = (_closure("crowdqa") | {"setuptools"}) - {"pip"}
    audited = [d for d in report["dependencies"] if "skip_reason" not in d]
    if not audited:
        pytest.skip("pip-audit could audit no dependency here: "
                    f"{report['dependencies'][0].get('skip_reason') if report['dependencies'] else 'none listed'}")
    others = vulnerable(audited, {re.sub(r"[-_.]+", "-", d["name"]).lower() for d in audited} - ours)
    if others:
        warnings.warn(f"known vulnerabilities outside crowdqa's dependencies: {others}", stacklevel=1)
    found = vulnerable(audited, ours)
    assert not found, f"known vulnerabilities (upgrade within pyproject's bounds, or raise a floor): {found}"


def vulnerable(audited: list[dict], ours: set[str]) -> dict[str, list[str]]:
    """``{"name version": [advisory ids]}`` for the audited distributions in ``ours`` that have advisories."""
    return {f"{d['name']} {d['version']}": [v["id"] for v in d["vulns"]] for d in audited
            if d.get("vulns") and re.sub(r"[-_.]+", "-", d["name"]).lower() in ours}
