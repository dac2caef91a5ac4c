"""Calibration of every method's span scores on conll_val and PICO dev: the default temperatures, chosen by protocol.

Each method is fitted once per development set on the crowd alone (defaults, no experts). Its posterior chain
(:mod:`crowdqa.aggregation.confidence`) then scores every aggregate span at each temperature of :data:`GRID` (the
whole chain) and, for the sequence models, :data:`GRID_CROWD` (the crowd's factors alone), against the truth: a
span is right when the gold (conll_val) or the union of the experts (PICO's 64 expert documents) holds exactly that
span.

**The rule** (benchmarks/README.md's protocol for defaults: both sets at once, never one alone): each method's
default ``(scope, temperature)`` is the candidate with the lowest mean over the two sets of the span ECE; ties go to
the earlier candidate. **The cross-check**: each set's scored documents are halved at random (seed 0); the rule is
applied on half A and the choice reported on half B, then the other way round, beside each half's own best.

**With experts**: the temperature fitted on expert documents by :func:`crowdqa.aggregation.confidence.fit_temperatures`
(log loss of the span outcomes, the chosen scope), cross-fitted as a job does it: four folds of the scored
documents, each scored at the temperature fitted on the other three.

Reported per method and set, at the temperature 1 (the model as fitted), the label-free default and the
expert-fitted one: span ECE and Brier score with 95% document-bootstrap intervals, the low-score error ratio
(the share of wrong spans among the lowest-scored tenth over the overall share), and the token ECE.

**Tokens on their own** (``token_rule``): the same rule applied to the token scores' ECE (each token's probability
that its aggregate label is right, against the truth), over the same candidates: the temperature tokens would get if
they had one of their own, and each set's token ECE there (``token_ece.token_rule``, ``token_grid_ece``).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.tables import RESULTS, make_meta, write_results
from crowdqa.aggregation import ConvergenceWarning, make_aggregator
from crowdqa.aggregation.confidence import (
    chain_marginals,
    fit_temperatures,
    posterior_chain,
    sequence_starts,
    span_probability,
    tempered_scores,
    token_probability,
)
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.registry import METHODS, check_data_kind
from crowdqa.aggregation.spans import decode_spans
from crowdqa.quality.calibration import calibration_summary, expected_calibration_error

#: Temperatures of the whole chain tried: the model as fitted first, then steps of 2 ** (1/8) (9%) from 0.105 to 16
#: (a first run's coarser grid showed HMM-Crowd's span ECE on conll_val moving .067 / .031 / .075 at 3.5 / 4 / 5).
GRID = (1.0, *(round(2 ** (i / 8), 4) for i in range(-26, 33) if i))
#: Temperatures of the crowd's factors alone, tried for the models whose chain has factors besides the crowd's
#: (HMM-Crowd, BSC-seq: words, shapes, transitions); for the others the two scopes are the same chain.
GRID_CROWD = (1.0, 0.5, 2.0, 4.0, 8.0, 16.0)
N_BOOT = 1000
FOLDS = 4


class _Scored:
    """One method's fit on one set, restricted to the scored documents: spans, outcomes, and scores at any T."""

    def __init__(self, corpus: Corpus, truth: np.ndarray, scored_docs: np.ndarray, method: str) -> None:
        model = make_aggregator(method)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(corpus)
        self.seconds = time.perf_counter() - t0
        keep = np.isin(corpus.token_doc, scored_docs)
        self.corpus, self.keep = corpus, keep
        self.chain = posterior_chain(model, corpus).select(keep)
        self.doc_first = sequence_starts(corpus)[keep]
        new_index = np.cumsum(keep) - 1
        spans = decode_spans(model.labels_, corpus)
        in_scored = keep[spans.first]
        self.first, self.last = new_index[spans.first[in_scored]], new_index[spans.last[in_scored] - 1] + 1
        self.type, self.doc = spans.type[in_scored], spans.doc[in_scored]
        gold = decode_spans(np.where(truth >= 0, truth, 0), corpus)
        key = np.array(list(zip(spans.first, spans.last, spans.type, strict=True)), dtype=np.int64).reshape(-1, 3)
        gkey = {tuple(r) for r in zip(gold.first.tolist(), gold.last.tolist(), gold.type.tolist(), strict=True)}
        self.right = np.array([tuple(r) in gkey for r in key[in_scored].tolist()], dtype=bool)
        self.labels = model.labels_[keep]
        self.token_right = (model.labels_ == truth)[keep]
        self.token_doc = corpus.token_doc[keep]

    def scores(self, temperature: float, scope: str) -> np.ndarray:
        return self.scores_at(np.array([temperature]), scope)[0]

    def token_scores(self, temperature: float, scope: str) -> np.ndarray:
        return token_probability(chain_marginals(self.chain.tempered(temperature, scope=scope)), self.labels)

    def token_scores_at(self, temperatures: np.ndarray, scope: str) -> np.ndarray:
        """Every token's score at each of ``temperatures``: shape (n_temps, n_tokens), one pass for all of them."""
        return tempered_scores(self.chain, temperatures, scope=scope,
                               score=lambda mg: token_probability(mg, self.labels).reshape(mg.copies, -1))

    def scores_at(self, temperatures: np.ndarray, scope: str) -> np.ndarray:
        """Every span's score at each of ``temperatures``: shape (n_temps, n_spans), one pass for all of them."""
        return tempered_scores(self.chain, temperatures, scope=scope, score=lambda mg: span_probability(
            mg, first=self.first, last=self.last, span_type=self.type, corpus=self.corpus,
            doc_first=self.doc_first).reshape(mg.copies, -1))

    def expert_fitted(self, scope: str, *, seed: int = 0) -> tuple[np.ndarray, list[float]]:
        """Cross-fitted scores: each fold of documents at the temperature fitted on the other folds."""
        docs = np.unique(self.doc)
        parts = np.array_split(np.random.default_rng(seed).permutation(docs), FOLDS)
        held = np.array([np.isin(self.doc, part) for part in parts])
        temps = fit_temperatures(lambda x: self.scores_at(x, scope), self.right, subsets=~held)
        out = (self.scores_at(temps, scope) * held).sum(axis=0)
        return out, [round(float(t), 4) for t in temps]


def _sets(quick: bool) -> list[tuple[str, Corpus, np.ndarray, np.ndarray]]:
    """(name, crowd corpus, truth per token (-1 = none), scored documents) of each development set present."""
    from benchmarks._pico import PICO, load_pico
    from benchmarks.seq_protocol import CONLL_VAL, load_conll_val, subset_docs

    out = []
    if (CONLL_VAL / "answers.conll").is_file():
        crowd, gold = load_conll_val()
        if quick:
            crowd, keep = subset_docs(crowd, np.arange(600))
            gold = gold[keep]
        out.append(("conll_val", crowd, gold, np.arange(crowd.n_docs)))
    else:
        print(f"conll_val not found at {CONLL_VAL}: left out")
    if (PICO / "annotations").is_dir() and not quick:
        from crowdqa.quality.references import reference_labels

        corpus, _, _ = load_pico(splits=("dev", "expert-dev"))
        ref = reference_labels(corpus, rule="union")
        out.append(("pico_dev", corpus.select_role("crowd"), ref, np.unique(corpus.token_doc[ref >= 0])))
    elif not quick:
        print(f"PICO not found at {PICO}: left out")
    return out


def _summary(fit: _Scored, scores: np.ndarray) -> dict:
    return calibration_summary(scores, fit.right, fit.doc, n_boot=N_BOOT).as_data()


def run(*, quick: bool = False, methods: list[str] | None = None) -> dict:
    sets = _sets(quick)
    out: dict = {"grid": {"chain": list(GRID), "crowd": list(GRID_CROWD)}, "rule": "lowest mean span ECE over the sets",
                 "methods": {}}
    for method in methods or list(METHODS):
        entry = METHODS[method]
        if entry.experts:
            continue  # learns from the experts alone: no fit without them
        fits = {}
        for name, crowd, truth, scored in sets:
            try:
                check_data_kind(method, n_classes=crowd.n_classes, categorical=False)
            except ValueError as exc:
                print(f"{method} on {name}: {exc}", file=sys.stderr)
                continue
            fits[name] = _Scored(crowd, truth, scored, method)
            print(f"{method} on {name}: fitted in {fits[name].seconds:.1f} s, {fits[name].right.size} spans",
                  flush=True)
        if not fits:
            continue
        candidates = [("chain", t) for t in GRID]
        if entry.sequences:
            candidates += [("crowd", t) for t in GRID_CROWD]
        grid = {name: [*f.scores_at(np.array(GRID), "chain"),
                       *(f.scores_at(np.array(GRID_CROWD), "crowd") if entry.sequences else [])]
                for name, f in fits.items()}
        ece = {name: [expected_calibration_error(s, fits[name].right) for s in grid[name]] for name in fits}
        mean = np.mean([ece[n] for n in fits], axis=0)
        best = int(np.argmin(mean))  # the earliest of equal means
        scope, temp = candidates[best]
        halves = _cross_check(fits, grid, candidates)
        # The same rule on the token scores: would tokens be better off with a temperature of their own?
        token_ece = {name: [expected_calibration_error(s, f.token_right) for s in
                            [*f.token_scores_at(np.array(GRID), "chain"),
                             *(f.token_scores_at(np.array(GRID_CROWD), "crowd") if entry.sequences else [])]]
                     for name, f in fits.items()}
        token_mean = np.mean([token_ece[n] for n in fits], axis=0)
        token_best = int(np.argmin(token_mean))
        per_set = {}
        for name, f in fits.items():
            fitted, temps = f.expert_fitted(scope)
            per_set[name] = {
                "spans": int(f.right.size), "fit_seconds": round(f.seconds, 2),
                "as_fitted": _summary(f, f.scores(1.0, "chain")),
                "default": _summary(f, f.scores(temp, scope)),
                "with_experts": {**_summary(f, fitted), "fold_temperatures": temps},
                "token_ece": {"as_fitted": round(expected_calibration_error(f.token_scores(1.0, "chain"),
                                                                            f.token_right), 6),
                              "default": round(expected_calibration_error(f.token_scores(temp, scope),
                                                                          f.token_right), 6),
                              "token_rule": round(token_ece[name][token_best], 6)},
                "grid_ece": [round(x, 6) for x in ece[name]],
                "token_grid_ece": [round(x, 6) for x in token_ece[name]],
            }
        out["methods"][method] = {"scope": scope, "temperature": temp, "rule_score": round(float(mean[best]), 6),
                                  "token_rule": {"scope": candidates[token_best][0],
                                                 "temperature": candidates[token_best][1],
                                                 "rule_score": round(float(token_mean[token_best]), 6)},
                                  "candidates": [list(c) for c in candidates],
                                  "sets": per_set, "cross_check": halves}
        print(f"{method}: {scope} T={temp} mean span ECE {mean[best]:.4f} (as fitted {mean[0]:.4f})", flush=True)
    return out


def _cross_check(fits: dict[str, _Scored], grid: dict[str, list[np.ndarray]], candidates: list[tuple[str, float]],
                 *, seed: int = 0) -> dict:
    """The rule applied on one half of each set's documents and reported on the other, both ways (``grid``: each
    set's span scores at each candidate)."""
    halves = {}
    for name, f in fits.items():
        docs = np.random.default_rng(seed).permutation(np.unique(f.doc))
        halves[name] = (np.isin(f.doc, docs[: docs.size // 2]), np.isin(f.doc, docs[docs.size // 2:]))
    ece = {(name, h): [expected_calibration_error(s[halves[name][h]], f.right[halves[name][h]]) for s in grid[name]]
           for name, f in fits.items() for h in (0, 1)}
    out = {}
    for choose, report in ((0, 1), (1, 0)):
        on_choose = np.mean([ece[(n, choose)] for n in fits], axis=0)
        on_report = np.mean([ece[(n, report)] for n in fits], axis=0)
        i, j = int(np.argmin(on_choose)), int(np.argmin(on_report))
        out[f"chosen_on_{'AB'[choose]}"] = {
            "candidate": list(candidates[i]), "ece_choosing_half": round(float(on_choose[i]), 6),
            "ece_other_half": round(float(on_report[i]), 6), "other_half_best": list(candidates[j]),
            "other_half_best_ece": round(float(on_report[j]), 6)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="600 sentences of conll_val only")
    ap.add_argument("--methods", default=None, help="comma-separated method ids (default: every method)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    result = run(quick=args.quick, methods=args.methods.split(",") if args.methods else None)
    if not result["methods"]:
        print("skipped: neither conll_val nor PICO found (see ../shared/data/README.md for the public sources)")
        return 0
    result["meta"] = make_meta("python -m benchmarks.calibration" + (" --quick" if args.quick else ""),
                               seconds=time.perf_counter() - t0)
    path = write_results(args.out / f"calibration{'_quick' if args.quick else ''}.json", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
