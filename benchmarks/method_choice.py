"""Which method ``--method auto`` chooses with a few hundred expert items, and what it costs on the other items.

Run ``python -m benchmarks.method_choice [--quick] [--splits N] [--out DIR]``; results go to
``benchmarks/results/method_choice[_quick].json``.

Protocol (issue 46). For every data set with gold labels, the gold items (documents) are halved at random
``--splits`` times (default 5, seeds 0..4): one half is given to crowdqa as the experts, the other is held out. On
each split:

* every candidate of ``compare --expert-variants`` (:func:`crowdqa.jobs.compare.candidates` with
  ``expert_variants``: every method that applies on the crowd alone, and every method but mv with the experts'
  half clamped) is measured on the experts' half as :func:`crowdqa.jobs.compare.run_comparison` measures it (a
  crowd-only fit on every expert document, a clamped fit by 4-fold cross-fitting,
  :func:`crowdqa.jobs.pipeline.cross_fit`), and the rule (:func:`crowdqa.quality.compare.recommend` with the
  committed prior, :func:`crowdqa.quality.method_choice.prior_for`) chooses one, through the same
  :class:`~crowdqa.quality.compare.Scoreboard` the command uses (1,000 resamples), among three sets of candidates
  (:data:`RULES`): ``variants``, all of them (``compare --expert-variants``, and what ``--method auto`` compares
  when not told whether to use the experts: :data:`DEFAULT_RULE`); ``auto``, the crowd-only ones (``--method
  auto --no-use-experts``; the name is kept from when it was auto's default, so results files stay comparable);
  ``auto_use_experts``, the clamped ones and ``mv+experts`` (``--method auto --use-experts``; ``mv+experts``
  predicts as ``mv`` off the clamped items, so its scores are mv's);
* every candidate is scored on the held-out half: the crowd-only fit, or the fit with the whole experts' half
  clamped (what ``aggregate --use-experts`` would make), with the report's metric (accuracy, typed span F1 on
  conll_val, token F1 on PICO);
* regret = the best candidate's held-out score minus the chosen one's, beside always-DS (``ds`` on the crowd
  alone) and always-MV.

What auto costs (``auto_cost``, categorical sets): the seconds and the number of estimator fits of
``choose_method`` and of the pipeline that reuses its fit, on the whole gold set as the experts, without and with
``use_experts``, with the run's methods (the cost, not the choice, is what it measures; run on two commits it
compares their costs).

Crowd-only fits do not depend on the split and are made once per data set.

Data sets (``../shared/data``; a missing one is skipped and named):

* categorical: Snow et al. 2008 RTE and TEMP, Welinder et al. 2010 Bluebirds, Get-Another-Label AdultContent2 and
  HITspam. Those two repeat (item, worker) rows; this loader, not the product, counts identical repeats once and,
  where a worker gave one item different labels (149 pairs in AdultContent2, none in HITspam), keeps the worker's
  last row (the reader refuses repeated rows; the product's rule is issue 46's other half).
* sequences: conll_val (Rodrigues et al. 2014, typed BIO) and PICO dev with its 64 expert documents (Nguyen et al.
  2017, one span type; :func:`benchmarks._pico.load_pico`), with the methods of the project's sequence benchmarks
  only (:data:`SEQUENCE_METHODS`, as ``benchmarks/compare.py``): GLAD, MMSR and MACE take minutes a fit at PICO's
  size on a shared machine, and a split fits every candidate with the experts clamped five times.
* synthetic categorical crowds with planted spammers (:func:`spammer_crowd`): 1,500 items, 5 answers each from a
  pool of 30 workers, class-dependent worker accuracies (so a confusion-matrix model can beat the vote) and a share
  of spammers (half answer one fixed class, half at random); gold on every item: 200 items are given as experts,
  every other item is held out.

Training and check sets (the rule's constants are fitted on the first and only checked on the second): **train** =
RTE, Bluebirds, HITspam, conll_val and the synthetic crowds with an even seed; **check** = TEMP, AdultContent2,
PICO dev and the synthetic crowds with an odd seed. :func:`fit_prior` fits, from the held-out halves of the
training sets only, per kind of data the anchor (the candidate with the best mean held-out score; a kind without a
training set, spans of one type, takes :func:`crowdqa.aggregation.registry.default_method`, the default without
experts)
and, pooled over kinds, ``shortfall`` (the mean held-out shortfall of the
other candidates to the anchor) and ``spread`` (their standard deviation about it, less the held-out halves' own
bootstrap variance: the method of moments). The results file records the fitted prior beside the committed one
(``prior_fitted``, ``prior_committed``); the rule is run with the committed one.

``--quick``: RTE, TEMP and two synthetic crowds, 2 splits, mv/ds/glad only.
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from benchmarks._pico import PICO, load_pico
from benchmarks.tables import RESULTS, make_meta, write_results
from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.registry import DATA_KINDS, default_method
from crowdqa.ingest import read_corpus
from crowdqa.jobs.compare import applicable_methods, candidates
from crowdqa.jobs.pipeline import cross_fit, fit_model
from crowdqa.quality.compare import Scoreboard, metric_for
from crowdqa.quality.method_choice import candidate_name, prior_for
from crowdqa.quality.references import reference_labels

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data"))
GAL = DATA / "categorical" / "get_another_label"

#: data set -> "train" or "check" (see the module docstring); synthetic sets are named ``synthetic-<seed>``.
ROLE = {"snow2008_rte": "train", "snow2008_temp": "check", "bluebirds": "train", "AdultContent2": "check",
        "HITspam": "train", "conll_val": "train", "pico_dev": "check"}
#: Synthetic crowds: seed -> (classes, share of spammers).
SYNTHETIC = {0: (2, 0.2), 1: (2, 0.2), 2: (2, 0.4), 3: (2, 0.4), 4: (3, 0.3), 5: (3, 0.3)}
#: The methods compared on the sequence sets (the categorical sets: every method that applies).
SEQUENCE_METHODS = ["mv", "ds", "ibcc", "hmm-crowd", "bsc-seq"]
#: Expert items given on a synthetic crowd (the rest held out).
SYNTHETIC_EXPERTS = 200
N_BOOT = 1000
#: The smallest spread fit_prior returns (a spread of 0 would make every choice the anchor).
MIN_SPREAD = 0.005
#: The rules measured: which candidates each compares (see the module docstring).
RULES = ("auto", "auto_use_experts", "variants")
#: The rule ``--method auto`` follows when not told whether to use the experts (both kinds of candidates).
DEFAULT_RULE = "variants"


def _dedupe_csv(path: Path, out: Path) -> tuple[Path, dict]:
    """``path`` without repeated (item, worker) rows: identical repeats once, differing ones the last row."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    last: dict[tuple[str, str], str] = {}
    seen: dict[tuple[str, str], list[str]] = {}
    for item, worker, label in rows[1:]:
        last[(item, worker)] = label
        seen.setdefault((item, worker), []).append(label)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(rows[0])
        w.writerows([item, worker, label] for (item, worker), label in last.items())
    return out, {"rows": len(rows) - 1, "kept": len(last),
                 "repeated_pairs": sum(1 for v in seen.values() if len(v) > 1),
                 "differing_pairs": sum(1 for v in seen.values() if len(set(v)) > 1)}


def _gal(name: str, stem: str, tmp: Path) -> tuple[Corpus, dict]:
    from crowdqa.jobs.local import read_files

    crowd, note = _dedupe_csv(GAL / f"{stem}.csv", tmp / f"{name}.csv")
    corpus = read_files([dict(path=crowd, format="categorical", role="crowd"),
                         dict(path=GAL / f"{stem}.gold.csv", format="categorical", role="expert")]).corpus
    return corpus, note


def spammer_crowd(seed: int, *, n_classes: int, spammers: float, n_items: int = 1500, n_workers: int = 30,
                  per_item: int = 5) -> tuple[list[list[str]], np.ndarray]:
    """Rows ``item, worker, label, gold`` of a synthetic crowd with planted spammers, and the true labels.

    Good workers answer class ``t`` right with a probability of their own per class (uniform on [0.55, 0.95]) and
    otherwise a uniformly drawn wrong class; spammers (``round(spammers * n_workers)``) answer one fixed class
    (half of them) or uniformly at random (the others). Classes are imbalanced (prior 0.6, then equal shares).
    """
    rng = np.random.default_rng(seed)
    prior = np.r_[0.6, np.full(n_classes - 1, 0.4 / (n_classes - 1))]
    truth = rng.choice(n_classes, size=n_items, p=prior)
    n_spam = int(round(spammers * n_workers))
    acc = rng.uniform(0.55, 0.95, size=(n_workers, n_classes))
    rows = []
    for i in range(n_items):
        for w in rng.choice(n_workers, size=per_item, replace=False):
            if w < n_spam // 2:
                label = w % n_classes
            elif w < n_spam:
                label = int(rng.integers(n_classes))
            elif rng.random() < acc[w, truth[i]]:
                label = int(truth[i])
            else:
                label = int((truth[i] + rng.integers(1, n_classes)) % n_classes)
            rows.append([f"i{i}", f"{'spam' if w < n_spam else 'good'}{w}", f"c{label}", f"c{truth[i]}"])
    return rows, truth


def _synthetic(seed: int, tmp: Path) -> Corpus:
    n_classes, spammers = SYNTHETIC[seed]
    rows, _ = spammer_crowd(seed, n_classes=n_classes, spammers=spammers)
    path = tmp / f"synthetic-{seed}.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "annotator", "label", "gold"])
        w.writerows(rows)
    return read_corpus(path, format="categorical").corpus


def load(name: str, tmp: Path) -> tuple[Corpus, dict]:
    """One data set as a corpus with its gold as expert labels, and notes on how it was read."""
    from benchmarks.categorical import _bluebirds_csv
    from benchmarks.compare import _conll

    if name.startswith("synthetic-"):
        return _synthetic(int(name.split("-")[1]), tmp), {}
    if name in ("snow2008_rte", "snow2008_temp"):
        return read_corpus(DATA / "categorical" / f"{name}.tsv", format="categorical").corpus, {}
    if name == "bluebirds":
        return read_corpus(_bluebirds_csv(tmp), format="categorical").corpus, {}
    if name == "AdultContent2":
        return _gal(name, "AdultContent2", tmp)
    if name == "HITspam":
        return _gal(name, "HITspam-UsingCrowdflower", tmp)
    if name == "conll_val":
        return _conll(), {}
    if name == "pico_dev":
        return load_pico(splits=("dev", "expert-dev"))[0], {}
    raise ValueError(f"unknown data set {name!r}")


def _available(name: str) -> bool:
    paths = {"snow2008_rte": DATA / "categorical" / "snow2008_rte.tsv",
             "snow2008_temp": DATA / "categorical" / "snow2008_temp.tsv",
             "bluebirds": DATA / "categorical" / "welinder2010_bluebirds" / "labels.yaml",
             "AdultContent2": GAL / "AdultContent2.csv", "HITspam": GAL / "HITspam-UsingCrowdflower.csv",
             "conll_val": DATA / "conll_val" / "answers.conll", "pico_dev": PICO / "annotations" / "expert-dev"}
    return name.startswith("synthetic-") or paths[name].exists()


def _fit_labels(method: str, crowd: Corpus, known: np.ndarray | None) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings are the fits' own business here
        return fit_model(make_aggregator(method, {}), crowd, known=known).labels


def study_set(name: str, corpus: Corpus, *, splits: int, methods: list[str] | None, n_boot: int) -> dict:
    """Every split of one data set: the candidates' scores on the experts' half (with their resamples) and on the
    held-out half, and the rule's choice with the committed prior."""
    kind, metric = metric_for(corpus)
    ref = reference_labels(corpus)
    crowd = corpus.select_workers(corpus.workers_with_role("crowd"))
    covered = np.bincount(crowd.token, minlength=corpus.n_tokens) > 0
    usable = applicable_methods(corpus, use_experts=True)
    chosen_methods = usable if methods is None else [m for m in methods if m in usable]
    cands = candidates(chosen_methods, use_experts=False, expert_variants=True)
    t0 = time.perf_counter()
    plain = {m: np.where(covered, _fit_labels(m, crowd, None), MISSING) for m, clamped in cands if not clamped}
    seconds_plain = time.perf_counter() - t0
    gold_docs = np.flatnonzero(np.bincount(corpus.token_doc[ref != MISSING], minlength=corpus.n_docs))
    n_given = SYNTHETIC_EXPERTS if name.startswith("synthetic-") else gold_docs.size // 2
    out = []
    for split in range(splits):
        perm = np.random.default_rng([split, 46]).permutation(gold_docs)
        given = np.zeros(corpus.n_docs, dtype=bool)
        given[perm[:n_given]] = True
        given_tok = given[corpus.token_doc]
        ref_given = np.where(given_tok, ref, MISSING)
        ref_held = np.where(~given_tok, ref, MISSING)
        measured, held = Scoreboard(corpus, ref_given), Scoreboard(corpus, ref_held)
        boards = {rule: Scoreboard(corpus, ref_given) for rule in RULES}
        boards["variants"] = measured
        for method, clamped in cands:
            if clamped:
                heldout, _, _ = cross_fit(method, {}, crowd, ref_given, corpus, folds=4, seed=split)
                measured.add(method, np.where(covered, heldout, MISSING), use_experts=True)
                boards["auto_use_experts"].add(method, np.where(covered, heldout, MISSING), use_experts=True)
                held.add(method, np.where(covered, _fit_labels(method, crowd, ref_given), MISSING), use_experts=True)
            else:
                measured.add(method, plain[method])
                boards["auto"].add(method, plain[method])
                held.add(method, plain[method])
        # mv+experts (auto --use-experts compares it): mv's labels off the clamped items, so mv's scores.
        boards["auto_use_experts"].add("mv", plain["mv"], use_experts=True)
        names, point, boot = measured.resamples(n_boot=n_boot, seed=split)
        h_names, h_point, h_boot = held.resamples(n_boot=200, seed=split)
        assert h_names == names
        held_score = dict(zip(names, h_point.tolist(), strict=True))
        chosen = {}
        for rule, board in boards.items():
            comparison = board.comparison(n_boot=n_boot, seed=split)
            chosen[rule] = candidate_name(comparison.recommended, comparison.recommended_use_experts)
        best = max((n for n in names), key=held_score.get)
        out.append({"split": split, "expert_documents": int(given[gold_docs].sum()),
                    "held_out_documents": int((~given[gold_docs]).sum()), "chosen": chosen,
                    "best": best, "measured": dict(zip(names, point.tolist(), strict=True)), "held_out": held_score,
                    "held_out_var": dict(zip(names, np.nanvar(h_boot, axis=0, ddof=1).tolist(), strict=True)),
                    "regret": {**{rule: held_score[best] - held_score[_as_fitted(chosen[rule])] for rule in RULES},
                               "always_ds": held_score[best] - held_score["ds"],
                               "always_mv": held_score[best] - held_score["mv"]},
                    "_boot": boot, "_h_boot": h_boot, "_names": names})
    return {"kind": kind, "metric": metric, "role": _role(name), "candidates": [candidate_name(*c) for c in cands],
            "seconds_crowd_fits": round(seconds_plain, 3), "splits": out}


def _as_fitted(candidate: str) -> str:
    """The candidate whose held-out labels ``candidate`` has: mv+experts predicts as mv off the clamped items."""
    return "mv" if candidate == "mv+experts" else candidate


def _role(name: str) -> str:
    if name.startswith("synthetic-"):
        return "train" if int(name.split("-")[1]) % 2 == 0 else "check"
    return ROLE[name]


def fit_prior(sets: dict[str, dict]) -> dict:
    """The prior from the held-out halves of the training sets (module docstring): per kind the anchor, pooled
    the shortfall and spread."""
    train = {n: s for n, s in sets.items() if s["role"] == "train"}
    anchors = {}
    for kind in DATA_KINDS:
        rows = [sp["held_out"] for s in train.values() if s["kind"] == kind for sp in s["splits"]]
        if not rows:
            anchors[kind] = {"anchor": default_method(kind), "fitted": False}
            continue
        common = set.intersection(*(set(r) for r in rows))
        means = {c: float(np.mean([r[c] for r in rows])) for c in common}
        anchors[kind] = {"anchor": max(means, key=means.get), "fitted": True, "mean_held_out": means}
    diffs, noise = [], []
    for s in train.values():
        anchor = anchors[s["kind"]]["anchor"]
        for sp in s["splits"]:
            names = sp["_names"]
            a = names.index(anchor)
            d = sp["_h_boot"] - sp["_h_boot"][:, [a]]
            for i, name in enumerate(names):
                if i != a and np.isfinite(sp["held_out"][name]):
                    diffs.append(sp["held_out"][name] - sp["held_out"][anchor])
                    noise.append(float(np.nanvar(d[:, i], ddof=1)))
    diffs_arr = np.asarray(diffs)
    shortfall = float(max(0.0, -diffs_arr.mean()))
    spread2 = float(np.mean((diffs_arr + shortfall) ** 2) - np.mean(noise))
    return {"anchors": anchors, "shortfall": round(shortfall, 4),
            "spread": round(max(MIN_SPREAD, float(np.sqrt(max(spread2, 0.0)))), 4),
            "pairs": len(diffs), "mean_noise_variance": float(np.mean(noise))}


def summarise(sets: dict[str, dict]) -> dict:
    """Mean regret per set and over all sets (and over the training and check halves)."""
    table, groups = [], {"all": [], "train": [], "check": []}
    for name, s in sets.items():
        sp = s["splits"]
        row = {"set": name, "role": s["role"], "kind": s["kind"], "metric": s["metric"],
               "chosen": [x["chosen"]["auto"] for x in sp],
               **{f"chosen_{rule}": [x["chosen"][rule] for x in sp] for rule in RULES[1:]},
               "best": [x["best"] for x in sp]}
        for rule in (*RULES, "always_ds", "always_mv"):
            key = {"always_ds": "ds", "always_mv": "mv"}.get(rule)
            row[f"{rule}_held_out"] = float(np.mean([x["held_out"][key or _as_fitted(x["chosen"][rule])]
                                                     for x in sp]))
            row[f"{rule}_regret"] = float(np.mean([x["regret"][rule] for x in sp]))
        row["best_held_out"] = float(np.mean([x["held_out"][x["best"]] for x in sp]))
        table.append(row)
        groups["all"].append(row)
        groups[s["role"]].append(row)
    mean = {g: {r: float(np.mean([row[f"{r}_regret"] for row in rows])) if rows else None
                for r in (*RULES, "always_ds", "always_mv")} for g, rows in groups.items()}
    worst = {r: max((row[f"{r}_regret"] for row in table), default=None) for r in RULES}
    # Issue 46's target (mean regret no larger than always-DS's, at most .03 on every set), per rule.
    met = {r: bool(table) and mean["all"][r] <= mean["all"]["always_ds"] and worst[r] <= 0.03 for r in RULES}
    return {"table": table, "mean_regret": mean, "worst_set_regret_auto": worst[DEFAULT_RULE],
            "worst_set_regret": worst, "target_met": met[DEFAULT_RULE], "target_met_by_rule": met}


def auto_cost(corpus: Corpus, *, methods: list[str] | None) -> dict:
    """Seconds of ``--method auto`` (the comparison, then the pipeline reusing its fit) on ``corpus`` with every
    gold label as the experts', with ``use_experts`` false (``--no-use-experts``) and true; and what it chose (the
    default fits the candidates of both)."""
    from crowdqa.jobs.compare import choose_method
    from crowdqa.jobs.pipeline import run_pipeline

    out = {}
    for use_experts in (False, True):
        with _counting_fits(methods or applicable_methods(corpus, use_experts=True)) as fits:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                choice = choose_method(corpus, methods=methods, use_experts=use_experts)
                t1 = time.perf_counter()
                n_choose = len(fits)
                run_pipeline(corpus, method=choice.method, use_experts=choice.use_experts, prior=choice.fit)
            t2 = time.perf_counter()
        out["use_experts" if use_experts else "crowd"] = {
            "choose_seconds": round(t1 - t0, 3), "pipeline_seconds": round(t2 - t1, 3),
            "seconds": round(t2 - t0, 3), "fits": len(fits), "choose_fits": n_choose,
            "chosen": candidate_name(choice.method, choice.use_experts)}
    return out


@contextmanager
def _counting_fits(methods: list[str]) -> Iterator[list[str]]:
    """Count every ``fit`` of the estimators of ``methods`` while the block runs (the classes' own ``fit``,
    restored after)."""
    fits: list[str] = []
    classes = {type(make_aggregator(m, {})) for m in methods}
    originals = {cls: cls.fit for cls in classes}

    def counted(original):
        def fit(self, *args, **kwargs):
            fits.append(type(self).__name__)
            return original(self, *args, **kwargs)
        return fit

    try:
        for cls, original in originals.items():
            cls.fit = counted(original)
        yield fits
    finally:
        for cls, original in originals.items():
            cls.fit = original


def run(*, quick: bool, splits: int, raw: Path | None = None) -> dict:
    names = ["snow2008_rte", "snow2008_temp", "synthetic-0", "synthetic-1"] if quick else [
        "snow2008_rte", "snow2008_temp", "bluebirds", "AdultContent2", "HITspam", "conll_val", "pico_dev",
        *[f"synthetic-{s}" for s in SYNTHETIC]]
    methods = ["mv", "ds", "glad"] if quick else None
    sets, notes, skipped = {}, {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if not _available(name):
                skipped.append(name)
                continue
            t0 = time.perf_counter()
            corpus, notes[name] = load(name, Path(tmp))
            sequences = bool(corpus.has_outside)
            sets[name] = study_set(name, corpus, splits=splits, n_boot=N_BOOT,
                                   methods=SEQUENCE_METHODS if sequences and methods is None else methods)
            sets[name]["seconds"] = round(time.perf_counter() - t0, 2)
            print(f"{name}: {sets[name]['seconds']:.1f} s; chosen {[x['chosen'] for x in sets[name]['splits']]}",
                  flush=True)
            if not sequences:
                sets[name]["auto_cost"] = auto_cost(corpus, methods=methods)
                print(f"{name}: auto costs {sets[name]['auto_cost']}", flush=True)
            if raw is not None:  # kept after every set: a long run stopped midway keeps what it made
                import pickle

                raw.write_bytes(pickle.dumps(sets))
    prior = fit_prior(sets)
    for s in sets.values():
        for sp in s["splits"]:
            for key in ("_boot", "_h_boot", "_names"):
                del sp[key]
    return {"sets": sets, "loader_notes": notes, "skipped": skipped, "splits": splits, "n_boot": N_BOOT,
            "prior_fitted": prior, "prior_committed": {k: prior_for(k).as_dict() for k in DATA_KINDS},
            **summarise(sets)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="RTE, TEMP and two synthetic crowds, 2 splits, 3 methods")
    ap.add_argument("--splits", type=int, default=None, help="random halvings per data set (default 5; quick 2)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    ap.add_argument("--raw", type=Path, default=None, help="also write every split's resamples here (pickle)")
    args = ap.parse_args(argv)
    splits = args.splits or (2 if args.quick else 5)
    t0 = time.perf_counter()
    result = run(quick=args.quick, splits=splits, raw=args.raw)
    cmd = "python -m benchmarks.method_choice" + (" --quick" if args.quick else "") + (
        f" --splits {args.splits}" if args.splits else "")
    result["meta"] = make_meta(cmd, seconds=time.perf_counter() - t0)
    for row in result["table"]:
        print(f"{row['set']:15s} {row['role']:5s} auto {row['variants_held_out']:.3f} "
              f"(regret {row['variants_regret']:.3f})"
              f"  auto --use-experts {row['auto_use_experts_held_out']:.3f} ({row['auto_use_experts_regret']:.3f})"
              f"  auto --no-use-experts {row['auto_held_out']:.3f} ({row['auto_regret']:.3f})"
              f"  ds {row['always_ds_held_out']:.3f} ({row['always_ds_regret']:.3f})"
              f"  mv {row['always_mv_held_out']:.3f} ({row['always_mv_regret']:.3f})  best {row['best_held_out']:.3f}")
    print("mean regret:", result["mean_regret"], "target met:", result["target_met"])
    print("prior fitted on the training sets:", {k: v for k, v in result["prior_fitted"].items() if k != "anchors"},
          {k: v["anchor"] for k, v in result["prior_fitted"]["anchors"].items()})
    path = write_results(args.out / f"method_choice{'_quick' if args.quick else ''}.json", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
