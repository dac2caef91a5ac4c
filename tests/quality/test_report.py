"""Tests for crowdqa.quality.report and the report / sample-size commands (the aggregate reader's are in
tests/ingest/test_aggregate_input.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.api.cli import main
from crowdqa.quality.references import reference_labels
from crowdqa.quality.report import build_report as build_typed_report
from crowdqa.quality.report import build_report_data, fit_record_data, format_report
from crowdqa.quality.report_model import FitRecord, QualityReport


def build_report(*args, **kwargs) -> dict:
    """The report as the JSON document the service stores and serves (the typed model, dumped).

    Every call also checks the plain report the command line writes without pydantic: it is the typed
    model dumped, key order included (compared as JSON text, so 1 and 1.0 differ too).
    """
    report = build_typed_report(*args, **kwargs)
    assert isinstance(report, QualityReport)
    dumped = report.model_dump(mode="json")
    assert json.dumps(build_report_data(*args, **kwargs)) == json.dumps(dumped)
    return dumped


SCORE_KEYS = {"precision", "recall", "f1", "tp", "fp", "fn", "precision_ci", "recall_ci", "f1_ci"}


def random_corpus(seed: int, *, n_docs: int = 12, n_crowd: int = 6, n_experts: int = 2, bio: bool = False) -> Corpus:
    """Documents of 3-9 one-letter tokens; 3 crowd workers per document; experts on the first half."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 10, n_docs)
    starts = np.concatenate([np.arange(n) * 2 for n in lengths])
    doc_start = np.concatenate([[0], np.cumsum(lengths)])
    n_classes = 5 if bio else 2
    truth = rng.integers(0, n_classes, int(lengths.sum()))
    tok, wor, lab = [], [], []
    for d in range(n_docs):
        workers = list(rng.choice(n_crowd, 3, replace=False))
        if d < n_docs // 2:
            workers += list(range(n_crowd, n_crowd + n_experts))
        for w in workers:
            t = np.arange(doc_start[d], doc_start[d + 1])
            noisy = np.where(rng.random(t.size) < 0.25, rng.integers(0, n_classes, t.size), truth[t])
            tok.append(t)
            wor.append(np.full(t.size, w))
            lab.append(noisy)
    return Corpus.from_arrays(
        token=np.concatenate(tok), worker=np.concatenate(wor), label=np.concatenate(lab), doc_lengths=lengths,
        token_start=starts, token_end=starts + 1, doc_ids=[f"d{i}" for i in range(n_docs)],
        texts=[" ".join("x" * n) for n in lengths],
        worker_ids=[f"c{i}" for i in range(n_crowd)] + [f"e{i}" for i in range(n_experts)],
        worker_roles=["crowd"] * n_crowd + ["expert"] * n_experts,
        class_names=["O", "B-X", "I-X", "B-Y", "I-Y"] if bio else ["O", "P"],
    )


def test_worker_counts_brute_force(seed):
    """Oracle: per-worker tp/fp/fn, documents and tokens counted with Python loops over annotations.

    Experts are scored against the union of the other experts (leave-one-out).
    """
    c = random_corpus(seed)
    rng = np.random.default_rng(seed + 1)
    agg = rng.integers(0, 2, c.n_tokens)
    agg[c.doc_start[1]:c.doc_start[2]] = MISSING  # the aggregate does not cover document 1
    rep = build_report(c, agg, method="test", experts_used_in_fit=False, n_boot=50, seed=seed)
    for w, row in enumerate(rep["workers"]):
        ref = reference_labels(c)
        if c.worker_roles[w] == "expert":
            ref = reference_labels(c.select_workers([v for v in range(c.n_workers) if v != w]))
        e = {"tp": 0, "fp": 0, "fn": 0}
        a = {"tp": 0, "fp": 0, "fn": 0}
        docs, docs_e, docs_a = set(), set(), set()
        for t, ww, lab in zip(c.token.tolist(), c.worker.tolist(), c.label.tolist(), strict=True):
            if ww != w:
                continue
            docs.add(int(c.token_doc[t]))
            for r, acc, seen in ((int(ref[t]), e, docs_e), (int(agg[t]), a, docs_a)):
                if r == MISSING:
                    continue
                seen.add(int(c.token_doc[t]))
                acc["tp"] += lab > 0 and r > 0
                acc["fp"] += lab > 0 and r == 0
                acc["fn"] += lab == 0 and r > 0
        assert row["annotator"] == c.worker_ids[w] and row["role"] == c.worker_roles[w]
        assert row["documents"] == len(docs)
        assert row["tokens"] == int(np.sum(c.worker == w))
        for block, acc, seen in ((row["vs_expert"], e, docs_e), (row["vs_aggregate"], a, docs_a)):
            if not seen:
                assert block is None
                continue
            assert {k: block[k] for k in acc} == acc
            assert block["documents"] == len(seen)
            assert SCORE_KEYS <= set(block)


def test_schema_and_perfect_aggregate(seed):
    """A copy of the reference scores 1 on every expert block; the report is JSON and has the issue-5 keys."""
    c = random_corpus(seed, bio=True)
    ref = reference_labels(c)
    agg = np.where(ref == MISSING, 0, ref)
    fit = {"iterations": 3, "converged": True, "seconds": 0.5, "log_likelihood": [-3.0, -2.0, -1.9]}
    rep = build_report(c, agg, method="ds", experts_used_in_fit=True, fit=fit, n_boot=100, seed=seed)
    json.dumps(rep)
    assert rep["method"] == "ds" and rep["labels"] == list(c.class_names) and rep["experts_used_in_fit"] is True
    assert {k: rep["fit"][k] for k in fit} == fit
    for key in ("token", "span_location", "span_location_relaxed", "span_location_and_type", "span_overlap"):
        block = rep["aggregate_vs_expert"][key]
        assert SCORE_KEYS <= set(block)
        assert block["fp"] == block["fn"] == 0
        if block["tp"]:
            assert block["precision"] == block["recall"] == block["f1"] == 1.0
            assert block["precision_ci"][0] <= 1.0 == block["precision_ci"][1]
    assert {"expert_kappa", "krippendorff_alpha"} <= set(rep["agreement"])
    assert [(p["a"], p["b"]) for p in rep["agreement"]["expert_kappa"]] == [("e0", "e1")]
    text = format_report(rep)
    assert "span_location" in text and "c0" in text and "Krippendorff" in text
    # Same seed, same report.
    again = build_report(c, agg, method="ds", experts_used_in_fit=True, fit=fit, n_boot=100, seed=seed)
    assert again == rep


def test_clamped_tokens_are_never_scored():
    """Tokens given to the aggregator as known are left out of the aggregate's expert comparison.

    Workers keep their expert scores: their labels never came from the fit.
    """
    c = random_corpus(3)
    ref = reference_labels(c)
    clamped = ref != MISSING
    rep = build_report(c, np.zeros(c.n_tokens, int), method="mv", experts_used_in_fit=True, clamped=clamped,
                       n_boot=10)
    assert rep["aggregate_vs_expert"] is None
    unclamped = build_report(c, np.zeros(c.n_tokens, int), method="mv", experts_used_in_fit=False, n_boot=10)
    assert [w["vs_expert"] for w in rep["workers"]] == [w["vs_expert"] for w in unclamped["workers"]]
    assert any(w["vs_expert"] is not None for w in rep["workers"] if w["role"] == "crowd")
    assert rep["counts"]["clamped_tokens"] == int(clamped.sum())
    # Clamping one expert document removes exactly its tokens from the aggregate's token counts.
    part = np.zeros(c.n_tokens, bool)
    part[c.doc_start[0]:c.doc_start[1]] = True
    full = build_report(c, np.ones(c.n_tokens, int), method="mv", experts_used_in_fit=False, n_boot=10)
    some = build_report(c, np.ones(c.n_tokens, int), method="mv", experts_used_in_fit=True, clamped=part, n_boot=10)
    assert full["aggregate_vs_expert"]["token"]["tokens"] - some["aggregate_vs_expert"]["token"]["tokens"] == int(
        c.doc_lengths[0])
    assert some["aggregate_vs_expert"]["span_location"]["documents"] == full["aggregate_vs_expert"]["span_location"][
        "documents"] - 1


def test_single_expert_has_no_expert_score():
    """With one expert there is no other expert to score them against: vs_expert is null."""
    c = random_corpus(8, n_experts=1)
    rep = build_report(c, np.zeros(c.n_tokens, int), method="mv", experts_used_in_fit=False, n_boot=10)
    row = next(w for w in rep["workers"] if w["role"] == "expert")
    assert row["vs_expert"] is None and row["vs_aggregate"] is not None
    one = build_report(c, np.zeros(c.n_tokens, int), method="mv", experts_used_in_fit=False, n_boot=10,
                       reference="e0")
    assert next(w for w in one["workers"] if w["role"] == "expert")["vs_expert"] is None


def test_no_experts():
    c = random_corpus(4, n_experts=0)
    rep = build_report(c, np.zeros(c.n_tokens, int), method="mv", experts_used_in_fit=False, n_boot=10)
    assert rep["aggregate_vs_expert"] is None and rep["agreement"]["expert_kappa"] == []
    assert "no expert labels" in format_report(rep)
    with pytest.raises(ValueError, match=r"labels must have shape"):
        build_report(c, np.zeros(3, int), method="mv", experts_used_in_fit=False)


# ----------------------------------------------------------------------------- commands
def test_sample_size_command_json(capsys):
    assert main(["sample-size", "--precision", "0.85", "--recall", "0.8", "--frequency", "0.48", "--half-width",
                 "0.05", "--confidence", "0.95", "--sites", "6", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["documents"], out["positives"], out["negatives"]) == (519, 249, 270)
    assert out["per_site"]["documents"] == 87
    assert main(["sample-size", "--precision", "0.8", "--recall", "0.8", "--frequency", "0.3",
                 "--half-width", "0.05", "--json"]) == 0
    assert "per_site" not in json.loads(capsys.readouterr().out)
    assert main(["sample-size", "--precision", "2", "--recall", "0.8", "--frequency", "0.3",
                 "--half-width", "0.05"]) == 2
    assert "precision must be in (0, 1)" in capsys.readouterr().err


def test_report_command_end_to_end(tmp_path, capsys):
    """crowdqa report on a spans-jsonl crowd file, an expert file and an aggregate written by the writers."""
    pytest.importorskip("crowdqa.ingest.writers")
    text = "aa bb cc dd ee"
    crowd = [
        {"doc_id": "d1", "annotator": "w1", "start": 0, "end": 5, "label": "P", "text": text},
        {"doc_id": "d1", "annotator": "w2", "start": 3, "end": 8, "label": "P", "text": text},
        {"doc_id": "d1", "annotator": "w3", "start": None, "end": None, "label": None, "text": text},
        {"doc_id": "d2", "annotator": "w1", "start": 0, "end": 2, "label": "P", "text": "ff gg"},
        {"doc_id": "d2", "annotator": "w2", "start": 3, "end": 5, "label": "P", "text": "ff gg"},
    ]
    expert = [{"doc_id": "d1", "annotator": "md", "start": 0, "end": 5, "label": "P", "text": text, "role": "expert"}]
    agg = [{"doc_id": "d1", "start": 0, "end": 5, "label": "P"}]
    for name, rows in (("crowd.jsonl", crowd), ("expert.jsonl", expert), ("agg.jsonl", agg)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "report.json"
    status = main(["report", str(tmp_path / "crowd.jsonl"), "--format", "spans-jsonl", "--expert",
                   str(tmp_path / "expert.jsonl"), "--aggregate", str(tmp_path / "agg.jsonl"), "--method", "mv",
                   "--json", str(out), "--n-boot", "50"])
    printed = capsys.readouterr()
    assert status == 0, printed.err
    rep = json.loads(out.read_text())
    assert rep["method"] == "mv"
    tok = rep["aggregate_vs_expert"]["token"]
    assert (tok["tp"], tok["fp"], tok["fn"]) == (2, 0, 0)
    assert rep["aggregate_vs_expert"]["span_location"]["tp"] == 1
    w = {r["annotator"]: r for r in rep["workers"]}
    assert (w["w2"]["vs_expert"]["tp"], w["w2"]["vs_expert"]["fp"], w["w2"]["vs_expert"]["fn"]) == (1, 1, 1)
    assert w["w3"]["vs_expert"]["precision"] is None and w["w3"]["vs_expert"]["recall"] == 0.0
    assert "Aggregate vs experts" in printed.out


def test_accuracy_and_confusion_block_against_sklearn():
    """Oracle: scikit-learn's accuracy_score and confusion_matrix (transposed: our rows are predicted)."""
    from sklearn.metrics import accuracy_score, confusion_matrix

    c = random_corpus(5)
    ref = reference_labels(c)
    agg = np.random.default_rng(5).integers(0, c.n_classes, c.n_tokens)
    rep = build_report(c, agg, method="mv", experts_used_in_fit=False, n_boot=10)
    ok = ref != MISSING
    block = rep["aggregate_vs_expert"]
    assert block["accuracy"]["value"] == pytest.approx(accuracy_score(ref[ok], agg[ok]))
    lo, hi = block["accuracy"]["ci"]
    assert lo <= block["accuracy"]["value"] <= hi
    expected = confusion_matrix(ref[ok], agg[ok], labels=list(range(c.n_classes))).T
    assert block["token_confusion"]["matrix"] == expected.tolist()


def test_categorical_corpus_scores_every_answer():
    """Categorical answers have no outside class: per-label scores include class 0."""
    import pathlib
    import tempfile

    from crowdqa.ingest.categorical import read_categorical

    with tempfile.TemporaryDirectory() as d:
        p = pathlib.Path(d) / "c.csv"
        p.write_text("item,annotator,label,gold\na,u,no,no\nb,u,yes,no\nc,u,yes,yes\n")
        c = read_categorical(p)
    agg = c.labels_of(c.worker_ids.index("u"))
    rep = build_report(c, agg, method="mv", experts_used_in_fit=False, n_boot=10)
    per = rep["aggregate_vs_expert"]["per_class"]
    assert set(per) == {"no", "yes"}
    assert (per["no"]["tp"], per["no"]["fn"]) == (1, 1)
    assert rep["aggregate_vs_expert"]["accuracy"]["value"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("kind", ["spans", "categorical-1", "categorical-2", "categorical-3"])
def test_worker_accuracy_brute_force(seed, kind):
    """Oracle: plain loops over the dense labels; experts are scored leave-one-out, as for F1.

    Categorical answers (1, 2 or 3 experts) get blocks of items and accuracy only, no P/R/F1.
    """
    c = (random_corpus(seed, bio=True) if kind == "spans" else
         categorical_corpus(seed, n_experts=int(kind.split("-")[1])))
    agg = np.random.default_rng(seed).integers(0, c.n_classes, c.n_tokens)
    rep = build_report(c, agg, method="mv", experts_used_in_fit=False, n_boot=0 if kind == "spans" else 50)
    assert rep["kind"] == kind.split("-")[0]
    for entry in rep["workers"] if kind != "spans" else []:
        for block in (entry["vs_expert"], entry["vs_aggregate"]):
            if block is not None:
                assert set(block) == {"accuracy", "documents", "tokens"}
                assert block["documents"] == block["tokens"] == block["accuracy"]["compared"]  # one token per item
    experts = [w for w in range(c.n_workers) if c.worker_roles[w] == "expert"]
    for w, entry in enumerate(rep["workers"]):
        mine = c.labels_of(w)
        others = [e for e in experts if e != w]
        ref = reference_labels(c.select_workers(np.array(others)) if w in experts else c)
        pairs = [(a, b) for a, b in zip(mine.tolist(), ref.tolist(), strict=True) if a != MISSING and b != MISSING]
        if not pairs:  # no document shared with the experts: no score at all
            assert entry["vs_expert"] is None
        else:
            got = entry["vs_expert"]["accuracy"]
            assert (got["correct"], got["compared"]) == (sum(a == b for a, b in pairs), len(pairs))
        mine_agg = [(a, b) for a, b in zip(mine.tolist(), agg.tolist(), strict=True) if a != MISSING]
        if not mine_agg:  # a worker with no labels (never drawn for a document)
            assert entry["vs_aggregate"] is None
            continue
        got = entry["vs_aggregate"]["accuracy"]
        assert (got["correct"], got["compared"]) == (sum(a == b for a, b in mine_agg), len(mine_agg))
        assert got["ci"][0] <= got["value"] <= got["ci"][1]


def categorical_corpus(seed: int, *, n_items: int = 60, n_crowd: int = 12, n_experts: int = 2) -> Corpus:
    """One-token items of 3 classes, 2-4 crowd answers each; each expert answers about half the items."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    tok, wor, lab = [], [], []
    for i in range(n_items):
        ws = np.sort(rng.choice(n_crowd, rng.integers(2, 5), replace=False)).tolist()
        ws += [n_crowd + e for e in range(n_experts) if rng.random() < 0.5]
        for w in ws:
            tok.append(i)
            wor.append(w)
            lab.append(truth[i] if rng.random() < 0.7 else rng.integers(0, 3))
    return Corpus.from_arrays(
        token=np.array(tok), worker=np.array(wor), label=np.array(lab), doc_lengths=np.ones(n_items, dtype=int),
        token_start=np.zeros(n_items, dtype=int), token_end=np.ones(n_items, dtype=int),
        doc_ids=[f"i{i}" for i in range(n_items)], texts=["x"] * n_items,
        worker_ids=[f"c{i}" for i in range(n_crowd)] + [f"e{i}" for i in range(n_experts)],
        worker_roles=["crowd"] * n_crowd + ["expert"] * n_experts, class_names=["a", "b", "c"],
    )


@pytest.mark.parametrize("fit", [
    {"iterations": 3, "converged": None, "seconds": 1, "log_likelihood": [-3, -2.5]},
    {"iterations": 7, "converged": False, "seconds": 0.25, "log_likelihood": [-1.0], "params": {"alpha": [1, 2]},
     "skill": "accuracy", "warnings": ["w"], "stages": {"fitting": 1}, "start": {"from": "job x", "workers_new": 2},
     "cross_fit": {"folds": 4, "expert_documents": 9, "seconds": 2, "seed": 0}, "uncovered_tokens": 5},
])
def test_fit_record_data_is_the_model_dumped(fit):
    """Oracle: FitRecord.model_validate(fit).model_dump(mode="json"), as JSON text (field order, floats)."""
    assert json.dumps(fit_record_data(fit)) == json.dumps(FitRecord.model_validate(fit).model_dump(mode="json"))
    assert fit_record_data(FitRecord.model_validate(fit)) == fit_record_data(fit)
    with pytest.raises(ValueError, match="a fit record needs seconds"):
        fit_record_data({"iterations": 1, "converged": True, "log_likelihood": []})


def test_report_data_with_heldout_skills_and_bootstrap_is_the_typed_report():
    """Oracle: the typed model dumped (the wrapper above compares every report of this module); here the
    variants the other tests do not build: held-out predictions, skills with NaN, and a categorical corpus
    with a fit record."""
    c = random_corpus(11, bio=True)
    ref = reference_labels(c)
    heldout = np.where(ref == MISSING, MISSING, (ref + 1) % c.n_classes)
    skills = np.linspace(0, 1, c.n_workers)
    skills[0] = np.nan
    fit = {"iterations": 2, "converged": True, "seconds": 0.5, "log_likelihood": [-2.0, -1.0]}
    build_report(c, np.zeros(c.n_tokens, int), method="ds", experts_used_in_fit=True, clamped=ref != MISSING,
                 heldout=heldout, skills=skills, fit=fit, n_boot=20)
    rep = build_report(categorical_corpus(2), np.zeros(60, int), method="mv", experts_used_in_fit=False, fit=fit,
                       n_boot=20, reference="e1")
    assert rep["kind"] == "categorical" and rep["fit"]["seconds"] == 0.5
