"""Rerun the benchmarks behind the Benchmarks page: ``python -m benchmarks [--list] [--quick] [all | NAME ...]``.

Without names it lists them. With names (or ``all``: every benchmark of :mod:`benchmarks.registry`,
in the page's order) it runs each step one after another, each in its own process with the same
interpreter (the machine is shared: never in parallel), with a progress bar on stderr, then
regenerates the Benchmarks page (docs/benchmarks.md) with ``benchmarks.tables``. ``--quick`` runs the quick subset
(each benchmark's small variant, writing ``NAME_quick.json``). A run of ``all`` records its
steps' seconds in ``benchmarks/results/rerun_all[_quick].json`` (the Benchmarks page's "Rerun every
number" table). A benchmark whose data or optional library is absent prints why and exits 0.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from tqdm import tqdm

from benchmarks.meta import make_meta, write_results  # imported first: the run's start (commit, load)
from benchmarks.registry import BENCHMARKS, BY_STEM

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def plan(names: list[str], *, quick: bool) -> list[tuple[str, tuple[str, ...]]]:
    """(benchmark, argv after ``python``) of every step to run, in order."""
    return [(name, step) for name in names for step in (BY_STEM[name].quick if quick else BY_STEM[name].steps)]


def run(steps: list[tuple[str, tuple[str, ...]]], *, python: str = sys.executable) -> list[dict]:
    """Run the steps one at a time under a progress bar; each step's name, command, exit code and seconds."""
    done = []
    bar = tqdm(total=len(steps), unit="step", file=sys.stderr, dynamic_ncols=True)
    try:
        for name, step in steps:
            bar.set_description(name)
            tqdm.write(f"== {name}: python {' '.join(step)}", file=sys.stderr)
            t0 = time.perf_counter()
            rc = subprocess.run([python, *step], cwd=REPO).returncode
            seconds = time.perf_counter() - t0
            tqdm.write(f"== {name}: exit {rc} after {seconds:.0f} s", file=sys.stderr)
            done.append({"benchmark": name, "command": f"python {' '.join(step)}", "exit": rc,
                         "seconds": round(seconds, 1)})
            bar.update(1)
    finally:
        bar.close()
    return done


def main(argv: list[str] | None = None) -> int:
    names_all = [b.stem for b in BENCHMARKS]
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"benchmarks to run, or 'all': {', '.join(names_all)}")
    ap.add_argument("--quick", action="store_true", help="the quick subset: each benchmark's small variant")
    ap.add_argument("--list", action="store_true", help="list the benchmarks and their commands, and exit")
    args = ap.parse_args(argv)
    if args.list or not args.names:
        for b in BENCHMARKS:
            steps = b.quick if args.quick else b.steps
            print(f"{b.stem:20} {b.what}")
            for step in steps or (("(not in the quick subset)",) if args.quick else ()):
                print(f"{'':20}   python {' '.join(step)}" if step[0] != "(not in the quick subset)" else
                      f"{'':20}   {step[0]}")
        return 0
    everything = args.names == ["all"]
    names = names_all if everything else args.names
    unknown = [n for n in names if n not in BY_STEM]
    if unknown:
        ap.error(f"unknown benchmark {unknown[0]!r}; expected one of {', '.join(names_all)} or 'all'")
    steps = plan(names, quick=args.quick)
    if not steps:
        ap.error(f"{', '.join(names)}: not in the quick subset; run without --quick")
    t0 = time.perf_counter()
    done = run(steps)
    if everything:
        command = "python -m benchmarks all" + (" --quick" if args.quick else "")
        write_results(RESULTS / f"rerun_all{'_quick' if args.quick else ''}.json",
                      {"meta": make_meta(command, seconds=time.perf_counter() - t0), "steps": done}, indent=2)
    subprocess.run([sys.executable, "-m", "benchmarks.tables"], cwd=REPO, check=False)
    failed = [d["benchmark"] for d in done if d["exit"]]
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
