"""Try the newest versions pyproject's ranges allow, before the lock is renewed, and say whether they work.

    python3 scripts/drift_check.py                    # newest versions inside the ranges
    python3 scripts/drift_check.py --newest-releases  # newest releases, upper bounds ignored (to widen a range)

It clones the checkout's HEAD into a temporary folder (the result is of a commit: uncommitted changes are not
tried), builds a throwaway venv there (never the checkout's .venv), installs crowdqa with its test extra by
resolving the ranges afresh (no lock), and runs a smoke set with that venv:

1. ``crowdqa aggregate`` of the bundled sample (api/sample), with the report;
2. the README's example job against an embedded ``crowdqa serve`` (tests/api/test_readme_example.py);
3. the production snippet: ``crowdqa serve`` and ``crowdqa worker`` on a real redis-server and PostgreSQL, one job
   (tests/reliability/test_deploy.py, its word-for-word test; skipped by pytest where those servers are absent);
4. the OpenAPI conformance run's collection (schemathesis imports the queue, as the suite does at start).

It prints every version that differs from locks/test.txt and a verdict, and writes the result (date, commit,
versions, each step's exit, verdict) to locks/drift-check.json, which is committed like a benchmark's results and
quoted by the docs. It is not part of .ci/run: CI must not depend on what was released this morning. When the
verdict is ``pass``, renew the lock with ``bash scripts/lock.sh`` (after moving the ranges' upper bounds, for
--newest-releases); when it is ``fail``, the step's output says what broke, and the ranges keep the tested line.
Needs only Python 3.11+ and the package index; uses no package of the checkout's venv.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULT = REPO / "locks" / "drift-check.json"
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)")
SMOKE_TESTS = (
    "tests/api/test_readme_example.py",
    "tests/reliability/test_deploy.py::test_readme_production_snippet_word_for_word",
)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(root: Path = REPO) -> dict[str, set[str]]:
    """Package -> the versions locks/test.txt pins (a universal lock may pin two, each under a marker)."""
    found: dict[str, set[str]] = {}
    for line in (root / "locks" / "test.txt").read_text(encoding="utf-8").splitlines():
        m = PIN.match(line)
        if m:
            found.setdefault(canonical(m[1]), set()).add(m[2])
    return found


def ranges_digest(root: Path = REPO) -> str:
    """A digest of pyproject's ranges (dependencies and extras): the committed result says which ranges it tried."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    ranges = sorted([*project["dependencies"], *(r for extra in project["optional-dependencies"].values()
                                                   for r in extra)])
    return hashlib.sha256("\n".join(ranges).encode()).hexdigest()


def without_upper_bounds(requirement: str) -> str:
    """``redis>=5,<8.3`` -> ``redis>=5`` (an exact ``==`` pin is kept: it is a decision, not a range)."""
    name = re.match(r"[A-Za-z0-9_.\-]+(\[[^\]]*\])?", requirement)[0]
    specs = [s.strip() for s in requirement[len(name):].split(",") if s.strip()]
    kept = [s for s in specs if not s.startswith("<")]
    return name + ",".join(kept)


def summary(result: dict) -> str:
    """The one line the README quotes: date, mode, verdict and the versions that differ from the lock."""
    differ = result["versions_differing_from_lock"]
    what = ", ".join(f"{name} {pair['locked']} -> {pair['tried']}" for name, pair in differ.items())
    n = len(differ)
    versions = (f"{n} version{'s' if n != 1 else ''} differ{'s' if n == 1 else ''} from the lock ({what})" if n
                else "the locked versions are the newest allowed")
    return (f"Drift check (locks/drift-check.json): {result['meta']['date']}, {result['mode']}: "
            f"{result['verdict']}; {versions}.")


def run(step: str, argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float) -> dict:
    """Run one step; keep its exit status, its time and the end of its output."""
    print(f"drift_check: {step}: {' '.join(argv)}", file=sys.stderr, flush=True)
    start = time.monotonic()
    try:
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        status, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        status, output = "timeout", f"timed out after {timeout:.0f} s: {exc}"
    lines = [ln for ln in output.strip().splitlines() if ln.strip()]
    return {"step": step, "command": " ".join(argv), "exit": status,
            "seconds": round(time.monotonic() - start, 1), "tail": lines[-6:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--newest-releases", action="store_true",
                        help="ignore the ranges' upper bounds (try what widening them would install)")
    parser.add_argument("--output", type=Path, default=RESULT, help="where the result goes (default: %(default)s)")
    parser.add_argument("--keep", action="store_true", help="keep the throwaway venv and say where it is")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="crowdqa-drift-"))
    venv, python, clone = work / "venv", work / "venv" / "bin" / "python", work / "crowdqa"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROWDQA_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    steps = [run("clone", ["git", "clone", "-q", str(REPO), str(clone)], env=env, cwd=work, timeout=300)]
    if (REPO.parent / "shared").is_dir() and not (work / "shared").exists():
        (work / "shared").symlink_to(REPO.parent / "shared")  # the clone's ../shared, as beside the checkout
    steps.append(run("venv", [sys.executable, "-m", "venv", str(venv)], env=env, cwd=work, timeout=300))
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if args.newest_releases:
        project = tomllib.loads((clone / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        ranges = (*project["dependencies"], *project["optional-dependencies"]["test"])
        wanted = [without_upper_bounds(r) for r in ranges]
        requirements = work / "newest.txt"
        requirements.write_text("\n".join(wanted) + "\n", encoding="utf-8")
        steps.append(run("install", [*pip, "-r", str(requirements)], env=env, cwd=clone, timeout=1800))
        steps.append(run("install crowdqa", [*pip, "--no-deps", "-e", "."], env=env, cwd=clone, timeout=600))
    else:
        steps.append(run("install", [*pip, "-e", ".[test]"], env=env, cwd=clone, timeout=1800))

    installed: dict[str, str] = {}
    if all(s["exit"] == 0 for s in steps):
        listing = subprocess.run([str(python), "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"],
                                 capture_output=True, text=True, env=env)
        installed = {canonical(p["name"]): p["version"] for p in json.loads(listing.stdout or "[]")}
        out = work / "out"
        out.mkdir()
        sample = clone / "api" / "sample"
        steps.append(run("crowdqa aggregate (the bundled sample)",
                         [str(venv / "bin" / "crowdqa"), "aggregate", str(sample / "crowd.jsonl"), "--format",
                          "spans-jsonl", "--expert", str(sample / "expert.jsonl"), "--method", "hmm-crowd",
                          "--output", str(out / "aggregate.jsonl"), "--report", str(out / "report.json"), "--quiet"],
                         env=env, cwd=work, timeout=600))
        pytest_env = env
        steps.append(run("README example job (embedded serve) and production snippet (Redis, PostgreSQL)",
                         [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *SMOKE_TESTS],
                         env=pytest_env, cwd=clone, timeout=1800))
        steps.append(run("OpenAPI conformance run: collection",
                         [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                          "tests/reliability/test_openapi_conformance.py"], env=pytest_env, cwd=clone, timeout=600))
    smoke = next((s for s in steps if s["step"].startswith("README example")), None)
    skipped = smoke is not None and any(re.search(r"\d+ skipped", line) for line in smoke["tail"])

    locked = locked_versions(clone)
    # pip is the venv's own (python -m venv bootstraps it); nothing of the project's installs it
    differ = {name: {"locked": " or ".join(sorted(locked[name])), "tried": version}
              for name, version in sorted(installed.items())
              if name in locked and version not in locked[name] and name not in ("crowdqa", "pip")}
    verdict = "fail" if not installed or any(s["exit"] != 0 for s in steps) else "incomplete" if skipped else "pass"
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True).stdout.strip()
    result = {
        "meta": {"command": "python3 scripts/drift_check.py" + (" --newest-releases" if args.newest_releases else ""),
                 "commit": commit,
                 "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                 "python": platform.python_version(), "platform": platform.platform()},
        "ranges_sha256": ranges_digest(clone),
        "mode": "newest releases (upper bounds ignored)" if args.newest_releases else "newest inside the ranges",
        "verdict": verdict,
        "smoke_tests_skipped": skipped,  # "incomplete": a smoke test skipped (no redis-server or PostgreSQL here)
        "versions_differing_from_lock": differ,
        "installed": installed,
        "steps": steps,
    }
    args.output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for name, pair in differ.items():
        print(f"drift_check: {name} {pair['locked']} (locked) -> {pair['tried']}")
    if not differ and installed:
        print("drift_check: the newest versions allowed are the locked ones")
    for s in steps:
        print(f"drift_check: {s['step']}: exit {s['exit']} ({s['seconds']} s)")
        if s["exit"] != 0:
            print("  " + "\n  ".join(s["tail"]))
    print(f"drift_check: verdict {verdict} ({result['mode']}); written to {args.output.relative_to(REPO)}")
    print(f"drift_check: the README's line: {summary(result)}")
    if args.keep:
        print(f"drift_check: the venv is kept in {venv}")
    else:
        subprocess.run(["rm", "-rf", str(work)])
    return {"pass": 0, "incomplete": 3}.get(verdict, 1)


if __name__ == "__main__":
    sys.exit(main())
