"""The span scores are named by what they compare, conlleval's figure leads on BIO labels,
and per-type F1 and an overlap match are reported. Oracles: a conlleval example computed by hand, and the
seqeval / nervaluate test vectors of ../shared/data/metric_vectors.json (skipped where absent)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest.build import class_names_for
from crowdqa.jobs.results import score_levels
from crowdqa.quality.report import build_report_data, format_report
from crowdqa.quality.report_model import QualityReport
from tests.conftest import shared_path


def _corpus(true: list[list[str]], pred: list[list[str]], types=("LOC", "ORG", "PER")) -> tuple[Corpus, np.ndarray]:
    """One document per tag sequence: the expert labels ``true``, one crowd worker ``pred``; and ``pred`` as
    the aggregate's labels."""
    classes = class_names_for(sorted(types), "bio")
    index = {c: i for i, c in enumerate(classes)}
    t = np.array([index[x] for seq in true for x in seq])
    p = np.array([index[x] for seq in pred for x in seq])
    lengths = [len(seq) for seq in true]
    n = t.size
    starts = np.concatenate([np.arange(k) * 2 for k in lengths])
    corpus = Corpus.from_arrays(
        token=np.r_[np.arange(n), np.arange(n)], worker=np.r_[np.zeros(n), np.ones(n)], label=np.r_[p, t],
        doc_lengths=lengths, token_start=starts, token_end=starts + 1, doc_ids=[f"d{i}" for i in range(len(true))],
        texts=[" ".join(["w"] * k) for k in lengths], worker_ids=["crowd", "expert"],
        worker_roles=["crowd", "expert"], class_names=classes)
    return corpus, p


# By hand, conlleval: true chunks d0 PER[1,3) LOC[4,6) ORG[7,8); d1 PER[0,1) ORG[2,5).
# Predicted: d0 PER[1,3) LOC[4,5) PER[7,8); d1 PER[0,1) ORG[2,4).
# Same location and type: PER d0, PER d1 -> tp 2 of 5 predicted, 5 true: P = R = F1 = 0.4.
# Same location, any type: + PER[7,8) for ORG[7,8) -> tp 3: 0.6. Relaxed (lengths within 2 characters; a token
# is "w" and one space): LOC[4,5) is 1 character against 3, ORG d1 [2,4) 3 against 5 -> all 5 match: 1.0.
# Overlap: every prediction overlaps a true chunk of any type and every true chunk is overlapped -> 1.0.
# Per type: PER tp 2 fp 1 fn 0, LOC tp 0 fp 1 fn 1, ORG tp 0 fp 1 fn 2.
TRUE = [["O", "B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O", "B-ORG"], ["B-PER", "O", "B-ORG", "I-ORG", "I-ORG"]]
PRED = [["O", "B-PER", "I-PER", "O", "B-LOC", "O", "O", "B-PER"], ["B-PER", "O", "B-ORG", "I-ORG", "O"]]


def test_named_levels_against_a_hand_computed_conlleval_example():
    corpus, labels = _corpus(TRUE, PRED)
    agg = build_report_data(corpus, labels, method="given", experts_used_in_fit=False, n_boot=0)["aggregate_vs_expert"]
    assert "span_strict" not in agg and "span_type" not in agg and agg["headline"] == "span_location_and_type"
    f1 = {k: agg[k]["f1"] for k in ("span_location_and_type", "span_location", "span_location_relaxed",
                                     "span_overlap")}
    assert f1 == pytest.approx({"span_location_and_type": 0.4, "span_location": 0.6, "span_location_relaxed": 1.0,
                                "span_overlap": 1.0})
    assert {k: (v["tp"], v["fp"], v["fn"]) for k, v in agg["span_per_type"].items()} == {
        "PER": (2, 1, 0), "LOC": (0, 1, 1), "ORG": (0, 1, 2)}
    assert agg["span_per_type"]["PER"]["f1"] == pytest.approx(0.8)


def test_conlleval_is_the_headline_of_the_table_the_report_and_the_page():
    """BIO labels: the CLI table's first score row is conlleval's, marked; the dashboard's levels lead with it;
    inside/outside labels (one type, no B-) lead with the token score."""
    corpus, labels = _corpus(TRUE, PRED)
    report = build_report_data(corpus, labels, method="given", experts_used_in_fit=False, n_boot=0)
    rows = [ln for ln in format_report(report).splitlines() if ln.startswith("  span_") or ln.startswith("  token ")]
    assert rows[0].split()[0] == "span_location_and_type" and rows[0].endswith("<- headline (conlleval)")
    assert [r.split()[0] for r in rows[1:]] == ["token", "span_location", "span_location_relaxed", "span_overlap"]
    assert score_levels(report)[0][:2] == ("span_location_and_type", "spans: location and type (conlleval)")
    assert score_levels(report)[0][3] is True and not any(h for *_, h in score_levels(report)[1:])


def test_reports_stored_with_the_seed_names_are_still_read():
    """A report stored before the rename (span_strict, span_relaxed, span_type, no headline) validates into the
    new model, prints, and gives the dashboard its levels under the new names, conlleval first on BIO labels."""
    corpus, labels = _corpus(TRUE, PRED)
    report = build_report_data(corpus, labels, method="given", experts_used_in_fit=False, n_boot=0)
    agg = report["aggregate_vs_expert"]
    old = json.loads(json.dumps(report))
    old["aggregate_vs_expert"] = {"span_strict" if k == "span_location" else "span_relaxed"
                                  if k == "span_location_relaxed" else "span_type" if k == "span_location_and_type"
                                  else k: v for k, v in agg.items() if k not in ("span_overlap", "span_per_type",
                                                                                  "headline")}
    model = QualityReport.model_validate(old)
    assert model.aggregate_vs_expert.span_location.f1 == pytest.approx(0.6)
    assert model.aggregate_vs_expert.span_location_and_type.f1 == pytest.approx(0.4)
    text = format_report(old)
    assert "span_location_and_type" in text and "<- headline (conlleval)" in text
    assert [k for k, *_ in score_levels(old)] == ["span_location_and_type", "token", "span_location",
                                                   "span_location_relaxed"]


def _vectors() -> list[dict]:
    path = shared_path("metric_vectors.json")
    cases = json.loads(path.read_text())["sequence_ner"]["cases"]
    return [c for c in cases if all(t[:2] in ("B-", "I-") or t == "O" for seq in c["true"] + c["pred"] for t in seq)]


def test_report_levels_against_seqeval_and_nervaluate_vectors():
    """span_location_and_type is seqeval's default (conlleval) score and span_location nervaluate's "exact"
    (boundaries, any type) on every BIO case of the shared test vectors."""
    cases = _vectors()
    assert cases
    for c in cases:
        types = sorted({t[2:] for seq in c["true"] + c["pred"] for t in seq if t != "O"})
        corpus, labels = _corpus(c["true"], c["pred"], types=types)
        agg = build_report_data(corpus, labels, method="given", experts_used_in_fit=False,
                                n_boot=0)["aggregate_vs_expert"]
        exp = c["expected"]["seqeval_default"]
        got = agg["span_location_and_type"]
        assert (got["precision"], got["recall"], got["f1"]) == pytest.approx(
            (exp["precision"], exp["recall"], exp["f1"]), abs=1e-6), c["name"]
        exact = c["expected"].get("nervaluate_1.2.1", {}).get("exact")
        if exact:
            got = agg["span_location"]
            assert (got["precision"], got["recall"], got["f1"]) == pytest.approx(
                (exact["precision"], exact["recall"], exact["f1"]), abs=1e-6), c["name"]
