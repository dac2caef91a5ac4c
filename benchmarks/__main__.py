"""List or run the benchmarks: ``python -m benchmarks [--list] [--quick] [NAME ...]``.

Without names it lists them. With names (or ``all``) it runs them one after another, each
in its own process with the same interpreter (the machine is shared: never in parallel),
then regenerates the README tables with ``benchmarks.tables``. A benchmark whose data or
optional library is absent prints why and exits 0 on its own.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: name -> (command after the interpreter, what it measures). Order = the order ``all`` runs them.
BENCHMARKS: dict[str, tuple[list[str], str]] = {
    "pico_study": (["-m", "benchmarks.pico_study"], "PICO study: MV/DS/HMM-Crowd vs experts, published, paper"),
    "categorical": (["-m", "benchmarks.categorical"], "RTE, TEMP, Bluebirds accuracy vs gold, next to crowd-kit"),
    "ds_speed": (["-m", "benchmarks.ds_speed"], "Dawid-Skene time and memory vs crowd-kit"),
    "hmm_crowd": (["-m", "benchmarks.hmm_crowd"], "HMM-Crowd EM step vs the 44 s reference; PICO fit"),
    "ingest_pico": (["-m", "benchmarks.ingest_pico"], "PICO ingest throughput and memory"),
    "scaling": (["-m", "benchmarks.scaling"], "MV/DS/HMM-Crowd time and peak memory, 10^4..10^7 labels"),
    "service_overhead": (["benchmarks/service_overhead.py"], "job overhead and polling latency of the service"),
    "sample_size_example": (["-m", "benchmarks.sample_size_example"], "SLiCE plan vs intervals on 64 expert docs"),
    "compare": (["-m", "benchmarks.compare"], "crowdqa compare (mv, ds, ibcc, hmm-crowd, bsc-seq) on CoNLL val, PICO"),
}
#: Benchmarks without a --quick flag.
NO_QUICK = {"ingest_pico"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"benchmarks to run, or 'all': {', '.join(BENCHMARKS)}")
    ap.add_argument("--quick", action="store_true", help="pass --quick to each benchmark that has it")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = ap.parse_args(argv)
    if args.list or not args.names:
        for name, (cmd, what) in BENCHMARKS.items():
            print(f"{name:20} python {' '.join(cmd)}  # {what}")
        return 0
    names = list(BENCHMARKS) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark {unknown[0]!r}; expected one of {', '.join(BENCHMARKS)} or 'all'")
    failed = []
    for name in names:
        cmd = [sys.executable, *BENCHMARKS[name][0]] + (["--quick"] if args.quick and name not in NO_QUICK else [])
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, cwd=REPO).returncode
        print(f"== {name}: exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
        if rc:
            failed.append(name)
    subprocess.run([sys.executable, "-m", "benchmarks.tables"], cwd=REPO, check=False)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
