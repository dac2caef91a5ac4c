"""Fit time of every categorical aggregator against crowd-kit 1.4.2's on one synthetic crowd of 300k labels.

``python -m benchmarks.categorical_speed [--quick] [--labels N] [--cap SECONDS] [--row NAME ...]`` writes
``benchmarks/results/categorical_speed[_quick].json`` (``--quick``: 30k labels, 60 s cap). ``--row`` (repeatable)
runs only the named rows of :data:`METHODS` and :data:`VARIANTS` and replaces them in the existing file,
each stamped with its own date, load and command (``rerun``), the other rows and the file's ``meta`` kept.

Data (seeded, the same arrays for both libraries): ``N / 3`` items, each answered by 3
distinct workers drawn from 500; worker ``w`` is right with probability ``p_w ~ U(0.5, 0.95)``
and otherwise picks one of the other classes uniformly; 3 classes, except for KOS, which
is for binary tasks and gets a 2-class crowd drawn the same way. ``gold-mv`` is given the
true class of a seeded 10% of the items (both libraries) and scored on the rest; every
other method is scored on all items.

Each fit runs in a process of its own, which reads the arrays from an ``.npz``, builds its
library's input (crowd-kit: a ``DataFrame`` of integer ``task, worker, label``, workers and
labels numbered in order of first appearance, as crowd-kit's MACE needs; crowdqa: a
:class:`~crowdqa.aggregation.corpus.Corpus`) outside the timed region, for both libraries alike, and
times the fit alone, with every method's defaults: the fastest of 3 fits, fewer once 20 s are spent,
and, as timeit does for short runs, more while the fits so far took less than 1 s (at most 25): the
best of 3 fits of a few milliseconds on the shared, noisy machine measured mostly the noise. Wall and
CPU seconds of the process, each the least of its fits; the same rule for both libraries.
Rows of :data:`VARIANTS` run one method with the same non-default parameters in both libraries
(MACE with one restart), so that a method whose peer does not finish under the cap at its
defaults still gets a measured ratio.
crowd-kit's ``Wawa``, ``ZeroBasedSkill`` and ``GoldMajorityVote`` cannot ``predict`` under
scikit-learn >= 1.6, so their time is ``fit`` plus the ``MajorityVote(skills=...)`` that
their ``predict`` runs. A crowd-kit run longer than ``--cap`` seconds is stopped; its ratio
is then a lower bound (crowdqa's fit against the cap). Every child runs with one BLAS thread
(``OPENBLAS_NUM_THREADS=1`` and the like): crowdqa's fits limit themselves to one (threadpoolctl,
see ``crowdqa.aggregation._base``), and the variables give crowd-kit the same, which only helps it:
on a shared 2-core machine OpenBLAS's threads made one ``np.dot`` of 300k numbers 16-330x slower
than one thread (measured), and scipy's conjugate-gradient M-step (GLAD in both libraries) is made
of such calls.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.tables import make_meta, write_results

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
N_WORKERS, PER_ITEM, GOLD_SHARE = 500, 3, 0.1
#: Fits per child (the fastest counts, as timeit's), fewer once REPEAT_BUDGET seconds are spent.
REPEATS, REPEAT_BUDGET = 3, 20.0
#: Short fits: repeated while the fits so far took less than SHORT_BUDGET seconds, at most MAX_FITS in all.
SHORT_BUDGET, MAX_FITS = 1.0, 25
#: crowdqa method -> crowd-kit class (None: crowd-kit has no such method). Majority vote is the reference
#: point: the other vote-based methods are one (Wawa, GoldMajorityVote) or many (ZeroBasedSkill) such votes.
METHODS = {"mv": "MajorityVote", "wawa": "Wawa", "zbs": "ZeroBasedSkill", "gold-mv": "GoldMajorityVote",
           "glad": "GLAD", "mace": "MACE",
           "kos": "KOS", "mmsr": "MMSR", "ibcc": None}
#: Extra rows: the same method with parameters both libraries take, so that a peer too slow to finish
#: under the cap is still measured. MACE's fit is ``n_restarts`` independent runs (time linear in
#: them): one restart each. GLAD with ``m_step="cg"``: crowdqa with the authors' and crowd-kit's
#: conjugate-gradient M-step (crowd-kit's own defaults, so its point of the ``glad`` row is reused:
#: ``None``). row -> (method, crowdqa parameters, crowd-kit parameters or None).
VARIANTS = {"mace, 1 restart": ("mace", {"n_restarts": 1}, {"n_restarts": 1}),
            "glad, m_step=cg": ("glad", {"m_step": "cg"}, None)}


def make_crowd(n_items: int, n_classes: int, *, seed: int = 0) -> dict[str, np.ndarray]:
    """One-coin crowd sorted by item: ``token``, ``worker``, ``label`` (n_obs,); ``truth``, ``known`` (n_items,)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes, size=n_items)
    skill = rng.uniform(0.5, 0.95, size=N_WORKERS)
    workers = rng.integers(0, N_WORKERS, size=(n_items, PER_ITEM))
    while True:  # redraw the items whose workers are not distinct
        s = np.sort(workers, axis=1)
        dup = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if dup.size == 0:
            break
        workers[dup] = rng.integers(0, N_WORKERS, size=(dup.size, PER_ITEM))
    token, worker = np.repeat(np.arange(n_items), PER_ITEM), workers.ravel()
    wrong = (truth[token] + rng.integers(1, n_classes, size=token.size)) % n_classes
    label = np.where(rng.random(token.size) < skill[worker], truth[token], wrong)
    known = np.where(rng.random(n_items) < GOLD_SHARE, truth, -1)
    return {"token": token, "worker": worker, "label": label, "truth": truth, "known": known}


def _fit_crowdqa(method: str, z: dict, params: dict) -> tuple[float, np.ndarray]:
    from crowdqa.aggregation import ConvergenceWarning, make_aggregator
    from crowdqa.aggregation.corpus import Corpus

    n, k = z["truth"].size, int(z["label"].max()) + 1
    ids = tuple(map(str, range(n)))
    corpus = Corpus.from_arrays(
        token=z["token"], worker=z["worker"], label=z["label"], doc_lengths=np.ones(n, np.int64),
        token_start=np.zeros(n, np.int64), token_end=np.ones(n, np.int64), doc_ids=ids, texts=("x",) * n,
        worker_ids=tuple(f"w{w}" for w in range(N_WORKERS)), worker_roles=("crowd",) * N_WORKERS,
        class_names=tuple(f"c{c}" for c in range(k)))
    model = make_aggregator(method, params)
    known = z["known"] if method == "gold-mv" else None
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # defaults as a user runs them; counted in n_iter
        model.fit(corpus, true_labels=known)
    return time.perf_counter() - t0, time.process_time() - c0, model.labels_


def _fit_crowdkit(method: str, z: dict, params: dict) -> tuple[float, np.ndarray]:
    import pandas as pd
    from crowdkit import aggregation as ck

    workers, _ = pd.factorize(z["worker"])
    codes, classes = pd.factorize(z["label"])
    df = pd.DataFrame({"task": z["token"], "worker": workers, "label": codes})
    code_of = {int(c): i for i, c in enumerate(classes)}
    has = np.flatnonzero(z["known"] >= 0)
    gold = pd.Series([code_of[int(c)] for c in z["known"][has]], index=has)
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas deprecation warnings raised inside crowd-kit
        if method in ("wawa", "zbs", "gold-mv"):
            model = getattr(ck, METHODS[method])()
            model.fit(df, gold) if method == "gold-mv" else model.fit(df)
            fill = {"on_missing_skill": "value", "default_skill": float(model.skills_.mean())}
            labels = ck.MajorityVote(**fill).fit(df, skills=model.skills_).labels_
        else:
            labels = getattr(ck, METHODS[method])(**params).fit_predict(df)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = np.full(z["truth"].size, -1, dtype=np.int64)
    out[labels.index.to_numpy(dtype=np.int64)] = np.asarray(classes)[labels.to_numpy(dtype=np.int64)]
    return seconds, cpu, out


def _child(lib: str, method: str, data: str, params: str = "{}") -> dict:
    """The fastest of ``REPEATS`` fits (fewer past ``REPEAT_BUDGET`` s, up to ``MAX_FITS`` in ``SHORT_BUDGET`` s)."""
    z = dict(np.load(data))
    kwargs = json.loads(params)
    fit = _fit_crowdkit if lib == "crowdkit" else _fit_crowdqa
    times: list[float] = []
    cpu_times: list[float] = []
    while len(times) < MAX_FITS and sum(times) < REPEAT_BUDGET and (len(times) < REPEATS or sum(times) < SHORT_BUDGET):
        seconds, cpu, labels = fit(method, z, kwargs)
        times.append(seconds)
        cpu_times.append(cpu)
    scored = z["known"] < 0 if method == "gold-mv" else np.ones(z["truth"].size, dtype=bool)
    return {"fit_seconds": min(times), "fit_cpu_seconds": min(cpu_times), "fits": len(times),
            "accuracy": float(np.mean(labels[scored] == z["truth"][scored]))}


def run_point(lib: str, method: str, data: Path, cap: float | None, params: dict | None = None) -> dict:
    """One fit in its own process; ``{"capped": True}`` if it ran past ``cap`` seconds."""
    cmd = [sys.executable, "-m", "benchmarks.categorical_speed", "--child", lib, method, str(data),
           json.dumps(params or {})]
    env = {**os.environ, **dict.fromkeys(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"), "1")}
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=cap, env=env)
    except subprocess.TimeoutExpired:
        return {"capped": True, "cap_seconds": cap, "wall_seconds": time.perf_counter() - t0}
    if out.returncode:
        return {"failed": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(n_labels: int, cap: float, caps: dict[str, float] | None = None, only: list[str] | None = None) -> dict:
    """The rows of :data:`METHODS` and :data:`VARIANTS` (``only``: those named); ``caps`` (method -> seconds)
    overrides ``cap`` per method."""
    caps = caps or {}
    n_items = n_labels // PER_ITEM
    result: dict = {"setup": {"labels": n_items * PER_ITEM, "items": n_items, "workers": N_WORKERS,
                              "per_item": PER_ITEM, "gold_share_gold_mv": GOLD_SHARE, "cap_seconds": cap,
                              "cap_seconds_by_method": caps,
                              "load_average_at_start": os.getloadavg()}, "methods": {}}
    with tempfile.TemporaryDirectory(prefix="crowdqa-catspeed-") as tmp:
        paths = {}
        for k in (2, 3):
            paths[k] = Path(tmp) / f"crowd{k}.npz"
            np.savez(paths[k], **make_crowd(n_items, k))
        rows = {m: (m, {}, {}) for m in METHODS} | VARIANTS
        rows = {name: row for name, row in rows.items() if only is None or name in only}
        for name, (method, ours, theirs) in rows.items():
            data = paths[2 if method == "kos" else 3]
            row = {"classes": 2 if method == "kos" else 3, "crowdqa": run_point("crowdqa", method, data, None, ours)}
            if ours or theirs:
                row["params"] = {"crowdqa": ours, "crowdkit": theirs or {}}
            if METHODS[method] is not None:
                if theirs is None:  # crowd-kit at its defaults: the method's own row measured it
                    row["crowdkit"] = {**result["methods"][method]["crowdkit"], "same_run_as": method}
                else:
                    row["crowdkit"] = run_point("crowdkit", method, data, caps.get(method, cap), theirs)
                ck, us = row["crowdkit"], row["crowdqa"]
                if "fit_seconds" in ck:
                    row["speedup"] = ck["fit_seconds"] / us["fit_seconds"]
                    row["speedup_cpu"] = ck["fit_cpu_seconds"] / us["fit_cpu_seconds"]
                elif ck.get("capped"):
                    row["speedup_at_least"] = caps.get(method, cap) / us["fit_seconds"]
            result["methods"][name] = row
            print(name, json.dumps(row), flush=True)
    result["setup"]["load_average_at_end"] = os.getloadavg()
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="30k labels, 60 s cap")
    ap.add_argument("--labels", type=int, default=None, help="labels (default 300000; --quick: 30000)")
    ap.add_argument("--cap", type=float, default=None, help="stop a crowd-kit fit after this many seconds (240)")
    ap.add_argument("--cap-for", action="append", default=[], metavar="METHOD=SECONDS",
                    help="another cap for one method's crowd-kit fits (repeatable), e.g. glad=300")
    ap.add_argument("--row", action="append", default=None, metavar="NAME",
                    help="run only this row (repeatable; a method id or a variant's name, e.g. 'mace, 1 restart') "
                         "and replace it in the existing results file")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    ap.add_argument("--child", nargs=4, metavar=("LIB", "METHOD", "DATA", "PARAMS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(*args.child)))
        return 0
    try:
        import crowdkit  # noqa: F401
    except ImportError as exc:
        print(f"skipped: crowd-kit is not installed ({exc.name}); pip install -e '.[bench]'")
        return 0
    n_labels = args.labels or (30_000 if args.quick else 300_000)
    cap = args.cap or (60.0 if args.quick else 240.0)
    caps = {m: float(v) for m, _, v in (c.partition("=") for c in args.cap_for)}
    unknown = sorted(set(caps) - set(METHODS))
    if unknown:
        ap.error(f"--cap-for names a method that is not benchmarked: {unknown[0]!r} (one of {', '.join(METHODS)})")
    path = args.out / f"categorical_speed{'_quick' if args.quick else ''}.json"
    previous = None
    if args.row:
        names = [*METHODS, *VARIANTS]
        bad = [r for r in args.row if r not in names]
        if bad:
            ap.error(f"--row names no row: {bad[0]!r} (one of {', '.join(map(repr, names))})")
        reused = [r for r in args.row if r in VARIANTS and VARIANTS[r][2] is None and VARIANTS[r][0] not in args.row]
        if reused:
            ap.error(f"--row {reused[0]!r} reuses the crowd-kit fit of row {VARIANTS[reused[0]][0]!r}: name it too")
        if not path.exists():
            ap.error(f"--row replaces rows of {path}, which does not exist: run every row first")
        previous = json.loads(path.read_text(encoding="utf-8"))
        if previous["setup"]["labels"] != n_labels // PER_ITEM * PER_ITEM:
            ap.error(f"{path} holds a run at {previous['setup']['labels']:,} labels, not {n_labels:,}")
    t0 = time.perf_counter()
    result = run(n_labels, cap, caps, args.row)
    command = "python -m benchmarks.categorical_speed" + (" --quick" if args.quick else "") + "".join(
        f" --{k} {v}" for k, v in (("labels", args.labels), ("cap", args.cap), *(("cap-for", c) for c in args.cap_for))
        if v is not None)
    if previous is None:
        result["meta"] = make_meta(command, seconds=time.perf_counter() - t0)
    else:  # the named rows replace theirs, each stamped with this run; the rest of the file is kept
        command += "".join(f" --row {r!r}" if " " in r else f" --row {r}" for r in args.row)
        meta = make_meta(command, seconds=time.perf_counter() - t0)
        stamp = {"date": meta["date"], "command": command,
                 "load_average_at_start": result["setup"]["load_average_at_start"],
                 "load_average_at_end": result["setup"]["load_average_at_end"]}
        rows = {name: {**row, "rerun": stamp} for name, row in result["methods"].items()}
        order = [name for name in [*METHODS, *VARIANTS] if name in rows or name in previous["methods"]]
        result = {**previous, "methods": {name: rows.get(name, previous["methods"].get(name)) for name in order}}
    path = write_results(path, result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
