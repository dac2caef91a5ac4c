"""Categorical accuracy vs gold: crowdqa and crowd-kit on Snow 2008 RTE/TEMP and Welinder 2010 Bluebirds.

Run ``python -m benchmarks.categorical [--quick] [--out DIR]``; results go to
``benchmarks/results/categorical[_quick].json``.

Data (../shared/data/categorical, or ``$CROWDQA_SHARED_DATA/categorical``):

* ``snow2008_rte.tsv``, ``snow2008_temp.tsv`` (Snow, O'Connor, Jurafsky, Ng, EMNLP 2008):
  columns annotation id, worker id, item id, response, gold. Read as distributed with
  ``ingest.read_corpus(format="categorical")``, which finds the columns by their header
  names, as a user's upload would be.
* ``welinder2010_bluebirds/`` (Welinder, Branson, Belongie, Perona, NIPS 2010): ``labels.yaml``
  (worker -> {image: bool}) and ``gt.yaml`` (image -> bool), written to the same CSV layout.

Methods, each fitted on the crowd annotators only (the gold column is an expert annotator
and never enters a fit): crowdqa ``mv``, ``ds`` (full confusion) and ``ds`` with
``model="one-coin"`` through :func:`aggregation.make_aggregator`, with their defaults; crowd-kit
1.4.2 ``MajorityVote``, ``DawidSkene`` and ``OneCoinDawidSkene`` with theirs (``n_iter=100,
tol=1e-5``), given the same class indices in a ``pandas.DataFrame``. Accuracy is over the items
with a gold label. Fit time: the median of ``repeats`` fits in this process (crowd-kit's includes
its pandas work, which is how it is used; building its DataFrame is not counted).

Differences to know when reading the numbers: crowdqa's categorical reader puts an unused
class ``"O"`` at index 0 when no answer is literally ``"O"`` (the corpus convention), so its
one-coin model spreads a worker's errors over K - 1 = 2 other classes where crowd-kit,
which only sees the observed answers, uses 1; crowd-kit breaks majority-vote ties by its
own order, crowdqa by its documented rule (``tie_break="entity"``, lowest index among
non-``O`` classes).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from aggregation import ConvergenceWarning, make_aggregator
from aggregation.corpus import Corpus
from benchmarks.tables import make_meta
from ingest import read_corpus

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data")) / "categorical"
RESULTS = REPO / "benchmarks" / "results"

#: crowdqa method name -> (make_aggregator method, params).
OURS = {"mv": ("mv", {}), "ds": ("ds", {}), "one-coin": ("ds", {"model": "one-coin"})}
#: crowdqa method name -> crowd-kit class name.
CROWDKIT = {"mv": "MajorityVote", "ds": "DawidSkene", "one-coin": "OneCoinDawidSkene"}
#: Figures stated with the data (../shared/data/README.md and the papers), majority vote only.
PUBLISHED_MV = {"snow2008_rte": 0.92, "bluebirds": 0.7593}


def _bluebirds_csv(out: Path) -> Path:
    """Write Bluebirds' two YAML files as one item, annotator, label, gold CSV."""
    import yaml

    folder = DATA / "welinder2010_bluebirds"
    with open(folder / "labels.yaml", encoding="utf-8") as fh:
        labels = yaml.safe_load(fh)
    with open(folder / "gt.yaml", encoding="utf-8") as fh:
        gold = yaml.safe_load(fh)
    path = out / "bluebirds.csv"
    with open(path, "w", encoding="utf-8", newline="") as g:
        w = csv.writer(g)
        w.writerow(["item", "annotator", "label", "gold"])
        w.writerows([image, worker, str(value), str(gold[image])]
                    for worker, answers in labels.items() for image, value in answers.items())
    return path


def load(name: str, tmp: Path) -> Corpus:
    """One data set as a corpus read by ``read_corpus(format="categorical")`` (Snow's TSV as distributed)."""
    path = _bluebirds_csv(tmp) if name == "bluebirds" else DATA / f"{name}.tsv"
    return read_corpus(path, format="categorical").corpus


def _accuracy(pred: np.ndarray, gold: np.ndarray) -> float:
    has = gold >= 0
    return float(np.mean(pred[has] == gold[has]))


def _tied(crowd: Corpus) -> int:
    """Items whose most frequent answer is shared by two classes (where majority-vote tie rules differ)."""
    votes = crowd.vote_counts()
    return int(np.sum((votes == votes.max(axis=1, keepdims=True)).sum(axis=1) > 1))


def run_ours(crowd: Corpus, gold: np.ndarray, *, repeats: int) -> dict:
    """Accuracy, median fit seconds and iterations of each crowdqa method."""
    out = {}
    for name, (method, params) in OURS.items():
        times = []
        for _ in range(repeats):
            model = make_aggregator(method, params)
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ConvergenceWarning)
                model.fit(crowd)
            times.append(time.perf_counter() - t0)
        out[name] = {"accuracy": _accuracy(model.labels_, gold), "fit_seconds": statistics.median(times),
                     "n_iter": int(getattr(model, "n_iter_", 1)),
                     "converged": bool(getattr(model, "converged_", True)) and not caught}
    return out


def run_crowdkit(crowd: Corpus, gold: np.ndarray, *, repeats: int) -> dict:
    """The same for crowd-kit, on a DataFrame of (task = item index, worker id, label = class index)."""
    import pandas as pd
    from crowdkit import aggregation as ck

    df = pd.DataFrame({"task": crowd.token, "worker": [crowd.worker_ids[w] for w in crowd.worker],
                       "label": crowd.label.astype(np.int64)})
    out = {}
    for name, cls in CROWDKIT.items():
        times = []
        for _ in range(repeats):
            model = getattr(ck, cls)()
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pandas deprecation warnings raised inside crowd-kit
                labels = model.fit_predict(df)
            times.append(time.perf_counter() - t0)
        pred = np.full(crowd.n_tokens, -1, dtype=np.int64)
        pred[labels.index.to_numpy(dtype=np.int64)] = labels.to_numpy(dtype=np.int64)
        n_iter = len(model.loss_history_) if hasattr(model, "loss_history_") else None
        out[name] = {"accuracy": _accuracy(pred, gold), "fit_seconds": statistics.median(times), "n_iter": n_iter}
    return out


def run(*, quick: bool, datasets: tuple[str, ...] = ("snow2008_rte", "snow2008_temp", "bluebirds")) -> dict:
    """All data sets; crowd-kit columns are left out (with the reason) when it is not installed."""
    repeats = 1 if quick else 5
    try:
        import crowdkit  # noqa: F401
        import pandas  # noqa: F401

        crowdkit_missing = None
    except ImportError as exc:
        crowdkit_missing = f"crowd-kit not installed ({exc.name}): its columns are skipped"
        print(crowdkit_missing)
    out: dict = {"repeats": repeats, "datasets": {}}
    if crowdkit_missing:
        out["crowdkit_skipped"] = crowdkit_missing
    with tempfile.TemporaryDirectory(prefix="crowdqa-categorical-") as tmpdir:
        for name in datasets:
            corpus = load(name, Path(tmpdir))
            gold = corpus.labels_of(corpus.worker_ids.index("gold"))
            crowd = corpus.select_role("crowd")
            row = {
                "items": corpus.n_tokens, "labels": crowd.n_obs, "workers": int(np.unique(crowd.worker).size),
                "classes": list(corpus.class_names), "gold_items": int((gold >= 0).sum()),
                "tied_items": _tied(crowd),
                "ours": run_ours(crowd, gold, repeats=repeats),
            }
            if not crowdkit_missing:
                row["crowdkit"] = run_crowdkit(crowd, gold, repeats=repeats)
                for m, ck in row["crowdkit"].items():
                    ck["speedup_ours"] = ck["fit_seconds"] / row["ours"][m]["fit_seconds"]
            if name in PUBLISHED_MV:
                row["published_mv_accuracy"] = PUBLISHED_MV[name]
            out["datasets"][name] = row
            line = ", ".join(f"{m} {row['ours'][m]['accuracy']:.4f}"
                             + (f" (crowd-kit {row['crowdkit'][m]['accuracy']:.4f})" if "crowdkit" in row else "")
                             for m in OURS)
            print(f"{name}: {line}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one fit per method instead of the median of five")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    args = ap.parse_args(argv)
    needed = [DATA / "snow2008_rte.tsv", DATA / "snow2008_temp.tsv", DATA / "welinder2010_bluebirds" / "gt.yaml"]
    missing = [p for p in needed if not p.exists()]
    if missing:
        print(f"skipped: categorical data not found ({missing[0]} is absent); see ../shared/data/README.md")
        return 0
    t0 = time.perf_counter()
    result = run(quick=args.quick)
    result["meta"] = make_meta("python -m benchmarks.categorical" + (" --quick" if args.quick else ""),
                               seconds=time.perf_counter() - t0)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"categorical{'_quick' if args.quick else ''}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
