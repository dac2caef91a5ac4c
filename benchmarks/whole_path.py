"""What a user waits: the whole ``crowdqa aggregate`` process vs crowd-kit's whole process, and an API job.

``python -m benchmarks.whole_path [--quick] [--sizes 3e5,3e6,3e7] [--cap SECONDS]`` writes
``benchmarks/results/whole_path.json`` (``whole_path_quick.json`` with ``--quick``: 3e4 and 3e5 labels).

Data (issue 14): ``n_items`` items x 3 answers from 500 workers, 3 classes, string ids
``task0000001`` and ``worker0042``, rows shuffled, written once per size as a CSV
(``task,worker,label``) into a temporary folder.

Each point runs as its own process, one after the other, so peak RSS is the process's
(``ru_maxrss`` of the child from ``os.wait4``) and every time is wall-clock from start to exit; the
child's CPU seconds (user + system from the same ``os.wait4``) are kept beside it, since on a shared
machine the wall time also counts the time spent waiting for a core:

* crowdqa: ``crowdqa aggregate FILE --format categorical --method M --output out.csv
  --report report.json --quiet`` (reading, fit, the default report, writing labels and report);
  the stage seconds come from the report's ``fit.stages``. crowdqa's modules are byte-compiled
  once before the first point, as pip does when it installs the package (crowd-kit's, pandas'
  and numpy's are, in site-packages): from an editable install with ``PYTHONDONTWRITEBYTECODE``
  set, every run would otherwise compile its ~45 modules from source first.
* crowd-kit 1.4.2 (its documented use): ``pandas.read_csv`` + ``MajorityVote().fit_predict`` or
  ``DawidSkene(n_iter=100).fit_predict`` + writing the labels with ``to_csv``, in a Python
  process of its own; a run over ``--cap`` seconds is stopped and reported as such.
* the API job (embedded service: ``crowdqa serve`` with SQLite and the in-process queue, on
  loopback): upload the file, post the job, poll until finished, fetch ``GET /report``;
  each of the three is timed, and the job's stage seconds come from its progress.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.ds_speed import N_WORKERS, PER_ITEM, one_coin_crowd
from benchmarks.tables import make_meta, write_results

RESULTS = Path(__file__).resolve().parent / "results"
BIN = Path(sys.executable).parent

CROWD_KIT = """
import sys, time
import pandas as pd
from crowdkit.aggregation import DawidSkene, MajorityVote
path, method, out = sys.argv[1:4]
df = pd.read_csv(path)
model = MajorityVote() if method == "mv" else DawidSkene(n_iter=100)
labels = model.fit_predict(df)
labels.to_csv(out)
"""


def write_data(n_labels: int, path: Path, *, seed: int = 0, n_workers: int = N_WORKERS) -> None:
    """The issue's synthetic crowd as ``task,worker,label`` rows (shuffled), written in chunks."""
    crowd = one_coin_crowd(n_labels // PER_ITEM, n_workers=n_workers, seed=seed)
    item, worker, label, order = crowd["item"], crowd["worker"], crowd["label"], crowd["order"]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("task,worker,label\n")
        for s in range(0, order.size, 1_000_000):
            o = order[s:s + 1_000_000]
            rows = np.char.add(np.char.add(np.char.add("task", np.char.zfill((item[o] + 1).astype(str), 7)),
                                           np.char.add(",worker", np.char.zfill(worker[o].astype(str), 4))),
                               np.char.add(",", label[o].astype(str)))
            fh.write("\n".join(rows.tolist()))
            fh.write("\n")


def _run(argv: list[str], *, cap: float | None = None, stdout=subprocess.DEVNULL) -> dict:
    """Run a process to its end (or ``cap``); wall seconds, CPU seconds (user + system, all threads), peak RSS
    (MiB), exit status. On a shared machine the wall time includes waiting for a core; the CPU time does not.
    ``stdout`` is where the process's output goes (discarded unless given)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=subprocess.PIPE)
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if cap is not None and time.perf_counter() - t0 > cap:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            timed_out = True
            break
        time.sleep(0.05)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode("utf-8", "replace")[-2000:] if proc.stderr else ""
    out = {"seconds": round(wall, 3), "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 3),
           "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "exit": proc.returncode, "capped": timed_out}
    if proc.returncode and not timed_out:
        out["stderr"] = err
    return out


def compile_crowdqa() -> None:
    """Byte-compile crowdqa's packages (``__pycache__`` beside each module), as a wheel install does."""
    import compileall
    import importlib.util

    for package in ("aggregation", "api", "ingest", "jobs", "quality", "store"):
        for folder in importlib.util.find_spec(f"crowdqa.{package}").submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)


def crowdqa_point(path: Path, method: str, work: Path) -> dict:
    report = work / f"report_{method}.json"
    r = _run([str(BIN / "crowdqa"), "aggregate", str(path), "--format", "categorical", "--method", method,
              "--output", str(work / f"out_{method}.csv"), "--report", str(report), "--quiet"])
    if r["exit"] == 0:
        fit = json.loads(report.read_text())["fit"]
        r.update(stages=fit["stages"], iterations=fit["iterations"])
    return r


def crowdkit_point(path: Path, method: str, work: Path, cap: float) -> dict:
    script = work / "crowdkit_run.py"
    script.write_text(CROWD_KIT)
    return _run([sys.executable, str(script), str(path), method, str(work / f"ck_{method}.csv")], cap=cap)


def api_point(path: Path, method: str, work: Path) -> dict:
    """Upload, job and report through the embedded service on loopback; seconds of each, and the CPU seconds
    the service process spent on each (the embedded queue runs the job in that process too)."""
    import httpx

    from benchmarks.service_overhead import _service, cpu_seconds

    with _service("embedded", work / f"data_{method}") as (api, key, pid):
        with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=3600) as client:
            ds = client.post("/datasets", json={"name": "whole-path"}).json()["id"]
            c0, t0 = cpu_seconds(pid), time.perf_counter()
            with open(path, "rb") as fh:
                r = client.post(f"/datasets/{ds}/uploads", files={"file": (path.name, fh)},
                                data={"format": "categorical", "role": "crowd"})
            r.raise_for_status()
            c1, t1 = cpu_seconds(pid), time.perf_counter()
            job_id = client.post(f"/datasets/{ds}/jobs", json={"method": method}).json()["id"]
            while True:
                job = client.get(f"/jobs/{job_id}").json()
                if job["status"] in ("finished", "failed"):
                    break
                time.sleep(0.1)
            c2, t2 = cpu_seconds(pid), time.perf_counter()
            rep = client.get(f"/jobs/{job_id}/report")
            rep.raise_for_status()
            c3, t3 = cpu_seconds(pid), time.perf_counter()
    cpu = {} if None in (c0, c1, c2, c3) else {  # the job's includes answering the polls, every 0.1 s
        "upload_cpu_seconds": round(c1 - c0, 3), "job_cpu_seconds": round(c2 - c1, 3),
        "report_cpu_seconds": round(c3 - c2, 3)}
    return {"upload_seconds": round(t1 - t0, 3), "job_seconds": round(t2 - t1, 3), "report_seconds": round(t3 - t2, 3),
            "total_seconds": round(t3 - t0, 3), **cpu, "status": job["status"],
            "stages": (job.get("progress") or {}).get("stages"), "report_bytes": len(rep.content),
            "load_average": [round(x, 2) for x in os.getloadavg()]}  # after the point: how shared


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3e4 and 3e5 labels only")
    ap.add_argument("--sizes", default=None, help="comma-separated label counts (default 3e5,3e6,3e7)")
    ap.add_argument("--cap", type=float, default=1800.0, help="stop a crowd-kit run after this many seconds")
    ap.add_argument("--no-api", action="store_true", help="skip the API job")
    ap.add_argument("--api-max", type=float, default=3e6, help="largest size run through the API")
    ap.add_argument("--workers", type=int, default=N_WORKERS,
                    help=f"crowd size (default {N_WORKERS}); another size writes whole_path_<N>w.json")
    ap.add_argument("--no-peer", action="store_true", help="skip crowd-kit (e.g. to time the report alone)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the points of other sizes already in the results file (a long size run on its own)")
    ap.add_argument("--api-only", action="store_true",
                    help="only the API job; with --merge it replaces the 'api' of the points already there")
    args = ap.parse_args(argv)
    sizes = [int(float(s)) for s in (args.sizes or ("3e4,3e5" if args.quick else "3e5,3e6,3e7")).split(",")]
    t_start = time.perf_counter()
    compile_crowdqa()
    points = []
    if args.merge and _results_path(args).exists():
        earlier = json.loads(_results_path(args).read_text())
        points = [p for p in earlier["points"] if args.api_only or p["labels"] not in sizes]
        args.earlier_meta = earlier["meta"]
    with tempfile.TemporaryDirectory(prefix="crowdqa-whole-path-") as tmp:
        work = Path(tmp)
        for n in sizes:
            path = work / f"synth_{n}.csv"
            write_data(n, path, n_workers=args.workers)
            for method in ("mv", "ds"):
                point = {"labels": n, "items": n // PER_ITEM, "workers": args.workers, "method": method,
                         "file_mib": round(path.stat().st_size / 2**20, 1)}
                if args.api_only:
                    point = _take_point(points, point)
                else:
                    point["crowdqa"] = crowdqa_point(path, method, work)
                if not args.no_peer and not args.api_only:
                    point["crowd_kit"] = crowdkit_point(path, method, work, args.cap)
                if not args.no_api and n <= args.api_max:
                    point["api"] = api_point(path, method, work)
                if not args.api_only:  # (api_point keeps its own)
                    point["load_average"] = [round(x, 2) for x in os.getloadavg()]  # after the point: how shared
                print(json.dumps(point), flush=True)
                points.append(point)
                _save(points, args, t_start)  # after every point: a long run keeps what it measured
            path.unlink()
    print(f"wrote {_save(points, args, t_start)}")
    return 0


def _take_point(points: list[dict], point: dict) -> dict:
    """The point of ``points`` with ``point``'s labels and method, taken out of the list (``point`` if none)."""
    for i, p in enumerate(points):
        if (p["labels"], p["method"]) == (point["labels"], point["method"]):
            return points.pop(i)
    return point


def _results_path(args: argparse.Namespace) -> Path:
    crowd = "" if args.workers == N_WORKERS else f"_{args.workers}w"
    return RESULTS / f"whole_path{crowd}{'_quick' if args.quick else ''}.json"


def _save(points: list[dict], args: argparse.Namespace, t_start: float) -> Path:
    command = "python -m benchmarks.whole_path" + (" --quick" if args.quick else "")
    if args.sizes:
        command += f" --sizes {args.sizes}"
    if args.workers != N_WORKERS:
        command += f" --workers {args.workers}"
    command += " --no-peer" * args.no_peer + " --no-api" * args.no_api + " --api-only" * args.api_only
    meta = make_meta(command + f" --cap {args.cap:g}", seconds=time.perf_counter() - t_start)
    meta["note"] = "One run per point; the machine (2 cores) was shared with other engineers' work"
    if getattr(args, "earlier_meta", None):
        meta["merged_with"] = args.earlier_meta  # the run that measured the other sizes
    points = sorted(points, key=lambda p: (p["labels"], p["method"]))
    out = write_results(_results_path(args), {"meta": meta, "cap_seconds": args.cap, "points": points}, indent=2)
    return out


if __name__ == "__main__":
    sys.exit(main())
