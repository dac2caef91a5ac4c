"""A new batch with an earlier job's model (frozen, warm start) against a refit from scratch, on PICO.

Run ``python -m benchmarks.batches [--quick] [--methods ds,hmm-crowd] [--repeats 2]``; results go to
``benchmarks/results/batches[_quick].json`` and ``python -m benchmarks.tables`` renders them.

PICO Participants (``benchmarks/_pico.py``) is split into two batches by a seeded shuffle of the
documents (the expert documents split the same way). Batch 1 is aggregated and its model kept
(``crowdqa aggregate --save-model``); batch 2 is then aggregated four ways, each the whole
pipeline a job runs (``run_pipeline``: the fit and the report, as ``crowdqa aggregate`` and a
queued job do):

* **refit**: batch 2 from scratch, as if batch 1 had never been;
* **frozen**: batch 1's model predicts batch 2 (``--from-model --frozen``): one E-step, no EM;
* **warm start**: EM on batch 2 starting from batch 1's model (``--from-model``);
* **joint refit**: batches 1 and 2 together from scratch, the reference a user would otherwise run.

For each: wall seconds of the whole pipeline (the least of ``--repeats`` runs in the same process, one
after another; the machine was shared, so ratios to the refit in the same run are what to read), the
fit's own seconds, EM iterations,
the share of batch 2's tokens labelled as the joint refit labels them, and token precision,
recall and F1 of the aggregate against the experts on batch 2's expert documents.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._pico import load_pico
from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation import ConvergenceWarning
from crowdqa.aggregation.corpus import MISSING
from crowdqa.ingest.routing_export import select_documents
from crowdqa.jobs.pipeline import ModelStart, run_pipeline
from crowdqa.quality.report import build_report_data

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def _token_scores(report: dict) -> dict:
    block = (report.get("aggregate_vs_expert") or {}).get("token") or {}
    return {k: block.get(k) for k in ("precision", "recall", "f1", "precision_ci", "recall_ci", "f1_ci")}


def _batch_runs(corpus, first, second, *, method: str, repeats: int) -> dict:
    """Batch 1 fitted once; batch 2 four ways (each the least of ``repeats`` wall times)."""
    batch1, batch2 = select_documents(corpus, first), select_documents(corpus, second)
    joint = select_documents(corpus, np.concatenate([first, second]))
    # Batch 2's tokens inside the joint corpus: it holds batch 1's tokens first, then batch 2's.
    second_in_joint = np.arange(batch1.n_tokens, joint.n_tokens)

    def timed(c, **kw) -> tuple[object, float]:
        best, result = float("inf"), None
        for _ in range(repeats):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                result = run_pipeline(c, method=method, **kw)
            best = min(best, time.perf_counter() - t0)
        return result, best

    earlier, earlier_seconds = timed(batch1)
    runs = {"refit": timed(batch2),
            "frozen": timed(batch2, start=ModelStart(state=earlier.model, frozen=True, source="batch 1")),
            "warm start": timed(batch2, start=ModelStart(state=earlier.model, frozen=False, source="batch 1")),
            "joint refit": timed(joint)}
    reference = runs["joint refit"][0].labels[second_in_joint]
    crowd_tok = np.bincount(batch2.token[np.isin(batch2.worker, batch2.workers_with_role("crowd"))],
                            minlength=batch2.n_tokens) > 0
    rows = {}
    for name, (result, seconds) in runs.items():
        labels = result.labels[second_in_joint] if name == "joint refit" else result.labels
        ok = crowd_tok & (reference != MISSING)
        rows[name] = {
            "seconds": round(seconds, 3), "fit_seconds": result.report_data["fit"]["seconds"],
            "iterations": result.report_data["fit"]["iterations"],
            "agreement_with_joint_refit": float(np.mean(labels[ok] == reference[ok])),
            "positive_tokens": int(np.count_nonzero(labels[crowd_tok] > 0)),
        }
        if name == "joint refit":  # scored on batch 2's expert documents only, as the others are
            rep = build_report_data(batch2, np.where(crowd_tok, labels, MISSING), method=method,
                                    experts_used_in_fit=False)
            rows[name].update(_token_scores(rep))
        else:
            rows[name].update(_token_scores(result.report_data))
            if "start" in result.report_data["fit"]:
                rows[name]["start"] = result.report_data["fit"]["start"]
    return {"batch1_seconds": round(earlier_seconds, 3), "runs": rows}


def run(*, quick: bool, methods: tuple[str, ...], repeats: int, seed: int = 0) -> dict:
    corpus, _, _ = load_pico(limit=600 if quick else None)
    order = np.random.default_rng(seed).permutation(corpus.n_docs)
    half = corpus.n_docs // 2
    first, second = np.sort(order[:half]), np.sort(order[half:])
    batch1, batch2 = select_documents(corpus, first), select_documents(corpus, second)
    crowd1 = set(np.asarray(batch1.worker_ids)[batch1.workers_with_role("crowd")].tolist())
    active2 = np.bincount(batch2.worker, minlength=batch2.n_workers) > 0
    crowd2 = [batch2.worker_ids[w] for w in batch2.workers_with_role("crowd") if active2[w]]
    experts2 = np.unique(batch2.obs_doc[np.isin(batch2.worker, batch2.workers_with_role("expert"))]).size
    return {
        "setup": {"quick": quick, "seed": seed, "repeats": repeats, "documents": [int(first.size), int(second.size)],
                  "labels": [int(batch1.n_obs), int(batch2.n_obs)], "expert_documents_batch2": int(experts2),
                  "batch2_crowd_workers": len(crowd2),
                  "batch2_workers_seen_in_batch1": sum(w in crowd1 for w in crowd2)},
        "methods": {m: _batch_runs(corpus, first, second, method=m, repeats=repeats) for m in methods},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="600 crowd documents (plus the expert ones)")
    ap.add_argument("--methods", default="ds,hmm-crowd", help="aggregation methods (default ds,hmm-crowd)")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each pipeline; the least wall time is kept")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    data = run(quick=args.quick, methods=methods, repeats=args.repeats)
    command = "python -m benchmarks.batches" + (" --quick" if args.quick else "") + (
        f" --methods {args.methods}" if args.methods != "ds,hmm-crowd" else "")
    out = {"meta": make_meta(command, seconds=time.perf_counter() - t0), **data}
    path = write_results(args.out / f"batches{'_quick' if args.quick else ''}.json", out)
    for method, m in data["methods"].items():
        for name, r in m["runs"].items():
            print(f"{method:10s} {name:12s} {r['seconds']:8.2f} s  it {r['iterations']:4d}  "
                  f"agree {r['agreement_with_joint_refit']:.4f}  F1 {r['f1']}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
