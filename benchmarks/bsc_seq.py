"""Bayesian sequence combination (``bsc-seq``) against HMMCrowd, Dawid-Skene and majority vote.

Run ``python -m benchmarks.bsc_seq [--quick]``; results go to
``benchmarks/results/bsc_seq[_quick].json`` (``python -m benchmarks.tables`` renders them).

(a) PICO Participants (``../shared/data/pico``; the abstracts of ``docs/``): every crowd
    document fitted together; token precision, recall and F1 (positive = not ``O``) against
    the union of the experts on the expert documents, with Clopper-Pearson intervals for P
    and R and a document bootstrap for F1 (``benchmarks.pico_study.score``). For HMMCrowd and
    the default BSC-seq the whole job path (``crowdqa.jobs.pipeline.run_pipeline``: fit and report,
    what a job or ``crowdqa aggregate`` runs after reading the files) is timed ``repeats``
    times, interleaved, and the best of each is kept; fit-time ratios are to HMMCrowd in the
    same run. Other variants are fitted once.
(b) A synthetic CoNLL-like crowd with planted habits (:mod:`benchmarks.ner_crowd`: 4 types,
    annotator accuracy 0.2-0.7, 4 annotators per sentence, late starters, early stoppers,
    span extenders, spammers): strict span F1 (type and both boundaries, conlleval's
    reading of BIO) against the truth, over several seeds; and the sequential habits BSC-seq
    recovers, by annotator kind.

The published figures next to ours are Simpson & Gurevych (2019), Table 2: span F1 on the
CoNLL-2003 crowd of Rodrigues et al. (2014) (NER, strict) and on PICO (relaxed span F1 on
their own split; ours is token F1 on the expert documents, so not the same measure).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.ner_crowd import ner_crowd
from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans

RESULTS = Path(__file__).resolve().parent / "results"
#: name -> (method id, parameters). ``bsc-seq`` is the default; the rest change one setting.
METHODS: dict[str, tuple[str, dict]] = {
    "MajorityVote": ("mv", {}),
    "DawidSkene": ("ds", {}),
    "HMMCrowd": ("hmm-crowd", {}),
    "BSC-seq": ("bsc-seq", {}),
    "BSC-cm": ("bsc-seq", {"annotator_model": "cm"}),
    "BSC-acc": ("bsc-seq", {"annotator_model": "acc"}),
    "BSC-seq, no text": ("bsc-seq", {"features": ()}),
    "BSC-seq, documents": ("bsc-seq", {"sequences": "document"}),
    "BSC-seq, eps0=10": ("bsc-seq", {"epsilon0": 10.0}),
}
#: Simpson & Gurevych (2019), Table 2: (NER strict span F1, PICO relaxed span F1), in percent.
PUBLISHED = {"MajorityVote": (65.4, 64.3), "DawidSkene": (74.4, 68.7), "HMMCrowd": (74.2, 71.0),
             "BSC-seq": (77.4, 75.1), "BSC-cm": (75.8, 68.2), "BSC-acc": (65.7, 60.0),
             "BSC-seq, no text": (76.3, 68.5)}
PUBLISHED_SOURCE = ("E. Simpson, I. Gurevych (2019), A Bayesian approach for sequence tagging with crowds, "
                    "EMNLP-IJCNLP, Table 2 (as in the authors' paper source, github.com/UKPLab/"
                    "arxiv2018-bayesian-ensembles, documents/sections/experiments.tex)")


def _fit(method: str, params: dict, corpus: Corpus) -> tuple[np.ndarray, float, int | None]:
    model = make_aggregator(method, params)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(corpus)
    return model.labels_, time.perf_counter() - t0, getattr(model, "n_iter_", None)


def _whole_path(method: str, corpus: Corpus) -> dict:
    """Seconds of the job's pipeline (fit + report) for ``method`` with its defaults."""
    from crowdqa.jobs.pipeline import run_pipeline

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_pipeline(corpus, method=method)
    return {"total": time.perf_counter() - t0, **result.timings}


def pico(*, quick: bool, repeats: int, seed: int = 0) -> dict | None:
    """Token P/R/F1 of every method on PICO, and the whole-path timings of HMMCrowd and BSC-seq."""
    from benchmarks._pico import PICO, load_pico
    from benchmarks.pico_study import score
    from crowdqa.quality.references import reference_labels

    if not (PICO / "annotations").is_dir():
        print(f"PICO data not found at {PICO}: part (a) skipped")
        return None
    # The abstracts the spans point into (an older copy of the folder held placeholders).
    os.environ.setdefault("CROWDQA_PICO_DOCS", str(PICO / "docs"))
    corpus, _, _ = load_pico(limit=400 if quick else None)
    crowd = corpus.select_role("crowd")
    ref = reference_labels(corpus, rule="union")
    n_boot = 200 if quick else 1000
    out: dict = {"data": {"documents": corpus.n_docs, "tokens": corpus.n_tokens, "crowd_labels": crowd.n_obs,
                          "crowd_workers": int(np.unique(crowd.worker).size),
                          "expert_documents": int(np.unique(corpus.token_doc[ref >= 0]).size),
                          "expert_tokens": int((ref >= 0).sum())},
                 "methods": {}, "whole_path": {"HMMCrowd": [], "BSC-seq": []}}
    for _ in range(repeats):  # interleaved, so both see the same machine load
        out["whole_path"]["HMMCrowd"].append(_whole_path("hmm-crowd", corpus))
        out["whole_path"]["BSC-seq"].append(_whole_path("bsc-seq", corpus))
    for name, (method, params) in METHODS.items():
        labels, secs, n_iter = _fit(method, params, crowd)
        out["methods"][name] = {"method": method, "params": params, "fit_seconds": round(secs, 3),
                                "iterations": n_iter, **score(corpus, labels, ref, seed=seed, n_boot=n_boot)}
        print(f"PICO {name}: F1 {out['methods'][name]['f1']:.4f} in {secs:.1f} s ({n_iter} it.)", flush=True)
    best = {name: {k: min(run[k] for run in runs) for k in runs[0]} for name, runs in out["whole_path"].items()}
    out["best_of_repeats"] = best
    out["ratio_to_hmmcrowd"] = {"fit": best["BSC-seq"]["fit"] / best["HMMCrowd"]["fit"],
                                "whole_path": best["BSC-seq"]["total"] / best["HMMCrowd"]["total"]}
    return out


def exact_spans(labels: np.ndarray, corpus: Corpus) -> set[tuple[int, int, int]]:
    """(first token, end token, type) of every span, BIO read as conlleval does."""
    s = decode_spans(labels, corpus)
    return set(zip(s.first.tolist(), s.last.tolist(), s.type.tolist(), strict=True))


def span_f1(labels: np.ndarray, truth: np.ndarray, corpus: Corpus) -> dict:
    """Strict span precision, recall and F1: a span counts when its type and both boundaries match."""
    got, gold = exact_spans(labels, corpus), exact_spans(truth, corpus)
    tp = len(got & gold)
    p, r = tp / max(len(got), 1), tp / max(len(gold), 1)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def habits(model_tensor: np.ndarray, kinds: tuple[str, ...], n_labels: np.ndarray, *, min_labels: int) -> dict:
    """Mean fitted P(B-X | true I-X, previous O) (late start) and P(O | true I-X, previous I-X) (early stop)
    per annotator kind, over annotators with at least ``min_labels`` labels."""
    k = model_tensor.shape[2]
    b_x, i_x = np.arange(1, k, 2), np.arange(2, k, 2)
    late = model_tensor[:, 0, i_x, b_x].mean(axis=1)
    early = model_tensor[:, i_x, i_x, 0].mean(axis=1)
    kind = np.array(kinds)
    busy = n_labels >= min_labels
    return {kd: {"annotators": int((busy & (kind == kd)).sum()),
                 "late_start": float(late[busy & (kind == kd)].mean()) if (busy & (kind == kd)).any() else None,
                 "early_stop": float(early[busy & (kind == kd)].mean()) if (busy & (kind == kd)).any() else None}
            for kd in dict.fromkeys(kinds)}


def synthetic(*, seeds: tuple[int, ...], n_sentences: int) -> dict:
    """Strict span F1 of every method on the synthetic NER crowd, per seed; habits from the first seed."""
    from crowdqa.aggregation.bsc_seq import BayesianSequenceCombination

    rows: dict[str, dict[str, list[float]]] = {name: {"f1": [], "seconds": []} for name in METHODS}
    out: dict = {"seeds": list(seeds), "sentences": n_sentences, "accuracy": [0.2, 0.7], "per_sentence": 4}
    for seed in seeds:
        corpus, truth, kinds = ner_crowd(n_sentences=n_sentences, accuracy=(0.2, 0.7), per_sentence=4, seed=seed)
        out.setdefault("tokens_first_seed", corpus.n_tokens)
        out.setdefault("labels_first_seed", corpus.n_obs)
        for name, (method, params) in METHODS.items():
            labels, secs, _ = _fit(method, params, corpus)
            rows[name]["f1"].append(span_f1(labels, truth, corpus)["f1"])
            rows[name]["seconds"].append(secs)
        if seed == seeds[0]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fitted = BayesianSequenceCombination().fit(corpus)
            out["habits_first_seed"] = habits(fitted.worker_model_, kinds,
                                              np.bincount(corpus.worker, minlength=corpus.n_workers), min_labels=500)
        print(f"synthetic seed {seed}: " + ", ".join(f"{n} {r['f1'][-1]:.3f}" for n, r in rows.items()), flush=True)
    out["methods"] = {name: {"span_f1_mean": float(np.mean(r["f1"])), "span_f1_per_seed": r["f1"],
                             "fit_seconds_mean": float(np.mean(r["seconds"]))} for name, r in rows.items()}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="400 PICO documents, one seed of 400 sentences")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    result: dict = {"published": {"source": PUBLISHED_SOURCE, "ner_span_f1": {k: v[0] / 100 for k, v in
                                                                              PUBLISHED.items()},
                                  "pico_relaxed_span_f1": {k: v[1] / 100 for k, v in PUBLISHED.items()}}}
    result["synthetic_ner"] = synthetic(seeds=(0,) if args.quick else (0, 1, 2),
                                        n_sentences=400 if args.quick else 2000)
    result["pico"] = pico(quick=args.quick, repeats=1 if args.quick else 2)
    command = "python -m benchmarks.bsc_seq" + (" --quick" if args.quick else "")
    result["meta"] = make_meta(command, seconds=time.perf_counter() - t0)
    result["meta"]["note"] = "shared machine: up to 6 engineers ran tests and benchmarks at the same time"
    path = write_results(args.out / f"bsc_seq{'_quick' if args.quick else ''}.json", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
