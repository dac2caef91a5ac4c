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
and never enters a fit): every crowdqa method of :data:`OURS` through
:func:`aggregation.make_aggregator`, with its defaults, next to the crowd-kit 1.4.2 class of
the same model (:data:`CROWDKIT`) with its defaults, given a ``pandas.DataFrame`` of
``task, worker, label`` with workers and labels numbered in order of first appearance (which
crowd-kit's MACE needs, see :class:`crowdqa.aggregation.mace.MACE`). ``ibcc`` has no crowd-kit
counterpart. crowd-kit's ``Wawa``, ``ZeroBasedSkill`` and ``GoldMajorityVote`` cannot
``predict`` under scikit-learn >= 1.6, so their labels (and time) are ``fit`` plus the
``MajorityVote(skills=...)`` their ``predict`` runs. ``gold-mv`` is given the gold label of a
seeded 30% of the items (both libraries; crowd-kit's workers without a gold item get the mean
skill) and scored on the other items; every other method on all items with a gold label.
Fit time: the median of up to ``repeats`` fits in this process, fewer once a method has
spent 20 s (crowd-kit's slowest take minutes per fit); crowd-kit's includes its pandas work,
which is how it is used; building its DataFrame is not counted.

Differences to know when reading the numbers: both libraries see the observed answers as the
classes (crowdqa's categorical corpora have no outside class, see
:attr:`crowdqa.aggregation.corpus.Corpus.has_outside`); crowd-kit breaks majority-vote ties by
its own order (the most frequent label overall first), crowdqa by its documented rule (on
categorical data the lowest class index), which is where their majority votes differ.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest import read_corpus

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data")) / "categorical"
RESULTS = REPO / "benchmarks" / "results"

#: crowdqa method name -> (make_aggregator method, params).
OURS = {"mv": ("mv", {}), "ds": ("ds", {}), "one-coin": ("ds", {"model": "one-coin"}),
        **{m: (m, {}) for m in ("wawa", "zbs", "gold-mv", "glad", "mace", "kos", "mmsr", "ibcc")}}
#: crowdqa method name -> crowd-kit class name.
CROWDKIT = {"mv": "MajorityVote", "ds": "DawidSkene", "one-coin": "OneCoinDawidSkene", "wawa": "Wawa",
            "zbs": "ZeroBasedSkill", "gold-mv": "GoldMajorityVote", "glad": "GLAD", "mace": "MACE", "kos": "KOS",
            "mmsr": "MMSR"}
#: Share of the items whose gold label ``gold-mv`` is given, and the seed that picks them.
GOLD_SHARE, GOLD_SEED = 0.3, 17
#: A method stops repeating its fit once it has spent this many seconds.
TIME_BUDGET = 20.0
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


def _given_gold(gold: np.ndarray) -> np.ndarray:
    """The gold labels ``gold-mv`` is given (a seeded share of the items; -1 elsewhere)."""
    return np.where(np.random.default_rng(GOLD_SEED).random(gold.size) < GOLD_SHARE, gold, -1)


def _scored(name: str, gold: np.ndarray) -> np.ndarray:
    """The gold a method is scored against: for ``gold-mv``, only the items whose gold it was not given."""
    return np.where(_given_gold(gold) >= 0, -1, gold) if name == "gold-mv" else gold


def _timed(fit, repeats: int) -> tuple[object, list[float]]:
    """Run ``fit()`` up to ``repeats`` times (at least once, no more once TIME_BUDGET is spent)."""
    times: list[float] = []
    while len(times) < repeats and sum(times) < TIME_BUDGET:
        t0 = time.perf_counter()
        result = fit()
        times.append(time.perf_counter() - t0)
    return result, times


def run_ours(crowd: Corpus, gold: np.ndarray, *, repeats: int, methods: tuple[str, ...] = tuple(OURS)) -> dict:
    """Accuracy, median fit seconds and iterations of each crowdqa method."""
    out = {}
    for name in methods:
        method, params = OURS[name]
        known = _given_gold(gold) if name == "gold-mv" else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model, times = _timed(lambda m=method, p=params, k=known: make_aggregator(m, p).fit(crowd, true_labels=k),
                                  repeats)
        out[name] = {"accuracy": _accuracy(model.labels_, _scored(name, gold)), "fit_seconds": statistics.median(times),
                     "fits": len(times), "n_iter": int(getattr(model, "n_iter_", 1)),
                     "converged": bool(getattr(model, "converged_", True)) and not caught}
    return out


def _crowdkit_fit(ck, name: str, df, gold_codes):
    """crowd-kit's labels (a Series by task) for one method; the skill votes through MajorityVote(skills=...)."""
    model = getattr(ck, CROWDKIT[name])()
    if name not in ("wawa", "zbs", "gold-mv"):
        return model.fit_predict(df), model
    model.fit(df, gold_codes) if name == "gold-mv" else model.fit(df)
    vote = ck.MajorityVote(on_missing_skill="value", default_skill=float(model.skills_.mean()))
    return vote.fit(df, skills=model.skills_).labels_, model


def run_crowdkit(crowd: Corpus, gold: np.ndarray, *, repeats: int, methods: tuple[str, ...] = tuple(CROWDKIT)
                 ) -> dict:
    """The same for crowd-kit, on a DataFrame of (task = item index, worker code, label code)."""
    import pandas as pd
    from crowdkit import aggregation as ck

    workers, _ = pd.factorize(crowd.worker)
    codes, classes = pd.factorize(crowd.label)
    df = pd.DataFrame({"task": crowd.token.astype(np.int64), "worker": workers, "label": codes})
    code_of = {int(c): i for i, c in enumerate(classes)}
    given = _given_gold(gold)
    has = np.flatnonzero(given >= 0)
    gold_codes = pd.Series([code_of.get(int(g), -1) for g in given[has]], index=has)
    out = {}
    for name in (m for m in methods if m in CROWDKIT):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pandas deprecation warnings raised inside crowd-kit
            (labels, model), times = _timed(lambda n=name: _crowdkit_fit(ck, n, df, gold_codes), repeats)
        pred = np.full(crowd.n_tokens, -1, dtype=np.int64)
        pred[labels.index.to_numpy(dtype=np.int64)] = np.asarray(classes)[labels.to_numpy(dtype=np.int64)]
        n_iter = len(model.loss_history_) if hasattr(model, "loss_history_") else None
        out[name] = {"accuracy": _accuracy(pred, _scored(name, gold)), "fit_seconds": statistics.median(times),
                     "fits": len(times), "n_iter": n_iter}
    return out


def run(*, quick: bool, datasets: tuple[str, ...] = ("snow2008_rte", "snow2008_temp", "bluebirds"),
        methods: tuple[str, ...] = tuple(OURS)) -> dict:
    """All data sets; crowd-kit columns are left out (with the reason) when it is not installed."""
    repeats = 1 if quick else 5
    try:
        import crowdkit  # noqa: F401
        import pandas  # noqa: F401

        crowdkit_missing = None
    except ImportError as exc:
        crowdkit_missing = f"crowd-kit not installed ({exc.name}): its columns are skipped"
        print(crowdkit_missing)
    out: dict = {"repeats": repeats, "time_budget_seconds": TIME_BUDGET, "datasets": {}}
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
                "ours": run_ours(crowd, gold, repeats=repeats, methods=methods),
            }
            if not crowdkit_missing:
                row["crowdkit"] = run_crowdkit(crowd, gold, repeats=repeats, methods=methods)
                for m, ck in row["crowdkit"].items():
                    ck["speedup_ours"] = ck["fit_seconds"] / row["ours"][m]["fit_seconds"]
                    ck["accuracy_difference"] = row["ours"][m]["accuracy"] - ck["accuracy"]
            if name in PUBLISHED_MV:
                row["published_mv_accuracy"] = PUBLISHED_MV[name]
            out["datasets"][name] = row
            line = ", ".join(f"{m} {row['ours'][m]['accuracy']:.4f}"
                             + (f" (crowd-kit {row['crowdkit'][m]['accuracy']:.4f})" if m in row.get("crowdkit", {})
                                else "")
                             for m in methods)
            print(f"{name}: {line}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one fit per method instead of the median of five")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    ap.add_argument("--methods", default=",".join(OURS), help=f"comma-separated subset of {','.join(OURS)}")
    args = ap.parse_args(argv)
    needed = [DATA / "snow2008_rte.tsv", DATA / "snow2008_temp.tsv", DATA / "welinder2010_bluebirds" / "gt.yaml"]
    missing = [p for p in needed if not p.exists()]
    if missing:
        print(f"skipped: categorical data not found ({missing[0]} is absent); see ../shared/data/README.md")
        return 0
    t0 = time.perf_counter()
    methods = tuple(args.methods.split(","))
    unknown = [m for m in methods if m not in OURS]
    if unknown:
        ap.error(f"--methods: unknown method {unknown[0]!r}; choose from {','.join(OURS)}")
    result = run(quick=args.quick, methods=methods)
    result["meta"] = make_meta("python -m benchmarks.categorical" + (" --quick" if args.quick else ""),
                               seconds=time.perf_counter() - t0)
    path = write_results(args.out / f"categorical{'_quick' if args.quick else ''}.json", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
