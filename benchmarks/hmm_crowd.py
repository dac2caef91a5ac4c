"""Benchmark HMMCrowd: EM-step speed at CoNLL size, the whole PICO fit, and accuracy vs the experts.

Run ``python -m benchmarks.hmm_crowd [--quick]``; results go to
``benchmarks/results/hmm_crowd[_quick].json``.

(a) The authors' code against ours on ../shared/data/conll_val, in this run
    (:mod:`benchmarks.hmm_crowd_authors`): the whole process of each, and one EM step (E + M)
    of each; then seconds per EM step on a synthetic CoNLL-size corpus: 40k tokens in
    sentences of about 14 tokens, 47 annotators, 9 BIO states, about 5 annotators per sentence.
(b) The whole PICO Participants fit (../shared/data/pico: train, dev, test and expert-dev
    crowd files), wall time and peak traced memory.
(d) Strict-span and token F1 against the truth on a synthetic 3-type BIO NER corpus whose
    words carry signal (:func:`synthetic_ner`), for HMMCrowd's defaults, each setting changed
    one at a time (:data:`VARIANTS`), Dawid-Skene and majority vote.
(c) Token precision/recall/F1 (positive = not ``O``) on the 64 expert documents against the
    union of the experts (``PICO-annos-allprof.json``), for this HMMCrowd and for the
    authors' published HMM-Crowd, MV and DS outputs on the same tokens, plus the token
    agreement between this HMMCrowd and the published one.

The PICO texts are the abstracts of ``docs/`` (``benchmarks/_pico.py``); every span is
aligned to crowdqa's tokens, so every method is scored on the same tokens.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks import hmm_crowd_authors as authors_peer
from benchmarks._pico import load_pico
from benchmarks.tables import make_meta, write_results
from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.dawid_skene import DawidSkene
from crowdqa.aggregation.hmm_crowd import (
    HMMCrowd,
    _build_design,
    _dawid_skene_init,
    _e_step,
    _hard_stats,
    _initial_params,
    _m_step,
)
from crowdqa.quality.references import reference_labels

REPO = Path(__file__).resolve().parents[1]
PICO = REPO.parent / "shared" / "data" / "pico"
RESULTS = REPO / "benchmarks" / "results"


def synthetic_conll(*, n_tokens: int = 40_000, n_workers: int = 47, per_sentence: int = 5, seed: int = 0) -> Corpus:
    """A CoNLL-like BIO corpus: 4 entity types, Markov true labels, noisy annotators."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 24, size=n_tokens // 14 + 50)
    lengths = lengths[: np.searchsorted(np.cumsum(lengths), n_tokens) + 1]
    lengths[-1] -= lengths.sum() - n_tokens
    types = ("LOC", "MISC", "ORG", "PER")
    names = ("O", *[f"{p}-{t}" for t in types for p in ("B", "I")])
    k = len(names)
    n_docs = lengths.size
    # True labels: a span starts with prob 0.15 per token, continues with prob 0.5.
    truth = np.zeros(n_tokens, dtype=np.int64)
    u, typ = rng.random(n_tokens), rng.integers(0, 4, n_tokens)
    first = np.zeros(n_tokens, dtype=bool)
    first[np.concatenate([[0], np.cumsum(lengths)[:-1]])] = True
    for t in range(n_tokens):  # generator only, not the algorithm under test
        prev = 0 if first[t] else truth[t - 1]
        if prev and u[t] < 0.5:
            truth[t] = 2 * ((prev - 1) // 2) + 2
        elif u[t] < 0.15:
            truth[t] = 2 * typ[t] + 1
    acc = rng.uniform(0.55, 0.95, n_workers)
    doc_of = np.repeat(np.arange(n_docs), lengths)
    assigned = np.array([rng.choice(n_workers, per_sentence, replace=False) for _ in range(n_docs)])
    tok = np.repeat(np.arange(n_tokens), per_sentence)
    wrk = assigned[doc_of].ravel()
    lab = np.repeat(truth, per_sentence)
    wrong = rng.random(lab.size) > acc[wrk]
    lab = np.where(wrong, rng.integers(0, k, lab.size), lab)
    vocab = rng.integers(0, 3000, n_tokens) + 3000 * (truth > 0)
    words = [f"w{v}" for v in vocab]
    texts, starts, ends, base = [], [], [], 0
    for n in lengths.tolist():
        ws = words[base : base + n]
        pos = np.cumsum([0] + [len(w) + 1 for w in ws[:-1]])
        texts.append(" ".join(ws))
        starts.append(pos)
        ends.append(pos + [len(w) for w in ws])
        base += n
    return Corpus.from_arrays(token=tok, worker=wrk, label=lab, doc_lengths=lengths,
                              token_start=np.concatenate(starts), token_end=np.concatenate(ends),
                              doc_ids=[f"s{i}" for i in range(n_docs)], texts=texts,
                              worker_ids=[f"sim:{i}" for i in range(n_workers)],
                              worker_roles=["crowd"] * n_workers, class_names=names)


NER_TYPES = ("LOC", "ORG", "PER")
#: The settings that made up HMMCrowd before the fidelity pass (one sequence per document,
#: per-feature Bernoulli shapes, wrong-answer mass split, VB start and VB initial estimates).
OLD_SETTINGS = {"sequences": "document", "shape_emission": "bernoulli", "wrong_mass": "split",
                "start_smoothing": None, "init_smoothing": None}
#: One-at-a-time departures from the defaults, named by the setting they change.
VARIANTS = {"default": {}, "old_settings": OLD_SETTINGS,
            "shape_emission=shared": {"shape_emission": "shared"}, "start_smoothing=None": {"start_smoothing": None},
            "init_smoothing=None": {"init_smoothing": None}, "worker_model=full": {"worker_model": "full"},
            "max_iter=1": {"max_iter": 1}, "sequences=sentence": {"sequences": "sentence"},
            "wrong_mass=split": {"wrong_mass": "split"}}
#: HMMCrowd's defaults before issue 12 (sentences, wrong-answer mass split, one EM step).
PREVIOUS_DEFAULTS = {"sequences": "sentence", "wrong_mass": "split", "max_iter": 1}


def synthetic_ner(*, n_docs: int = 400, n_pool: int = 20, per_doc: int = 5, seed: int = 0) -> tuple[Corpus, np.ndarray]:
    """A multi-type BIO NER corpus in which words carry signal, and its true labels.

    Documents of 2-6 sentences of 6-20 tokens; each sentence ends with ``.`` and starts
    with a capitalised word. True labels follow a Markov chain (an entity of one of 3
    types starts with prob 0.12 after ``O``, continues with prob 0.45). Words: ``O`` tokens
    from a 1,500-word lower-case vocabulary, entity tokens from a 200-word vocabulary of
    their type (capitalised; ``ORG`` words a digit in a quarter of cases), with prob 0.25
    from the ``O`` vocabulary instead. Annotators (a pool of ``n_pool``; ``per_doc`` label
    each document): accuracy in 0.3-0.85 (each true span is missed, mistyped or has its end
    moved by one with total prob 1 - accuracy; false spans at rate (1 - accuracy) / 8 per
    token), one spammer (uniformly random labels) and one boundary-shifter (every span moved
    one token right), all made BIO-valid the way an annotation tool would.

    Returns
    -------
    corpus : Corpus
    truth : ndarray of shape (n_tokens,)
    """
    rng = np.random.default_rng(seed)
    names = ("O", *[f"{p}-{t}" for t in NER_TYPES for p in ("B", "I")])
    o_vocab = [f"w{i}" for i in range(1500)]
    o_p = 1.0 / np.arange(1, 1501) ** 1.05
    o_p /= o_p.sum()
    ent_vocab = [[f"{t.capitalize()}{i}" for i in range(200)] for t in NER_TYPES]
    texts, starts, ends, truth_parts, lengths = [], [], [], [], []
    for _ in range(n_docs):
        words, labels = [], []
        for _ in range(rng.integers(2, 7)):
            n = int(rng.integers(6, 21))
            prev = 0
            for t in range(n - 1):
                if prev and rng.random() < 0.45:
                    lab = prev + (prev % 2)  # B-X (odd) -> I-X, I-X stays
                elif rng.random() < 0.12:
                    lab = 1 + 2 * int(rng.integers(3))
                else:
                    lab = 0
                typ = (lab - 1) // 2
                if lab and rng.random() > 0.25:
                    w = ent_vocab[typ][min(int(rng.zipf(1.3)) - 1, 199)]
                    if typ == 1 and rng.random() < 0.25:
                        w = f"{int(rng.integers(10, 99))}{w}"
                else:
                    w = o_vocab[int(rng.choice(1500, p=o_p))]
                words.append(w.capitalize() if t == 0 and not lab else w)
                labels.append(lab)
                prev = lab
            words.append(".")
            labels.append(0)
        pos = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        texts.append(" ".join(words))
        starts.append(pos)
        ends.append(pos + np.array([len(w) for w in words]))
        truth_parts.append(labels)
        lengths.append(len(words))
    truth = np.concatenate(truth_parts).astype(np.int64)
    doc_start = np.concatenate([[0], np.cumsum(lengths)])
    acc = rng.uniform(0.3, 0.85, n_pool)
    kinds = np.array(["noisy"] * n_pool, dtype=object)
    kinds[0], kinds[1] = "spammer", "shifter"
    tok, wrk, lab = [], [], []
    for d in range(n_docs):
        gold = truth[doc_start[d]:doc_start[d + 1]]
        for w in rng.choice(n_pool, per_doc, replace=False):
            tok.append(np.arange(doc_start[d], doc_start[d + 1]))
            wrk.append(np.full(gold.size, w))
            lab.append(_annotate(gold, kind=kinds[w], acc=acc[w], rng=rng))
    corpus = Corpus.from_arrays(token=np.concatenate(tok), worker=np.concatenate(wrk), label=np.concatenate(lab),
                                doc_lengths=lengths, token_start=np.concatenate(starts),
                                token_end=np.concatenate(ends), doc_ids=[f"d{i}" for i in range(n_docs)],
                                texts=texts, worker_ids=[f"{kinds[i]}:{i}" for i in range(n_pool)],
                                worker_roles=["crowd"] * n_pool, class_names=names)
    return corpus, truth


def _spans(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """(first, last + 1, type) of each BIO span of one document (I-X after O or another type starts one)."""
    out, cur = [], None
    for i, lab in enumerate(labels.tolist()):
        typ = (lab - 1) // 2 if lab else -1
        if lab and (lab % 2 == 1 or cur is None or cur[2] != typ):
            if cur:
                out.append(tuple(cur))
            cur = [i, i + 1, typ]
        elif lab:
            cur[1] = i + 1
        elif cur:
            out.append(tuple(cur))
            cur = None
    if cur:
        out.append(tuple(cur))
    return out


def _annotate(gold: np.ndarray, *, kind: str, acc: float, rng: np.random.Generator) -> np.ndarray:
    """One annotator's BIO labels of one document (see :func:`synthetic_ner`)."""
    n = gold.size
    if kind == "spammer":
        return rng.integers(0, 7, n)
    spans = []
    for first, last, typ in _spans(gold):
        if kind == "shifter":
            spans.append((first + 1, min(last + 1, n), typ))
            continue
        u = rng.random()
        err = 1 - acc
        if u < err * 0.4:
            continue  # missed
        if u < err * 0.6:
            typ = (typ + 1 + int(rng.integers(2))) % 3  # mistyped
        elif u < err:
            last = min(max(first + 1, last + int(rng.choice([-1, 1]))), n)  # end moved by one
        spans.append((first, last, typ))
    if kind != "shifter":
        for first in np.flatnonzero(rng.random(n) < (1 - acc) / 8):
            spans.append((int(first), int(first) + 1, int(rng.integers(3))))
    out = np.zeros(n, dtype=np.int64)
    for first, last, typ in spans:
        if first < last:
            out[first:last] = 2 * typ + 2
            out[first] = 2 * typ + 1
    return out


def span_prf(truth: np.ndarray, pred: np.ndarray, doc_start: np.ndarray) -> dict:
    """Strict span precision/recall/F1 (same first token, last token and type), over all documents."""
    gold = {(d, *s) for d in range(doc_start.size - 1) for s in _spans(truth[doc_start[d]:doc_start[d + 1]])}
    got = {(d, *s) for d in range(doc_start.size - 1) for s in _spans(pred[doc_start[d]:doc_start[d + 1]])}
    tp = len(gold & got)
    p, r = tp / max(len(got), 1), tp / max(len(gold), 1)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def ner_variants(*, seeds: tuple[int, ...], n_docs: int) -> dict:
    """Strict-span and token F1 vs the truth of every HMMCrowd variant, Dawid-Skene and majority vote."""
    import warnings

    from crowdqa.aggregation._base import ConvergenceWarning
    from crowdqa.aggregation.majority_vote import MajorityVote

    methods = {f"hmmcrowd[{name}]": (lambda kw=kw: HMMCrowd(**kw)) for name, kw in VARIANTS.items()}
    methods.update({"dawid_skene": lambda: DawidSkene(), "majority_vote": lambda: MajorityVote()})
    rows: dict[str, dict[str, list[float]]] = {m: {"span_f1": [], "token_f1": []} for m in methods}
    first_tokens = None
    for seed in seeds:
        corpus, truth = synthetic_ner(n_docs=n_docs, seed=seed)
        first_tokens = corpus.n_tokens if first_tokens is None else first_tokens
        for name, make in methods.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                labels = make().fit(corpus).labels_
            rows[name]["span_f1"].append(span_prf(truth, labels, corpus.doc_start)["f1"])
            exact = (labels == truth) & (truth > 0)
            tp, pp, gp = int(exact.sum()), int((labels > 0).sum()), int((truth > 0).sum())
            rows[name]["token_f1"].append(2 * tp / (pp + gp) if pp + gp else 0.0)
    return {"seeds": list(seeds), "documents_per_seed": n_docs, "tokens_first_seed": first_tokens,
            "scores": {m: {k: {"mean": float(np.mean(v)), "per_seed": v} for k, v in r.items()}
                       for m, r in rows.items()}}


def time_em_step(corpus: Corpus, *, repeats: int) -> dict:
    """Median seconds of one E-step + M-step (the model built as HMMCrowd.fit builds it)."""
    design = _build_design(corpus, known=None, features=("word", "capitalised", "digit"), lowercase=False,
                           sequences="document", shape_emission="bernoulli")
    opts = dict(pseudo_count=0.1, worker_smoothing=0.001, worker_model="two-param", wrong_mass="each",
                start_smoothing=0.001)
    init = _dawid_skene_init(design, n_workers=corpus.n_workers, n_rounds=5, diagonal=0.9, smoothing=0.001)
    params = _initial_params(_hard_stats(design, init, n_workers=corpus.n_workers), smoothing=0.001, **opts)
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        stats, _, _ = _e_step(params, design)
        params = _m_step(stats, **opts)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    t0 = time.perf_counter()
    HMMCrowd().fit(corpus)
    fit = time.perf_counter() - t0
    return {"tokens": corpus.n_tokens, "docs": corpus.n_docs, "annotators": corpus.n_workers,
            "labels": corpus.n_obs, "classes": corpus.n_classes, "em_step_seconds_median": float(np.median(times)),
            "em_step_seconds_all": times, "em_step_cpu_seconds_median": float(np.median(cpu)),
            "em_step_cpu_seconds_all": cpu, "fit_seconds_default": fit}


def token_prf(gold: np.ndarray, pred: np.ndarray) -> dict:
    """Token precision/recall/F1 with positive = not O, on the tokens given."""
    tp = int(np.sum((gold > 0) & (pred > 0)))
    fp = int(np.sum((gold == 0) & (pred > 0)))
    fn = int(np.sum((gold > 0) & (pred == 0)))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "tp": tp, "fp": fp, "fn": fn}


def worker_quality_vs_published(confusion: np.ndarray, worker_ids: tuple[str, ...], path: Path) -> dict | None:
    """Our fitted 2x2 worker confusions against the authors' (``published/Participants_worker_quality.json``).

    Each worker's sensitivity (``C[1, 1]``: labels a true span token as inside) and specificity
    (``C[0, 0]``) are compared across the workers both name: Pearson and Spearman correlation,
    and the mean absolute difference. The authors fitted with the real abstracts; the
    worker model sees only the crowd labels and the inferred truth, so it is the part of the
    fit that placeholder texts should change least.
    """
    if not path.exists():
        return None
    from scipy.stats import pearsonr, spearmanr

    published = json.loads(path.read_text(encoding="utf-8"))
    index = {w.split(":", 1)[1]: k for k, w in enumerate(worker_ids) if w.startswith("mturk:")}
    shared = sorted(set(index) & set(published))
    ours = confusion[[index[w] for w in shared]]
    theirs = np.array([published[w] for w in shared], dtype=float)
    out: dict = {"workers_compared": len(shared), "workers_published": len(published)}
    for name, (i, j) in {"sensitivity": (1, 1), "specificity": (0, 0)}.items():
        a, b = ours[:, i, j], theirs[:, i, j]
        out[name] = {"pearson": float(pearsonr(a, b)[0]), "spearman": float(spearmanr(a, b)[0]),
                     "mean_abs_diff": float(np.mean(np.abs(a - b))), "mean_ours": float(a.mean()),
                     "mean_published": float(b.mean())}
    return out


def pico(*, limit: int | None) -> dict:
    t0 = time.perf_counter()
    full, published, dropped = load_pico(limit=limit)
    load_s = time.perf_counter() - t0
    crowd_workers = full.workers_with_role("crowd").tolist()
    crowd = full.select_role("crowd")
    tracemalloc.start()
    t0 = time.perf_counter()
    model = HMMCrowd().fit(crowd)
    fit_s = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    t0 = time.perf_counter()
    variants = {"hmmcrowd": model.labels_,
                "hmmcrowd_marginal": HMMCrowd(decode="marginal").fit(crowd).labels_,
                "hmmcrowd_1iter": HMMCrowd(max_iter=1).fit(crowd).labels_,
                "hmmcrowd_sentences": HMMCrowd(sequences="sentence").fit(crowd).labels_,
                "hmmcrowd_previous_defaults": HMMCrowd(**PREVIOUS_DEFAULTS).fit(crowd).labels_}
    variant_s = time.perf_counter() - t0
    union = reference_labels(full, rule="union")
    seen = union >= 0
    out: dict = {"spans_dropped_whitespace_only": dropped,
                 "documents": crowd.n_docs, "tokens": crowd.n_tokens, "crowd_labels": crowd.n_obs,
                 "annotators": len(crowd_workers), "load_seconds": load_s, "fit_seconds": fit_s,
                 "fit_peak_traced_memory_mb": peak / 2**20, "iterations": model.n_iter_,
                 "expert_documents": int(len({int(d) for d in full.token_doc[seen]})),
                 "expert_tokens": int(seen.sum()), "variants_seconds": variant_s, "scores": {}}
    for name, labels in variants.items():
        out["scores"][name] = token_prf(union[seen], labels[seen])
    for key, pub in published.items():
        ok = seen & (pub >= 0)
        out["scores"][f"published_{key}"] = token_prf(union[ok], pub[ok])
        if key == "HMMCrowd":
            out["published_hmmcrowd_tokens_scored"] = int(ok.sum())
            out["agreement_with_published_hmmcrowd_expert_docs"] = float(np.mean(pub[ok] == model.labels_[ok]))
            allpub = pub >= 0
            out["agreement_with_published_hmmcrowd_all_docs"] = float(np.mean(pub[allpub] == model.labels_[allpub]))
            out["published_hmmcrowd_same_tokens_f1_ours"] = token_prf(union[ok], model.labels_[ok])["f1"]
    quality_file = PICO / "published" / "Participants_worker_quality.json"
    out["worker_quality_vs_published"] = {
        "hmmcrowd": worker_quality_vs_published(model.worker_confusion_, crowd.worker_ids, quality_file),
        "dawid_skene": worker_quality_vs_published(DawidSkene().fit(crowd).worker_confusion_, crowd.worker_ids,
                                                   quality_file),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4k-token EM-step corpus and 500 PICO documents")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    result = {"quick": args.quick, "numpy": np.__version__}
    result["synthetic_ner_variants"] = ner_variants(seeds=(0, 1) if args.quick else (0, 1, 2, 3, 4, 5), n_docs=400)
    print(json.dumps({m: v["span_f1"]["mean"] for m, v in result["synthetic_ner_variants"]["scores"].items()},
                     indent=1), flush=True)
    if authors_peer.PEER.is_dir() and authors_peer.DATA.is_dir():
        result["conll_val_vs_authors"] = authors_peer.compare(em_repeats=3 if args.quick else 5,
                                                         peer_steps=1 if args.quick else 3)
        print(json.dumps(result["conll_val_vs_authors"], indent=1), flush=True)
        peers = authors_peer.peer_versions(authors_peer.peer_python())
    else:
        peers = None
        print(f"skipping the authors' code: {authors_peer.PEER} or {authors_peer.DATA} is absent", file=sys.stderr)
    conll = synthetic_conll(n_tokens=4_000 if args.quick else 40_000)
    result["conll_size_em_step"] = time_em_step(conll, repeats=3 if args.quick else 5)
    print(json.dumps(result["conll_size_em_step"], indent=1), flush=True)
    if PICO.is_dir():
        result["pico_participants"] = pico(limit=500 if args.quick else None)
        print(json.dumps(result["pico_participants"], indent=1), flush=True)
    else:
        print(f"skipping PICO: {PICO} is absent", file=sys.stderr)

    command = "python -m benchmarks.hmm_crowd" + (" --quick" if args.quick else "")
    result = {"meta": make_meta(command, seconds=time.perf_counter() - t_start, peers=peers), **result}
    path = write_results(RESULTS / ("hmm_crowd_quick.json" if args.quick else "hmm_crowd.json"), result)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
