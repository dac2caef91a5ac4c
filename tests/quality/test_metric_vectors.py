"""Every metric against ../shared/data/metric_vectors.json, one test per case.

Oracle: the expected values in that file, computed by running the public reference
implementations each family names (SLiCE, segeval 2.0.11, the ClinAIS evaluation code,
nlpsandbox-client, seqeval 1.2.2, nervaluate 1.2.1, scikit-learn, statsmodels,
krippendorff, Azure's documented example). Values are rounded to 6 places there, so the
tolerance is 1e-6 (NLP Sandbox gives two places: crowdqa's unrounded values are rounded
the same way and compared exactly).
Skipped, with a message, where the file is absent.
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.spans import decode_spans
from crowdqa.quality.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal
from crowdqa.quality.intervals import bootstrap_f1_bounds, clopper_pearson
from crowdqa.quality.metrics import token_prf
from crowdqa.quality.sample_size import slice_sample_size
from crowdqa.quality.segmentation import b2_similarity, boundary_similarity, boundary_similarity_strings
from crowdqa.quality.span_metrics import (
    CharSpans,
    annotation_tokens,
    confusion_from_pairs,
    entity_level_scores,
    instance_prf,
    model_level_scores,
    nervaluate_scores,
    seqeval_prf,
    token_set_counts,
)
from tests.conftest import SHARED_DATA, shared_path

TOL = 1e-6


@cache
def _raw() -> dict | None:
    p = SHARED_DATA / "metric_vectors.json"
    return json.loads(p.read_text()) if p.exists() else None


def vectors() -> dict:
    shared_path("metric_vectors.json")  # skips with a message when absent
    return _raw()


def _cases(family: str) -> list:
    raw = _raw()
    if raw is None:
        return ["absent"]
    return [c["name"] for c in raw[family]["cases"]]


def _case(family: str, name: str) -> dict:
    data = vectors()
    return next(c for c in data[family]["cases"] if c["name"] == name)


# ----------------------------------------------------------------------------- SLiCE
@pytest.mark.parametrize("name", _cases("slice"))
def test_slice(name):
    c = _case("slice", name)
    i = c["input"]
    s = slice_sample_size(
        precision=i["precision"], recall=i["recall"], frequency=i["frequency"],
        half_width=i["interval_half_width"], confidence=1 - i["alpha"], external=not i["internal_frequency"],
    )
    e = c["expected"]
    assert (s.n_precision, s.n_recall) == (c["n_precision"], c["n_recall"])
    assert (s.documents, s.positives, s.negatives) == (e["total"], e["total_positive"], e["total_negative"])
    assert (s.tp, s.fp, s.tn, s.fn) == (e["TP"], e["FP"], e["TN"], e["FN"])


def test_slice_per_hospital_paper():
    """Paper example (f = 0.48 internal): 519 = 249 + 270, and 87 = 42 + 45 per hospital of 6."""
    paper = vectors()["slice"]["per_hospital_paper"]
    s = slice_sample_size(precision=0.85, recall=0.80, frequency=0.48, half_width=0.05, sites=paper["hospitals"])
    assert (s.documents, s.positives, s.negatives) == (paper["total"], paper["positive"], paper["negative"])
    ph = paper["per_hospital"]
    assert (s.per_site["documents"], s.per_site["positives"], s.per_site["negatives"]) == (
        ph["total"], ph["positive"], ph["negative"])


# ----------------------------------------------------------------------------- segmentation
@pytest.mark.parametrize("name", _cases("segeval_B"))
def test_segeval_b(name):
    c = _case("segeval_B", name)
    assert boundary_similarity(c["hypothesis_masses"], c["reference_masses"]) == pytest.approx(
        c["expected"]["B"], abs=TOL)


def _boundary_string(case: dict, key: str, code: dict) -> np.ndarray:
    out = np.zeros(case["length"], dtype=np.int64)
    for pos, labels in case[key].items():
        for lab in labels:
            out[int(pos)] |= 1 << code[lab]
    return out


@pytest.mark.parametrize("name", _cases("clinais_B2"))
def test_clinais_b2(name):
    c = _case("clinais_B2", name)
    labels = sorted({x for k in ("reference_boundaries", "hypothesis_boundaries") for v in c[k].values() for x in v})
    code = {lab: i for i, lab in enumerate(labels)}
    hyp = _boundary_string(c, "hypothesis_boundaries", code)
    ref = _boundary_string(c, "reference_boundaries", code)
    value, edits = b2_similarity(hyp, ref, return_edits=True)
    e = c["expected"]
    assert value == pytest.approx(e["B2"], abs=TOL)
    unweighted = boundary_similarity_strings(hyp, ref, n_t=2, unweighted=True)
    assert unweighted == pytest.approx(e["B_unweighted_nt2"], abs=TOL)
    st = e["stats_B2"]
    assert edits.matches == st["matches"]
    assert sorted(labels[t] for t, side in edits.additions if side == "a") == sorted(st["additions_hyp_only"])
    assert sorted(labels[t] for t, side in edits.additions if side == "b") == sorted(st["additions_ref_only"])
    assert sorted((labels[a], labels[b]) for a, b in edits.substitutions) == sorted(map(tuple, st["substitutions"]))
    assert [(i, j, labels[t]) for i, j, t in edits.transpositions] == [tuple(t) for t in st["transpositions"]]


# ----------------------------------------------------------------------------- NLP Sandbox
def _sandbox_rows(notes: list, names: list) -> list:
    rows = []
    for note in notes:
        doc = names.index(note["annotationSource"]["resourceSource"]["name"])
        for key, anns in note.items():
            if key.startswith("text"):
                rows.extend((doc, a["start"], a["length"], a["text"], a.get("locationType")) for a in anns)
    return rows


@pytest.mark.parametrize("name", _cases("nlpsandbox"))
def test_nlpsandbox(name):
    c = _case("nlpsandbox", name)
    names = sorted({n["annotationSource"]["resourceSource"]["name"] for n in c["gold"] + c["prediction"]})
    g, p = _sandbox_rows(c["gold"], names), _sandbox_rows(c["prediction"], names)
    types = sorted({r[4] or "" for r in g + p})

    def spans(rows):
        return CharSpans.from_lists([r[0] for r in rows], [r[1] for r in rows], [r[1] + r[2] for r in rows],
                                    [types.index(r[4] or "") for r in rows])

    counts = c["counts_current_treebank"]
    for mode, key in (("strict", "instance_strict"), ("relaxed", "instance_relax"), ("type", "type")):
        if key not in counts:
            assert c["kind"] == "person"  # the reference has no type score for person names
            continue
        s = instance_prf(spans(g), spans(p), mode=mode)
        e = counts[key]
        assert (s.tp, s.fp, s.fn) == (e["tp"], e["fp"], e["fn"])
        assert (round(s.precision, 2), round(s.recall, 2), round(s.f1, 2)) == (
            e["precision"], e["recall"], e["F1_from_unrounded"])
    for style, exp in (("treebank", c["expected_current_treebank"]), ("whitespace", c["expected_legacy_whitespace"])):
        gk = [t for r in g for t in annotation_tokens(r[0], r[1], r[3], style=style)]
        pk = [t for r in p for t in annotation_tokens(r[0], r[1], r[3], style=style)]
        tp, fp, fn = token_set_counts(gk, pk)
        # The reference rounds to two places (Python's round); compare the same way.
        assert round(tp / (tp + fp), 2) == exp["token_strict_precision"]
        assert round(tp / (tp + fn), 2) == exp["token_strict_recall"]
    e = counts["token_strict"]
    gk = [t for r in g for t in annotation_tokens(r[0], r[1], r[3])]
    pk = [t for r in p for t in annotation_tokens(r[0], r[1], r[3])]
    assert token_set_counts(gk, pk) == (e["tp"], e["fp"], e["fn"])


# ----------------------------------------------------------------------------- seqeval / nervaluate
def _tag_spans(tags: list[str], types: list[str]):
    names = ["O", *[f"{q}-{t}" for t in types for q in "BI"]]
    n = len(tags)
    corpus = Corpus.from_arrays(
        token=[], worker=[], label=[], doc_lengths=[n], token_start=range(0, 2 * n, 2),
        token_end=range(1, 2 * n, 2), doc_ids=["d"], texts=[" ".join("x" * n)], worker_ids=[], worker_roles=[],
        class_names=names,
    )
    return decode_spans(np.array([names.index(t) for t in tags]), corpus)


@pytest.mark.parametrize("name", _cases("sequence_ner"))
def test_sequence_ner(name):
    c = _case("sequence_ner", name)
    e = c["expected"]
    for key, exp in e.items():
        if key == "seqeval_default":
            s = seqeval_prf(c["true"], c["pred"])
        elif key.startswith("seqeval_strict_"):
            s = seqeval_prf(c["true"], c["pred"], mode="strict", scheme=key.rsplit("_", 1)[1])
        else:
            continue
        assert (s.precision, s.recall, s.f1) == pytest.approx((exp["precision"], exp["recall"], exp["f1"]), abs=TOL)
    if "nervaluate_1.2.1" in e:
        tags_t, tags_p = c["true"][0], c["pred"][0]
        types = sorted({t[2:] for t in tags_t + tags_p if t != "O"})
        got = nervaluate_scores(_tag_spans(tags_t, types), _tag_spans(tags_p, types))
        for scheme, exp in e["nervaluate_1.2.1"].items():
            for k, v in exp.items():
                assert got[scheme][k] == pytest.approx(v, abs=TOL), (scheme, k)


# ----------------------------------------------------------------------------- agreement
def test_cohen_kappa_experts():
    a = vectors()["agreement"]["cohen_kappa_experts"]
    assert cohen_kappa(np.array(a["expert1"]), np.array(a["expert2"])) == pytest.approx(a["expected"], abs=TOL)


def test_token_prf_vs_expert_union():
    a = vectors()["agreement"]["token_prf_vs_expert_union"]
    s = token_prf(np.array(a["worker"]), np.array(a["expert_union"]))
    e = a["expected"]
    assert (s.precision, s.recall, s.f1) == pytest.approx((e["precision"], e["recall"], e["f1"]), abs=TOL)


def test_fleiss_kappa():
    a = vectors()["agreement"]["fleiss_kappa"]
    assert fleiss_kappa(np.array(a["category_counts"])) == pytest.approx(a["expected"], abs=TOL)
    # The raw ratings give the same counts.
    r = np.array(a["ratings_items_x_raters"])
    counts = np.stack([(r == k).sum(axis=1) for k in range(3)], axis=1)
    assert np.array_equal(counts, a["category_counts"])


def test_krippendorff_alpha_sparse():
    a = vectors()["agreement"]["krippendorff_alpha_nominal_sparse"]
    data = np.array([[np.nan if v is None else v for v in row] for row in a["reliability_data_raters_x_items"]])
    assert krippendorff_alpha_nominal(data) == pytest.approx(a["expected"], abs=TOL)


# ----------------------------------------------------------------------------- intervals
@pytest.mark.parametrize("name", _cases("confidence_intervals"))
def test_clopper_pearson(name):
    c = _case("confidence_intervals", name)
    tp, fp, fn = c["tp"], c["fp"], c["fn"]
    p = clopper_pearson(tp, tp + fp)
    r = clopper_pearson(tp, tp + fn)
    f = clopper_pearson(2 * tp, 2 * tp + fp + fn)
    assert [p.low, p.high] == pytest.approx(c["precision_cp95"], abs=TOL)
    assert [r.low, r.high] == pytest.approx(c["recall_cp95"], abs=TOL)
    assert [f.low, f.high] == pytest.approx(c["f1_cp95_on_2tp_over_2tp_fp_fn__approximation"], abs=TOL)


def test_f1_bootstrap_example():
    """The file marks this non-portable (it depends on numpy's generator stream); numpy 2.x reproduces it."""
    b = vectors()["confidence_intervals"]["f1_bootstrap_example"]
    counts = np.array(b["docs_tp_fp_fn"])
    s = counts.sum(axis=0)
    assert 2 * s[0] / (2 * s[0] + s[1] + s[2]) == pytest.approx(b["point_f1"], abs=TOL)
    low, high = bootstrap_f1_bounds(counts, n_boot=2000, rng=np.random.default_rng(12345))
    assert [low, high] == pytest.approx(b["expected_ci"], abs=TOL)


# ----------------------------------------------------------------------------- Azure
def test_azure_entity_and_model_level():
    a = vectors()["azure_custom_ta4h"]
    types = list(a["confusion_matrix_rows_predicted_cols_actual"])
    pairs = a["pairs_entity_predicted_actual"]
    cm = confusion_from_pairs([types.index(p[1]) for p in pairs], [types.index(p[2]) for p in pairs],
                              n_types=len(types))
    exp_cm = a["confusion_matrix_rows_predicted_cols_actual"]
    assert cm.tolist() == [[exp_cm[r][c] for c in types] for r in types]
    ent = entity_level_scores(cm, skip_none=False)
    for i, t in enumerate(types):
        e = a["entity_level"][t]
        assert (ent["tp"][i], ent["fp"][i], ent["fn"][i]) == (e["tp"], e["fp"], e["fn"])
        assert (ent["precision"][i], ent["recall"][i], ent["f1"][i]) == pytest.approx(
            (e["precision"], e["recall"], e["f1"]), abs=TOL)
    m = model_level_scores(cm, skip_none=False)
    e = a["model_level_micro"]
    assert (m.tp, m.fp, m.fn) == (e["tp"], e["fp"], e["fn"])
    assert (m.precision, m.recall, m.f1) == pytest.approx((e["precision"], e["recall"], e["f1"]), abs=TOL)
