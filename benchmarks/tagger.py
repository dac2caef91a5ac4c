"""HMM-Crowd with a tagger in the loop (``hmm-crowd-tagger``, issue 43): its defaults by the protocol, its rows
beside the other sequence methods, and pre-annotation of sentences nobody annotated.

Run ``python -m benchmarks.tagger [--quick]``; results go to ``benchmarks/results/tagger[_quick].json``.
The protocol is ``benchmarks/README.md``'s (:mod:`benchmarks.seq_protocol`'s sets, rule and halving
cross-check): every candidate of :data:`GRID` is fitted on conll_val and PICO dev, whole and as a small project,
scored by the mean over the sets of mean(whole F1, small-project F1); the highest wins (ties to the earlier).

Beside the candidates:

* ``n_folds=1``, a tagger that votes on the documents it trained on (no cross-fitting), measured as the
  alternative the cross-fitting guards against;
* MV, HMM-Crowd and BSC-seq at their defaults (the bar: HMM-Crowd's conll_val .771 and PICO dev .735 as the
  issue states them);
* **pre-annotation**: conll_val's sentences halved at random (seed 0, the protocol's halves); the method at its
  defaults learns from one half's crowd labels and labels the other half's words (no label of that half is read),
  strict span F1 against the gold; both ways round.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.seq_protocol import (
    RESULTS,
    build_sets,
    choose,
    cross_check,
    f1_of,
    report_methods,
    run_grid,
    subset_docs,
    write_run,
)
from crowdqa.aggregation import make_aggregator
from crowdqa.quality.report import score_block

METHOD = "hmm-crowd-tagger"
#: Candidates (fixed before the run). ``n_folds=2`` in all: the whole PICO corpus must fit in 10 minutes on two
#: cores, and each further fold trains the tagger on one more share of the corpus per round (5 folds, tried once
#: before this grid was fixed: no better, and slower). The first is the class default before this grid (the
#: tagger's class probabilities as fractional answers); the second makes its answer its most probable class, as an
#: annotator's label (``tagger_vote="hard"``); the third adds the affixes to that (morphology on PICO's real text).
#: The grids of the runs before (``tagger_c`` 1 or 0.1, affixes 3 or 0, soft answers) are in benchmarks/README.md.
GRID = [{"n_folds": 2, "tagger_c": 1.0, "affixes": 0, "tagger_vote": "soft"},
        {"n_folds": 2, "tagger_c": 1.0, "affixes": 0, "tagger_vote": "hard"},
        {"n_folds": 2, "tagger_c": 1.0, "affixes": 3, "tagger_vote": "hard"}]
#: Reported beside the candidates, never chosen: the tagger without cross-fitting.
IN_SAMPLE = {"n_folds": 1, "tagger_c": 1.0, "affixes": 0, "tagger_vote": "hard"}
#: The other sequence methods, at their defaults.
OTHERS = {"MajorityVote": "mv", "HMMCrowd": "hmm-crowd", "BSC-seq": "bsc-seq"}
N_BOOT = 1000


def with_intervals(cand: dict, sets, *, n_boot: int, seed: int) -> dict:
    """The candidate's F1 on every set (whole and small) with a document-bootstrap interval and its fit record."""
    out = {}
    for s in sets:
        for key, docs in (("whole", s.scored), ("small", np.intersect1d(s.scored, s.small_docs))):
            block = score_block(cand["_counts"][(s.name, key)][docs], n_boot=n_boot, rng=seed)
            out[s.name + ("" if key == "whole" else "_small")] = {**block, "fit": cand["fits"][s.name][key]}
    return out


def pre_annotation(conll, *, n_boot: int, seed: int) -> list[dict]:
    """Learn from one half of conll_val's crowd labels, label the other half's words alone; both ways round."""
    from crowdqa.aggregation.corpus import Corpus

    rows = []
    for learn, label in ((0, 1), (1, 0)):
        fit_corpus, fit_mask = subset_docs(conll.whole, conll.halves[learn])
        other, mask = subset_docs(conll.whole, conll.halves[label])
        bare = Corpus.from_arrays(token=[], worker=[], label=[], doc_lengths=other.doc_lengths,
                                  token_start=other.token_start, token_end=other.token_end, doc_ids=other.doc_ids,
                                  texts=other.texts, worker_ids=[], worker_roles=[], class_names=other.class_names)
        t0 = time.perf_counter()
        model = make_aggregator(METHOD, {}).fit(fit_corpus)
        fit_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        predicted = model.predict(bare)
        predict_seconds = time.perf_counter() - t0
        counts = conll.counts(predicted, other, mask)
        seen = conll.counts(model.labels_, fit_corpus, fit_mask)
        rows.append({"learned_on": "AB"[learn], "labelled": "AB"[label], "sentences_learned": fit_corpus.n_docs,
                     "sentences_labelled": other.n_docs, "tokens_labelled": other.n_tokens,
                     "unseen": score_block(counts, n_boot=n_boot, rng=seed),
                     "aggregate_of_the_learned_half": {"f1": f1_of(seen)},
                     "fit_seconds": round(fit_seconds, 3), "predict_seconds": round(predict_seconds, 3)})
        row = rows[-1]
        print(f"pre-annotation {row['learned_on']} -> {row['labelled']}: unseen F1 {row['unseen']['f1']:.4f} "
              f"(its own half's aggregate {row['aggregate_of_the_learned_half']['f1']:.4f})", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="600 conll_val sentences, 400 PICO documents")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    sets = build_sets(quick=args.quick)
    if not sets:
        print("no development data found: nothing to do")
        return 0
    n_boot = 200 if args.quick else N_BOOT
    candidates = run_grid(sets, GRID, method=METHOD)
    pick = choose(candidates)
    in_sample = run_grid(sets, [IN_SAMPLE], method=METHOD)[0]
    methods = report_methods(sets, seed=0, n_boot=n_boot, methods=OTHERS)
    default = make_aggregator(METHOD, {}).get_params()
    for cand in candidates:  # the class defaults' row is the candidate with the default values
        if all(default[k] == v for k, v in cand["params"].items()):
            methods["HMMCrowdTagger"] = {"method": METHOD, **with_intervals(cand, sets, n_boot=n_boot, seed=0)}
    methods["HMMCrowdTagger, no cross-fitting"] = {"method": METHOD, "params": IN_SAMPLE,
                                                   **with_intervals(in_sample, sets, n_boot=n_boot, seed=0)}
    conll = next((s for s in sets if s.name == "conll_val"), None)
    result: dict = {
        "rule": "maximise the mean over conll_val and PICO of mean(whole-corpus F1, small-project F1)",
        "sets": {s.name: {"documents": s.whole.n_docs, "tokens": s.whole.n_tokens, "scored_documents":
                          int(s.scored.size), "small_documents": int(s.small_docs.size)} for s in sets},
        "grid": [{k: v for k, v in c.items() if k != "_counts"} for c in candidates],
        "chosen": candidates[pick]["params"],
        "defaults": {k: default[k] for k in GRID[0]},
        "cross_check": cross_check(sets, candidates),
        "in_sample": {k: v for k, v in in_sample.items() if k != "_counts"},
        "methods": methods,
        "pre_annotation": [] if conll is None else pre_annotation(conll, n_boot=n_boot, seed=0),
    }
    write_run(result, stem="tagger", quick=args.quick, out=args.out, started=t0,
              note="shared machine: up to 9 engineers ran tests and benchmarks at the same time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
