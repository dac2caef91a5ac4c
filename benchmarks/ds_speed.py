"""Dawid-Skene speed and memory: crowdqa vs crowd-kit 1.4.2 on synthetic crowds.

``python -m benchmarks.ds_speed [--quick]`` writes ``benchmarks/results/ds_speed.json``
(``ds_speed_quick.json`` with ``--quick``).

Data: ``n_items`` items, 3 labels each from distinct annotators among 500, 3 classes,
string item and annotator ids ("item0000042", "worker017"); each annotator has a
random accuracy in [0.5, 0.95] and errs uniformly. The same generator and seed feed
both libraries.

Each fit runs in its own subprocess, which loads the data from an ``.npz``, builds the
library's input (crowd-kit: a ``pandas.DataFrame`` of strings; crowdqa: a ``Corpus``,
string ids factorised once), then resets the kernel's peak-RSS counter
(``/proc/self/clear_refs``) and fits. Reported per run: fit wall time, resident memory
before the fit (the input), peak resident memory during the fit (``VmHWM``, input
included), and the difference (what the fit itself allocated at its peak).
crowd-kit runs ``DawidSkene(n_iter=100, tol=-inf)`` so that it does all 100 iterations
(its default tol would stop it early); crowdqa runs ``DawidSkene(max_iter=100, tol=0)``.

Scaling curve: crowdqa's time per EM iteration from 10^4 to 10^7 labels (crowd-kit up
to 10^5 labels, plus the two headline runs).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.tables import write_results

RESULTS = Path(__file__).resolve().parent / "results"
N_WORKERS = 500
N_CLASSES = 3
PER_ITEM = 3


def one_coin_crowd(n_items: int, *, n_workers: int = N_WORKERS, seed: int = 0) -> dict[str, np.ndarray]:
    """The synthetic crowd of this benchmark and ``benchmarks.whole_path``, as integers.

    ``item``, ``worker``, ``label``: ndarray of shape (n_obs,), grouped by item; ``order``: a
    permutation of the rows (an upload's rows come in no particular order; the caller applies
    it, at once or in chunks); ``truth``: ndarray of shape (n_items,).
    """
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, N_CLASSES, size=n_items)
    acc = rng.uniform(0.5, 0.95, size=n_workers)
    # PER_ITEM distinct annotators per item: a random first one plus distinct offsets.
    first = rng.integers(0, n_workers, size=n_items)
    offsets = np.stack([np.zeros(n_items, np.int64), rng.integers(1, n_workers // 2, size=n_items),
                        rng.integers(n_workers // 2, n_workers, size=n_items)], axis=1)
    worker = ((first[:, None] + offsets) % n_workers).ravel()
    item = np.repeat(np.arange(n_items), PER_ITEM)
    right = rng.random(item.size) < acc[worker]
    label = np.where(right, truth[item], (truth[item] + rng.integers(1, N_CLASSES, size=item.size)) % N_CLASSES)
    return {"item": item, "worker": worker, "label": label, "order": rng.permutation(item.size), "truth": truth}


def make_data(n_items: int, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Synthetic crowd: arrays of shape (n_obs,) ``item`` (str), ``worker`` (str), ``label`` (int), and truth."""
    crowd = one_coin_crowd(n_items, seed=seed)
    order, truth = crowd["order"], crowd["truth"]
    items, workers, label = crowd["item"], crowd["worker"], crowd["label"]
    item_ids = np.char.add("item", np.char.zfill(np.arange(n_items).astype(str), 7))
    worker_ids = np.char.add("worker", np.char.zfill(np.arange(N_WORKERS).astype(str), 3))
    return {
        "item": item_ids[items[order]],
        "worker": worker_ids[workers[order]],
        "label": label[order].astype(np.int64),
        "truth_item": item_ids,
        "truth": truth,
    }


# ------------------------------------------------------------------ subprocess side
def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # reset VmHWM to the current RSS (Linux >= 4.0)
    except OSError:
        pass


def _child(lib: str, data_path: str, iters: int) -> dict:
    z = np.load(data_path)
    item, worker, label = z["item"], z["worker"], z["label"]
    truth = dict(zip(z["truth_item"].tolist(), z["truth"].tolist(), strict=True))
    t0 = time.perf_counter()
    if lib == "crowdkit":
        import pandas as pd
        from crowdkit.aggregation import DawidSkene as CKDawidSkene

        data = pd.DataFrame({"task": item.astype(object), "worker": worker.astype(object), "label": label})
        del item, worker, label
        build = time.perf_counter() - t0
        est = CKDawidSkene(n_iter=iters, tol=-np.inf)
        rss_before = _rss_kb("VmRSS")
        _reset_peak()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas deprecations inside crowd-kit
            est.fit(data)
        fit = time.perf_counter() - t0
        n_iter = len(est.loss_history_)
        pred = est.labels_
        correct = np.mean([pred[t] == truth[t] for t in pred.index[:100_000]])
    else:
        from crowdqa.aggregation import ConvergenceWarning, DawidSkene
        from crowdqa.aggregation.corpus import Corpus

        items, tok = np.unique(item, return_inverse=True)
        workers, wrk = np.unique(worker, return_inverse=True)
        item_ids = tuple(items.tolist())
        n = len(item_ids)
        data = Corpus.from_arrays(
            token=tok, worker=wrk, label=label, doc_lengths=np.ones(n, np.int64), token_start=np.zeros(n, np.int64),
            token_end=np.fromiter(map(len, item_ids), np.int64, n), doc_ids=item_ids, texts=item_ids,
            worker_ids=tuple(workers.tolist()), worker_roles=("crowd",) * len(workers),
            class_names=("O", "a", "b"),  # labels 0..2 used as class indices directly
        )
        del item, worker, label, tok, wrk, items
        build = time.perf_counter() - t0
        est = DawidSkene(max_iter=iters, tol=0.0)
        rss_before = _rss_kb("VmRSS")
        _reset_peak()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est.fit(data)
        fit = time.perf_counter() - t0
        n_iter = est.n_iter_
        sample = np.arange(min(100_000, n))
        correct = np.mean(est.labels_[sample] == np.array([truth[item_ids[i]] for i in sample]))
    return {
        "library": lib,
        "build_input_seconds": round(build, 3),
        "fit_seconds": round(fit, 3),
        "n_iter": int(n_iter),
        "seconds_per_iteration": round(fit / max(n_iter, 1), 5),
        "rss_before_fit_mb": round(rss_before / 1024, 1),
        "peak_rss_during_fit_mb": round(_rss_kb("VmHWM") / 1024, 1),
        "fit_extra_mb": round((_rss_kb("VmHWM") - rss_before) / 1024, 1),
        "accuracy_first_100k_items": round(float(correct), 4),
    }


# ------------------------------------------------------------------ parent side
def run_one(lib: str, n_items: int, iters: int, tmp: Path) -> dict:
    path = tmp / f"data_{n_items}.npz"
    if not path.exists():
        np.savez(path, **make_data(n_items))
    cmd = [sys.executable, "-m", "benchmarks.ds_speed", "--child", lib, str(path), str(iters)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res.update({"n_items": n_items, "n_labels": n_items * PER_ITEM})
    print(json.dumps(res), flush=True)
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes and 20 iterations (about a minute)")
    p.add_argument("--child", nargs=3, metavar=("LIB", "DATA", "ITERS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        lib, data, iters = args.child
        print(json.dumps(_child(lib, data, int(iters))))
        return 0

    iters = 20 if args.quick else 100
    headline_sizes = [10_000, 100_000] if args.quick else [100_000, 1_000_000]
    curve_labels = [10**4, 10**5, 10**6] if args.quick else [10**4, 10**5, 10**6, 10**7]
    curve_iters = 10 if args.quick else 20
    started = time.time()
    results: dict = {
        "setup": {
            "per_item": PER_ITEM, "n_workers": N_WORKERS, "n_classes": N_CLASSES, "iterations": iters,
            "crowdkit": "DawidSkene(n_iter=iterations, tol=-inf)", "crowdqa": "DawidSkene(max_iter=iterations, tol=0)",
            "python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
        },
        "headline": [],
        "scaling": [],
    }
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for n_items in headline_sizes:
            ck = run_one("crowdkit", n_items, iters, tmp)
            ours = run_one("crowdqa", n_items, iters, tmp)
            results["headline"].append({
                "n_items": n_items, "n_labels": n_items * PER_ITEM, "crowdkit": ck, "crowdqa": ours,
                "speedup_fit": round(ck["fit_seconds"] / ours["fit_seconds"], 1),
                "peak_memory_ratio_crowdqa_over_crowdkit": round(
                    ours["peak_rss_during_fit_mb"] / ck["peak_rss_during_fit_mb"], 3),
            })
        for n_labels in curve_labels:
            n_items = n_labels // PER_ITEM
            row = {"n_labels": n_labels, "crowdqa": run_one("crowdqa", n_items, curve_iters, tmp)}
            if n_labels <= 10**5:
                row["crowdkit"] = run_one("crowdkit", n_items, curve_iters, tmp)
            results["scaling"].append(row)
    results["setup"]["total_wall_seconds"] = round(time.time() - started, 1)
    out = write_results(RESULTS / ("ds_speed_quick.json" if args.quick else "ds_speed.json"), results, indent=2)
    for h in results["headline"]:
        print(f"{h['n_items']:>9} items: crowd-kit {h['crowdkit']['fit_seconds']:.1f}s / crowdqa "
              f"{h['crowdqa']['fit_seconds']:.2f}s = {h['speedup_fit']}x; peak RSS during fit "
              f"{h['crowdkit']['peak_rss_during_fit_mb']:.0f} MB vs {h['crowdqa']['peak_rss_during_fit_mb']:.0f} MB")
    for s in results["scaling"]:
        print(f"{s['n_labels']:>9} labels: crowdqa {s['crowdqa']['seconds_per_iteration'] * 1000:.2f} ms/iteration"
              + (f", crowd-kit {s['crowdkit']['seconds_per_iteration'] * 1000:.1f} ms" if "crowdkit" in s else ""))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
