"""Does routing documents to the experts narrow the intervals faster than sending random ones? PICO simulation.

Run ``python -m benchmarks.routing [--quick] [--seeds N] [--method M]``; results go to
``benchmarks/results/routing[_quick].json`` and ``python -m benchmarks.tables`` renders them.

The study (PICO Participants, ``benchmarks/_pico.py``): the documents with expert labels are the pool.
Their expert labels are hidden, the crowd is aggregated (``--method``, default ``ds`` as
``crowdqa route``), and the pool's documents are revealed one at a time in four orders:

* **routed**: ``crowdqa.quality.routing.route_documents`` (its defaults: target half-width 0.05, worker and
  correction weights 1), the whole pool ranked at once, as ``crowdqa route --budget N`` would give it;
* **uncertainty**: uncertainty sampling alone, documents by the total token entropy of the aggregate's
  posteriors (Settles & Craven 2008), highest first;
* **longest**: documents by token count, longest first (more tokens, more trials: the naive baseline
  routing must beat to show it is more than "pick long documents");
* **random**: ``--seeds`` random orders (mean and the 10-90% range over seeds).

After each reveal of ``n`` documents the aggregate is scored against the revealed experts (union
reference, tokens the crowd covered) as a report does: token precision and recall with Clopper-Pearson
intervals, F1 with the document bootstrap (1,000 resamples), and the crowd workers' precision and
recall intervals (mean width weighted by each worker's share of the crowd labels, width 1 for a worker not
yet measured). The error of each estimate is its distance from the value on the whole pool (every
expert revealed). The aggregate is fitted once, on the crowd alone, so every order scores the same labels.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._pico import load_pico
from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.quality.intervals import clopper_pearson_bounds, grouped_bootstrap_f1_bounds
from crowdqa.quality.metrics import grouped_counts, prf_from_counts
from crowdqa.quality.references import reference_labels
from crowdqa.quality.routing import route_documents

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
CHECKPOINTS = (4, 8, 16, 24, 32, 48)
METRICS = ("precision_width", "recall_width", "f1_width", "precision_error", "recall_error", "f1_error",
           "worker_precision_width", "worker_recall_width")


def _curves(order: np.ndarray, doc_counts: np.ndarray, pair_doc: np.ndarray, pair_worker: np.ndarray,
            pair_counts: np.ndarray, share: np.ndarray, full: tuple[float, float, float], *, n_boot: int,
            seed: int) -> dict[str, list[float | None]]:
    """Every metric after revealing the first n documents of ``order``, n = 1 .. len(order).

    ``doc_counts`` (n_pool, 3) are the aggregate's tp, fp, fn per pool document; ``pair_*`` the crowd
    workers' per (worker, pool document) counts; ``share`` the workers' shares of the crowd labels.
    """
    n_pool = order.size
    cum = np.cumsum(doc_counts[order], axis=0)                       # (n_pool, 3)
    tp, fp, fn = cum.T.astype(np.float64)
    p, r, f = prf_from_counts(tp, fp, fn)
    p_lo, p_hi = clopper_pearson_bounds(tp, tp + fp)
    r_lo, r_hi = clopper_pearson_bounds(tp, tp + fn)
    # F1's document bootstrap for every prefix at once: group n - 1 holds documents order[:n].
    member = np.concatenate([order[:n] for n in range(1, n_pool + 1)])
    group = np.repeat(np.arange(n_pool), np.arange(1, n_pool + 1))
    f_lo, f_hi = grouped_bootstrap_f1_bounds(doc_counts[member], group, n_groups=n_pool, n_boot=n_boot,
                                             rng=np.random.default_rng(seed))
    # Workers: revealed[n - 1, d] says whether pool document d is among the first n.
    rank = np.empty(n_pool, dtype=np.int64)
    rank[order] = np.arange(n_pool)
    n_workers = share.size
    w_tp = np.zeros((n_pool, n_workers))
    w_fp = np.zeros((n_pool, n_workers))
    w_fn = np.zeros((n_pool, n_workers))
    np.add.at(w_tp, (rank[pair_doc], pair_worker), pair_counts[:, 0])
    np.add.at(w_fp, (rank[pair_doc], pair_worker), pair_counts[:, 1])
    np.add.at(w_fn, (rank[pair_doc], pair_worker), pair_counts[:, 2])
    w_tp, w_fp, w_fn = (np.cumsum(a, axis=0) for a in (w_tp, w_fp, w_fn))
    widths = {}
    for name, den in (("precision", w_tp + w_fp), ("recall", w_tp + w_fn)):
        lo, hi = clopper_pearson_bounds(w_tp, den)
        width = np.where(den > 0, hi - lo, 1.0)
        widths[name] = (width * share).sum(axis=1) / share.sum()

    def listed(a: np.ndarray) -> list[float | None]:
        return [None if not np.isfinite(x) else round(float(x), 6) for x in a]

    return {
        "precision_width": listed(p_hi - p_lo), "recall_width": listed(r_hi - r_lo), "f1_width": listed(f_hi - f_lo),
        "precision_error": listed(np.abs(p - full[0])), "recall_error": listed(np.abs(r - full[1])),
        "f1_error": listed(np.abs(f - full[2])),
        "worker_precision_width": listed(widths["precision"]), "worker_recall_width": listed(widths["recall"]),
    }


def _nanmean(curve: list[float | None]) -> float:
    a = np.array([np.nan if x is None else x for x in curve], dtype=np.float64)
    return float(np.nanmean(a))


def run(*, quick: bool, seeds: int, method: str, n_boot: int) -> dict:
    t_start = time.perf_counter()
    corpus, _, _ = load_pico(limit=300 if quick else None)
    experts = corpus.workers_with_role("expert")
    crowd_w = corpus.workers_with_role("crowd")
    is_expert = np.isin(corpus.worker, experts)
    pool = np.unique(corpus.obs_doc[is_expert])
    ref = reference_labels(corpus, rule="union")
    hidden = corpus.select_workers(crowd_w)                           # the experts' labels are hidden
    model = make_aggregator(method)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(hidden)
    fit_seconds = time.perf_counter() - t0
    labels, proba = np.asarray(model.labels_), np.asarray(model.proba_)
    covered = np.bincount(hidden.token, minlength=corpus.n_tokens) > 0
    valid = covered & (ref >= 0)
    doc = corpus.token_doc
    pool_index = np.full(corpus.n_docs, -1, dtype=np.int64)
    pool_index[pool] = np.arange(pool.size)
    doc_counts = grouped_counts(labels[valid] > 0, ref[valid] > 0, pool_index[doc[valid]], n_groups=pool.size)
    tp, fp, fn = doc_counts.sum(axis=0)
    full = tuple(float(x) for x in prf_from_counts(int(tp), int(fp), int(fn)))
    # The crowd workers' counts per (worker, pool document), against the same reference.
    rows = np.isin(corpus.worker, crowd_w) & (ref[corpus.token] >= 0)
    w, t = corpus.worker[rows].astype(np.int64), corpus.token[rows]
    o, g = corpus.label[rows] > 0, ref[t] > 0
    key = w * pool.size + pool_index[doc[t]]
    pair, inv = np.unique(key, return_inverse=True)
    pair_counts = np.stack([np.bincount(inv, weights=o & g), np.bincount(inv, weights=o & ~g),
                            np.bincount(inv, weights=~o & g)], axis=1)
    crowd_rows = np.isin(corpus.worker, crowd_w)
    share = np.bincount(corpus.worker[crowd_rows], minlength=corpus.n_workers).astype(np.float64)

    candidates = np.zeros(corpus.n_docs, dtype=bool)
    candidates[pool] = True
    t0 = time.perf_counter()
    plan = route_documents(hidden, labels, proba, budget=int(pool.size), candidates=candidates)
    route_seconds = time.perf_counter() - t0
    with np.errstate(divide="ignore", invalid="ignore"):
        token_entropy = -np.where(proba > 0, proba * np.log(proba), 0.0).sum(axis=1)
    doc_entropy = np.bincount(doc, weights=np.where(covered, token_entropy, 0.0), minlength=corpus.n_docs)
    by_id = np.argsort(np.asarray(corpus.doc_ids, dtype=object)[pool], kind="stable")  # ties: document id
    orders = {
        "routed": pool_index[plan.order],
        "uncertainty": by_id[np.argsort(-doc_entropy[pool][by_id], kind="stable")],
        "longest": by_id[np.argsort(-corpus.doc_lengths[pool][by_id], kind="stable")],
    }
    pair_doc, pair_worker = pair % pool.size, pair // pool.size
    args = (doc_counts, pair_doc, pair_worker, pair_counts, share, full)
    curves = {name: _curves(order, *args, n_boot=n_boot, seed=0) for name, order in orders.items()}
    rng = np.random.default_rng(12345)
    random_curves = [_curves(rng.permutation(pool.size), *args, n_boot=n_boot, seed=s + 1) for s in range(seeds)]
    stacked = {m: np.array([[np.nan if x is None else x for x in c[m]] for c in random_curves]) for m in METRICS}
    curves["random"] = {m: [round(float(x), 6) for x in np.nanmean(stacked[m], axis=0)] for m in METRICS}
    random_band = {m: {"p10": [round(float(x), 6) for x in np.nanpercentile(stacked[m], 10, axis=0)],
                       "p90": [round(float(x), 6) for x in np.nanpercentile(stacked[m], 90, axis=0)]}
                   for m in METRICS}
    # Mean over n = 1 .. pool - 1 (the last reveal is the whole pool for every order) of each curve.
    area = {name: {m: _nanmean(c[m][:-1]) for m in METRICS} for name, c in curves.items()}
    random_area = {m: [_nanmean(c[m][:-1]) for c in random_curves] for m in METRICS}
    beats = {m: float(np.mean([a > area["routed"][m] for a in random_area[m]])) for m in METRICS}
    checkpoints = [n for n in CHECKPOINTS if n < pool.size]
    return {
        "setup": {"method": method, "pool_documents": int(pool.size), "crowd_documents": int(corpus.n_docs),
                  "crowd_workers": int(crowd_w.size), "experts": int(experts.size), "seeds": seeds,
                  "n_boot": n_boot, "reference": "union", "fit_seconds": round(fit_seconds, 3),
                  "route_seconds": round(route_seconds, 3), "quick": quick},
        "full_pool": {"precision": full[0], "recall": full[1], "f1": full[2], "tp": int(tp), "fp": int(fp),
                      "fn": int(fn)},
        "routed_first": [corpus.doc_ids[d] for d in plan.order[:10]],
        "routed_reasons": list(plan.reason[:10]),
        "checkpoints": checkpoints,
        "curves": curves,
        "random_band": random_band,
        "mean_over_reveals": area,
        "random_seeds_worse_than_routed": beats,
        "seconds": round(time.perf_counter() - t_start, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="300 crowd documents (plus the expert ones), 5 seeds")
    ap.add_argument("--seeds", type=int, default=None, help="random orders (default 50, 5 with --quick)")
    ap.add_argument("--method", default="ds", help="aggregation method (default ds, as crowdqa route)")
    ap.add_argument("--n-boot", type=int, default=1000, help="F1 bootstrap resamples per prefix (default 1000)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    seeds = args.seeds or (5 if args.quick else 50)
    t0 = time.perf_counter()
    data = run(quick=args.quick, seeds=seeds, method=args.method, n_boot=args.n_boot)
    command = "python -m benchmarks.routing" + (" --quick" if args.quick else "") + (
        f" --method {args.method}" if args.method != "ds" else "")
    out = {"meta": make_meta(command, seconds=time.perf_counter() - t0), **data}
    path = write_results(args.out / f"routing{'_quick' if args.quick else ''}.json", out)
    area = data["mean_over_reveals"]
    for m in METRICS:
        print(f"{m:24s} " + "  ".join(f"{k} {v[m]:.4f}" for k, v in area.items()))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
