"""benchmarks.tables renders every section from small fake results files and edits only between the markers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import tables

REPO = Path(__file__).resolve().parents[2]


def _block(p: float, r: float, f: float) -> dict:
    return {"precision": p, "recall": r, "f1": f, "precision_ci": [p - 0.01, p + 0.01],
            "recall_ci": [r - 0.02, r + 0.02], "f1_ci": [f - 0.03, f + 0.03], "tp": 1, "fp": 1, "fn": 1}


_ROUTING_METRICS = ("precision_width", "recall_width", "f1_width", "precision_error", "recall_error", "f1_error",
                    "worker_precision_width", "worker_recall_width")


def _fakes() -> dict[str, dict]:
    """One minimal results file per section, in the layouts the benchmarks write."""
    meta = {"command": "python -m benchmarks.X", "machine": "Fake CPU, 2 cores", "date": "2026-01-02 03:04 UTC"}
    ck = {"fit_seconds": 2.0, "peak_rss_during_fit_mb": 300.0, "accuracy_first_100k_items": 0.9}
    us = {"fit_seconds": 0.02, "peak_rss_during_fit_mb": 60.0, "accuracy_first_100k_items": 0.9}
    point = {"n_tokens": 250, "fit_seconds": 0.5, "n_iter": 7, "peak_rss_during_fit_mb": 40.0, "fit_extra_mb": 2.4}
    return {
        "pico_study": {
            "meta": meta,
            "data": {"expert_documents": 64, "expert_tokens": 18648, "documents": 464, "crowd_labels": 788288,
                     "crowd_workers": 193},
            "methods": {m: {"ours": _block(0.884, 0.447, 0.594), "ours_experts_clamped_crossfit": _block(0.8, 0.5, 0.6),
                            "published": _block(0.954, 0.453, 0.614),
                            "paper": {"precision": 0.903, "recall": 0.507, "f1": 0.604}, "fit_seconds": 0.036}
                        for m in ("mv", "ds", "hmm-crowd")},
            "workers": {k: {"workers": 78, "precision": 0.5, "recall": 0.4, "f1": 0.45}
                        for k in ("mean_vs_expert", "mean_vs_aggregate")},
        },
        "categorical": {"meta": meta, "repeats": 5, "datasets": {"snow2008_rte": {
            "items": 800, "labels": 8000, "tied_items": 61, "published_mv_accuracy": 0.92,
            "ours": {"mv": {"accuracy": 0.91875, "fit_seconds": 0.0006}},
            "crowdkit": {"mv": {"accuracy": 0.875, "fit_seconds": 0.027, "speedup_ours": 45.0}}}}},
        "categorical_speed": {"meta": meta, "setup": {"labels": 300000, "items": 100000, "workers": 500,
                                                      "per_item": 3, "cap_seconds": 300},
                              "methods": {"glad": {"classes": 3, "crowdqa": {"fit_seconds": 2.0, "accuracy": 0.86},
                                                   "crowdkit": {"capped": True}, "speedup_at_least": 150.0},
                                          "kos": {"classes": 2, "crowdqa": {"fit_seconds": 0.5, "accuracy": 0.51},
                                                  "crowdkit": {"fit_seconds": 20.0, "accuracy": 0.5}, "speedup": 40.0,
                                                  "speedup_cpu": 30.0,
                                                  "rerun": {"date": "2026-11-27 10:00 UTC",
                                                            "command": "categorical_speed --row kos",
                                                            "load_average_at_start": [1.5, 1, 1],
                                                            "load_average_at_end": [2.0, 1, 1]}},
                                          "ibcc": {"classes": 3, "crowdqa": {"fit_seconds": 1.0, "accuracy": 0.87}},
                                          "mv": {"classes": 3, "crowdqa": {"fit_seconds": 0.004, "accuracy": 0.85},
                                                 "crowdkit": {"fit_seconds": 0.08, "accuracy": 0.85}, "speedup": 20.0,
                                                 "speedup_cpu": 19.0,
                                                 "rerun": {"date": "2026-11-27 10:30 UTC",
                                                           "command": "categorical_speed --row mv",
                                                           "load_average_at_start": [1.0, 1, 1],
                                                           "load_average_at_end": [1.2, 1, 1]}}}},
        "ds_speed": {"setup": {"iterations": 100, "crowdkit": "ck", "crowdqa": "us", "n_classes": 3, "per_item": 3,
                               "n_workers": 500, "cpus": 2, "python": "3.11.7"},
                     "headline": [{"n_labels": 300000, "crowdkit": ck, "crowdqa": us, "speedup_fit": 100.0,
                                   "peak_memory_ratio_crowdqa_over_crowdkit": 0.2}]},
        "hmm_crowd": {"conll_size_em_step": {"tokens": 40000, "annotators": 47, "classes": 9, "labels": 200000,
                                             "em_step_seconds_median": 0.044, "fit_seconds_default": 0.2},
                      "conll_val_vs_authors": {
                          "data": {"documents": 2743, "tokens": 37660, "annotators": 46, "labels": 150000},
                          "authors_whole_process": {"seconds": 50.0, "cpu_seconds": 40.0, "exit": 0, "precision": 0.78,
                                                    "recall": 0.75, "f1": 0.765},
                          "ours_whole_process": {"seconds": 2.5, "cpu_seconds": 2.0, "exit": 0, "precision": 0.85,
                                                 "recall": 0.82, "f1": 0.835},
                          "ours_whole_process_max_iter_1": {"seconds": 2.0, "cpu_seconds": 1.6, "exit": 0,
                                                            "precision": 0.8, "recall": 0.8, "f1": 0.8},
                          "authors_stages": {"read_cpu_seconds": 3.0, "init_cpu_seconds": 10.0,
                                             "decode_cpu_seconds": 5.0, "em_step_seconds": [20.0, 24.0, 22.0],
                                             "em_step_cpu_seconds": [10.0, 12.0, 11.0]},
                          "ours_em_step": {"em_step_seconds_median": 0.022, "em_step_cpu_seconds_median": 0.011},
                          "em_step_ratio": 1000.0, "em_step_cpu_ratio": 1000.0, "whole_process_ratio": 20.0,
                          "whole_process_cpu_ratio": 20.0}},
        "rerun_all_quick": {"meta": {**meta, "command": "python -m benchmarks all --quick",
                                     "load_average_before": [1.5, 1, 1], "load_average_after": [2.25, 1, 1]},
                            "steps": [{"benchmark": "scaling", "command": "python -m benchmarks.scaling --quick",
                                       "exit": 0, "seconds": 90.0},
                                      {"benchmark": "routing", "command": "python -m benchmarks.routing --quick",
                                       "exit": 1, "seconds": 30.0}]},
        "ingest_pico": {"python": "3.11.7", "target": {"seconds": 5.0, "memory_mb": 500}, "max_rss_mb": 700.0,
                        "synthetic_texts": {"documents": 4549, "tokens": 10, "annotations": 20, "seconds": 1.5,
                                            "documents_per_second": 3032.7, "tracemalloc_peak_mb": 600.0,
                                            "spans_skipped": 1}},
        "scaling_quick": {"meta": {**meta, "command": "python -m benchmarks.scaling --quick"},
                          "setup": {"methods": {"mv": "", "ds": ""}, "classes": ["O", "B-P", "I-P"],
                                    "annotators_per_doc": 4, "annotators": 200, "mean_doc_tokens": 25},
                          "points": [{**point, "method": m, "n_labels": 1000} for m in ("mv", "ds")],
                          "summary": {"mv": {"time_loglog_slope_from_1e5": 1.02}, "ds": {}}},
        "routing": {
            "meta": meta,
            "setup": {"method": "ds", "pool_documents": 4, "seeds": 5},
            "full_pool": {"precision": 0.8, "recall": 0.6, "f1": 0.69},
            "checkpoints": [2],
            "curves": {k: {m: [0.3, 0.2, 0.1, 0.05] for m in _ROUTING_METRICS} for k in ("routed", "random")},
            "mean_over_reveals": {k: {m: 0.2 for m in _ROUTING_METRICS} for k in ("routed", "random")},
            "random_seeds_worse_than_routed": {m: 0.6 for m in _ROUTING_METRICS}},
        "batches": {
            "meta": meta,
            "setup": {"documents": [10, 11], "labels": [100, 120], "batch2_workers_seen_in_batch1": 3,
                      "batch2_crowd_workers": 4, "expert_documents_batch2": 2, "repeats": 2},
            "methods": {"ds": {"runs": {k: {"seconds": 1.0, "fit_seconds": 0.5, "iterations": 3,
                                            "agreement_with_joint_refit": 0.99, **_block(0.8, 0.6, 0.69)}
                                        for k in ("refit", "frozen", "warm start", "joint refit")}}}},
        "spammers": {
            "meta": meta,
            "planted": {"2 classes, 200 expert items": {
                "seeds": 2, "spammers": 20, "spammers_judged": 18, "spammers_blocked": 14, "spammers_watched": 3,
                "honest": 60, "honest_blocked": 1, "honest_blocked_above_bar": 0, "honest_watched": 1}},
            "real_gold_halved": {"pico_dev": {
                "crowd_workers": 204, "expert_documents_given": 32, "expert_documents_held_out": 32,
                "verdicts": {"block": 12, "watch": 26, "keep": 166}, "blocked_label_share": 0.073,
                "all_workers": {"accuracy": 0.9285, "token_f1": 0.7233},
                "without_blocked": {"accuracy": 0.9293, "token_f1": 0.7262}, "accuracy_change": 0.0008}}},
        "method_choice": {
            "meta": meta, "splits": 2,
            "table": [{"set": "snow2008_rte", "role": "train", "kind": "categorical", "metric": "accuracy",
                       "chosen": ["ds+experts", "glad"], "best": ["glad", "glad"], "auto_held_out": 0.925,
                       "auto_regret": 0.005, "always_ds_held_out": 0.92, "always_ds_regret": 0.01,
                       "always_mv_held_out": 0.9, "always_mv_regret": 0.03, "best_held_out": 0.93}],
            "mean_regret": {"all": {"auto": 0.005, "always_ds": 0.01, "always_mv": 0.03},
                            "train": {"auto": 0.005, "always_ds": 0.01, "always_mv": 0.03},
                            "check": {"auto": None, "always_ds": None, "always_mv": None}},
            "worst_set_regret_auto": 0.005,
            "prior_committed": {"categorical": {"anchor": "ibcc", "shortfall": 0.05, "spread": 0.1}}},
        "compare": {
            "meta": meta, "methods": ["mv", "ds"],
            "conll_val": {"metric": "span_f1", "documents": 3, "corpus_documents": 5, "tokens": 40, "crowd_labels": 90,
                          "n_boot": 10, "seconds": 2.5, "fit_seconds": 1.5, "read_seconds": 0.5,
                          "recommended": "ds", "reason": "ds has the best span f1 (0.800)",
                          "warnings": ["bsc-seq is significantly worse than majority vote"],
                          "methods": [{"method": "ds", "value": 0.8, "low": 0.7, "high": 0.9, "diff": 0.0,
                                       "diff_low": 0.0, "diff_high": 0.0, "extra": {"token_f1": 0.9},
                                       "seconds": 1.0}]}},
        "sample_size_example": {
            "setup": {"half_width": 0.05, "confidence": 0.95, "tokens_per_document": 280.2,
                      "texts": "abstracts of pico/docs"},
            "plans": {"paper_figures": {"inputs": {"precision": 0.719, "recall": 0.761, "frequency": 0.143},
                                        "tokens": 2288, "documents": 9, "documents_with_design_effect": 230}},
            "measured_on_expert_documents": {
                "documents": 64, "tokens": 18648, "precision": 0.809, "recall": 0.633,
                "clopper_pearson": {"precision_half_width": 0.015, "recall_half_width": 0.016},
                "document_bootstrap": {"precision_half_width": 0.074, "recall_half_width": 0.049},
                "documents_for_half_width_by_bootstrap": 139},
            "design_effect": {"precision": 25.5, "recall": 9.7}},
        "load": {"machine": {"python": "3.11.7", "cpus": 2}, "problems": [], "results": [
            {"mode": "embedded", "clients": 20, "seconds": 8.0, "jobs_created": 12, "finished": 11, "failed": 1,
             "not_final": [], "lost_jobs": [], "unknown_jobs": [], "duplicate_runs": [], "jobs_per_second": 1.5,
             "requests_per_second": 99.6, "client_errors": [],
             "latency": {"upload": {"p99_ms": 120.4}, "enqueue": {"p99_ms": 80.0}, "poll": {"p99_ms": 30.2}}}]},
        "whole_path": {"meta": meta, "cap_seconds": 600, "points": [
            {"labels": 300000, "items": 100000, "workers": 500, "method": "ds",
             "crowdqa": {"seconds": 2.0, "cpu_seconds": 1.5, "peak_rss_mib": 200.0, "exit": 0, "capped": False,
                         "iterations": 15,
                         "stages": {"reading": 0.5, "fitting": 0.25, "scoring": 0.75, "writing": 0.1}},
             "crowd_kit": {"seconds": 30.0, "cpu_seconds": 18.0, "peak_rss_mib": 400.0, "exit": 0, "capped": False},
             "api": {"upload_seconds": 1.0, "job_seconds": 2.5, "report_seconds": 0.25, "total_seconds": 3.75,
                     "status": "finished",
                     "stages": {"reading": 0.1, "fitting": 0.25, "scoring": 0.75, "writing": 0.2}}}]},
        "whole_path_5000w": {"meta": {**meta, "note": "One run per point"}, "cap_seconds": 1800, "points": [
            {"labels": 3_000_000, "items": 1_000_000, "workers": 5000, "method": "mv", "load_average": [7.5, 8.0, 9.25],
             "crowdqa": {"seconds": 20.0, "cpu_seconds": 9.5, "peak_rss_mib": 800.0, "exit": 0, "capped": False,
                         "iterations": 0,
                         "stages": {"reading": 10.0, "fitting": 0.5, "scoring": 2.0, "writing": 1.0}}},
            {"labels": 3_000_000, "items": 1_000_000, "workers": 5000, "method": "ds", "load_average": [7.0, 8.0, 9.0],
             "crowdqa": {"seconds": 30.0, "cpu_seconds": 12.25, "peak_rss_mib": 800.0, "exit": 0, "capped": False,
                         "iterations": 15,
                         "stages": {"reading": 10.0, "fitting": 6.0, "scoring": 2.5, "writing": 1.0}}}]},
        "real_path": {"meta": {**meta, "note": "Least-CPU of 3 runs per process"}, "points": [
            {"data": "snow2008_rte", "method": "ds", "labels": 8800, "workers": 164, "documents": 800, "tokens": 800,
             "crowdqa": {"seconds": 0.5, "cpu_seconds": 0.4, "peak_rss_mib": 90.0, "exit": 0, "capped": False,
                         "stages": {"reading": 0.1, "fitting": 0.05, "scoring": 0.02, "writing": 0.01}},
             "crowd_kit": {"seconds": 4.0, "cpu_seconds": 3.6, "peak_rss_mib": 300.0, "exit": 0, "capped": False},
             "ratio_seconds": 8.0, "ratio_cpu_seconds": 9.0},
            {"data": "pico_participants", "method": "hmm-crowd", "labels": 9_000_000,
             "crowdqa": {"seconds": 60.0, "cpu_seconds": 50.0, "peak_rss_mib": 2000.0, "exit": 0, "capped": False,
                         "stages": {"reading": 5.0, "fitting": 40.0, "scoring": 3.0, "writing": 1.0}}}]},
        "readers": {"meta": meta, "target_rows_per_second": 1_000_000, "formats": {
            "categorical": {"row": "CSV row (one label)", "rows": 3_000_000, "labels": 3_000_000, "tokens": 1_000_000,
                            "documents": 1_000_000, "annotators": 500, "wall_seconds": 4.0, "cpu_seconds": 2.0,
                            "rows_per_second": 750_000, "rows_per_cpu_second": 1_500_000,
                            "labels_per_second": 750_000, "labels_per_cpu_second": 1_500_000}}},
        "bsc_seq": {
            "meta": meta,
            "published": {"source": "Simpson & Gurevych 2019", "ner_span_f1": {"BSC-seq": 0.774, "HMMCrowd": 0.742},
                          "pico_relaxed_span_f1": {"BSC-seq": 0.751, "HMMCrowd": 0.71}},
            "synthetic_ner": {"seeds": [0, 1], "sentences": 2000, "accuracy": [0.2, 0.7], "per_sentence": 4,
                              "tokens_first_seed": 31000, "labels_first_seed": 124000,
                              "methods": {"HMMCrowd": {"span_f1_mean": 0.88, "span_f1_per_seed": [0.87, 0.89],
                                                       "fit_seconds_mean": 2.5},
                                          "BSC-seq": {"span_f1_mean": 0.915, "span_f1_per_seed": [0.91, 0.92],
                                                      "fit_seconds_mean": 3.5}},
                              "habits_first_seed": {"late": {"annotators": 2, "late_start": 0.75, "early_stop": 0.05},
                                                    "long": {"annotators": 0, "late_start": None, "early_stop": None}}},
            "pico": {"data": {"documents": 4613, "tokens": 1460104, "crowd_labels": 8784594, "crowd_workers": 310,
                              "expert_documents": 64, "expert_tokens": 20000},
                     "methods": {"HMMCrowd": {**_block(0.77, 0.68, 0.72), "fit_seconds": 20.0, "iterations": 1},
                                 "BSC-seq": {**_block(0.85, 0.69, 0.76), "fit_seconds": 30.0, "iterations": 10}},
                     "whole_path": {"HMMCrowd": [{"total": 30.0, "fit": 20.0, "report": 10.0}],
                                    "BSC-seq": [{"total": 40.0, "fit": 30.0, "report": 10.0}]},
                     "best_of_repeats": {"HMMCrowd": {"total": 30.0, "fit": 20.0, "report": 10.0},
                                         "BSC-seq": {"total": 40.0, "fit": 30.0, "report": 10.0}},
                     "ratio_to_hmmcrowd": {"fit": 1.5, "whole_path": 40 / 30}},
        },
        "seq_protocol": {
            "meta": meta, "rule": "maximise the mean",
            "sets": {"conll_val": {"documents": 2743, "tokens": 37660, "scored_documents": 2743,
                                   "small_documents": 300},
                     "pico": {"documents": 4613, "tokens": 1460104, "scored_documents": 64, "small_documents": 127}},
            "grid": [{"params": {"nu0": 1.0}, "f1": {"conll_val": {"whole": 0.73, "small": 0.67},
                                                     "pico": {"whole": 0.76, "small": 0.66}}, "score": 0.705},
                     {"params": {"nu0": 0.1}, "f1": {"conll_val": {"whole": 0.78, "small": 0.75},
                                                     "pico": {"whole": 0.77, "small": 0.74}}, "score": 0.76}],
            "chosen": {"nu0": 0.1},
            "cross_check": [{"chosen_on": "A", "reported_on": "B", "chosen": {"nu0": 0.1}, "score_on_chosen_half": 0.77,
                             "score_on_reported_half": 0.75, "best_on_reported_half": {"nu0": 0.1},
                             "best_score_on_reported_half": 0.75}],
            "methods": {"BSC-seq": {k: {**_block(0.8, 0.7, 0.75), "fit": {"seconds": 3.0, "iterations": 12}}
                                    for k in ("conll_val", "conll_val_small", "pico", "pico_small")}},
        },
        "tagger": {
            "meta": meta, "rule": "maximise the mean",
            "sets": {"conll_val": {"documents": 2743, "tokens": 37660, "scored_documents": 2743,
                                   "small_documents": 300}},
            "grid": [{"params": {"tagger_c": 1.0}, "f1": {"conll_val": {"whole": 0.78, "small": 0.76}},
                      "score": 0.77}],
            "chosen": {"tagger_c": 1.0},
            "cross_check": [{"chosen_on": "A", "reported_on": "B", "chosen": {"tagger_c": 1.0},
                             "score_on_chosen_half": 0.77, "score_on_reported_half": 0.76,
                             "best_on_reported_half": {"tagger_c": 1.0}, "best_score_on_reported_half": 0.76}],
            "methods": {"HMMCrowdTagger": {k: {**_block(0.78, 0.77, 0.79), "fit": {"seconds": 30.0, "iterations": 1}}
                                           for k in ("conll_val", "conll_val_small")}},
            "pre_annotation": [{"learned_on": "A", "labelled": "B", "sentences_learned": 1371,
                                "sentences_labelled": 1372, "tokens_labelled": 18800,
                                "unseen": _block(0.61, 0.59, 0.63), "aggregate_of_the_learned_half": {"f1": 0.77},
                                "fit_seconds": 12.0, "predict_seconds": 0.5}],
        },
    }


HEAD = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tables.REPO, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """The fakes, each with a meta block at this checkout's HEAD (so every one is from the current code); a section
    with no hand-made fake renders the committed results file (it must render, whatever its numbers)."""
    folder = tmp_path / "results"
    folder.mkdir()
    fakes = _fakes()
    for stem in set(tables.SECTIONS) - {s.removesuffix("_quick") for s in fakes} - {"service_overhead"}:
        committed = REPO / "benchmarks" / "results" / f"{stem}.json"
        if committed.is_file():
            fakes[stem] = {k: v for k, v in json.loads(committed.read_text()).items() if k != "meta"}
    for stem, data in fakes.items():
        meta = data.get("meta") or {"command": tables.SECTIONS[stem.removesuffix("_quick")][1], "machine": "Fake CPU",
                                     "date": "2026-01-01 00:00 UTC"}
        data = {**data, "meta": {**meta, "commit": HEAD, "dirty": False, "dirty_paths": []}}
        (folder / f"{stem}.json").write_text(json.dumps(data))
    return folder


def test_every_section_renders_with_its_command_and_machine(results):
    """Oracle: the fake files' own values, formatted by hand."""
    md = tables.render(results)
    for title, _, _ in tables.SECTIONS.values():
        if title != "Service overhead":  # no fake file: the section must be absent, not empty
            assert f"### {title}" in md
    assert "### Service overhead" not in md
    assert "| ds | 0.800 [0.700, 0.900] | 0.000 [0.000, 0.000] | 0.900 | 1.00 s |" in md
    assert ("| snow2008_rte | train | ds+experts ×1, glad ×1 | 0.925 (0.005) | 0.920 (0.010) | 0.900 (0.030) | 0.930 |"
            in md)
    assert "Mean regret, all: auto 0.005, always-DS 0.010, always-MV 0.030; train: auto 0.005" in md
    assert "Recommended: **ds** (ds has the best span f1 (0.800)). Warning: bsc-seq is significantly worse" in md
    assert f"`python -m benchmarks.X` · commit `{HEAD[:10]}` · Fake CPU, 2 cores · 2026-01-02 03:04 UTC" in md
    assert "| MajorityVote | crowdqa, crowd only | 0.884 (0.874–0.894) | 0.447 (0.427–0.467) |" in md
    assert "| crowdqa: crowd workers vs experts | 78 | 0.500 | 0.400 | 0.450 |" in md
    assert "Table 4" not in md  # not the same measurement (benchmarks/pico_study.py says why)
    assert "| snow2008_rte (800 items, 8,000 labels) | MajorityVote | 0.9187 | 0.8750 | 0.6 ms | 27.0 ms | 45× |" in md
    assert "| 44.0 ms | 200.0 ms |" in md
    assert "| 2 classes, 200 expert items | 2 | 14 / 20 | 18 | 3 | 1 / 60 | 0 | 1 |" in md
    assert ("| pico_dev | 204 | 32 / 32 | 12 / 26 | 7.3% | 0.9285 | 0.9293 (token F1 0.7233 -> 0.7262) | +0.0008 |"
            in md)
    assert ("| whole process, crowdqa defaults | 50.00 s (40.00 s CPU) | 2.50 s (2.00 s CPU) | 20.0× (20.0× CPU) | "
            "0.780 / 0.750 / 0.765 | 0.850 / 0.820 / 0.835 |") in md
    assert ("| whole process, crowdqa `max_iter=1` | 50.00 s (40.00 s CPU) | 2.00 s (1.60 s CPU) | 25.0× (25.0× CPU) "
            "|") in md
    assert ("| one EM step (E + M, median) | 22.00 s (11.00 s CPU) | 22.0 ms (11.0 ms CPU) | 1,000× (1,000× CPU) |"
            in md)
    assert "Dawid-Skene start 10.00 s, decoding 5.00 s" in md
    assert "`python -m benchmarks all --quick` ran 2 steps one after another in 2.0 minutes" in md
    assert "| routing | `python -m benchmarks.routing --quick` | 30 s | exit 1 |" in md
    assert "load average was 1.5 at the start and 2.2 at the end" in md
    assert "`python -m benchmarks.scaling --quick`" in md and "**quick run**" in md
    assert "| 1,000 | 250 | 500.0 ms / 40 MB (+2) | 500.0 ms (7 it.) / 40 MB (+2) |" in md
    assert ("| snow2008_rte | ds | 8,800 | 0.50 s (0.40 s CPU) | 4.00 s (3.60 s CPU) | 8.0× (9.0× CPU) | "
            "0.10 / 0.05 / 0.02 / 0.01 | 90 / 300 MiB |") in md
    assert "| pico_participants | hmm-crowd | 9,000,000 | 60.00 s (50.00 s CPU) | – | – |" in md
    assert "| GLAD | 3 | 2.00 s | > 300 s (stopped) | > 150× | – | 0.8600 |" in md
    assert "| KOS † | 2 | 500.0 ms | 20.00 s | 40× | 30× | 0.5100 / 0.5000 |" in md
    assert ("† Rerun 2026-11-27 10:00 UTC with `categorical_speed --row kos` (1-minute load "
            "average 1.5 at the start, 2.0 at the end)") in md
    # A second rerun has a mark of its own; one line says what the unmarked rows are.
    assert "| MajorityVote ‡ | 3 | 4.0 ms | 80.0 ms | 20× | 19× | 0.8500 / 0.8500 |" in md
    assert "‡ Rerun 2026-11-27 10:30 UTC with `categorical_speed --row mv`" in md
    assert md.count("without a mark are from the run above") == 1
    assert "| IBCC | 3 | 1.00 s | none | – | – | 0.8700 |" in md
    assert "about 139 expert documents" in md
    assert "about 139 expert documents. Texts: abstracts of pico/docs." in md
    assert "| embedded | 20 | 8 s | 12 | 11 / 1 / 0 | 0 | 0 | 1.50 | 100 | 120 ms | 80 ms | 30 ms | 0 |" in md
    assert "Problems found: none." in md
    assert ("| 300,000 | DS | 2.00 s | 30.00 s | 15.0× | 1.50 / 18.00 s (12.0×) | 0.50 / 0.25 / 0.75 / 0.10 "
            "| 200 / 400 MiB |") in md
    assert ("| categorical | CSV row (one label) | 3,000,000 | 3,000,000 | 4.00 s | 2.00 s | 0.75 M/s | 0.75 M/s "
            "| 1.50 M/s | 1.50 M/s | yes |") in md
    assert "| 300,000 | DS | 1.00 s | 2.50 s | 0.25 s | 3.75 s | 0.10 / 0.25 / 0.75 / 0.20 |" in md
    assert "| 3,000,000 | 5,000 | MV | 0.50 s | 2.00 s | +1.50 s | no | 9.50 s | 7.5 / 8.0 / 9.2 |" in md
    assert "| 3,000,000 | 5,000 | DS | 6.00 s | 2.50 s | -3.50 s | yes | 12.25 s | 7.0 / 8.0 / 9.0 |" in md


def test_full_run_preferred_over_quick_and_unknown_files_listed(results):
    (results / "scaling.json").write_text((results / "scaling_quick.json").read_text().replace("--quick", ""))
    (results / "mystery.json").write_text("{}")
    md = tables.render(results)
    assert "`benchmarks/results/scaling.json`" in md and "scaling_quick.json" not in md
    assert "Other results files (no table): `mystery.json`." in md


def test_unknown_layout_is_reported_not_skipped(results):
    meta = json.loads((results / "categorical.json").read_text())["meta"]
    (results / "categorical.json").write_text(json.dumps({"meta": meta, "datasets": {"x": {"ours": {}}}}))
    md = tables.render(results)
    assert "### Categorical accuracy vs crowd-kit" in md
    assert "`categorical.json` has a layout this script does not know (KeyError" in md


def test_the_page_changes_only_between_markers(results, tmp_path):
    readme = tmp_path / "benchmarks.md"
    before, after = "# crowdqa\n\nintro\n\n", "\n\n## Licence\n\nMIT\n"
    readme.write_text(f"{before}{tables.START}\nold table\n{tables.END}{after}")
    assert tables.main(["--results", str(results), "--page", str(readme)]) == 0
    text = readme.read_text()
    assert text.startswith(before + tables.START + "\n") and text.endswith(tables.END + after)
    assert "old table" not in text and "### PICO / EBM-NLP aggregation study" in text


def test_a_page_without_markers_is_left_alone(results, tmp_path, capsys):
    readme = tmp_path / "benchmarks.md"
    readme.write_text("# crowdqa\n")
    assert tables.main(["--results", str(results), "--page", str(readme)]) == 0
    assert readme.read_text() == "# crowdqa\n"
    assert "### Ingest throughput" in capsys.readouterr().out


def test_make_meta_names_command_machine_and_date():
    meta = tables.make_meta("python -m benchmarks.scaling", seconds=1.234)
    assert meta["command"] == "python -m benchmarks.scaling" and meta["seconds"] == 1.2
    assert "cores" in meta["machine"] and meta["date"].endswith("UTC")


def test_bsc_seq_section(results):
    """Oracle: the fake bsc_seq file's values, formatted by hand (ratios to HMMCrowd, published columns)."""
    md = tables.render(results)
    assert ("| BSC-seq | 0.850 (0.840–0.860) | 0.690 (0.670–0.710) | 0.760 (0.730–0.790) | 30.00 s | 1.50× | 10 "
            "| 0.751 |") in md
    assert "| HMMCrowd | 0.880 | 0.870 / 0.890 | 2.50 s | 0.742 |" in md
    assert "BSC-seq / HMMCrowd = 1.50× for the fit, 1.33× for the whole path." in md
    assert "late (2): late start 0.750, early stop 0.050." in md


def test_a_merged_run_names_every_run_whose_points_it_kept(tmp_path):
    """A --merge run's meta keeps the earlier run's meta (and so on back): the line names them all, newest first."""
    first = {"command": "python -m benchmarks.whole_path --sizes 3e5", "date": "2026-01-01 00:00 UTC",
             "commit": "a" * 40}
    second = {"command": "python -m benchmarks.whole_path --sizes 3e7 --no-peer", "date": "2026-01-02 00:00 UTC",
              "commit": "b" * 40, "merged_with": first}
    last = {"command": "python -m benchmarks.whole_path --sizes 1e6 --api-only", "date": "2026-01-03 00:00 UTC",
            "machine": "Fake CPU", "commit": "c" * 40, "merged_with": second}
    line = tables._provenance({"meta": last}, tmp_path / "whole_path.json", "unused")
    assert line == ("`python -m benchmarks.whole_path --sizes 1e6 --api-only` · commit `cccccccccc` · Fake CPU · "
                    "2026-01-03 00:00 UTC · with the points kept from `python -m benchmarks.whole_path --sizes 3e7 "
                    "--no-peer` (2026-01-02 00:00 UTC, commit `bbbbbbbbbb`), `python -m benchmarks.whole_path --sizes "
                    "3e5` (2026-01-01 00:00 UTC, commit `aaaaaaaaaa`) · `benchmarks/results/whole_path.json`")
    assert "kept" not in tables._provenance({"meta": first}, tmp_path / "whole_path.json", "unused")


def test_tagger_section(results):
    """Oracle: the fake file's values, formatted by hand."""
    md = tables.render(results)
    assert "| tagger_c=1.0 | 0.780 | 0.760 | 0.7700 **chosen** |" in md
    assert ("| A → B | 1,371 | 1,372 (18,800 tokens) | 0.630 (0.600–0.660) | 0.770 | 12.00 s | 500.0 ms |"
            in md)


def test_seq_protocol_section(results):
    """Oracle: the fake seq_protocol file's values, formatted by hand (issue 28)."""
    md = tables.render(results)
    assert ("| BSC-seq | 0.750 (0.720–0.780) | 0.750 (0.720–0.780) | 0.750 (0.720–0.780) | 0.750 (0.720–0.780) "
            "| 3.00 s (12 it.) | 3.00 s (12 it.) |") in md
    assert "| nu0=0.1 | 0.780 | 0.750 | 0.770 | 0.740 | 0.7600 **chosen** |" in md
    assert "| nu0=1.0 | 0.730 | 0.670 | 0.760 | 0.660 | 0.7050 |" in md
    assert "| A → B | nu0=0.1 | 0.7700 | 0.7500 | nu0=0.1 | 0.7500 |" in md


def test_load_section_shows_the_clients_cpu_when_recorded():
    """Load results that record the clients' own CPU (issue 27) get a column for it; older ones render as before."""
    d = _fakes()["load"]
    old = tables.render_load(d, Path("."), False)
    assert "clients' CPU" not in old and old.splitlines()[-1].endswith("| – |")
    d["results"][0]["client_cpu_share"] = 0.046
    new = tables.render_load(d, Path("."), False)
    assert new.splitlines()[-1].endswith("| – | 0.05 core |") and "| clients' CPU |" in new
