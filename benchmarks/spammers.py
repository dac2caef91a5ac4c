"""Does the report's worker verdict find spammers, and does blocking them pay on items the experts kept back?

Run ``python -m benchmarks.spammers [--quick]``; results go to ``benchmarks/results/spammers[_quick].json``.

Two studies, both through :func:`crowdqa.jobs.pipeline.run_pipeline` (the path every entry point runs), with
the report's default verdict rules (:class:`crowdqa.quality.worker_quality.VerdictRules`):

* **Planted spammers** (synthetic categorical crowds, ``--seeds`` seeds): 1,000 items, 2 or 4 classes, 40
  workers of whom 30 are honest (symmetric accuracy drawn from [0.6, 0.95]) and 10 are spammers of three kinds:
  uniform random answers, one label always, and one label 90% of the time at random otherwise. Each item gets
  5 workers drawn by a worker-activity weight, so workers label from a few dozen to a few hundred items. The
  true labels of 200 items are given as the experts. Counted per setting: spammers blocked (found), spammers
  watched, honest workers blocked (the verdict's false blocks), honest workers watched. Also without any
  expert (every verdict then rests on the confusion against the aggregate).
* **Real sets, gold halved**: snow2008 RTE and TEMP, Bluebirds, AdultContent2, HITspam, conll_val and PICO
  (dev + expert-dev, Participants). The expert documents are split in two by a seeded permutation: the first
  half is given to crowdqa as the experts, the second kept back. DS (``ds``) is fitted with every crowd worker,
  then again without every worker the report (built on the first half) blocks; both are scored on the kept-back
  half: accuracy (categorical), token accuracy and positive-token F1 (span labels).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks.categorical import DATA as CATEGORICAL
from benchmarks.categorical import load as load_categorical
from benchmarks.compare import CONLL
from benchmarks.tables import RESULTS, make_meta, write_results
from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.jobs.pipeline import run_pipeline
from crowdqa.quality.references import reference_labels
from crowdqa.quality.worker_quality import VerdictRules

#: Kinds of planted spammer: ``uniform`` answers at random, ``constant`` gives one label, ``biased`` gives one
#: label 90% of the time and a random one otherwise.
SPAMMER_KINDS = ("uniform", "constant", "biased")
N_ITEMS, N_HONEST, N_SPAMMERS, PER_ITEM, N_EXPERT_ITEMS = 1000, 30, 10, 5, 200
#: The default rules' block bar (an honest worker drawn below it is as uninformative as the rule blocks).
BLOCK_BELOW = VerdictRules().block_below


def planted_crowd(*, n_classes: int, seed: int, with_experts: bool = True) -> tuple[Corpus, dict[str, float]]:
    """A synthetic categorical crowd with planted spammers (module notes), and every worker's true spammer score
    (0 for the spammers; :math:`(a - (1-a)/(C-1))^2` for an honest worker of accuracy :math:`a`)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, n_classes, N_ITEMS)
    n_workers = N_HONEST + N_SPAMMERS
    activity = rng.gamma(1.0, 1.0, n_workers)  # a few busy workers, many occasional ones
    chosen = np.stack([rng.choice(n_workers, PER_ITEM, replace=False, p=activity / activity.sum())
                       for _ in range(N_ITEMS)])
    item = np.repeat(np.arange(N_ITEMS), PER_ITEM)
    worker = chosen.ravel()
    accuracy = rng.uniform(0.6, 0.95, N_HONEST)
    kinds = np.array([SPAMMER_KINDS[i % len(SPAMMER_KINDS)] for i in range(N_SPAMMERS)])
    favourite = rng.integers(0, n_classes, N_SPAMMERS)
    t = truth[item]
    wrong = (t + rng.integers(1, n_classes, item.size)) % n_classes
    honest = worker < N_HONEST
    label = np.where(rng.random(item.size) < accuracy[np.minimum(worker, N_HONEST - 1)], t, wrong)
    s = np.maximum(worker - N_HONEST, 0)
    random_label = rng.integers(0, n_classes, item.size)
    spam = np.select([kinds[s] == "uniform", kinds[s] == "constant"],
                     [random_label, favourite[s]],
                     np.where(rng.random(item.size) < 0.9, favourite[s], random_label))
    label = np.where(honest, label, spam)
    ids = [f"honest{w}" for w in range(N_HONEST)] + [f"spam-{kinds[i]}{i}" for i in range(N_SPAMMERS)]
    roles = ["crowd"] * n_workers
    tokens, workers, labels = [item], [worker], [label]
    if with_experts:
        gold_items = rng.choice(N_ITEMS, N_EXPERT_ITEMS, replace=False)
        tokens.append(gold_items)
        workers.append(np.full(gold_items.size, n_workers))
        labels.append(truth[gold_items])
        ids.append("gold")
        roles.append("expert")
    names = [f"item{i}" for i in range(N_ITEMS)]
    corpus = Corpus.from_arrays(
        token=np.concatenate(tokens), worker=np.concatenate(workers), label=np.concatenate(labels),
        doc_lengths=np.ones(N_ITEMS, dtype=np.int64), token_start=np.zeros(N_ITEMS, dtype=np.int64),
        token_end=np.array([len(n) for n in names]), doc_ids=names, texts=names, worker_ids=ids,
        worker_roles=roles, class_names=[f"c{k}" for k in range(n_classes)])
    true_score = (accuracy - (1 - accuracy) / (n_classes - 1)) ** 2
    return corpus, {ids[w]: float(true_score[w]) if w < N_HONEST else 0.0 for w in range(n_workers)}


def _verdicts(report: dict) -> dict[str, str | None]:
    return {w["annotator"]: (w.get("quality") or {}).get("verdict") for w in report["workers"]}


def planted_study(*, seeds: int) -> dict:
    """Spammers found and honest workers blocked, per setting (module notes)."""
    rows = {}
    for n_classes in (2, 4):
        for with_experts in (True, False):
            counts = dict.fromkeys(("spammers", "spammers_judged", "spammers_blocked", "spammers_watched", "honest",
                                    "honest_blocked", "honest_blocked_above_bar", "honest_watched"), 0)
            by_kind = {k: [0, 0] for k in SPAMMER_KINDS}  # blocked, planted
            for seed in range(seeds):
                corpus, true_score = planted_crowd(n_classes=n_classes, seed=seed, with_experts=with_experts)
                spammers = {w for w in true_score if w.startswith("spam-")}
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    report = run_pipeline(corpus, method="ds", seed=seed).report_data
                judged = {w["annotator"]: not (w["quality"] or {}).get("reason", "").startswith("too few")
                          for w in report["workers"]}
                for who, verdict in _verdicts(report).items():
                    if verdict is None:
                        continue
                    side = "spammers" if who in spammers else "honest"
                    counts[side] += 1
                    counts[f"{side}_blocked"] += verdict == "block"
                    counts[f"{side}_watched"] += verdict == "watch"
                    counts["spammers_judged"] += side == "spammers" and judged[who]
                    # An honest worker whose true score is at or above the block bar: a wrong block by the rule's
                    # own standard (one below it is as uninformative as the rule means to block).
                    counts["honest_blocked_above_bar"] += (side == "honest" and verdict == "block"
                                                           and true_score[who] >= BLOCK_BELOW)
                    if who in spammers:
                        kind = next(k for k in SPAMMER_KINDS if who.startswith(f"spam-{k}"))
                        by_kind[kind][0] += verdict == "block"
                        by_kind[kind][1] += 1
            name = f"{n_classes} classes, {'200 expert items' if with_experts else 'no experts'}"
            rows[name] = {**counts, "seeds": seeds, "blocked_by_kind": by_kind}
            print(f"{name}: {counts['spammers_blocked']}/{counts['spammers']} spammers blocked "
                  f"({counts['spammers_judged']} with enough items to judge, {counts['spammers_watched']} watched), "
                  f"{counts['honest_blocked']}/{counts['honest']} honest workers blocked "
                  f"({counts['honest_blocked_above_bar']} of them above the bar; {counts['honest_watched']} watched)",
                  flush=True)
    return rows


def _real_sets(tmp: Path, *, quick: bool) -> dict[str, Corpus]:
    """Every real set found in ../shared/data, crowd and experts in one corpus."""
    from crowdqa.jobs.local import read_files

    out: dict[str, Corpus] = {}
    for name in ("snow2008_rte", "snow2008_temp", "bluebirds"):
        if (CATEGORICAL / ("welinder2010_bluebirds" if name == "bluebirds" else f"{name}.tsv")).exists():
            out[name] = load_categorical(name, tmp)
    gal = CATEGORICAL / "get_another_label"
    for name in ("AdultContent2", "HITspam-UsingCrowdflower"):
        if (gal / f"{name}.csv").exists():
            out[name] = read_files([dict(path=gal / f"{name}.csv", format="categorical", role="crowd"),
                                    dict(path=gal / f"{name}.gold.csv", format="categorical",
                                         role="expert")]).corpus
    if quick:
        return out
    if (CONLL / "answers.conll").exists():
        out["conll_val"] = read_files([dict(path=CONLL / "answers.conll", format="conll", role="crowd"),
                                       dict(path=CONLL / "gold.conll", format="conll", role="expert")]).corpus
    from benchmarks._pico import PICO, load_pico

    if (PICO / "annotations").is_dir():
        out["pico_dev"] = load_pico(splits=("dev", "expert-dev"))[0]
    return out


def halve_experts(corpus: Corpus, *, seed: int) -> tuple[Corpus, np.ndarray]:
    """The corpus with the expert labels of a seeded half of the expert documents removed, and the kept-back
    reference (shape (n_tokens,), ``MISSING`` outside the kept-back half)."""
    reference = reference_labels(corpus, rule="union")
    docs = np.flatnonzero(np.bincount(corpus.token_doc[reference != MISSING], minlength=corpus.n_docs))
    order = np.random.default_rng(seed).permutation(docs)
    held = np.zeros(corpus.n_docs, dtype=bool)
    held[order[order.size // 2:]] = True
    expert = np.isin(corpus.worker, corpus.workers_with_role("expert"))
    keep = ~(expert & held[corpus.token_doc[corpus.token]])
    given = dataclasses.replace(corpus, token=corpus.token[keep], worker=corpus.worker[keep],
                                label=corpus.label[keep])
    return given, np.where(held[corpus.token_doc], reference, MISSING)


def _scores(labels: np.ndarray, reference: np.ndarray, *, outside: bool) -> dict[str, float]:
    ok = reference != MISSING
    pred, ref = labels[ok], reference[ok]
    out = {"accuracy": float(np.mean(pred == ref))}
    if outside:
        tp = int(np.count_nonzero((pred > 0) & (pred == ref)))
        fp = int(np.count_nonzero(pred > 0)) - tp
        fn = int(np.count_nonzero(ref > 0)) - tp
        out["token_f1"] = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return out


def real_study(*, quick: bool, seed: int = 0) -> dict:
    """DS on the kept-back half of each real set's gold, with every worker and without the blocked ones."""
    rows = {}
    with tempfile.TemporaryDirectory(prefix="crowdqa-spammers-") as tmp:
        for name, corpus in _real_sets(Path(tmp), quick=quick).items():
            given, held = halve_experts(corpus, seed=seed)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                first = run_pipeline(given, method="ds", seed=seed)
                verdicts = _verdicts(first.report_data)
                blocked = frozenset(w for w, v in verdicts.items() if v == "block")
                second = run_pipeline(given, method="ds", seed=seed, blocked=blocked) if blocked else first
            crowd_labels = np.isin(corpus.worker, corpus.workers_with_role("crowd"))
            blocked_idx = [corpus.worker_ids.index(w) for w in blocked]
            row = {
                "crowd_workers": int(corpus.workers_with_role("crowd").size),
                "expert_documents_given": int(np.count_nonzero(np.bincount(
                    given.token_doc[reference_labels(given) != MISSING], minlength=given.n_docs))),
                "expert_documents_held_out": int(np.count_nonzero(np.bincount(
                    corpus.token_doc[held != MISSING], minlength=corpus.n_docs))),
                "verdicts": {v: sum(1 for x in verdicts.values() if x == v) for v in ("block", "watch", "keep")},
                "blocked": sorted(blocked),
                "blocked_label_share": float(np.isin(corpus.worker[crowd_labels], blocked_idx).mean()),
                "all_workers": _scores(first.labels, held, outside=corpus.has_outside),
                "without_blocked": _scores(second.labels, held, outside=corpus.has_outside),
                "seconds": round(time.perf_counter() - t0, 2),
            }
            row["accuracy_change"] = row["without_blocked"]["accuracy"] - row["all_workers"]["accuracy"]
            rows[name] = row
            print(f"{name}: {row['verdicts']}, blocked {len(blocked)} workers ({row['blocked_label_share']:.1%} of "
                  f"the crowd labels); held-out accuracy {row['all_workers']['accuracy']:.4f} -> "
                  f"{row['without_blocked']['accuracy']:.4f}", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 seeds, the categorical real sets only")
    ap.add_argument("--seeds", type=int, default=None, help="synthetic crowds per setting (default 20; quick 3)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    seeds = args.seeds or (3 if args.quick else 20)
    result = {"planted": planted_study(seeds=seeds), "real_gold_halved": real_study(quick=args.quick)}
    result["meta"] = make_meta("python -m benchmarks.spammers" + (" --quick" if args.quick else ""),
                               seconds=time.perf_counter() - t0)
    path = write_results(args.out / f"spammers{'_quick' if args.quick else ''}.json", result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
