"""Benchmark the tags scheme: partial labelling, sequence models on a tag set, and the token table's speed.

Run ``python -m benchmarks.tags [--quick]``; results go to ``benchmarks/results/tags[_quick].json``.

(a) conll_val (../shared/data/conll_val) read under the tags scheme (its nine BIO tags as a plain tag set, no
    BIO rule), each crowd label kept with probability ``keep`` token by token (partial sentences), against the
    same share of labels kept as whole sentences (each (worker, sentence) pair kept with probability ``keep``),
    over several seeds: HMM-Crowd's strict span F1 (conlleval's reading, :func:`benchmarks.bsc_seq.span_f1`)
    against the gold, beside its score on all the labels under the tags and the BIO schemes. Target: the partial
    mean within .01 of the whole-sentence mean.
(b) PICO Participants (the dev, test and expert-dev crowd files) read as tags the same way, with ``keep`` chosen
    to leave about five labels a token: token precision, recall and F1 of Participants against the union of the
    experts on the expert documents, for majority vote, Dawid-Skene and HMM-Crowd.
(c) A synthetic part-of-speech-like crowd (:func:`benchmarks._tag_crowd.tag_crowd`: twelve tags from a Markov
    chain, five labels a token, each worker labelling single tokens, systematic shared errors): token accuracy of
    every categorical method and of the sequence models against the truth. Target: a sequence method above the
    best categorical method.
(d) A token table of 1M labels (CSV) read by ``read_corpus`` and aggregated by Dawid-Skene, in this process,
    best of three; beside crowd-kit's DawidSkene on the same file (pandas ``read_csv`` and ``fit_predict``, as
    many EM iterations as ours ran). Target: read and aggregate in under 5 s.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._tag_crowd import hide_per_sentence, hide_per_token, tag_crowd
from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation._base import ConvergenceWarning
from crowdqa.aggregation.corpus import Corpus

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results"

#: The categorical methods and the sequence models of (c), with their parameters (defaults unless named).
CATEGORICAL = ("mv", "ds", "glad", "mace", "ibcc", "wawa", "zbs")
SEQUENCE = (("hmm-crowd", {}), ("hmm-crowd", {"wrong_mass": "each"}), ("hmm-crowd", {"worker_model": "full"}),
            ("bsc-seq", {}))


def _fit(method: str, params: dict, corpus: Corpus):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = time.perf_counter()
        model = make_aggregator(method, dict(params)).fit(corpus)
        return model, time.perf_counter() - t


def _name(method: str, params: dict) -> str:
    return method + ("" if not params else "(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")")


def conll_partial(*, keep: float, seeds: tuple[int, ...]) -> dict:
    """(a): HMM-Crowd span F1 on conll_val with labels kept token by token or as whole sentences."""
    from benchmarks.bsc_seq import span_f1
    from crowdqa.ingest.conll import read_conll

    folder = DATA / "conll_val"
    bio = read_conll(folder / "answers.conll")
    tags = read_conll(folder / "answers.conll", scheme="tags")
    gold = read_conll(folder / "gold.conll", role="expert")
    truth = np.full(bio.n_tokens, 0, dtype=np.int64)
    truth[gold.token] = [bio.class_names.index(gold.class_names[k]) for k in gold.label]
    to_bio = np.array([bio.class_names.index(n) for n in tags.class_names], dtype=np.int64)

    def score(corpus: Corpus) -> dict:
        model, seconds = _fit("hmm-crowd", {}, corpus)
        labels = model.labels_ if corpus.scheme != "tags" else to_bio[model.labels_]
        f1 = span_f1(labels, truth, bio)["f1"]
        return {"f1": round(f1, 4), "seconds": round(seconds, 2),
                "labels_per_token": round(corpus.n_obs / corpus.n_tokens, 2)}

    out = {"keep": keep, "seeds": list(seeds), "tokens": bio.n_tokens, "sentences": bio.n_docs,
           "all_labels_bio": score(bio), "all_labels_tags": score(tags), "per_token": [], "per_sentence": []}
    for seed in seeds:
        out["per_token"].append(score(hide_per_token(tags, keep=keep, seed=seed)))
        out["per_sentence"].append(score(hide_per_sentence(tags, keep=keep, seed=seed)))
    mean = {k: float(np.mean([r["f1"] for r in out[k]])) for k in ("per_token", "per_sentence")}
    out["mean_f1"] = {k: round(v, 4) for k, v in mean.items()}
    out["difference"] = round(mean["per_token"] - mean["per_sentence"], 4)
    out["target_met"] = abs(out["difference"]) <= 0.01
    return out


def pico_partial(*, labels_per_token: float, seed: int) -> dict:
    """(b): PICO Participants as tags, labels hidden token by token to about ``labels_per_token`` a token."""
    from benchmarks._pico import load_pico
    from crowdqa.quality.references import reference_labels

    spans, _, _ = load_pico(splits=("dev", "test", "expert-dev"))
    corpus = dataclasses.replace(spans, tags=True)
    crowd = corpus.select_role("crowd")
    labelled = np.diff(crowd.token_obs_start) > 0
    per_token = crowd.n_obs / max(int(labelled.sum()), 1)
    keep = min(1.0, labels_per_token / per_token)
    ref = reference_labels(corpus, rule="union")
    scored = ref >= 0
    positive = corpus.class_names.index("Participants")
    out = {"documents": corpus.n_docs, "tokens": corpus.n_tokens, "crowd_labels_per_labelled_token":
           round(per_token, 2), "keep": round(keep, 3), "expert_tokens": int(scored.sum()), "methods": {}}
    partial = hide_per_token(corpus, keep=keep, seed=seed).select_role("crowd")
    whole = hide_per_sentence(corpus, keep=keep, seed=seed).select_role("crowd")
    out["labels_per_labelled_token_after"] = round(
        partial.n_obs / max(int((np.diff(partial.token_obs_start) > 0).sum()), 1), 2)
    for method in ("mv", "ds", "hmm-crowd"):
        row = {}
        for name, data in (("all_labels", crowd), ("per_token", partial), ("per_document", whole)):
            model, seconds = _fit(method, {}, data)
            pred, gold = model.labels_[scored] == positive, ref[scored] == positive
            tp, fp, fn = int((pred & gold).sum()), int((pred & ~gold).sum()), int((~pred & gold).sum())
            p, r = tp / max(tp + fp, 1), tp / max(tp + fn, 1)
            row[name] = {"precision": round(p, 4), "recall": round(r, 4),
                         "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0, "seconds": round(seconds, 2)}
        out["methods"][method] = row
    return out


def synthetic(*, n_docs: int, seeds: tuple[int, ...]) -> dict:
    """(c): token accuracy of every method on the synthetic POS-like crowd, per seed."""
    settings = {"n_docs": n_docs, "n_workers": 177, "n_classes": 12, "labels_per_token": 5,
                "accuracy": (2.5, 2.5), "shared_errors": 0.6, "sharpness": 0.4, "shared_words": 0.5}
    rows: dict[str, list[float]] = {}
    for seed in seeds:
        crowd = tag_crowd(**settings, seed=seed)
        corpus = crowd.corpus.select_role("crowd")
        for method, params in [*((m, {}) for m in CATEGORICAL), *SEQUENCE]:
            model, _ = _fit(method, params, corpus)
            rows.setdefault(_name(method, params), []).append(float((model.labels_ == crowd.truth).mean()))
    accuracy = {k: round(float(np.mean(v)), 4) for k, v in rows.items()}
    best_categorical = max(accuracy[m] for m in CATEGORICAL)
    best_sequence = max(accuracy[_name(m, p)] for m, p in SEQUENCE)
    return {"settings": {**settings, "accuracy": list(settings["accuracy"])}, "seeds": list(seeds),
            "token_accuracy": accuracy, "per_seed": {k: [round(x, 4) for x in v] for k, v in rows.items()},
            "best_categorical": best_categorical, "best_sequence": best_sequence,
            "target_met": best_sequence > best_categorical}


def _write_table(corpus: Corpus, path: Path) -> None:
    position = np.arange(corpus.n_tokens) - corpus.doc_start[:-1][corpus.token_doc]
    words = [corpus.texts[d][a:b] for d, a, b in zip(corpus.token_doc.tolist(), corpus.token_start.tolist(),
                                                      corpus.token_end.tolist(), strict=True)]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["doc_id", "token_index", "token", "annotator", "label"])
        doc_ids, names, workers = corpus.doc_ids, corpus.class_names, corpus.worker_ids
        t_doc = corpus.token_doc.tolist()
        pos = position.tolist()
        out.writerows((doc_ids[t_doc[t]], pos[t], words[t], workers[w], names[k])
                      for t, w, k in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(),
                                         strict=True))


def speed(*, n_labels: int, repeats: int = 3) -> dict:
    """(d): read a token table of ``n_labels`` labels and aggregate it by Dawid-Skene; crowd-kit beside it."""
    from crowdqa.aggregation.dawid_skene import DawidSkene
    from crowdqa.ingest import read_corpus

    crowd = tag_crowd(n_docs=max(1, n_labels // (5 * 14)), n_workers=177, labels_per_token=5,
                      accuracy=(2.5, 2.5), shared_errors=0.6, seed=0).corpus.select_role("crowd")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokens.csv"
        _write_table(crowd, path)
        size = path.stat().st_size
        runs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            corpus = read_corpus(path, format="tokens-csv").corpus
            t1 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                ds = DawidSkene().fit(corpus)
            t2 = time.perf_counter()
            runs.append({"read_seconds": t1 - t0, "fit_seconds": t2 - t1, "seconds": t2 - t0})
        best = min(runs, key=lambda r: r["seconds"])
        out = {"labels": int(corpus.n_obs), "tokens": int(corpus.n_tokens), "documents": int(corpus.n_docs),
               "workers": int(corpus.n_workers), "file_mb": round(size / 2**20, 1), "repeats": repeats,
               "crowdqa": {k: round(v, 3) for k, v in best.items()} | {"iterations": int(ds.n_iter_)}}
        out["target_met"] = best["seconds"] < 5.0
        try:
            import pandas as pd
            from crowdkit.aggregation import DawidSkene as CKDawidSkene
        except ImportError as exc:  # the bench extra is not installed
            out["crowdkit"] = {"skipped": str(exc)}
            return out
        t0 = time.perf_counter()
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        df = pd.DataFrame({"task": df["doc_id"] + ":" + df["token_index"], "worker": df["annotator"],
                           "label": df["label"]})
        t1 = time.perf_counter()
        ck = CKDawidSkene(n_iter=int(ds.n_iter_), tol=0.0).fit_predict(df)
        t2 = time.perf_counter()
        ours = {f"{corpus.doc_ids[d]}:{p}": corpus.class_names[k] for d, p, k in zip(
            corpus.token_doc.tolist(),
            (np.arange(corpus.n_tokens) - corpus.doc_start[:-1][corpus.token_doc]).tolist(),
            ds.labels_.tolist(), strict=True)}
        agree = float(np.mean([ours[t] == lab for t, lab in ck.items()]))
        out["crowdkit"] = {"read_seconds": round(t1 - t0, 3), "fit_seconds": round(t2 - t1, 3),
                           "seconds": round(t2 - t0, 3), "iterations": int(ds.n_iter_),
                           "label_agreement_with_crowdqa": round(agree, 4)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one seed (benchmarks/results/*_quick)")
    args = parser.parse_args(argv)
    seeds = (0,) if args.quick else (0, 1, 2)
    result: dict = {}
    if (DATA / "conll_val" / "answers.conll").exists():
        result["conll_val_partial"] = conll_partial(keep=0.75, seeds=seeds)
        print("conll_val:", result["conll_val_partial"]["mean_f1"], "all:",
              result["conll_val_partial"]["all_labels_tags"], file=sys.stderr)
    if (DATA / "pico").exists() and not args.quick:
        result["pico_partial"] = pico_partial(labels_per_token=5.0, seed=0)
        print("pico:", result["pico_partial"]["methods"]["hmm-crowd"], file=sys.stderr)
    result["synthetic_pos"] = synthetic(n_docs=200 if args.quick else 1000, seeds=seeds)
    print("synthetic:", result["synthetic_pos"]["token_accuracy"], file=sys.stderr)
    result["token_table_speed"] = speed(n_labels=100_000 if args.quick else 1_000_000)
    print("speed:", result["token_table_speed"], file=sys.stderr)
    result = {"meta": make_meta("python -m benchmarks.tags" + (" --quick" if args.quick else "")), **result}
    write_results(RESULTS / ("tags_quick.json" if args.quick else "tags.json"), result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
