"""Which method for my data: ``crowdqa compare`` on CoNLL val (NER crowd) and PICO dev (Participants).

Run ``python -m benchmarks.compare [--quick] [--out DIR]``; results go to ``benchmarks/results/compare[_quick].json``.

For each data set the corpus is read once and :func:`crowdqa.jobs.compare.run_comparison` fits mv, ds, ibcc,
hmm-crowd and bsc-seq one after another on the crowd (experts only grade), scores each against the experts with
the report's metric (conlleval-like typed span F1 on CoNLL, token F1 on PICO), paired bootstrap intervals over
documents (1,000 resamples) and the recommendation. The speed target of issue 29: the whole comparison within
the sum of its fits plus 2 s (``seconds`` against ``fit_seconds``; module imports fall in the difference).

Data: ``../shared/data/conll_val`` (Rodrigues et al. 2014, validation half, 2,743 sentences) and PICO
(Nguyen et al. 2017) ``annotations/dev`` plus ``annotations/expert-dev`` with its 64 expert documents (union of
the experts). ``--quick``: CoNLL only, mv and ds, 100 resamples.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from benchmarks._pico import PICO, load_pico
from benchmarks.tables import RESULTS, make_meta, write_results

REPO = Path(__file__).resolve().parents[1]
CONLL = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data")) / "conll_val"
METHODS = ["mv", "ds", "ibcc", "hmm-crowd", "bsc-seq"]


def _conll():
    from crowdqa.jobs.local import read_files

    return read_files([dict(path=CONLL / "answers.conll", format="conll", role="crowd"),
                       dict(path=CONLL / "gold.conll", format="conll", role="expert")]).corpus


def _summary(result: dict, corpus, seconds_read: float) -> dict:
    crowd = corpus.workers_with_role("crowd")
    return {**result, "corpus_documents": corpus.n_docs, "tokens": corpus.n_tokens,
            "crowd_labels": int(np.isin(corpus.worker, crowd).sum()), "read_seconds": round(seconds_read, 3)}


def run(*, quick: bool) -> dict:
    from crowdqa.jobs.compare import run_comparison

    methods = METHODS[:2] if quick else METHODS
    out: dict = {"methods": methods}
    n_boot = 100 if quick else 1000
    if (CONLL / "answers.conll").exists():
        t0 = time.perf_counter()
        corpus = _conll()
        read = time.perf_counter() - t0
        out["conll_val"] = _summary(run_comparison(corpus, methods=methods, n_boot=n_boot), corpus, read)
    if (PICO / "annotations").is_dir() and not quick:
        t0 = time.perf_counter()
        corpus, _, _ = load_pico(splits=("dev", "expert-dev"))
        read = time.perf_counter() - t0
        out["pico_dev"] = _summary(run_comparison(corpus, methods=methods, n_boot=n_boot), corpus, read)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CoNLL only, mv and ds, 100 resamples")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    args = ap.parse_args(argv)
    if not (CONLL / "answers.conll").exists() and not (PICO / "annotations").is_dir():
        print(f"skipped: neither {CONLL} nor {PICO} found (see ../shared/data/README.md for the public sources)")
        return 0
    t0 = time.perf_counter()
    result = run(quick=args.quick)
    result["meta"] = make_meta("python -m benchmarks.compare" + (" --quick" if args.quick else ""),
                               seconds=time.perf_counter() - t0)
    for name in ("conll_val", "pico_dev"):
        if name in result:
            r = result[name]
            print(f"{name}: recommended {r['recommended']} ({r['reason']}); {r['seconds']:.1f} s in all, fits "
                  f"{r['fit_seconds']:.1f} s")
    path = write_results(args.out / f"compare{'_quick' if args.quick else ''}.json", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
