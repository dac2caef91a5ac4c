"""Service overhead: enqueue-to-finished time of a trivial job, and polling latency under load.

Starts the real service on loopback (``crowdqa serve`` as a subprocess), in two modes:
``embedded`` (SQLite, fakeredis, in-process worker) and ``redis`` (a redis-server started
here, the API plus one separate ``crowdqa worker``; ``redis:2`` runs two API processes).
For each mode it measures

* **overhead**: a majority-vote job on a one-document corpus, posted then polled every
  5 ms until finished, ``--jobs`` times in a row. The wall time from POST to the poll
  that sees "finished", and the part of it not spent in the pipeline (the job row's
  load + fit + report + save timings subtracted);
* **polling latency**: ``--pollers`` concurrent clients each GET a finished job
  ``--requests`` times as fast as they can (bounded: pollers x requests requests in all);
  p50 / p99 / max of the request latency and the throughput.

Results go to ``benchmarks/results/service_overhead.json`` (or ``--output``). Loopback only.

    python benchmarks/service_overhead.py            # both modes, 30 jobs, 50 pollers x 40 requests
    python benchmarks/service_overhead.py --quick    # 10 jobs, 50 pollers x 10 requests
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: benchmarks/ is on the path, the repository is not
    sys.path.insert(0, str(REPO))
from benchmarks.meta import write_results  # noqa: E402  (imported first: it records the load before the run)

BIN = Path(sys.executable).parent
TINY = [{"doc_id": "d1", "annotator": a, "start": 0, "end": 5, "label": "X", "text": "hello world"}
        for a in ("w1", "w2", "w3")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"port {port} did not open")


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) a running process has used so far, from ``/proc`` (None
    where there is no ``/proc``): on a shared machine, the part of a wall time the process itself spent."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


@contextmanager
def _service(mode: str, data_dir: Path, api_workers: int = 1, *, n_workers: int = 1, database_url: str | None = None,
             pool: bool = False):
    """Start ``crowdqa serve`` (and Redis + ``n_workers`` workers in redis mode); yield (api_url, key, pid of the API).

    ``database_url`` replaces the SQLite file (PostgreSQL in production mode); ``pool`` starts the workers as one
    supervised ``crowdqa worker --processes n_workers``, as deploy/ runs them, instead of separate processes.
    Each process runs in a session of its own and is stopped with its whole process group (uvicorn's
    ``--workers`` and rq's work-horses are children; a pool's supervisor stops its own processes).
    """
    procs: list[subprocess.Popen] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_")}
    env["CROWDQA_DATA_DIR"] = str(data_dir)
    # One key stands for many clients here (load.py: 20 of them, an upload and a job each per round): the
    # per-project limits, which would answer 429, are not what these benchmarks measure.
    env["CROWDQA_MAX_UPLOADS_PER_HOUR"] = env["CROWDQA_MAX_ACTIVE_JOBS"] = "1000000"
    if database_url:
        env["CROWDQA_DATABASE_URL"] = database_url
    try:
        if mode == "redis":
            rport = _free_port()
            procs.append(subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1", "--save", "",
                                           "--appendonly", "no", "--dir", str(data_dir.parent)],
                                          stdout=subprocess.DEVNULL, start_new_session=True))
            _wait_port(rport)
            env["CROWDQA_REDIS_URL"] = f"redis://127.0.0.1:{rport}/0"
            workers = [["worker", "--processes", str(n_workers)]] if pool else [["worker"]] * n_workers
            for args in workers:
                procs.append(subprocess.Popen([str(BIN / "crowdqa"), *args], env=env, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, start_new_session=True))
        key = subprocess.run([str(BIN / "crowdqa"), "keys", "create", "--project", "bench"], env=env, check=True,
                             capture_output=True, text=True).stdout.strip().splitlines()[-1]
        port = _free_port()
        procs.append(subprocess.Popen([str(BIN / "crowdqa"), "serve", "--port", str(port), "--log-level", "warning",
                                       "--workers", str(api_workers)],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
        _wait_port(port)
        yield f"http://127.0.0.1:{port}/api/v1", key, procs[-1].pid
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)


def _percentiles(values: list[float]) -> dict:
    a = np.asarray(values) * 1000.0
    return {"n": int(a.size), "p50_ms": round(float(np.percentile(a, 50)), 3),
            "p90_ms": round(float(np.percentile(a, 90)), 3), "p99_ms": round(float(np.percentile(a, 99)), 3),
            "max_ms": round(float(a.max()), 3), "mean_ms": round(float(a.mean()), 3)}


def _overhead(client: httpx.Client, n_jobs: int) -> tuple[dict, str]:
    ds = client.post("/datasets", json={"name": "tiny"}).json()["id"]
    body = "".join(json.dumps(r) + "\n" for r in TINY).encode()
    r = client.post(f"/datasets/{ds}/uploads", files={"file": ("tiny.jsonl", body)},
                    data={"format": "spans-jsonl", "role": "crowd"})
    r.raise_for_status()
    walls, overheads, job_id = [], [], ""
    for _ in range(n_jobs):
        t0 = time.perf_counter()
        job_id = client.post(f"/datasets/{ds}/jobs", json={"method": "mv"}).json()["id"]
        while True:
            job = client.get(f"/jobs/{job_id}").json()
            if job["status"] in ("finished", "failed"):
                break
            time.sleep(0.005)
        wall = time.perf_counter() - t0
        assert job["status"] == "finished", job
        walls.append(wall)
        overheads.append(wall - sum(job["timings"].values()))
    return {"wall": _percentiles(walls), "overhead_excluding_pipeline": _percentiles(overheads)}, job_id


async def _pollers(api: str, key: str, job_id: str, n_pollers: int, n_requests: int) -> dict:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=n_pollers, max_keepalive_connections=n_pollers)
    async with httpx.AsyncClient(base_url=api, headers={"Authorization": f"Bearer {key}"}, limits=limits,
                                 timeout=30) as client:
        async def poll() -> None:
            nonlocal errors
            for _ in range(n_requests):
                t = time.perf_counter()
                r = await client.get(f"/jobs/{job_id}")
                latencies.append(time.perf_counter() - t)
                errors += r.status_code != 200

        t0 = time.perf_counter()
        await asyncio.gather(*(poll() for _ in range(n_pollers)))
        elapsed = time.perf_counter() - t0
    return {"pollers": n_pollers, "requests": len(latencies), "errors": errors, "seconds": round(elapsed, 3),
            "requests_per_second": round(len(latencies) / elapsed, 1), "latency": _percentiles(latencies)}


def run(mode: str, *, n_jobs: int, n_pollers: int, n_requests: int) -> dict:
    base, _, workers = mode.partition(":")
    api_workers = int(workers or 1)
    with tempfile.TemporaryDirectory(prefix=f"crowdqa-bench-{base}-") as tmp, \
            _service(base, Path(tmp), api_workers) as (api, key, _):
        with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
            overhead, job_id = _overhead(client, n_jobs)
        polling = asyncio.run(_pollers(api, key, job_id, n_pollers, n_requests))
    return {"mode": base, "api_processes": api_workers, "jobs": n_jobs, "overhead": overhead, "polling": polling}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--modes", default="embedded,redis",
                   help="comma-separated: embedded, redis, redis:N (N API processes)")
    p.add_argument("--jobs", type=int, default=30)
    p.add_argument("--pollers", type=int, default=50)
    p.add_argument("--requests", type=int, default=40, help="requests per poller")
    p.add_argument("--quick", action="store_true", help="10 jobs, 10 requests per poller")
    p.add_argument("--output", default=str(REPO / "benchmarks" / "results" / "service_overhead.json"))
    args = p.parse_args(argv)
    if args.quick:
        args.jobs, args.requests = 10, 10
    modes = [m for m in args.modes.split(",") if m]
    if shutil.which("redis-server") is None:
        print("redis-server not found: skipping the redis modes", file=sys.stderr)
        modes = [m for m in modes if not m.startswith("redis")]
    results = {"benchmark": "service_overhead", "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                             "platform": platform.platform()},
               "settings": {"jobs": args.jobs, "pollers": args.pollers, "requests_per_poller": args.requests},
               "results": [run(m, n_jobs=args.jobs, n_pollers=args.pollers, n_requests=args.requests)
                           for m in modes]}
    write_results(Path(args.output), results, indent=2)
    for r in results["results"]:
        o, q = r["overhead"], r["polling"]
        print(f"{r['mode']:8} x{r['api_processes']} job POST->finished p50 {o['wall']['p50_ms']:.1f} ms "
              f"(p90 {o['wall']['p90_ms']:.1f}); "
              f"overhead excl. pipeline p50 {o['overhead_excluding_pipeline']['p50_ms']:.1f} ms | "
              f"{q['pollers']} pollers: p50 {q['latency']['p50_ms']:.1f} ms p99 {q['latency']['p99_ms']:.1f} ms, "
              f"{q['requests_per_second']:.0f} req/s, {q['errors']} errors")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
