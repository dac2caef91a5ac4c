"""The locks (locks/*.txt) against pyproject's ranges and the scripts that install them (issue 42).

Oracle: ``packaging``'s own specifier matching (the rule pip applies) of each pinned version against the range
pyproject.toml declares for it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
LOCKS = REPO / "locks"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)")


def pins(name: str) -> dict[str, str]:
    """Package name (canonical) -> pinned version of one lock file."""
    found: dict[str, str] = {}
    for line in (LOCKS / name).read_text(encoding="utf-8").splitlines():
        m = PIN.match(line)
        if m:
            found[canonicalize_name(m[1])] = m[2]
    return found


def ranges() -> list[Requirement]:
    """Every requirement of the project and its extras."""
    project = PYPROJECT["project"]
    return [Requirement(r) for r in project["dependencies"]] + [
        Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]


def next_line(version: str) -> Version:
    """The release line after ``version``'s (2.12.0 -> 2.13; 0.0.50 -> 0.0.51)."""
    major, minor, micro = (*Version(version).release, 0, 0)[:3]
    return Version(f"{major}.{minor + 1}" if major or minor else f"0.0.{micro + 1}")


@pytest.mark.parametrize("lock", ["test.txt", "run.txt"])
def test_the_lock_satisfies_every_range(lock):
    locked = pins(lock)
    deps = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]
    wanted = ranges() if lock == "test.txt" else deps
    missing = [str(r) for r in wanted if canonicalize_name(r.name) not in locked]
    assert not missing, f"locks/{lock} pins none of {missing}: run scripts/lock.sh"
    outside = [f"{r} (locked {locked[canonicalize_name(r.name)]})" for r in wanted
               if not r.specifier.contains(locked[canonicalize_name(r.name)], prereleases=True)]
    assert not outside, f"locks/{lock} is outside pyproject's ranges: {outside}; run scripts/lock.sh"


def test_upper_bounds_stop_at_the_tested_line():
    """An upper bound admits no release line newer than the one the suite runs on (redis<9 admitted 8.2)."""
    locked = pins("test.txt")
    loose = []
    for r in ranges():
        uppers = [Version(s.version) for s in r.specifier if s.operator == "<"]
        exact = [s for s in r.specifier if s.operator == "=="]
        if exact:
            continue
        want = next_line(locked[canonicalize_name(r.name)])
        if uppers != [want]:
            loose.append(f"{r} (locked {locked[canonicalize_name(r.name)]}: want <{want})")
    assert not loose, f"upper bounds that are not the tested line: {loose}"


def test_the_service_runs_on_what_the_suite_tested():
    run, test = pins("run.txt"), pins("test.txt")
    differ = {n: (v, test.get(n)) for n, v in run.items() if test.get(n) != v and n != "setuptools"}
    assert not differ, f"locks/run.txt and locks/test.txt pin these differently: {differ}"
    assert "setuptools" in run, "the build backend must be locked: scripts/install.sh builds without isolation"


@pytest.mark.parametrize("lock", ["test.txt", "run.txt", "label-studio.txt"])
def test_every_pin_is_hashed(lock):
    text = (LOCKS / lock).read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=[A-Za-z0-9_.\-]+==)", text)
    unhashed = [b.split()[0] for b in blocks if PIN.match(b) and "--hash=sha256:" not in b]
    assert not unhashed and len(blocks) > 10, unhashed


def test_the_label_studio_lock_is_the_tests_range():
    from tests.utils.label_studio import LOCK, SPEC

    assert LOCK == LOCKS / "label-studio.txt"
    version = pins("label-studio.txt")["label-studio"]
    assert Requirement(SPEC).specifier.contains(version), (SPEC, version)


def test_every_install_reads_a_lock():
    """The two commands, CI, the image and the Label Studio venv install from locks/, hash-checked."""
    install = (REPO / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert "--no-deps --require-hashes -r" in install and "--no-deps --no-build-isolation -e ." in install
    assert "scripts/install.sh locks/run.txt" in (REPO / "scripts" / "run.sh").read_text(encoding="utf-8")
    test_sh = (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert "scripts/install.sh locks/test.txt" in test_sh and "scripts/label_studio_venv.py" in test_sh
    venv_script = (REPO / "scripts" / "label_studio_venv.py").read_text(encoding="utf-8")
    assert '"--no-deps", "--require-hashes", "-r", str(lock)' in venv_script
    assert 'LOCK = REPO / "locks" / "label-studio.txt"' in venv_script
    assert (REPO / ".ci" / "run").read_text(encoding="utf-8").strip().endswith("exec bash scripts/test.sh")
    docker = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert "--no-deps --require-hashes -r /src/locks/run.txt" in docker
    for script in ("run.sh", "test.sh", "install.sh"):
        text = (REPO / "scripts" / script).read_text(encoding="utf-8")
        assert not re.search(r"pip install[^\n]*-e '?\.\[", text), f"scripts/{script} resolves ranges, not the lock"


def test_the_committed_drift_check_tried_these_ranges():
    """locks/drift-check.json is the result of scripts/drift_check.py on pyproject's current ranges, and passed."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("drift_check", REPO / "scripts" / "drift_check.py")
    drift = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(drift)
    result = json.loads((LOCKS / "drift-check.json").read_text(encoding="utf-8"))
    assert result["ranges_sha256"] == drift.ranges_digest(), (
        "pyproject's ranges changed since the committed drift check: run python3 scripts/drift_check.py")
    assert result["verdict"] == "pass" and result["meta"]["commit"], result["verdict"]
    line = drift.summary(result)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert line in " ".join(readme.split()), f"the README should quote the drift check as: {line}"
    assert drift.without_upper_bounds("redis>=5,<8.3") == "redis>=5"
    assert drift.without_upper_bounds("psycopg[binary]>=3.1,<3.4") == "psycopg[binary]>=3.1"
    assert drift.without_upper_bounds("crowd-kit==1.4.2") == "crowd-kit==1.4.2"
