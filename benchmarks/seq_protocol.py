"""The written protocol that chooses BSC-seq's defaults on two development sets, and its results.

Run ``python -m benchmarks.seq_protocol [--quick]``; results go to
``benchmarks/results/seq_protocol[_quick].json`` (``python -m benchmarks.tables`` renders them).
The protocol itself is written in ``benchmarks/README.md``; this script is its implementation.

Development data (``../shared/data``; never copied into the repository):

* ``conll_val``: the validation half of the CoNLL-2003 MTurk crowd (Rodrigues et al. 2014),
  pseudo-words, with gold; strict span F1 by the conlleval rule
  (:func:`benchmarks.bsc_seq.span_f1`), interval by a sentence bootstrap.
* ``pico``: PICO Participants (Nguyen et al. 2017), every crowd document fitted, token F1
  against the union of the experts on the 64 expert-dev documents
  (:func:`benchmarks.pico_study.score`).

Each set is fitted twice: whole, and as a *small project* fitted alone (300 random
sentences of ``conll_val``; the 64 expert documents plus 63 random others of PICO, 127
documents), because a default must also hold on a small upload.

Rule: every candidate setting of :data:`GRID` gets the score ``mean over the two sets of
mean(whole F1, small-project F1)``; the highest wins, ties to the earlier candidate. The
cross-check halves the scored documents of each set at random (seed 0): the candidate
chosen by the rule on half A is reported on half B, and the other way round, next to the
best candidate on the reporting half, so the cost of choosing on data you do not report
on is visible.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.quality.report import score_block

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data"))
CONLL_VAL = SHARED / "conll_val"
RESULTS = Path(__file__).resolve().parent / "results"
#: Every sequence method the README reports, with its defaults.
METHODS = {"MajorityVote": "mv", "DawidSkene": "ds", "IBCC": "ibcc", "HMMCrowd": "hmm-crowd", "BSC-seq": "bsc-seq"}
#: BSC-seq candidates (63): the token features (the authors' words alone, or HMM-Crowd's words and two word
#: shapes), the annotator prior's smoothing ``alpha0`` (the paper's alpha0_factor spread over the labels) and
#: diagonal strength ``epsilon0`` (alpha0_diags), the emission prior ``nu0`` and the starting point ``init``.
#: The first is the old default (the authors' class defaults); the first 24 are the grid of the first run, the
#: first 48 that of the second. The third run's 15 (:data:`GRID_LOWER`) add words lower-cased beside the
#: ``capitalised`` shape (the case is then counted once, by the shape, not again by every cased word form) and
#: words with that shape alone. Every candidate names ``lowercase``, so none depends on the class defaults.
GRID = [{"features": f, "alpha0": a, "epsilon0": e, "nu0": n, "init": i, "lowercase": False}
        for f in (("word",), ("word", "capitalised", "digit"))
        for i in ("vote", "ds") for n in (1.0, 0.1, 0.01) for a in (1.0, 0.1) for e in (1.0, 3.0)]
GRID_LOWER = [{"features": f, "alpha0": 1.0, "epsilon0": e, "nu0": n, "init": "vote", "lowercase": lc}
              for f in (("word", "capitalised"), ("word", "capitalised", "digit"))
              for lc in (False, True) for e in (3.0, 6.0) for n in (0.1, 0.03)]
GRID += [c for c in GRID_LOWER if c not in GRID]
SMALL_CONLL = 300  # sentences of the small conll_val project
SMALL_PICO_EXTRA = 63  # documents added to PICO's 64 expert documents in its small project
N_BOOT = 1000
#: EM/VB iterations at which the two model-based sequence methods are also scored, run for exactly that many
#: (``tol=None``), beside their defaults: how F1 moves as the fit goes on. Reported, never chosen from.
ITERATION_STEPS = {"hmm-crowd": (1, 2, 5, 20), "bsc-seq": (1, 2, 3, 5, 10, 20)}


# ---------------------------------------------------------------------------- data
def subset_docs(corpus: Corpus, docs: np.ndarray) -> tuple[Corpus, np.ndarray]:
    """The corpus of documents ``docs`` alone (as if uploaded alone), and the mask of its tokens in ``corpus``."""
    docs = np.sort(np.asarray(docs, dtype=np.int64))
    keep = np.isin(corpus.token_doc, docs)
    new_token = np.cumsum(keep) - 1
    rows = keep[corpus.token]
    sub = Corpus.from_arrays(
        token=new_token[corpus.token[rows]], worker=corpus.worker[rows], label=corpus.label[rows],
        doc_lengths=corpus.doc_lengths[docs], token_start=corpus.token_start[keep], token_end=corpus.token_end[keep],
        doc_ids=[corpus.doc_ids[d] for d in docs], texts=[corpus.texts[d] for d in docs],
        worker_ids=corpus.worker_ids, worker_roles=corpus.worker_roles, class_names=corpus.class_names)
    return sub, keep


def load_conll_val() -> tuple[Corpus, np.ndarray]:
    """The crowd corpus of ``conll_val`` and its gold labels (class indices of the crowd corpus)."""
    from crowdqa.ingest.conll import read_conll

    crowd = read_conll(CONLL_VAL / "answers.conll")
    gold = read_conll(CONLL_VAL / "gold.conll", role="expert")
    remap = np.array([crowd.class_names.index(n) for n in gold.class_names])
    return crowd, remap[gold.labels_of(0)]


# ---------------------------------------------------------------------------- scoring
def span_counts(labels: np.ndarray, gold: np.ndarray, corpus: Corpus) -> np.ndarray:
    """Strict span ``tp, fp, fn`` of each document (type and both boundaries), conlleval's reading of BIO."""
    def keys(lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = decode_spans(lab, corpus)
        return (s.first * (corpus.n_tokens + 1) + s.last) * 64 + s.type, s.doc

    got, got_doc = keys(labels)
    ref, ref_doc = keys(gold)
    hit = np.isin(got, ref)
    n = corpus.n_docs
    tp = np.bincount(got_doc[hit], minlength=n)
    return np.stack([tp, np.bincount(got_doc, minlength=n) - tp, np.bincount(ref_doc, minlength=n) - tp], axis=1)


def token_counts(labels: np.ndarray, ref: np.ndarray, corpus: Corpus) -> np.ndarray:
    """Token ``tp, fp, fn`` (positive = not ``O``) of each document on the tokens with a reference."""
    from crowdqa.quality.metrics import grouped_counts

    valid = ref >= 0
    return grouped_counts(labels[valid] > 0, ref[valid] > 0, corpus.token_doc[valid], n_groups=corpus.n_docs)


def f1_of(counts: np.ndarray) -> float:
    tp, fp, fn = counts.sum(axis=0)
    return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0


class _Set:
    """One development set: the whole corpus, its small project, and how each is scored."""

    def __init__(self, name: str, whole: Corpus, small_docs: np.ndarray, counts, scored_docs: np.ndarray,
                 *, seed: int) -> None:
        self.name, self.whole, self.counts = name, whole, counts
        self.small, self.small_mask = subset_docs(whole, small_docs)
        self.small_docs = np.sort(small_docs)
        self.scored = scored_docs  # documents with a reference
        half = np.random.default_rng(seed).permutation(scored_docs)
        self.halves = (np.sort(half[: half.size // 2]), np.sort(half[half.size // 2:]))

    def fit(self, method: str, params: dict, *, small: bool) -> tuple[np.ndarray, dict]:
        corpus = self.small if small else self.whole
        model = make_aggregator(method, params)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(corpus)
        info = {"seconds": round(time.perf_counter() - t0, 3), "iterations": getattr(model, "n_iter_", None),
                "converged": getattr(model, "converged_", None)}
        return model.labels_, info

    def doc_counts(self, labels: np.ndarray, *, small: bool) -> np.ndarray:
        """Per-document counts over the whole corpus's documents (zeros for documents not fitted)."""
        if not small:
            return self.counts(labels, self.whole)
        out = np.zeros((self.whole.n_docs, 3), dtype=np.int64)
        out[self.small_docs] = self.counts(labels, self.small, self.small_mask)
        return out


def build_sets(*, quick: bool, seed: int = 0) -> list[_Set]:
    """conll_val and PICO as :class:`_Set` (a set whose data is absent is left out, with a message)."""
    rng = np.random.default_rng(seed)
    sets = []
    if (CONLL_VAL / "answers.conll").is_file():
        crowd, gold = load_conll_val()
        if quick:
            crowd, keep = subset_docs(crowd, np.arange(600))
            gold = gold[keep]

        def conll_counts(labels, corpus, mask=None):
            return span_counts(labels, gold if mask is None else gold[mask], corpus)

        small = rng.choice(crowd.n_docs, min(SMALL_CONLL, crowd.n_docs // 2), replace=False)
        sets.append(_Set("conll_val", crowd, small, conll_counts, np.arange(crowd.n_docs), seed=seed))
    else:
        print(f"conll_val not found at {CONLL_VAL}: left out")
    from benchmarks._pico import PICO, load_pico

    if (PICO / "annotations").is_dir():
        from crowdqa.quality.references import reference_labels

        os.environ.setdefault("CROWDQA_PICO_DOCS", str(PICO / "docs"))
        corpus, _, _ = load_pico(limit=400 if quick else None)
        ref = reference_labels(corpus, rule="union")
        crowd = corpus.select_role("crowd")
        expert_docs = np.unique(corpus.token_doc[ref >= 0])
        others = np.setdiff1d(np.arange(corpus.n_docs), expert_docs)
        small = np.concatenate([expert_docs, rng.choice(others, SMALL_PICO_EXTRA, replace=False)])

        def pico_counts(labels, corpus, mask=None):
            return token_counts(labels, ref if mask is None else ref[mask], corpus)

        sets.append(_Set("pico", crowd, small, pico_counts, expert_docs, seed=seed))
    else:
        print(f"PICO not found at {PICO}: left out")
    return sets


# ---------------------------------------------------------------------------- the protocol
def rule_score(f1: dict[str, dict[str, float]]) -> float:
    """The rule: mean over the sets of mean(whole F1, small-project F1)."""
    return float(np.mean([(v["whole"] + v["small"]) / 2 for v in f1.values()]))


def choose(candidates: list[dict]) -> int:
    """Index of the candidate with the highest rule score (ties to the earliest)."""
    scores = [rule_score(c["f1"]) for c in candidates]
    return int(np.argmax(scores))


def run_grid(sets: list[_Set], grid: list[dict], *, method: str = "bsc-seq") -> list[dict]:
    """Fit every candidate of ``method`` on every set (whole and small); keep per-document counts for the
    cross-check."""
    out = []
    for params in grid:
        cand = {"params": params, "f1": {}, "fits": {}, "_counts": {}}
        for s in sets:
            cand["f1"][s.name], cand["fits"][s.name] = {}, {}
            for small in (False, True):
                labels, info = s.fit(method, params, small=small)
                counts = s.doc_counts(labels, small=small)
                key = "small" if small else "whole"
                cand["_counts"][(s.name, key)] = counts
                cand["f1"][s.name][key] = f1_of(counts[s.scored if not small else
                                                       np.intersect1d(s.scored, s.small_docs)])
                cand["fits"][s.name][key] = info
        cand["score"] = rule_score(cand["f1"])
        print(f"{params}: " + ", ".join(f"{n} {v['whole']:.4f}/{v['small']:.4f}" for n, v in cand["f1"].items())
              + f" -> {cand['score']:.4f}", flush=True)
        out.append(cand)
    return out


def cross_check(sets: list[_Set], candidates: list[dict]) -> list[dict]:
    """Choose on one half of every set's scored documents, report on the other half (both ways)."""
    def on_half(cand: dict, h: int) -> dict:
        f1 = {}
        for s in sets:
            docs = s.halves[h]
            f1[s.name] = {"whole": f1_of(cand["_counts"][(s.name, "whole")][docs]),
                          "small": f1_of(cand["_counts"][(s.name, "small")][np.intersect1d(docs, s.small_docs)])}
        return f1

    rows = []
    for chosen_on, reported_on in ((0, 1), (1, 0)):
        tuned = [{"f1": on_half(c, chosen_on)} for c in candidates]
        reported = [{"f1": on_half(c, reported_on)} for c in candidates]
        pick, best = choose(tuned), choose(reported)
        rows.append({"chosen_on": "AB"[chosen_on], "reported_on": "AB"[reported_on],
                     "chosen": candidates[pick]["params"], "score_on_chosen_half": rule_score(tuned[pick]["f1"]),
                     "score_on_reported_half": rule_score(reported[pick]["f1"]),
                     "f1_on_reported_half": reported[pick]["f1"],
                     "best_on_reported_half": candidates[best]["params"],
                     "best_score_on_reported_half": rule_score(reported[best]["f1"])})
    return rows


def report_methods(sets: list[_Set], *, seed: int, n_boot: int, methods: dict[str, str] | None = None) -> dict:
    """Every sequence method (``methods``: row name -> method id, default :data:`METHODS`) with its defaults on
    every set (whole and small), with intervals and fit times."""
    out: dict = {}
    for name, method in (METHODS if methods is None else methods).items():
        out[name] = {"method": method}
        for s in sets:
            for small in (False, True):
                labels, info = s.fit(method, {}, small=small)
                counts = s.doc_counts(labels, small=small)
                docs = np.intersect1d(s.scored, s.small_docs) if small else s.scored
                block = score_block(counts[docs], n_boot=n_boot, rng=seed)
                out[name][f"{s.name}{'_small' if small else ''}"] = {**block, "fit": info}
            print(f"{name} {s.name}: F1 {out[name][s.name]['f1']:.4f} in {out[name][s.name]['fit']['seconds']} s, "
                  f"small {out[name][s.name + '_small']['f1']:.4f}", flush=True)
    return out


def iteration_curve(sets: list[_Set], *, quick: bool) -> dict:
    """F1 on each whole set after exactly n iterations of HMM-Crowd and BSC-seq (their other defaults kept)."""
    out: dict = {}
    for method, steps in ITERATION_STEPS.items():
        out[method] = {}
        for s in sets:
            rows = []
            for n in steps[:2] if quick else steps:
                labels, info = s.fit(method, {"max_iter": n, "tol": None}, small=False)
                rows.append({"iterations": n, "f1": f1_of(s.doc_counts(labels, small=False)[s.scored]),
                             "seconds": info["seconds"]})
            out[method][s.name] = rows
            print(f"{method} {s.name} by iterations: " + ", ".join(f"{r['iterations']}: {r['f1']:.4f}" for r in rows),
                  flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="600 conll_val sentences, 400 PICO documents, "
                                                             "two candidates")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    sets = build_sets(quick=args.quick)
    if not sets:
        print("no development data found: nothing to do")
        return 0
    grid = GRID[:2] if args.quick else GRID
    candidates = run_grid(sets, grid)
    pick = choose(candidates)
    result: dict = {
        "rule": "maximise the mean over conll_val and PICO of mean(whole-corpus F1, small-project F1)",
        "sets": {s.name: {"documents": s.whole.n_docs, "tokens": s.whole.n_tokens, "scored_documents":
                          int(s.scored.size), "small_documents": int(s.small_docs.size)} for s in sets},
        "grid": [{k: v for k, v in c.items() if k != "_counts"} for c in candidates],
        "chosen": candidates[pick]["params"],
        "cross_check": cross_check(sets, candidates),
    }
    result["methods"] = report_methods(sets, seed=0, n_boot=200 if args.quick else N_BOOT)
    result["iterations"] = iteration_curve(sets, quick=args.quick)
    write_run(result, stem="seq_protocol", quick=args.quick, out=args.out, started=t0,
              note="shared machine: up to 8 engineers ran tests and benchmarks at the same time")
    return 0


def write_run(result: dict, *, stem: str, quick: bool, out: Path, started: float, note: str) -> None:
    """Add the run's meta block (command, seconds since ``started``, ``note``) and write ``<stem>[_quick].json``."""
    command = f"python -m benchmarks.{stem}" + (" --quick" if quick else "")
    result["meta"] = make_meta(command, seconds=time.perf_counter() - started)
    result["meta"]["note"] = note
    path = write_results(out / f"{stem}{'_quick' if quick else ''}.json", result)
    print(f"chosen: {result['chosen']}\nwrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
