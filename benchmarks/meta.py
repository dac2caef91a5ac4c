"""Where a results file comes from: the ``meta`` block every benchmark writes, and whether it is current.

:func:`make_meta` records the command, the git commit the run's code was at (and which files
differed from it), the machine, the 1-minute load before and after the run, the versions of
the libraries and of every peer it ran, and the wall seconds. :func:`stale_reason` compares a
results file's commit with the code it depends on: the file is current only when none of the
benchmark's source paths changed between the recorded commit and ``HEAD`` and the run had no
uncommitted change to them. The comparison is ``git diff`` between the two commits, so a
rebase that leaves those paths alone keeps a result current, and a change to them (even to a
comment) does not.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The clock and load average when the benchmark process imported this module ("before the run"); the
#: git state is read then too (``_started``), since a commit made while a benchmark runs is not its code.
_STARTED = (time.perf_counter(), [round(x, 2) for x in os.getloadavg()])

#: What benchmarks write, never code they measure: a change there leaves every result current.
OUTPUTS = ("benchmarks/results",)

#: Installed distributions whose versions a results file records when present (project libraries
#: and the peers the benchmarks run in-process or as subprocesses of this interpreter).
VERSIONED = ("numpy", "scipy", "scikit-learn", "crowd-kit", "pandas", "fastapi", "rq", "redis", "sqlmodel")


def _git(*args: str, repo: Path = REPO) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None


def git_state(repo: Path = REPO) -> dict:
    """``{"commit": HEAD or None, "dirty": bool or None, "dirty_paths": [...]}`` of the working tree.

    ``dirty_paths`` are the tracked files that differ from HEAD and the untracked files git does
    not ignore (paths relative to the repository root).
    """
    head = _git("rev-parse", "HEAD", repo=repo)
    if head is None or head.returncode:
        return {"commit": None, "dirty": None, "dirty_paths": []}
    status = _git("status", "--porcelain", "--untracked-files=all", repo=repo)
    paths = [] if status is None else [line[3:].split(" -> ")[-1] for line in status.stdout.splitlines() if line]
    return {"commit": head.stdout.strip(), "dirty": bool(paths), "dirty_paths": sorted(paths)}


_GIT_AT_START: dict | None = None


def _started() -> dict:
    """The git state when this process imported the module (read on first use otherwise)."""
    global _GIT_AT_START
    if _GIT_AT_START is None:
        _GIT_AT_START = git_state()
    return _GIT_AT_START


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def versions(names: tuple[str, ...] = VERSIONED) -> dict[str, str]:
    """The installed version of each named distribution (absent ones left out)."""
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def command_line() -> str:
    """How this process was started, as a user would type it (``python -m benchmarks.X ...``)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    head = f"python -m {spec.name}" if spec is not None and spec.name else f"python {sys.argv[0]}"
    return " ".join([head, *sys.argv[1:]])


def make_meta(command: str, *, seconds: float | None = None, peers: dict | None = None) -> dict:
    """The ``meta`` block of a results file (see the module docstring).

    ``seconds`` defaults to the time since this module was imported (the benchmark's start);
    ``peers`` names the versions of peers the run used that are not installed distributions
    (the authors' code at a commit, a separate virtual environment's packages).
    """
    start, load_before = _STARTED
    state, end = _started(), git_state()
    dirty = sorted(set(state["dirty_paths"]) | set(end["dirty_paths"]))  # uncommitted at the start or the end
    meta = {
        "command": command,
        "commit": state["commit"],
        "dirty": bool(dirty) if state["dirty"] is not None else None,
        "dirty_paths": dirty[:200],
        "machine": f"{cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}",
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "numpy": versions(("numpy",)).get("numpy", "?"),
        "versions": versions(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average_before": load_before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "seconds": round(time.perf_counter() - start if seconds is None else seconds, 1),
    }
    meta["load_average"] = meta["load_average_after"]  # the key renderers read before this module
    if end["commit"] != state["commit"]:  # committed during the run: the results are of the first commit
        meta["commit_at_end"] = end["commit"]
    if peers:
        meta["peers"] = peers
    return meta


_started()


def write_results(path: Path, result: dict, *, indent: int = 1) -> Path:
    """Write a benchmark's results JSON to ``path`` (its folder made if missing); return ``path``.

    A result without a ``meta`` block gets one for this process's command line, and a block
    without a commit is completed by :func:`make_meta` (its own keys kept), so that no results
    file is written without its commit.
    """
    given = result.get("meta") or {}
    if not given.get("commit"):
        meta = {**make_meta(given.get("command") or command_line()), **given}
        result = {"meta": meta, **{k: v for k, v in result.items() if k != "meta"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=indent) + "\n", encoding="utf-8")
    return path


def stale_reason(meta: dict | None, sources: tuple[str, ...], repo: Path = REPO) -> str | None:
    """Why a results file with this ``meta`` is not from the current code of ``sources``; None if it is.

    Current means: the recorded commit exists here, no source path changed between it and
    ``HEAD`` (``git diff``), and the run had no uncommitted change under a source path.
    """
    commit = (meta or {}).get("commit")
    if not commit:
        return "no commit recorded"
    found = _git("cat-file", "-e", f"{commit}^{{commit}}", repo=repo)
    if found is None or found.returncode:
        return f"its commit {commit[:10]} is not in this repository"
    dirty = [p for p in (meta or {}).get("dirty_paths") or () if _under(p, sources) and not _under(p, OUTPUTS)]
    if dirty:
        return f"it ran with uncommitted changes to {', '.join(dirty[:3])}"
    paths = (*sources, *(f":(exclude){p}" for p in OUTPUTS))
    changed = _git("diff", "--name-only", commit, "HEAD", "--", *paths, repo=repo)
    if changed is None or changed.returncode:
        return "git could not compare its commit with HEAD"
    files = changed.stdout.split()
    if not files:
        return None
    last = _git("log", "-1", "--format=%h %cs", f"{commit}..HEAD", "--", *paths, repo=repo)
    by = f" (last in {last.stdout.strip()})" if last is not None and last.stdout.strip() else ""
    more = f" and {len(files) - 3} more" if len(files) > 3 else ""
    return f"the code it measures changed after its commit {commit[:10]}{by}: {', '.join(files[:3])}{more}"


def _under(path: str, sources: tuple[str, ...]) -> bool:
    return any(path == s or path.startswith(s.rstrip("/") + "/") for s in sources)
