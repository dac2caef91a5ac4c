"""Load: concurrent clients uploading, enqueueing and polling for a bounded time; no job lost or run twice.

Starts the real service on loopback (``crowdqa serve`` as a subprocess) in three modes:
``embedded`` (SQLite, fakeredis, in-process worker), ``redis`` (a redis-server started
here and ``--workers`` separate ``crowdqa worker`` processes, two by default, on SQLite) and
``production`` (as deploy/ runs it: redis-server, a PostgreSQL cluster started here, and one
``crowdqa worker --processes`` pool of ``--workers`` processes). ``--clients``
threads (20 by default) each create a dataset, then repeat until ``--seconds`` have passed:
upload the bundled sample (crowd file), enqueue a job (MV and DS in turn), poll it every
50 ms until it is finished or failed. After the deadline no job is started; outstanding
jobs are waited for (bounded). Then the service's own listing is checked:

* **no lost jobs**: every job a client created is listed, and none is missing or extra;
* **no duplicate runs**: every job ran exactly once (``attempts == 1``);
* **every job final**: finished (or failed, counted and reported).

Reported: jobs finished per second, requests per second, and p50 / p99 / max latency of
each request kind (upload, enqueue, poll), and the CPU the clients themselves used (they share
the machine with the service: ``client_cpu_share`` is their CPU seconds per wall second, out of
``os.cpu_count()``). Results go to ``benchmarks/results/load.json`` (or ``--output``). Loopback
only; bounded in time.

    python benchmarks/load.py                   # the three modes, 20 clients, 30 s each
    python benchmarks/load.py --quick           # 20 clients, 8 s each
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections import defaultdict
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.service_overhead import _percentiles, _service  # noqa: E402
from benchmarks.tables import write_results  # noqa: E402

MODES = ("embedded", "redis", "production")

SAMPLE = REPO / "api" / "sample" / "crowd.jsonl"
FINAL = ("finished", "failed")


class _Client(threading.Thread):
    """One load client: its own dataset, then upload -> enqueue -> poll until the deadline, and at least
    ``min_rounds`` times (so a slow, shared machine still puts every client through the whole path)."""

    def __init__(self, api: str, key: str, index: int, deadline: float, drain: float, min_rounds: int) -> None:
        super().__init__(name=f"load-{index}", daemon=True)
        self.api, self.key, self.index, self.deadline, self.drain = api, key, index, deadline, drain
        self.min_rounds = min_rounds
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.jobs: list[str] = []
        self.statuses: dict[str, str] = {}
        self.errors: list[str] = []

    def _call(self, http: httpx.Client, kind: str, method: str, url: str, **kw) -> httpx.Response:
        t0 = time.perf_counter()
        r = http.request(method, url, **kw)
        self.latency[kind].append(time.perf_counter() - t0)
        if r.status_code >= 500:
            self.errors.append(f"{kind} {url}: {r.status_code} {r.text[:200]}")
        return r

    def run(self) -> None:
        data = SAMPLE.read_bytes()
        with httpx.Client(base_url=self.api, headers={"Authorization": f"Bearer {self.key}"}, timeout=60) as http:
            try:
                ds = self._call(http, "create", "POST", "/datasets", json={"name": f"load-{self.index}"}).json()["id"]
                n = 0
                while (time.monotonic() < self.deadline or n < self.min_rounds) and time.monotonic() < self.drain:
                    role = "crowd" if n == 0 else "expert"  # later files: new annotators, so the merge never clashes
                    body = data if n == 0 else data.replace(b'"annotator": "', f'"annotator": "c{n}-'.encode())
                    r = self._call(http, "upload", "POST", f"/datasets/{ds}/uploads",
                                   files={"file": ("crowd.jsonl", body)}, data={"format": "spans-jsonl", "role": role})
                    if r.status_code != 201:
                        self.errors.append(f"upload: {r.status_code} {r.text[:200]}")
                        break
                    method = "mv" if n % 2 == 0 else "ds"
                    r = self._call(http, "enqueue", "POST", f"/datasets/{ds}/jobs", json={"method": method})
                    if r.status_code != 202:
                        self.errors.append(f"enqueue: {r.status_code} {r.text[:200]}")
                        break
                    job = r.json()["id"]
                    self.jobs.append(job)
                    while time.monotonic() < self.drain:
                        status = self._call(http, "poll", "GET", f"/jobs/{job}").json().get("status")
                        if status in FINAL:
                            self.statuses[job] = status
                            break
                        time.sleep(0.05)
                    n += 1
            except Exception as exc:  # noqa: BLE001 - recorded and reported as a failure of the run
                self.errors.append(f"{type(exc).__name__}: {exc}")


@contextmanager
def _postgres():
    """A throwaway PostgreSQL cluster (the test suite's: tests/utils/services.py); yields its URL."""
    from tests.utils.services import postgres_server

    with postgres_server() as url:
        yield url


def run(mode: str, *, clients: int = 20, seconds: float = 30.0, n_workers: int = 2, drain: float = 120.0,
        min_rounds: int = 0) -> dict:
    """Run the load against one mode; return the measurements and the consistency checks.

    Clients start new jobs for ``seconds``, and each at least ``min_rounds`` times however long that
    takes (bounded by ``drain``): a test asks for a number of jobs, not for a speed.
    """
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="crowdqa-load-") as tmp, ExitStack() as stack:
        database_url = stack.enter_context(_postgres()) if mode == "production" else None
        api, key, _ = stack.enter_context(_service("embedded" if mode == "embedded" else "redis", Path(tmp) / "data",
                                                   n_workers=n_workers, database_url=database_url,
                                                   pool=mode == "production"))
        t0, cpu0 = time.monotonic(), time.process_time()  # process time: every client thread of this process
        deadline, drain_until = t0 + seconds, t0 + seconds + drain
        threads = [_Client(api, key, i, deadline, drain_until, min_rounds) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + drain + 30)
        wall, client_cpu = time.monotonic() - t0, time.process_time() - cpu0
        created = [j for t in threads for j in t.jobs]
        with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
            listed, offset = {}, 0
            while True:
                page = http.get("/jobs", params={"offset": offset, "limit": 1000}).json()
                listed.update({j["id"]: j for j in page["data"]})
                offset += len(page["data"])
                if not page["data"] or offset >= page["count"]:
                    break
    latency = defaultdict(list)
    for t in threads:
        for kind, values in t.latency.items():
            latency[kind].extend(values)
    n_requests = sum(len(v) for v in latency.values())
    statuses = [listed[j]["status"] for j in created if j in listed]
    return {
        "mode": {"embedded": "embedded", "redis": f"redis ({n_workers} workers)",
                 "production": f"production: PostgreSQL, worker --processes {n_workers}"}[mode],
        "clients": clients,
        "seconds": seconds,
        "wall_seconds": round(wall, 3),
        "jobs_created": len(created),
        "jobs_listed": len(listed),
        "lost_jobs": sorted(set(created) - set(listed)),
        "unknown_jobs": sorted(set(listed) - set(created)),
        "duplicate_runs": sorted(j for j in created if j in listed and listed[j]["attempts"] != 1),
        "not_final": sorted(j for j in created if j in listed and listed[j]["status"] not in FINAL),
        "finished": statuses.count("finished"),
        "failed": statuses.count("failed"),
        "jobs_per_second": round(statuses.count("finished") / wall, 3),
        "requests_per_second": round(n_requests / wall, 2),
        "latency": {kind: _percentiles(v) for kind, v in sorted(latency.items())},
        # The clients run on the same cores as the service: how much of them they took (1.0 = one core).
        "client_cpu_seconds": round(client_cpu, 3),
        "client_cpu_share": round(client_cpu / wall, 3),
        "client_errors": [e for t in threads for e in t.errors][:20],
        # The machine may be shared: its 1-minute load average says how much (2 cores: above 2, others ran too).
        "load_average_at_start": round(load_at_start, 2),
        "load_average_at_end": round(os.getloadavg()[0], 2),
    }


def check(result: dict) -> list[str]:
    """The consistency failures of one run (empty when no job was lost, run twice or left unfinished)."""
    problems = []
    for key in ("lost_jobs", "unknown_jobs", "duplicate_runs", "not_final", "client_errors"):
        if result[key]:
            problems.append(f"{result['mode']}: {key}: {result[key][:5]}")
    if result["jobs_created"] == 0:
        problems.append(f"{result['mode']}: no job was created")
    return problems


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated: {', '.join(MODES)}")
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--seconds", type=float, default=30.0, help="how long clients start new jobs, per mode")
    p.add_argument("--workers", type=int, default=2, help="crowdqa worker processes in redis and production modes")
    p.add_argument("--quick", action="store_true", help="8 s per mode")
    p.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "load.json"))
    args = p.parse_args(argv)
    seconds = 8.0 if args.quick else args.seconds
    results = []
    for mode in args.modes.split(","):
        res = run(mode, clients=args.clients, seconds=seconds, n_workers=args.workers)
        print(json.dumps({k: v for k, v in res.items() if k != "latency"}), flush=True)
        for kind, lat in res["latency"].items():
            print(f"  {kind:8s} p50 {lat['p50_ms']:8.1f} ms  p99 {lat['p99_ms']:8.1f} ms  n={lat['n']}", flush=True)
        results.append(res)
    out = {"benchmark": "load", "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
           "quick": args.quick, "results": results, "problems": [q for r in results for q in check(r)]}
    write_results(Path(args.output), out, indent=2)
    print(f"wrote {args.output}")
    return 1 if out["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
