"""Render benchmarks/results/*.json as the benchmark tables of the documentation site.

``python -m benchmarks.tables`` reads every results file and rewrites the part of docs/benchmarks.md
(the site's Benchmarks page) between ``<!-- benchmarks:start -->`` and ``<!-- benchmarks:end -->``;
without those markers (or with ``--stdout``) it prints the markdown and leaves the page alone. Nothing
outside the markers is touched. Plots are linked as ``benchmarks/results/NAME.png``: the site's build
(docs/_hooks/) publishes them under that path.

For each benchmark the full run's file (``NAME.json``) is used, else the ``--quick`` one
(``NAME_quick.json``, marked as such). Each table names the command that produced it and the
machine and date, from the file's ``meta`` block (:func:`make_meta`, written by the newer
benchmarks); for files without one, the command is the benchmark's documented command and
the date is the file's modification time. A file whose layout a renderer does not know is
reported in place of its table, never skipped silently.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.meta import make_meta, stale_reason, write_results  # noqa: F401  (benchmarks import these here)
from benchmarks.registry import BY_STEM, SOURCES

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
PAGE = REPO / "docs" / "benchmarks.md"
START, END = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"


# ------------------------------------------------------------------ formatting
def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _ci(block: dict | None, key: str) -> str:
    """``0.884 (0.869–0.899)`` from a score block's value and ``<key>_ci``."""
    if block is None or block.get(key) is None:
        return "–"
    ci = block.get(f"{key}_ci")
    return _f(block[key]) + (f" ({ci[0]:.3f}–{ci[1]:.3f})" if ci else "")


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _provenance(data: dict, path: Path, command: str) -> str:
    """One line naming the command, commit, machine, date and load of a results file (it has a meta block)."""
    quick = path.stem.endswith("_quick")
    meta = data["meta"]
    machine = meta.get("machine", "machine not recorded")
    if meta.get("python"):
        machine += f", Python {meta['python']}"
    commit = f"commit `{meta['commit'][:10]}`" + (" (uncommitted files beside it)" if meta.get("dirty") else "")
    before, after = meta.get("load_average_before"), meta.get("load_average_after")
    load = f" · load {before[0]:.1f} → {after[0]:.1f}" if before and after else ""
    note = " — **quick run**" if quick else ""
    earlier, older = [], meta.get("merged_with")
    while older:  # a --merge run keeps the points of the runs before it: name each of them too
        at = f", commit `{older['commit'][:10]}`" if older.get("commit") else ""
        earlier.append(f"`{older['command']}` ({older.get('date', 'date not recorded')}{at})")
        older = older.get("merged_with")
    merged = f" · with the points kept from {', '.join(earlier)}" if earlier else ""
    return (f"`{meta['command']}` · {commit} · {machine} · {meta.get('date', '')}{load}{merged} · "
            f"`benchmarks/results/{path.name}`{note}")


def _png(results: Path, stem: str, quick: bool, alt: str) -> str:
    name = f"{stem}{'_quick' if quick else ''}.png"
    return f"\n\n![{alt}](benchmarks/results/{name})" if (results / name).exists() else ""


# ------------------------------------------------------------------ one renderer per results file
NAMES = {"mv": "MajorityVote", "ds": "DawidSkene", "hmm-crowd": "HMMCrowd", "one-coin": "one-coin DS",
         "wawa": "Wawa", "zbs": "ZeroBasedSkill", "gold-mv": "GoldMajorityVote", "glad": "GLAD", "mace": "MACE",
         "kos": "KOS", "mmsr": "M-MSR", "ibcc": "IBCC"}


def render_pico_study(d: dict, results: Path, quick: bool) -> str:
    rows = []
    kinds = (("ours", "crowdqa, crowd only"), ("ours_experts_clamped_crossfit", "crowdqa, experts clamped (4-fold)"),
             ("published", "authors' published aggregate"), ("paper", "Nye et al. 2018, Table 3"))
    for m, res in d["methods"].items():
        for key, label in kinds:
            b = res.get(key)
            rows.append([NAMES.get(m, m), label, _ci(b, "precision"), _ci(b, "recall"), _ci(b, "f1")])
    data = d["data"]
    w = d["workers"]
    worker_rows = [
        ["crowdqa: crowd workers vs experts", w["mean_vs_expert"]["workers"], *(
            _f(w["mean_vs_expert"][k]) for k in ("precision", "recall", "f1"))],
        ["crowdqa: crowd workers vs the HMMCrowd aggregate", w["mean_vs_aggregate"]["workers"], *(
            _f(w["mean_vs_aggregate"][k]) for k in ("precision", "recall", "f1"))],
    ]
    if "quartiles_vs_expert" in w:
        q = w["quartiles_vs_expert"]
        worker_rows.insert(1, ["crowdqa: crowd workers vs experts, quartiles (25/50/75%)",
                               w["mean_vs_expert"]["workers"],
                               *("/".join(_f(v) for v in q[k]) for k in ("precision", "recall", "f1"))])
    per_worker = ""
    if w.get("per_worker_vs_expert"):
        rows_w = [[r["annotator"], r["documents"], r["expert_positive_tokens"], _ci(r, "precision"), _ci(r, "recall"),
                   _ci(r, "f1")] for r in w["per_worker_vs_expert"]]
        per_worker = (
            f"\n\n<details><summary>Every crowd worker with expert overlap ({len(rows_w)}), token scores against "
            "the experts' union on the documents both labelled</summary>\n\n"
            + _table(["worker", "documents", "expert-positive tokens", "precision", "recall", "F1"], rows_w)
            + "\n\n</details>")
    fits = ", ".join(f"{NAMES[m]} {_ms(r['fit_seconds'])}" for m, r in d["methods"].items())
    return (
        f"PICO Participants, token-level against the union of the experts on {data['expert_documents']} expert "
        f"documents ({data['expert_tokens']:,} tokens); {data['documents']:,} documents, "
        f"{data['crowd_labels']:,} crowd labels from {data['crowd_workers']} workers fitted together. "
        "Precision and recall with exact Clopper-Pearson intervals, F1 with a document bootstrap (95%). "
        "Every method with its default options, all on crowdqa's tokens (`\\w+|[^\\w\\s]`) of the abstracts; "
        "the authors' published aggregates are aligned to the same tokens.\n\n"
        + _table(["method", "run", "precision", "recall", "F1"], rows)
        + f"\n\nFit time (crowd only): {fits}.\n\nMean per-worker scores:\n\n"
        + _table(["", "workers", "precision", "recall", "F1"], worker_rows)
        + per_worker
        + _png(results, "pico_study_workers", quick, "precision-recall of every PICO worker, aggregates marked")
    )


def render_categorical(d: dict, results: Path, quick: bool) -> str:
    rows = []
    for name, ds in d["datasets"].items():
        ck = ds.get("crowdkit", {})
        for m, ours in ds["ours"].items():
            c = ck.get(m)
            rows.append([
                f"{name} ({ds['items']} items, {ds['labels']:,} labels)", NAMES.get(m, m), _f(ours["accuracy"], 4),
                _f(c["accuracy"], 4) if c else ("none" if ck else "skipped"), _ms(ours["fit_seconds"]),
                _ms(c["fit_seconds"]) if c else "–",
                f"{c['speedup_ours']:.0f}×" if c else "–",
            ])
    published = "; ".join(f"{n} MV {v}" for n, v in
                          ((n, ds.get("published_mv_accuracy")) for n, ds in d["datasets"].items()) if v)
    ties = ", ".join(f"{n} {ds['tied_items']}" for n, ds in d["datasets"].items() if "tied_items" in ds)
    return (
        "Accuracy against gold, crowd annotators only, every method with its defaults (GoldMajorityVote: given "
        "the gold of a seeded 30% of the items, scored on the rest); fit time is the median of up to "
        f"{d['repeats']} fit(s) in one process (fewer once a method has spent {d.get('time_budget_seconds', '–')} s)."
        " crowd-kit's Wawa, ZeroBasedSkill and GoldMajorityVote: fit plus the MajorityVote(skills) their broken "
        "predict would run.\n\n"
        + _table(["data set", "method", "crowdqa", "crowd-kit 1.4.2", "crowdqa fit", "crowd-kit fit", "speed-up"], rows)
        + (f"\n\nPublished majority-vote accuracy: {published}." if published else "")
        + (f" Items with a tied vote (where tie rules differ): {ties}." if ties else "")
        + (f"\n\n{d['crowdkit_skipped']}" if d.get("crowdkit_skipped") else "")
    )


def render_categorical_speed(d: dict, results: Path, quick: bool) -> str:
    s = d["setup"]

    def ck_cell(c: dict | None) -> str:
        if c is None:
            return "none"
        if c.get("capped"):
            return f"> {c.get('cap_seconds', s['cap_seconds']):.0f} s (stopped)"
        return f"failed: {c['failed']}" if "failed" in c else _ms(c["fit_seconds"])

    # Rows rerun later (``--row``) carry their run's stamp; one mark per run, in the order first met.
    stamps = {json.dumps(r["rerun"], sort_keys=True): r["rerun"] for r in d["methods"].values() if "rerun" in r}
    mark_of = {key: "†‡§¶#"[i % 5] for i, key in enumerate(stamps)}
    rows = []
    for m, r in d["methods"].items():
        us, ck = r["crowdqa"], r.get("crowdkit")
        ratio = (f"{r['speedup']:.0f}×" if "speedup" in r
                 else f"> {r['speedup_at_least']:.0f}×" if "speedup_at_least" in r else "–")
        cpu = f"{r['speedup_cpu']:.0f}×" if "speedup_cpu" in r else "–"
        acc = _f(us["accuracy"], 4) + (f" / {_f(ck['accuracy'], 4)}" if ck and "accuracy" in ck else "")
        mark = f" {mark_of[json.dumps(r['rerun'], sort_keys=True)]}" if "rerun" in r else ""
        rows.append([NAMES.get(m, m) + mark, r["classes"], _ms(us["fit_seconds"]), ck_cell(ck), ratio, cpu, acc])
    notes = "".join(
        f"\n\n{mark} Rerun {x['date']} with `{x['command']}` (1-minute load average "
        f"{x['load_average_at_start'][0]:.1f} at the start, {x['load_average_at_end'][0]:.1f} at the end)."
        for mark, x in zip(mark_of.values(), stamps.values(), strict=True))
    if notes:
        notes += "\n\nThe rows without a mark are from the run above."
    return (
        f"One synthetic crowd, {s['labels']:,} labels: {s['items']:,} items, {s['per_item']} answers each from "
        f"{s['workers']} one-coin workers (3 classes; 2 for KOS); every method with its defaults (a row named with "
        "parameters: both libraries with those), in a process of its own with one BLAS thread, the input built "
        "outside the timed region for both; the fastest of 3 fits (fewer past 20 s; fits under 1 s repeated "
        "until 1 s is spent, at most 25); crowd-kit fits are stopped after "
        f"{s['cap_seconds']:.0f} s"
        + (f" ({', '.join(f'{m}: {v:.0f} s' for m, v in s['cap_seconds_by_method'].items())})"
           if s.get("cap_seconds_by_method") else "")
        + ", and the ratio is then a lower bound. Accuracy against the planted truth "
        "(GoldMajorityVote: given 10% of it, scored on the rest). The machine was shared"
        + (f" (1-minute load average {s['load_average_at_start'][0]:.1f} at the start, "
           f"{s['load_average_at_end'][0]:.1f} at the end)" if "load_average_at_end" in s else "")
        + ": wall seconds are inflated, CPU seconds less so.\n\n"
        + _table(["method", "classes", "crowdqa fit", "crowd-kit 1.4.2 fit", "crowd-kit / crowdqa",
                  "same, CPU seconds", "accuracy crowdqa / crowd-kit"], rows)
        + notes
    )


def render_ds_speed(d: dict, results: Path, quick: bool) -> str:
    rows = []
    for h in d["headline"]:
        ck, us = h["crowdkit"], h["crowdqa"]
        rows.append([f"{h['n_labels']:,}", f"{ck['fit_seconds']:.2f} s", f"{us['fit_seconds']:.3f} s",
                     f"{h['speedup_fit']}×", f"{ck['peak_rss_during_fit_mb']:.0f} MB",
                     f"{us['peak_rss_during_fit_mb']:.0f} MB",
                     f"{h['peak_memory_ratio_crowdqa_over_crowdkit']:.2f}",
                     f"{ck['accuracy_first_100k_items']:.4f} / {us['accuracy_first_100k_items']:.4f}"])
    s = d["setup"]
    return (
        f"Dawid-Skene, {s['iterations']} EM iterations each ({s['crowdkit']} vs {s['crowdqa']}), synthetic "
        f"{s['n_classes']}-class crowd, {s['per_item']} labels per item from {s['n_workers']} workers; each fit in "
        "its own process; peak RSS includes the input.\n\n"
        + _table(["labels", "crowd-kit fit", "crowdqa fit", "speed-up", "crowd-kit peak RSS", "crowdqa peak RSS",
                  "memory ratio", "accuracy crowd-kit / crowdqa"], rows)
    )


def _vs_authors(c: dict) -> str:
    """The authors' HMM-Crowd against ours on conll_val, both from the same run."""
    a, us, us1, st, em = (c["authors_whole_process"], c["ours_whole_process"], c["ours_whole_process_max_iter_1"],
                          c["authors_stages"], c["ours_em_step"])

    def proc(r: dict) -> str:
        return "failed" if r.get("exit") else f"{r['seconds']:.2f} s ({r['cpu_seconds']:.2f} s CPU)"

    def prf(r: dict) -> str:
        return "–" if r.get("exit") else f"{r['precision']:.3f} / {r['recall']:.3f} / {r['f1']:.3f}"

    def median(xs: list[float]) -> float:
        return sorted(xs)[len(xs) // 2]

    ratio = (f"{c['whole_process_ratio']:.1f}× ({c['whole_process_cpu_ratio']:.1f}× CPU)"
             if "whole_process_ratio" in c else "–")
    rows = [
        ["whole process, crowdqa defaults", proc(a), proc(us), ratio, prf(a), prf(us)],
        ["whole process, crowdqa `max_iter=1`", proc(a), proc(us1),
         "–" if a.get("exit") or us1.get("exit") else f"{a['seconds'] / us1['seconds']:.1f}× "
         f"({a['cpu_seconds'] / us1['cpu_seconds']:.1f}× CPU)", prf(a), prf(us1)],
        ["one EM step (E + M, median)",
         f"{_ms(median(st['em_step_seconds']))} ({_ms(median(st['em_step_cpu_seconds']))} CPU)",
         f"{_ms(em['em_step_seconds_median'])} ({_ms(em['em_step_cpu_seconds_median'])} CPU)",
         f"{c['em_step_ratio']:,.0f}× ({c['em_step_cpu_ratio']:,.0f}× CPU)", "", ""],
    ]
    d = c["data"]
    return (
        f"The authors' HMM-Crowd (Nguyen et al. 2017, `../shared/peers/hmm_crowd_authors`) and ours on conll_val "
        f"({d['documents']:,} sentences, {d['tokens']:,} tokens, {d['annotators']} workers, {d['labels']:,} labels), "
        "in the same run. Their whole process is `python hmm.py -i conll_val/rodrigues/ -o OUT` (reading, "
        "Dawid-Skene start, one EM step as its command line does, decoding, scoring); ours is `crowdqa aggregate "
        "answers.conll --format conll --method hmm-crowd --expert gold.conll` with the default report. "
        f"Their stages in one process (CPU seconds): reading {_ms(st['read_cpu_seconds'])}, Dawid-Skene start "
        f"{_ms(st['init_cpu_seconds'])}, decoding {_ms(st['decode_cpu_seconds'])}. On a shared machine wall seconds "
        "include waiting for a core; CPU seconds do not. Strict span scores (type and both boundaries) against the "
        "gold tags: theirs as their code prints them (a span starts at a `B-` tag only), ours by the conlleval rule "
        "(an `I-` after `O` starts one too).\n\n"
        + _table(["", "authors' code", "crowdqa", "authors / crowdqa", "authors P / R / F1", "crowdqa P / R / F1"],
                 rows)
    )


def render_hmm_crowd(d: dict, results: Path, quick: bool) -> str:
    e = d["conll_size_em_step"]
    out = (_vs_authors(d["conll_val_vs_authors"]) + "\n\n" if d.get("conll_val_vs_authors") else "") + (
        f"One HMM-Crowd EM step (E + M) on a synthetic CoNLL-size corpus: {e['tokens']:,} tokens, "
        f"{e['annotators']} annotators, {e['classes']} BIO classes, {e['labels']:,} labels.\n\n"
        + _table(["crowdqa EM step (median)", "crowdqa full fit"],
                 [[_ms(e["em_step_seconds_median"]), _ms(e["fit_seconds_default"])]])
    )
    p = d.get("pico_participants")
    if p:
        out += "\n\nWhole PICO Participants fit (HMMCrowd defaults):\n\n" + _table(
            ["documents", "tokens", "crowd labels", "annotators", "iterations", "fit time", "peak traced memory",
             "token agreement with the published HMMCrowd"],
            [[f"{p['documents']:,}", f"{p['tokens']:,}", f"{p['crowd_labels']:,}", p["annotators"], p["iterations"],
              _ms(p["fit_seconds"]), f"{p['fit_peak_traced_memory_mb']:.0f} MB",
              _f(p["agreement_with_published_hmmcrowd_all_docs"])]])
        names = {"hmmcrowd": "HMMCrowd defaults", "hmmcrowd_marginal": "decode=marginal",
                 "hmmcrowd_1iter": "max_iter=1 (authors' NER command line)",
                 "hmmcrowd_sentences": "sequences=sentence",
                 "hmmcrowd_previous_defaults": "previous defaults (sentence, split, max_iter=1)",
                 "published_HMMCrowd": "authors' published HMMCrowd", "published_dw": "authors' published DS",
                 "published_mv": "authors' published MV"}
        score_rows = [[names[k], _f(v["precision"]), _f(v["recall"]), _f(v["f1"])]
                      for k, v in p.get("scores", {}).items() if k in names]
        if score_rows:
            out += (f"\n\nToken scores on the {p['expert_documents']} expert documents ({p['expert_tokens']:,} tokens) "
                    "against the union of the experts:\n\n"
                    + _table(["run", "precision", "recall", "F1"], score_rows))
        q = p.get("worker_quality_vs_published") or {}
        rows = []
        for key, name in (("hmmcrowd", "HMMCrowd"), ("dawid_skene", "DawidSkene")):
            w = q.get(key)
            if w:
                rows += [[name, what, w["workers_compared"], _f(w[what]["pearson"]), _f(w[what]["spearman"]),
                          _f(w[what]["mean_abs_diff"]), f"{w[what]['mean_ours']:.3f} / {w[what]['mean_published']:.3f}"]
                         for what in ("sensitivity", "specificity")]
        if rows:
            out += ("\n\nEach worker's fitted confusion against the authors' HMM-Crowd estimate "
                    "(`published/Participants_worker_quality.json`): sensitivity = P(inside | true inside), "
                    "specificity = P(outside | true outside).\n\n"
                    + _table(["our fit", "", "workers", "Pearson r", "Spearman ρ", "mean abs. difference",
                              "mean ours / published"], rows))
    return out


def render_ingest_pico(d: dict, results: Path, quick: bool) -> str:
    rows = []
    for key, label in (("shared_docs", "texts of ../shared/data/pico/docs"), ("synthetic_texts", "synthetic texts")):
        r = d.get(key)
        if r:
            rows.append([label, f"{r['documents']:,}", f"{r['tokens']:,}", f"{r['annotations']:,}",
                         f"{r['seconds']:.2f} s", f"{r['documents_per_second']:,.0f}",
                         f"{r['tracemalloc_peak_mb']:.0f} MB",
                         f"{r['spans_skipped']:,}"])
    return (
        "PICO crowd files (train, dev, test; Participants) read with the `pico-jsonl` reader and merged, best of two "
        f"runs; target {d['target']['seconds']} s and {d['target']['memory_mb']} MB. Process max RSS "
        f"{d['max_rss_mb']:.0f} MB.\n\n"
        + _table(["texts", "documents", "tokens", "annotations", "time", "documents/s", "peak traced memory",
                  "spans skipped"], rows)
    )


def render_scaling(d: dict, results: Path, quick: bool) -> str:
    sizes: dict[int, dict] = {}
    for p in d["points"]:
        sizes.setdefault(p["n_labels"], {"tokens": p["n_tokens"]})[p["method"]] = p
    methods = list(d["setup"]["methods"])
    rows = []
    for n, by in sorted(sizes.items()):
        row = [f"{n:,}", f"{by['tokens']:,}"]
        for m in methods:
            p = by.get(m)
            it = f" ({p['n_iter']} it.)" if p and m == "ds" else ""
            row.append(f"{_ms(p['fit_seconds'])}{it} / {p['peak_rss_during_fit_mb']:.0f} MB "
                       f"(+{p['fit_extra_mb']:.0f})" if p else "–")
        rows.append(row)
    slopes = ", ".join(
        f"{NAMES.get(m, m)} {s['time_loglog_slope_from_1e5']:.2f}"
        + (f" (per EM iteration {s['iteration_time_loglog_slope_from_1e5']:.2f})"
           if s.get("iteration_time_loglog_slope_from_1e5") is not None and m == "ds" else "")
        for m, s in d["summary"].items() if s.get("time_loglog_slope_from_1e5") is not None)
    s = d["setup"]
    return (
        f"crowdqa only, defaults, one process per point: BIO spans ({len(s['classes'])} classes), "
        f"{s['annotators_per_doc']} of {s['annotators']} annotators per document of about {s['mean_doc_tokens']} "
        "tokens. Each cell: fit wall time / peak RSS of the process during the fit (corpus included) and, in "
        "brackets, what the fit added to the resident memory at its peak.\n\n"
        + _table(["labels", "tokens", *(f"{NAMES.get(m, m)}" for m in methods)], rows)
        + (f"\n\nLog-log slope of time vs labels: {slopes} (1 = linear)." if slopes else "")
        + _png(results, "scaling", quick, "fit time and peak memory vs labels, log-log")
    )


def render_service_overhead(d: dict, results: Path, quick: bool) -> str:
    rows = []
    for r in d["results"]:
        o, q = r["overhead"], r["polling"]
        rows.append([r["mode"], r["jobs"], f"{o['wall']['p50_ms']:.1f} / {o['wall']['p90_ms']:.1f} ms",
                     f"{o['overhead_excluding_pipeline']['p50_ms']:.1f} ms",
                     f"{q['pollers']} × {q['requests'] // max(q['pollers'], 1)}",
                     f"{q['latency']['p50_ms']:.1f} / {q['latency']['p99_ms']:.1f} ms",
                     f"{q['requests_per_second']:,.0f}", q["errors"]])
    return (
        "A majority-vote job on a one-document corpus through the real service on loopback, posted then polled "
        "every 5 ms; then concurrent clients polling a finished job.\n\n"
        + _table(["mode", "jobs", "POST → finished p50 / p90", "overhead excl. pipeline p50", "pollers × requests",
                  "poll latency p50 / p99", "requests/s", "errors"], rows)
    )


def render_load(d: dict, results: Path, quick: bool) -> str:
    rows = []
    for r in d["results"]:
        lat = r["latency"]
        lost = len(r["lost_jobs"]) + len(r["unknown_jobs"])
        rows.append([r["mode"], r["clients"], f"{r['seconds']:.0f} s", r["jobs_created"],
                     f"{r['finished']} / {r['failed']} / {len(r['not_final'])}", lost, len(r["duplicate_runs"]),
                     f"{r['jobs_per_second']:.2f}", f"{r['requests_per_second']:.0f}",
                     *(f"{lat[k]['p99_ms']:.0f} ms" if k in lat else "–" for k in ("upload", "enqueue", "poll")),
                     len(r["client_errors"]),
                     (f"{r['load_average_at_start']:.1f} / {r['load_average_at_end']:.1f}"
                      if "load_average_at_end" in r else "–")])
    # Results since the clients' own CPU is recorded (issue 27) get that column: they share the cores measured.
    clients_cpu = all("client_cpu_share" in r for r in d["results"]) and bool(d["results"])
    if clients_cpu:
        for row, r in zip(rows, d["results"], strict=True):
            row.append(f"{r['client_cpu_share']:.2f} core")
    verdict = "none" if not d.get("problems") else "; ".join(d["problems"])
    return (
        "Concurrent clients each create a dataset, upload a small crowd file, enqueue jobs and poll them for a "
        f"bounded time; then every job is checked against the database and the run log. Problems found: {verdict}. "
        "Production mode is the deployment of deploy/ (redis-server, PostgreSQL, one `crowdqa worker --processes "
        "2`); the load average (1 minute, at the start / end of each mode) says how busy the 2-core machine was "
        "with other work, which inflates every latency."
        + (" The clients (threads of one process) run on the same cores: their CPU is shown in cores (1 = one of "
           "them busy all the time)." if clients_cpu else "") + "\n\n"
        + _table(["mode", "clients", "duration", "jobs", "finished / failed / not final", "lost", "duplicate runs",
                  "jobs/s", "requests/s", "upload p99", "enqueue p99", "poll p99", "client errors",
                  "load average", *(["clients' CPU"] if clients_cpu else [])], rows)
    )


def render_sample_size(d: dict, results: Path, quick: bool) -> str:
    labels = {"crowd_posteriors": "crowd only: HMMCrowd posteriors, output frequency",
              "paper_figures": "paper's HMM-Crowd P/R, output frequency",
              "hindsight": "hindsight: measured P/R, expert frequency"}
    rows = []
    for key, p in d["plans"].items():
        i = p["inputs"]
        rows.append([labels.get(key, key), _f(i["precision"]), _f(i["recall"]), _f(i["frequency"]),
                     f"{p['tokens']:,}", p["documents"], p["documents_with_design_effect"]])
    m = d["measured_on_expert_documents"]
    cp, bs = m["clopper_pearson"], m["document_bootstrap"]
    s = d["setup"]
    measured = _table(
        ["", "precision", "recall"],
        [["measured", _f(m["precision"]), _f(m["recall"])],
         ["± Clopper-Pearson (tokens independent)", f"±{cp['precision_half_width']:.3f}",
          f"±{cp['recall_half_width']:.3f}"],
         ["± document bootstrap", f"±{bs['precision_half_width']:.3f}", f"±{bs['recall_half_width']:.3f}"]])
    deff = ", ".join(f"{k} {v:.1f}" for k, v in d["design_effect"].items())
    return (
        f"SLiCE (`crowdqa.quality.sample_size.slice_sample_size`) for HMMCrowd on PICO Participants, "
        f"±{s['half_width']} at "
        f"{s['confidence']:.0%}; tokens → documents at {s['tokens_per_document']:.0f} tokens per document.\n\n"
        + _table(["plan from", "precision", "recall", "frequency", "tokens", "documents",
                  "documents × design effect (larger of P, R)"], rows)
        + f"\n\nWhat the {m['documents']} expert documents ({m['tokens']:,} tokens) gave:\n\n" + measured
        + f"\n\nDesign effect (bootstrap / Clopper-Pearson half-width, squared): {deff}. Reaching ±{s['half_width']} "
        f"by the document bootstrap would take about {m['documents_for_half_width_by_bootstrap']} expert documents."
        f" Texts: {s.get('texts', 'not recorded')}."
    )


def _process_seconds(r: dict | None, *, cpu: bool = False) -> str:
    """A process's wall seconds (and CPU seconds), or why there are none."""
    if not r:
        return "–"
    if r.get("capped"):
        return f"> {r['seconds']:.0f} s (stopped at the cap)"
    if r.get("exit"):
        return "failed"
    return f"{r['seconds']:.2f} s" + (f" ({r['cpu_seconds']:.2f} s CPU)" if cpu else "")


def _api_row(p: dict) -> list[list[str]]:
    """The API table's row of a whole-path point (none without an API run): wall seconds of each step, with
    the service process's CPU seconds where the run measured them."""
    a = p.get("api")
    if not a:
        return []

    def step(name: str) -> str:
        cpu = a.get(f"{name}_cpu_seconds")
        return f"{a[f'{name}_seconds']:.2f} s" + ("" if cpu is None else f" ({cpu:.2f} CPU-s)")

    st = a.get("stages") or {}
    stages = " / ".join(f"{st.get(k, 0):.2f}" for k in ("reading", "fitting", "scoring", "writing"))
    return [[f"{p['labels']:,}", p["method"].upper(), step("upload"), step("job"), step("report"),
             f"{a['total_seconds']:.2f} s", stages]]


def render_whole_path(d: dict, results: Path, quick: bool) -> str:
    secs = _process_seconds
    rows, api_rows = [], []
    for p in d["points"]:
        api_rows += _api_row(p)
        if "crowdqa" not in p:  # measured through the API only (--api-only)
            continue
        us, ck = p["crowdqa"], p.get("crowd_kit") or {}  # no crowd_kit: the peer was not run (--no-peer)
        ratio = ("–" if not ck or us.get("exit") or ck.get("exit") and not ck.get("capped")
                 else f"{'> ' if ck.get('capped') else ''}{ck['seconds'] / us['seconds']:.1f}×")
        cpu = "–"
        if us.get("cpu_seconds") and ck.get("cpu_seconds") and not us.get("exit") and not ck.get("exit"):
            cpu = (f"{us['cpu_seconds']:.2f} / {ck['cpu_seconds']:.2f} s "
                   f"({'> ' if ck.get('capped') else ''}{ck['cpu_seconds'] / us['cpu_seconds']:.1f}×)")
        st = us.get("stages") or {}
        stages = " / ".join(f"{st.get(k, 0):.2f}" for k in ("reading", "fitting", "scoring", "writing"))
        rows.append([f"{p['labels']:,}", p["method"].upper(), secs(us), secs(ck), ratio, cpu, stages,
                     f"{us['peak_rss_mib']:.0f} / " + (f"{ck['peak_rss_mib']:.0f}" if ck else "–") + " MiB"])
    out = (
        f"What a user waits for, start to exit: `crowdqa aggregate FILE --format categorical --method M --output "
        f"out.csv --report report.json` (reading, fit, the default report, writing) against crowd-kit's whole "
        f"process (`pandas.read_csv` + `fit_predict` + `to_csv`, MajorityVote or DawidSkene(n_iter=100)), each a "
        f"process of its own, one run per point; synthetic categorical crowd ({d['points'][0]['workers']} workers, 3 "
        f"answers per item, 3 classes, string ids). crowd-kit runs are stopped after {d['cap_seconds']:.0f} s. "
        f"{d['meta'].get('note', '')}. "
        + "CPU seconds (user + system of the process) do not count the time a process waited for a core on the "
        "shared machine.\n\n"
        + _table(["labels", "method", "crowdqa whole process", "crowd-kit whole process", "crowd-kit / crowdqa",
                  "CPU crowdqa / crowd-kit (ratio)", "crowdqa stages: read / fit / score / write (s)",
                  "peak RSS crowdqa / crowd-kit"], rows)
    )
    if api_rows:
        out += ("\n\nThe same through the API (embedded service on loopback): upload the file, run the job to "
                "finished, fetch the report.\n\n"
                + _table(["labels", "method", "upload", "job (post → finished)", "GET /report", "total",
                          "job stages: read / fit / score / write (s)"], api_rows))
    return out


def render_report_vs_fit(d: dict, results: Path, quick: bool) -> str:
    """The report (scoring stage) against the fit of the same process (issue 14: report <= fit + 1 s)."""
    rows = []
    for p in d["points"]:
        us = p.get("crowdqa") or {}
        st = us.get("stages") or {}
        if us.get("exit") or "fitting" not in st or "scoring" not in st:
            continue
        fit, score = st["fitting"], st["scoring"]
        rows.append([f"{p['labels']:,}", f"{p['workers']:,}", p["method"].upper(), f"{fit:.2f} s", f"{score:.2f} s",
                     f"{score - fit:+.2f} s", "yes" if score <= fit + 1.0 else "no",
                     f"{us['cpu_seconds']:.2f} s", " / ".join(f"{x:.1f}" for x in p.get("load_average", []))])
    return (
        "The report's share of `crowdqa aggregate` (the same synthetic categorical crowd as above with more "
        "workers, so tens of thousands of crowd pairs): the pipeline's own wall-clock stage timers of one "
        f"process per point, fit against scoring (every worker's accuracy and intervals, crowd-pair kappas, "
        f"Krippendorff's alpha). {d['meta'].get('note', '')}; wall seconds include waiting for a core.\n\n"
        + _table(["labels", "workers", "method", "fit", "report (scoring)", "report − fit", "report ≤ fit + 1 s",
                  "whole process CPU", "load average after the point"], rows)
    )


def render_real_path(d: dict, results: Path, quick: bool) -> str:
    def secs(r: dict | None) -> str:
        return _process_seconds(r, cpu=True)

    rows = []
    for p in d["points"]:
        us, ck = p["crowdqa"], p.get("crowd_kit")
        st = us.get("stages") or {}
        ratio = "–"
        if p.get("ratio_seconds"):
            ratio = f"{p['ratio_seconds']:.1f}× ({p['ratio_cpu_seconds']:.1f}× CPU)"
        elif ck and ck.get("capped") and not us.get("exit"):  # stopped at the cap: at least this much
            ratio = (f"> {ck['seconds'] / us['seconds']:.1f}× (> {ck['cpu_seconds'] / us['cpu_seconds']:.1f}× CPU "
                     "when stopped)")
        rows.append([p["data"], p["method"], f"{p['labels']:,}" if p.get("labels") else "–", secs(us), secs(ck),
                     ratio, " / ".join(f"{st.get(k, 0):.2f}" for k in ("reading", "fitting", "scoring", "writing")),
                     f"{us['peak_rss_mib']:.0f}" + (f" / {ck['peak_rss_mib']:.0f}" if ck else "") + " MiB"])
    return (
        "What a user waits on the real data of ../shared/data: `crowdqa aggregate` with its default report against "
        "the experts (reading, fit, report, writing) next to crowd-kit's whole process on the same file "
        "(`pandas.read_csv`, or for PICO the JSON Lines cut into `\\S+` tokens, then `fit_predict` and `to_csv`). "
        f"{d['meta'].get('note', '')}. crowd-kit runs are stopped at the cap (the ratio then uses its seconds "
        "until the stop). On the categorical files, this small, both processes are mostly start-up: crowd-kit's "
        "imports (pandas, scikit-learn) alone take seconds.\n\n"
        + _table(["data", "method", "labels", "crowdqa whole process", "crowd-kit whole process",
                  "crowd-kit / crowdqa", "crowdqa stages: read / fit / score / write (s)",
                  "peak RSS crowdqa / crowd-kit"], rows)
    )


def render_readers(d: dict, results: Path, quick: bool) -> str:
    def per_s(x: float) -> str:
        return f"{x / 1e6:.2f} M/s" if x >= 1e5 else f"{x / 1e3:.1f} k/s"

    target = d["target_rows_per_second"]
    memory = any("peak_rss_mib" in p for p in d["formats"].values())  # runs before it was measured have none
    rows = []
    for fmt, p in d["formats"].items():
        best = max(p["rows_per_cpu_second"], p["labels_per_cpu_second"])
        rows.append([fmt, p["row"], f"{p['rows']:,}", f"{p['labels']:,}", f"{p['wall_seconds']:.2f} s",
                     f"{p['cpu_seconds']:.2f} s", per_s(p["rows_per_second"]), per_s(p["labels_per_second"]),
                     per_s(p["rows_per_cpu_second"]), per_s(p["labels_per_cpu_second"]),
                     "yes" if best >= target else "no"])
        if memory:
            rows[-1] += ([f"{p['input_mib']:.1f} MiB", f"{p['peak_rss_mib']:.0f} MiB ({p['before_rss_mib']:.0f})"]
                         if "peak_rss_mib" in p else ["–", "–"])
    text = (f"`ingest.read_corpus` on a synthetic file of each format (`benchmarks/readers.py` documents the layouts), "
            f"best of the timed runs after a warm-up; rows are the file's data rows, labels the corpus's "
            f"(token, annotator) labels. CPU seconds (all threads) do not count the time spent waiting for a core. "
            f"Target: {target / 1e6:.0f}M rows or labels per second. {d['meta'].get('note', '')}.")
    if memory:
        text += (" Memory: the input's size on disk (texts of a `docs` folder not counted) and the peak resident set "
                 "of a fresh process while it reads it (in brackets: its resident set before, a small file of the "
                 "format read first so every import is done).")
    head = ["format", "row", "rows", "labels", "wall", "CPU", "rows/s", "labels/s", "rows per CPU-s",
            "labels per CPU-s", f"≥ {target / 1e6:.0f}M per CPU-s"] + (["input", "peak RSS"] if memory else [])
    return text + "\n\n" + _table(head, rows)


def render_document_memory(d: dict, results: Path, quick: bool) -> str:
    """Each reader's peak memory per input size, within the document-length bound and past it."""
    rows = []
    for p in d["points"]:
        shape = (f"{p['shape']} of {p['chars_per_document']:,} characters" if p["shape"].startswith("one document")
                 else f"{p['shape']} of {p['chars_per_document']:,} characters each")
        rows.append([p["format"], shape, f"{p['input_mib']:.2f}", f"{p['added_mib']:.1f}",
                     f"{p['peak_rss_mib']:.0f}", p["outcome"]])
    return ("`ingest.read_corpus` of each format in a fresh process per file (VmHWM, after a small file of the format "
            "so every import is done); two annotators, a span every 60 characters. Added: the peak less the resident "
            "set before the read. The bound is `CROWDQA_MAX_DOCUMENT_CHARS` / `CROWDQA_MAX_DOCUMENT_TOKENS` "
            f"([What is bounded](reference/bounds.md)). {d['meta'].get('note', '')}.\n\n"
            + _table(["format", "input", "file MiB", "added MiB", "peak MiB", "outcome"], rows))


def render_bsc_seq(d: dict, results: Path, quick: bool) -> str:
    pub = d["published"]
    parts = []
    p = d.get("pico")
    if p:
        data = p["data"]
        hmm_fit = p["methods"]["HMMCrowd"]["fit_seconds"]
        rows = [[name, _ci(m, "precision"), _ci(m, "recall"), _ci(m, "f1"), _ms(m["fit_seconds"]),
                 f"{m['fit_seconds'] / hmm_fit:.2f}×", "–" if m.get("iterations") is None else m["iterations"],
                 _f(pub["pico_relaxed_span_f1"].get(name))]
                for name, m in p["methods"].items()]
        best, ratio = p["best_of_repeats"], p["ratio_to_hmmcrowd"]
        parts.append(
            f"PICO Participants (abstract texts), token-level against the union of the experts on "
            f"{data['expert_documents']} expert documents ({data['expert_tokens']:,} tokens); {data['documents']:,} "
            f"documents, {data['crowd_labels']:,} crowd labels from {data['crowd_workers']} workers fitted together; "
            "defaults unless named. P and R with Clopper-Pearson intervals, F1 with a document bootstrap (95%). "
            "The published column is Simpson & Gurevych (2019), Table 2: *relaxed span* F1 on their own PICO "
            "split, so it is not the same measure as ours.\n\n"
            + _table(["method", "precision", "recall", "F1", "fit", "fit / HMMCrowd fit", "iterations",
                      "published (PICO, relaxed span F1)"], rows)
            + f"\n\nWhole job path (`crowdqa.jobs.pipeline.run_pipeline`: fit + report), best of "
            f"{len(p['whole_path']['HMMCrowd'])} interleaved runs on a shared machine: HMMCrowd "
            f"{_ms(best['HMMCrowd']['total'])} (fit {_ms(best['HMMCrowd']['fit'])}), BSC-seq "
            f"{_ms(best['BSC-seq']['total'])} (fit {_ms(best['BSC-seq']['fit'])}): BSC-seq / HMMCrowd = "
            f"{ratio['fit']:.2f}× for the fit, {ratio['whole_path']:.2f}× for the whole path."
        )
    s = d["synthetic_ner"]
    rows = [[name, _f(m["span_f1_mean"]), " / ".join(_f(x) for x in m["span_f1_per_seed"]),
             _ms(m["fit_seconds_mean"]), _f(pub["ner_span_f1"].get(name))] for name, m in s["methods"].items()]
    habits = s.get("habits_first_seed", {})
    habit_text = "; ".join(
        f"{kind} ({h['annotators']}): late start {_f(h['late_start'])}, early stop {_f(h['early_stop'])}"
        for kind, h in habits.items() if h["annotators"])
    parts.append(
        f"Synthetic CoNLL-like crowd (`benchmarks/ner_crowd.py`): {s['sentences']:,} sentences per seed "
        f"({s['tokens_first_seed']:,} tokens, {s['labels_first_seed']:,} labels for seed {s['seeds'][0]}), 4 types in "
        f"BIO, {s['per_sentence']} annotators per sentence of accuracy {s['accuracy'][0]}-{s['accuracy'][1]} with "
        "planted late starters, early stoppers, span extenders and spammers. Strict span F1 (type and both "
        "boundaries) against the truth; the published column is the paper's span F1 on the real CoNLL-2003 crowd "
        "of Rodrigues et al. (2014), which we do not have.\n\n"
        + _table(["method", "span F1 (mean)", "per seed", "fit (mean)", "published (CoNLL-2003 crowd)"], rows)
        + (f"\n\nHabits BSC-seq recovers (seed {s['seeds'][0]}, annotators with ≥ 500 labels, mean fitted "
           f"P(B-X | true I-X, previous O) = late start and P(O | true I-X, previous I-X) = early stop, by planted "
           f"kind): {habit_text}." if habit_text else "")
    )
    parts.append(f"Published figures: {pub['source']}.")
    return "\n\n".join(parts)


def _params_text(params: dict) -> str:
    """``k=v, ...``; a list value (a tuple before JSON) as its items joined by ``+``."""
    return ", ".join(f"{k}={'+'.join(map(str, v)) if isinstance(v, list | tuple) else v}" for k, v in params.items())


def _protocol_tables(d: dict, *, candidates_of: str) -> tuple[str, str, dict[str, str]]:
    """The protocol's three tables of a results file (``seq_protocol``, ``tagger``): the methods with intervals and
    fit times (after a sentence on the sets), the candidates and the rule, and the halving cross-check."""
    sets = d["sets"]
    names = list(sets)
    label = {"conll_val": "conll_val span F1", "pico": "PICO dev token F1"}
    header = ["method"] + [f"{label.get(n, n)} ({x})" for n in names for x in ("whole", "small project")]
    header += [f"fit, {n} whole" for n in names]
    rows = [[name] + [_ci(m[f"{n}{suffix}"], "f1") for n in names for suffix in ("", "_small")]
            + [_ms(m[n]["fit"]["seconds"]) + ("" if m[n]["fit"]["iterations"] is None else
                                            f" ({m[n]['fit']['iterations']} it.)") for n in names]
            for name, m in d["methods"].items()]
    size = "; ".join(f"{n}: {s['documents']:,} documents ({s['tokens']:,} tokens), {s['scored_documents']} scored, "
                     f"small project {s['small_documents']} documents fitted alone" for n, s in sets.items())
    grid_rows = [[_params_text(c["params"])] + [_f(c["f1"][n][x]) for n in names for x in ("whole", "small")]
                 + [_f(c["score"], 4) + (" **chosen**" if c["params"] == d["chosen"] else "")] for c in d["grid"]]
    cross = [[f"{r['chosen_on']} → {r['reported_on']}", _params_text(r["chosen"]), _f(r["score_on_chosen_half"], 4),
              _f(r["score_on_reported_half"], 4), _params_text(r["best_on_reported_half"]),
              _f(r["best_score_on_reported_half"], 4)] for r in d["cross_check"]]
    methods = (
        f"Every sequence method with its defaults ({size}). conll_val: strict span F1 (conlleval); PICO: token F1 "
        "against the union of the experts on the 64 expert-dev documents; F1 with a 95% document bootstrap "
        "interval. The protocol is in `benchmarks/README.md`.\n\n" + _table(header, rows))
    rule = (f"\n\n{candidates_of} candidates and the rule ({d['rule']}):\n\n"
            + _table(["candidate"] + [f"{n} {x}" for n in names for x in ("whole", "small")] + ["score"], grid_rows)
            + "\n\nCross-check: the scored documents of each set halved at random; the candidate the rule picks on "
              "one half, scored on the other, beside the best candidate of that other half.\n\n"
            + _table(["chosen on → reported on", "chosen", "score, chosen half", "score, other half",
                      "best on the other half", "its score"], cross))
    return methods, rule, label


def render_seq_protocol(d: dict, results: Path, quick: bool) -> str:
    """Issue 28: every sequence method on conll_val and PICO dev, and the protocol that chose BSC-seq's defaults."""
    methods, rule, label = _protocol_tables(d, candidates_of="BSC-seq")
    return methods + rule + _iteration_table(d.get("iterations"), label)


def render_tagger(d: dict, results: Path, quick: bool) -> str:
    """Issue 43: HMM-Crowd with a tagger in the loop beside the other sequence methods, its defaults by the protocol,
    and pre-annotation of sentences nobody annotated."""
    methods, rule, _ = _protocol_tables(d, candidates_of="hmm-crowd-tagger")
    pre = [[f"{r['learned_on']} → {r['labelled']}", f"{r['sentences_learned']:,}",
            f"{r['sentences_labelled']:,} ({r['tokens_labelled']:,} tokens)", _ci(r["unseen"], "f1"),
            _f(r["aggregate_of_the_learned_half"]["f1"]), _ms(r["fit_seconds"]), _ms(r["predict_seconds"])]
           for r in d.get("pre_annotation", [])]
    return (methods + rule + "\n\nPre-annotation: conll_val's sentences halved at random (seed 0); the method at its "
            "defaults learns from one half's crowd labels and labels the other half's words, whose labels it never "
            "reads (strict span F1 against the gold, 95% sentence bootstrap interval), beside its aggregate of the "
            "half it learned from.\n\n"
            + _table(["learned on → labelled", "sentences learned", "sentences labelled", "F1, unseen sentences",
                      "F1, aggregate of the learned half", "fit", "labelling"], pre))


def render_calibration(d: dict, results: Path, quick: bool) -> str:
    """Issue 48: every method's span ECE as fitted, at its label-free default temperature and fitted on the experts
    (cross-fitted), on conll_val and PICO dev, and the rule's choice with its cross-check."""
    def ece(block: dict) -> str:
        lo, hi = block["ece_interval"]
        return f"{_f(block['ece'])} ({_f(lo)}–{_f(hi)})" if lo is not None else _f(block["ece"])

    names = sorted({n for m in d["methods"].values() for n in m["sets"]})
    header = ["method", "default (scope, T)"] + [f"{n}: {x}" for n in names
                                                 for x in ("ECE as fitted", "ECE default", "ECE with experts",
                                                           "Brier default", "lowest tenth's errors ×")]
    rows = []
    for method, m in d["methods"].items():
        row = [method, f"{m['scope']}, {m['temperature']:g}"]
        for n in names:
            s = m["sets"].get(n)
            row += ["–"] * 5 if s is None else [
                ece(s["as_fitted"]), ece(s["default"]), ece(s["with_experts"]), _f(s["default"]["brier"]),
                _f(s["default"]["low_score_error_ratio"], 2)]
        rows.append(row)
    cross = [[method] + [f"{c['candidate'][0]} {c['candidate'][1]:g}: {_f(c['ece_choosing_half'])} → "
                         f"{_f(c['ece_other_half'])} (best there {c['other_half_best'][1]:g}: "
                         f"{_f(c['other_half_best_ece'])})" for c in m["cross_check"].values()]
             for method, m in d["methods"].items()]
    return ("Span scores (the probability that a span is exactly right) against the truth: conll_val's gold, PICO "
            "dev's 64 expert documents (union of the experts); ECE over 10 bins with a 95% document-bootstrap "
            f"interval. The default is chosen by the rule ({d['rule']}); with experts: the temperature fitted on "
            "three folds of the documents, scored on the fourth. The protocol is in `benchmarks/README.md`.\n\n"
            + _table(header, rows)
            + "\n\nCross-check (mean ECE over the sets): chosen on half A, reported on half B, and the other way.\n\n"
            + _table(["method", "chosen on A → on B", "chosen on B → on A"], cross))


def _iteration_table(curves: dict | None, label: dict[str, str]) -> str:
    """F1 of the whole sets after exactly n EM/VB iterations (``seq_protocol``'s ``iterations``), if recorded."""
    if not curves:
        return ""
    steps = sorted({r["iterations"] for per_set in curves.values() for rows in per_set.values() for r in rows})
    rows = [[f"{method}, {label.get(name, name)}"]
            + [next((_f(r["f1"]) for r in per[name] if r["iterations"] == n), "") for n in steps]
            for method, per in curves.items() for name in per]
    return ("\n\nThe whole sets after exactly n iterations (the other defaults kept; reported, never chosen "
            "from):\n\n" + _table(["method, set"] + [f"{n} it." for n in steps], rows))


def render_routing(d: dict, results: Path, quick: bool) -> str:
    s, full = d["setup"], d["full_pool"]
    names = {"routed": "routed (crowdqa route)", "uncertainty": "uncertainty sampling (token entropy)",
             "longest": "longest documents first", "random": f"random (mean of {s['seeds']} orders)"}
    metrics = [("precision_width", "P width"), ("recall_width", "R width"), ("f1_width", "F1 width"),
               ("precision_error", "P error"), ("recall_error", "R error"), ("f1_error", "F1 error"),
               ("worker_precision_width", "workers' P width"), ("worker_recall_width", "workers' R width")]
    area = d["mean_over_reveals"]
    rows = [[names.get(k, k), *(_f(v[m]) for m, _ in metrics)] for k, v in area.items()]
    beats = d["random_seeds_worse_than_routed"]
    rows.append(["random orders worse than routed", *(f"{100 * beats[m]:.0f}%" for m, _ in metrics)])
    points = []
    for n in d["checkpoints"]:
        c = {k: v for k, v in d["curves"].items()}
        points.append([str(n), *(_f(c[k]["f1_width"][n - 1]) for k in names if k in c),
                       *(_f(c[k]["worker_precision_width"][n - 1]) for k in names if k in c)])
    order = [k for k in names if k in d["curves"]]
    return (
        f"PICO Participants, {s['method']} on the crowd alone; the {s['pool_documents']} documents with expert labels "
        f"are the pool (experts hidden, then revealed in each order); full-pool values P {_f(full['precision'])}, "
        f"R {_f(full['recall'])}, F1 {_f(full['f1'])}. Each cell is the mean over n = 1 .. "
        f"{s['pool_documents'] - 1} revealed documents of the interval width (95%: Clopper-Pearson for P and R, "
        "document bootstrap for F1) or of the distance from the full-pool value; workers' widths are weighted by "
        "each worker's share of the crowd labels (1 while unmeasured). Lower is better.\n\n"
        + _table(["order", *(t for _, t in metrics)], rows)
        + "\n\nAfter n documents: the aggregate's F1 interval width, then the workers' precision width:\n\n"
        + _table(["n", *(f"F1 · {k}" for k in order), *(f"workers P · {k}" for k in order)], points)
    )


def render_batches(d: dict, results: Path, quick: bool) -> str:
    s = d["setup"]
    rows = []
    for method, m in d["methods"].items():
        refit = m["runs"]["refit"]["seconds"]
        for name, r in m["runs"].items():
            rows.append([NAMES.get(method, method), name, f"{r['seconds']:.2f} s", f"{r['seconds'] / refit:.2f}",
                         f"{r['fit_seconds']:.2f} s", str(r["iterations"]),
                         f"{100 * r['agreement_with_joint_refit']:.2f}%", _f(r.get("precision")),
                         _f(r.get("recall")), _ci(r, "f1")])
    return (
        f"PICO Participants split into two batches of {s['documents'][0]} and {s['documents'][1]} documents "
        f"({s['labels'][0]:,} and {s['labels'][1]:,} labels; {s['batch2_workers_seen_in_batch1']} of batch 2's "
        f"{s['batch2_crowd_workers']} crowd workers were in batch 1). Batch 2 aggregated four ways, each the whole "
        f"pipeline (fit + report; least of {s.get('repeats', 1)} runs), one after another in one process; the "
        "machine was shared, so read the ratios. Agreement: share of batch 2's crowd-labelled tokens labelled as "
        f"the joint refit labels them; P, R, F1 (95% CI): tokens of batch 2's {s['expert_documents_batch2']} expert "
        "documents against the experts.\n\n"
        + _table(["method", "batch 2", "seconds", "÷ refit", "fit", "EM iterations", "agreement with joint refit",
                  "precision", "recall", "F1"], rows)
    )


def render_spammers(d: dict, results: Path, quick: bool) -> str:
    rows = []
    for name, r in d["planted"].items():
        rows.append([name, str(r["seeds"]), f"{r['spammers_blocked']} / {r['spammers']}", str(r["spammers_judged"]),
                     str(r["spammers_watched"]), f"{r['honest_blocked']} / {r['honest']}",
                     str(r["honest_blocked_above_bar"]), str(r["honest_watched"])])
    planted = _table(["crowds", "seeds", "spammers blocked", "spammers with 20+ items", "spammers watched",
                      "honest workers blocked", "of them above the bar", "honest watched"], rows)
    rows = []
    for name, r in d["real_gold_halved"].items():
        before, after = r["all_workers"], r["without_blocked"]
        f1 = (f" (token F1 {before['token_f1']:.4f} -> {after['token_f1']:.4f})" if "token_f1" in before else "")
        rows.append([name, str(r["crowd_workers"]), f"{r['expert_documents_given']} / {r['expert_documents_held_out']}",
                     f"{r['verdicts']['block']} / {r['verdicts']['watch']}", f"{100 * r['blocked_label_share']:.1f}%",
                     f"{before['accuracy']:.4f}", f"{after['accuracy']:.4f}{f1}", f"{r['accuracy_change']:+.4f}"])
    real = _table(["set", "crowd workers", "expert items given / held out", "blocked / watched",
                   "labels of the blocked", "DS accuracy, all workers", "without the blocked", "change"], rows)
    return ("Planted spammers: synthetic categorical crowds (1,000 items, 30 honest workers of accuracy 0.6-0.95, "
            "10 spammers: uniform, one label always, one label 90%), DS with the default verdict rules "
            "(`crowdqa.quality.worker_quality.VerdictRules`). Above the bar: an honest worker whose true spammer score "
            "is at least the rule's block bar (0.05), so a block the rule does not mean.\n\n" + planted
            + "\n\nReal sets, gold halved: the report built with half of the expert items blocks workers; DS refitted "
              "without them, both fits scored on the other half (token accuracy for span sets).\n\n" + real)


def render_tags(d: dict, results: Path, quick: bool) -> str:
    """The tags scheme: partial conll_val and PICO, the synthetic POS-like crowd, the 1M-label token table."""
    parts = []
    c = d.get("conll_val_partial")
    if c:
        rows = [["all labels, BIO scheme", f"{c['all_labels_bio']['labels_per_token']:.2f}",
                 f"{c['all_labels_bio']['f1']:.4f}"],
                ["all labels, tags scheme", f"{c['all_labels_tags']['labels_per_token']:.2f}",
                 f"{c['all_labels_tags']['f1']:.4f}"]]
        for key, what in (("per_token", "kept token by token (partial sentences)"),
                          ("per_sentence", "kept as whole sentences")):
            rows.append([f"{100 * c['keep']:.0f}% of labels {what}",
                         f"{sum(r['labels_per_token'] for r in c[key]) / len(c[key]):.2f}",
                         f"{c['mean_f1'][key]:.4f} (seeds " + ", ".join(f"{r['f1']:.4f}" for r in c[key]) + ")"])
        parts.append(f"conll_val ({c['sentences']:,} sentences, {c['tokens']:,} tokens): HMM-Crowd's strict span F1 "
                     "(conlleval) against the gold, its nine tags read as a tag set (no BIO rule) unless named; "
                     f"partial minus whole sentences: {c['difference']:+.4f} (target within .01: "
                     f"{'met' if c['target_met'] else 'not met'}).\n\n"
                     + _table(["labels", "labels a token", "span F1"], rows))
    p = d.get("pico_partial")
    if p:
        rows = [[NAMES.get(m, m), *(f"{r[k]['f1']:.4f}" for k in ("all_labels", "per_token", "per_document"))]
                for m, r in p["methods"].items()]
        parts.append(f"PICO Participants as tags ({p['documents']:,} documents, {p['tokens']:,} tokens; "
                     f"{p['crowd_labels_per_labelled_token']} labels a labelled token, "
                     f"{p['labels_per_labelled_token_after']} after keeping {100 * p['keep']:.0f}% token by token): "
                     f"token F1 of Participants against the union of the experts ({p['expert_tokens']:,} tokens).\n\n"
                     + _table(["method", "all labels", "kept per token", "kept per document"], rows))
    s = d.get("synthetic_pos")
    if s:
        acc = s["token_accuracy"]
        parts.append(f"Synthetic part-of-speech-like crowd ({s['settings']['n_docs']:,} sentences, "
                     f"{s['settings']['n_classes']} tags from a Markov chain, {s['settings']['n_workers']} workers, "
                     f"{s['settings']['labels_per_token']} labels a token, each worker labelling single tokens; mean "
                     f"of seeds {s['seeds']}): token accuracy against the truth. Best sequence method "
                     f"{s['best_sequence']:.4f}, best categorical {s['best_categorical']:.4f}.\n\n"
                     + _table(["method", "token accuracy"], [[k, f"{v:.4f}"] for k, v in acc.items()]))
    t = d.get("token_table_speed")
    if t:
        ck = t.get("crowdkit", {})
        rows = [["crowdqa (read_corpus + DawidSkene)", f"{t['crowdqa']['read_seconds']:.2f}",
                 f"{t['crowdqa']['fit_seconds']:.2f}", f"{t['crowdqa']['seconds']:.2f}"]]
        if "seconds" in ck:
            rows.append(["crowd-kit 1.4.2 (pandas read_csv + DawidSkene)", f"{ck['read_seconds']:.2f}",
                         f"{ck['fit_seconds']:.2f}", f"{ck['seconds']:.2f}"])
        parts.append(f"A token table of {t['labels']:,} labels ({t['file_mb']} MB CSV, {t['tokens']:,} tokens, "
                     f"{t['workers']} workers, 12 tags) read and aggregated by Dawid-Skene "
                     f"({t['crowdqa']['iterations']} EM iterations; crowd-kit ran as many), best of "
                     f"{t['repeats']}; labels agreeing with crowd-kit's: "
                     f"{100 * ck.get('label_agreement_with_crowdqa', float('nan')):.2f}%. Target, read and aggregated "
                     f"in under 5 s: {'met' if t['target_met'] else 'not met'}.\n\n"
                     + _table(["what", "read s", "fit s", "total s"], rows))
    return "\n\n".join(parts)


def render_compare(d: dict, results: Path, quick: bool) -> str:
    titles = {"conll_val": "CoNLL-2003 crowd, validation half (`../shared/data/conll_val`)",
              "pico_dev": "PICO Participants, dev split and the expert-dev documents (`../shared/data/pico`)"}
    parts = []
    for key, title in titles.items():
        r = d.get(key)
        if r is None:
            continue
        metric = {"span_f1": "typed span F1 (conlleval)", "token_f1": "token F1",
                  "accuracy": "accuracy"}[r["metric"]]
        extra = sorted({k for m in r["methods"] for k in m.get("extra", {})})
        rows = [[m["method"], f"{_f(m['value'])} [{_f(m['low'])}, {_f(m['high'])}]",
                 f"{_f(m['diff'])} [{_f(m['diff_low'])}, {_f(m['diff_high'])}]",
                 *[_f(m["extra"].get(k)) for k in extra], _ms(m["seconds"])] for m in r["methods"]]
        warnings = "".join(f" Warning: {w}." for w in r["warnings"])
        parts.append(
            f"**{title}**: {r['corpus_documents']:,} documents, {r['tokens']:,} tokens, {r['crowd_labels']:,} crowd "
            f"labels, fitted on the crowd only; scored against the experts on {r['documents']:,} expert documents, "
            f"{r['n_boot']:,} paired document resamples. The whole comparison took "
            f"{r['seconds']:.1f} s, its fits {r['fit_seconds']:.1f} s (reading {r['read_seconds']:.1f} s apart)."
            f"\n\n" + _table(["method", f"{metric} [95%]", "difference to the best [95%, paired]",
                               *[k.replace("_", " ") for k in extra], "fit"], rows)
            + f"\n\nRecommended: **{r['recommended']}** ({r['reason']}).{warnings}")
    return "\n\n".join(parts)


def render_method_choice(d: dict, results: Path, quick: bool) -> str:
    """Regret of ``--method auto`` (the rule of crowdqa.quality.method_choice) beside always-DS and always-MV, and
    of auto told whether to use the experts, where the results have those rules. Auto's default compares both
    kinds of candidates (the results' ``variants`` rule, as ``compare --expert-variants``); a results file that
    measured only the crowd-only rule (``auto``, from before that was ``--no-use-experts``) reads as auto."""
    measured = (d["table"] or [{}])[0]
    rules = [r for r in ("variants", "auto_use_experts", "auto") if f"{r}_regret" in measured]
    default = "variants" if "variants" in rules else "auto"
    titles = {"variants": "auto", "auto_use_experts": "auto --use-experts",
              "auto": "auto --no-use-experts" if default == "variants" else "auto"}
    rows = []
    for r in d["table"]:
        picks = r.get(f"chosen_{default}", r["chosen"]) if default != "auto" else r["chosen"]
        chosen = sorted(set(picks), key=lambda c: (-picks.count(c), c))
        rows.append([r["set"], r["role"], ", ".join(f"{c} ×{picks.count(c)}" for c in chosen),
                     *[f"{_f(r[f'{rule}_held_out'])} ({_f(r[f'{rule}_regret'])})" for rule in rules],
                     f"{_f(r['always_ds_held_out'])} ({_f(r['always_ds_regret'])})",
                     f"{_f(r['always_mv_held_out'])} ({_f(r['always_mv_regret'])})", _f(r["best_held_out"])])
    mean = d["mean_regret"]
    lines = [f"{g}: " + ", ".join(f"{titles[rule]} {_f(m[rule])}" for rule in rules)
             + f", always-DS {_f(m['always_ds'])}, always-MV {_f(m['always_mv'])}"
             for g, m in mean.items() if m[default] is not None]
    prior = d["prior_committed"]
    worst = d.get("worst_set_regret") or {"auto": d["worst_set_regret_auto"]}
    kinds = ("auto compares the crowd-only fits. " if default == "auto" else
             "auto (the default) compares both kinds of candidates, each method on the crowd alone and with the "
             "experts clamped (as compare --expert-variants); auto --use-experts the clamped ones only, "
             "auto --no-use-experts the crowd-only ones. ")
    return (f"Each gold set halved {d['splits']} times at random (one half given as the experts, the other held "
            "out; synthetic crowds: 200 expert items, the rest held out); held-out score of the candidate chosen, "
            "mean over the splits, and its regret (the best candidate's held-out score minus it) in brackets. "
            + kinds + "Rule constants fitted on the `train` sets, checked on the `check` sets. Prior used: "
            + "; ".join(f"{k}: anchor {v['anchor']}, shortfall {v['shortfall']}, spread {v['spread']}"
                        for k, v in prior.items()) + ".\n\n"
            + _table(["set", "role", "auto chose (splits)", *[f"{titles[rule]} (regret)" for rule in rules],
                      "always-DS (regret)", "always-MV (regret)", "best"], rows)
            + "\n\nMean regret, " + "; ".join(lines) + ". Worst set: "
            + ", ".join(f"{titles[rule]} {_f(worst[rule])}" for rule in rules if rule in worst) + "."
            + _auto_cost(d))


def _auto_cost(d: dict) -> str:
    """The seconds of ``--method auto`` (comparison and pipeline) per categorical set, where the run measured them."""
    costs = [(name, s["auto_cost"]) for name, s in d.get("sets", {}).items() if "auto_cost" in s]
    if not costs:
        return ""
    return ("\n\nWhat auto costs (its comparison and the pipeline reusing its fit, every gold label as the experts': "
            "seconds, estimator fits): " + "; ".join(
                f"{name} {c['crowd']['seconds']:.2f} s, {c['crowd'].get('fits', '?')} fits with --no-use-experts "
                f"(--use-experts "
                f"{c['use_experts']['seconds']:.2f} s, {c['use_experts'].get('fits', '?')} fits)" for name, c in costs)
            + ".")


def render_rerun_all(d: dict, results: Path, quick: bool) -> str:
    """The steps of one ``python -m benchmarks all [--quick]`` run and their seconds."""
    rows = [[s["benchmark"], f"`{s['command']}`", f"{s['seconds']:.0f} s", "ok" if not s["exit"] else
             f"exit {s['exit']}"] for s in d["steps"]]
    total = sum(s["seconds"] for s in d["steps"])
    m = d["meta"]
    load = (f" The 1-minute load average was {m['load_average_before'][0]:.1f} at the start and "
            f"{m['load_average_after'][0]:.1f} at the end (other work shared the machine)."
            if m.get("load_average_before") and m.get("load_average_after") else "")
    return (f"`{m['command']}` ran {len(rows)} steps one after another in {total / 60:.1f} minutes "
            f"({m.get('machine', 'machine not recorded')}).{load}\n\n"
            + _table(["benchmark", "command", "seconds", "result"], rows))


#: results stem -> (section title, command without --quick, renderer), in the page's order.
SECTIONS: dict[str, tuple[str, str, Callable[[dict, Path, bool], str]]] = {
    "pico_study": ("PICO / EBM-NLP aggregation study", "python -m benchmarks.pico_study", render_pico_study),
    "categorical": ("Categorical accuracy vs crowd-kit", "python -m benchmarks.categorical", render_categorical),
    "whole_path": ("What a user waits: the whole command vs crowd-kit's whole process",
                   "python -m benchmarks.whole_path", render_whole_path),
    "whole_path_5000w": ("The report against the fit: 5,000 workers",
                         "python -m benchmarks.whole_path --sizes 3e6 --workers 5000 --no-peer --no-api",
                         render_report_vs_fit),
    "real_path": ("What a user waits on real data: Snow, Bluebirds, PICO", "python -m benchmarks.real_path",
                  render_real_path),
    "categorical_speed": ("Categorical aggregators: fit time vs crowd-kit at 300k labels",
                          "python -m benchmarks.categorical_speed", render_categorical_speed),
    "readers": ("Reader throughput", "python -m benchmarks.readers", render_readers),
    "document_memory": ("Reader memory per document size, and the document-length bound",
                        "python -m benchmarks.document_memory", render_document_memory),
    "ds_speed": ("Dawid-Skene speed and memory vs crowd-kit", "python -m benchmarks.ds_speed", render_ds_speed),
    "hmm_crowd": ("HMM-Crowd EM step and PICO fit", "python -m benchmarks.hmm_crowd", render_hmm_crowd),
    "bsc_seq": ("Bayesian sequence combination (BSC-seq) vs HMM-Crowd", "python -m benchmarks.bsc_seq",
                render_bsc_seq),
    "seq_protocol": ("Sequence methods on conll_val and PICO dev, and how BSC-seq's defaults were chosen",
                     "python -m benchmarks.seq_protocol", render_seq_protocol),
    "tagger": ("HMM-Crowd with a tagger in the loop: defaults by the protocol, pre-annotation",
               "python -m benchmarks.tagger", render_tagger),
    "ingest_pico": ("Ingest throughput", "python -m benchmarks.ingest_pico", render_ingest_pico),
    "scaling": ("Scaling from 10^4 to 10^7 labels", "python -m benchmarks.scaling", render_scaling),
    "service_overhead": ("Service overhead", "python benchmarks/service_overhead.py", render_service_overhead),
    "load": ("Load: 20 concurrent clients", "python benchmarks/load.py", render_load),
    "sample_size_example": ("Sample size for an expert subset (SLiCE)", "python -m benchmarks.sample_size_example",
                            render_sample_size),
    "routing": ("Routing documents to the experts: narrowing per document revealed", "python -m benchmarks.routing",
                render_routing),
    "batches": ("New batches: an earlier model vs a refit", "python -m benchmarks.batches", render_batches),
    "calibration": ("Calibrated scores: span ECE of every method on conll_val and PICO dev",
                    "python -m benchmarks.calibration", render_calibration),
    "compare": ("Which method for my data: crowdqa compare on CoNLL val and PICO dev", "python -m benchmarks.compare",
                render_compare),
    "spammers": ("Finding spammers: the worker verdict on planted and real crowds", "python -m benchmarks.spammers",
                 render_spammers),
    "tags": ("Tag labels: partial sentences, a POS-like crowd, a 1M-label token table", "python -m benchmarks.tags",
             render_tags),
    "method_choice": ("Which method auto chooses with a few hundred expert items, and its regret",
                      "python -m benchmarks.method_choice", render_method_choice),
    "rerun_all": ("Rerun every number: the time it takes", "python -m benchmarks all", render_rerun_all),
}


def _stale(data: dict, stem: str, repo: Path) -> str | None:
    """Why ``data`` (and every run whose points a ``--merge`` kept in it) is not from the current code."""
    sources = SOURCES.get(stem)
    if sources is None:
        return "benchmarks/registry.py lists no source paths for it"
    meta = data.get("meta")
    while True:
        reason = stale_reason(meta, sources, repo)
        if reason or not (meta or {}).get("merged_with"):
            return reason
        meta = meta["merged_with"]


def _pick(results: Path, stem: str, repo: Path | None) -> tuple[Path | None, dict | None, str | None]:
    """The full run's file if current, else the quick run's if current, else the full (or quick) one and why
    it is not current. ``repo=None`` skips the check (rendering other folders' files, tests of layouts)."""
    found = []
    for path in (results / f"{stem}.json", results / f"{stem}_quick.json"):
        if path.exists():
            data = json.loads(path.read_text(encoding="utf-8"))
            reason = None if repo is None else _stale(data, stem, repo)
            if reason is None:
                return path, data, None
            found.append((path, data, reason))
    return found[0] if found else (None, None, None)


def render(results: Path = RESULTS, *, repo: Path | None = REPO) -> str:
    """The markdown of every section whose results file exists, plus a list of files no section reads.

    A results file that is not from the current code (:func:`_stale`) is named with the reason and
    the command that reruns it, in place of its table.
    """
    parts = ["Generated by `python -m benchmarks.tables` from `benchmarks/results/*.json`; do not edit by hand. "
             "Each table names the command, the commit and the date of its run; `python -m benchmarks all` "
             "reruns them all."]
    used: set[str] = set()
    for stem, (title, command, renderer) in SECTIONS.items():
        path, data, stale = _pick(results, stem, repo)
        if path is None:
            continue
        used.add(path.name)
        if stale:
            bench = BY_STEM.get(stem)
            steps = () if bench is None else bench.quick if path.stem.endswith("_quick") else bench.steps
            rerun = " && ".join(f"`python {' '.join(step)}`" for step in steps) or f"`{command}`"
            # The reason goes to stderr, not the page: it names the newest change, and whether a rebased-away
            # commit is known differs between clones; the page's text must be the same in every checkout.
            print(f"{path.name}: not shown: {stale}", file=sys.stderr)
            commit = (data.get("meta") or {}).get("commit")
            parts.append(f"### {title}\n\nNot shown: `benchmarks/results/{path.name}` "
                         f"({f'commit `{commit[:10]}`' if commit else 'no commit'}) is not from the current code "
                         f"(`python -m benchmarks.tables --stdout` says why). Rerun: {rerun}.")
            continue
        try:
            body = renderer(data, results, path.stem.endswith("_quick"))
            line = _provenance(data, path, command)
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            print(f"warning: {path.name}: unexpected layout ({type(exc).__name__}: {exc})", file=sys.stderr)
            body = f"`{path.name}` has a layout this script does not know ({type(exc).__name__}: {exc}); rerun it."
            line = f"`benchmarks/results/{path.name}`"
        parts.append(f"### {title}\n\n{line}\n\n{body}")
    other = sorted(p.name for p in results.glob("*.json") if p.name not in used
                   and not (p.stem.endswith("_quick") and (results / f"{p.stem[:-6]}.json").exists())
                   and not (p.stem in SECTIONS and (results / f"{p.stem}_quick.json").exists()))
    if other:
        parts.append("Other results files (no table): " + ", ".join(f"`{n}`" for n in other) + ".")
    return "\n\n".join(parts) + "\n"


def update_page(markdown: str, page: Path = PAGE) -> bool:
    """Replace the text between the markers; False (page untouched) when the file or a marker is missing."""
    if not page.exists():
        return False
    text = page.read_text(encoding="utf-8")
    a, b = text.find(START), text.find(END)
    if a < 0 or b < a:
        return False
    new = text[: a + len(START)] + "\n" + markdown + text[b:]
    if new != text:
        page.write_text(new, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="results folder (default: benchmarks/results)")
    ap.add_argument("--page", type=Path, default=PAGE, help="page to update between the markers (docs/benchmarks.md)")
    ap.add_argument("--stdout", action="store_true", help="print the markdown; do not touch the page")
    args = ap.parse_args(argv)
    markdown = render(args.results)
    if args.stdout or not update_page(markdown, args.page):
        if not args.stdout:
            print(f"{args.page}: no '{START}' ... '{END}' markers; printing instead", file=sys.stderr)
        sys.stdout.write(markdown)
    else:
        print(f"updated the benchmark section of {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
