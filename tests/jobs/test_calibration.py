"""The calibration stage: scores on every aggregate without changing a label, the report's block, the exports."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation.registry import METHODS
from crowdqa.aggregation.spans import decode_spans
from crowdqa.ingest.writers import LabelScores, write_labels
from crowdqa.jobs.pipeline import crowd_view, run_pipeline
from tests.utils.factories import synthetic_corpus


@pytest.mark.parametrize("method", sorted(METHODS))
def test_calibration_changes_scores_never_labels(method, seed):
    """Every method's aggregate from the pipeline (which calibrates) is exactly the estimator's own ``labels_``
    fitted alone (oracle: the estimator itself, without the pipeline), and every score is a probability: one per
    token, one per decoded span, one per document."""
    corpus = synthetic_corpus(seed=seed % 1000, n_docs=16, accuracy=0.75)
    use_experts = METHODS[method].experts
    r = run_pipeline(corpus, method=method, use_experts=use_experts)
    crowd, _ = crowd_view(corpus, frozenset())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        known = None
        if use_experts:
            from crowdqa.quality.references import reference_labels
            known = reference_labels(corpus)
        alone = make_aggregator(method).fit(crowd, true_labels=known)
    np.testing.assert_array_equal(r.labels, alone.labels_)
    c = r.confidence
    assert c.token.shape == (corpus.n_tokens,) and c.document.shape == (corpus.n_docs,)
    assert c.span.shape == (len(decode_spans(r.labels, corpus)),)
    for a in (c.token, c.span, c.document, c.proba):
        assert np.all((a >= 0) & (a <= 1 + 1e-12))
    np.testing.assert_allclose(c.proba.sum(axis=1), 1.0)


def test_the_report_says_how_calibrated_the_scores_are_against_the_experts(seed):
    """With experts (not in the fit) the temperature is fitted on the expert documents and the report gives both
    summaries; with use_experts the cross-fitting's held-out chains are graded, so the clamped expert tokens
    (score 1, right by construction) are not what is measured."""
    corpus = synthetic_corpus(seed=seed % 1000, n_docs=40, accuracy=0.7)
    for use_experts in (False, True):
        cal = run_pipeline(corpus, method="hmm-crowd", use_experts=use_experts).report.calibration
        assert cal.expert_documents == 20 and cal.items == "spans"
        assert cal.without_experts.n_items > 0
        if cal.with_experts is not None:  # some spans right and some wrong: a temperature is fitted
            assert cal.source == "experts" and len(cal.fold_temperatures) == 4
            assert cal.with_experts.n_items == cal.without_experts.n_items
        assert cal.without_experts.accuracy < 1.0  # held-out spans, not the clamped ones
    none = run_pipeline(corpus.select_role("crowd"), method="hmm-crowd").report.calibration
    assert none.source == "default" and none.without_experts is None
    assert none.temperature == METHODS["hmm-crowd"].temperature


def test_exports_carry_the_scores(tmp_path, seed):
    """spans-jsonl gives each span its score (in decoder order), token-scores each token's label score and every
    class's calibrated posterior, categorical-csv a score column."""
    corpus = synthetic_corpus(seed=seed % 1000, n_docs=6)
    r = run_pipeline(corpus, method="ds")
    c = r.confidence
    scores = LabelScores(token=c.token, span=c.span, proba=c.proba)
    write_labels(r.labels, corpus, tmp_path / "a.jsonl", format="spans-jsonl", scores=scores)
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [row["score"] for row in rows] == pytest.approx(c.span.tolist(), abs=1e-6)
    write_labels(r.labels, corpus, tmp_path / "t.csv", format="token-scores", scores=scores)
    lines = (tmp_path / "t.csv").read_text().splitlines()
    assert lines[0] == "doc_id,token,text,label,score,p:O,p:Entity" and len(lines) == corpus.n_tokens + 1
    first = lines[1].split(",")
    assert float(first[4]) == pytest.approx(c.token[0], abs=1e-6)
    assert float(first[5]) == pytest.approx(c.proba[0, 0], abs=1e-6)
    with pytest.raises(ValueError, match="token-scores writes the aggregate's scores"):
        write_labels(r.labels, corpus, tmp_path / "u.csv", format="token-scores")


def test_the_command_line_says_the_calibration_in_one_line():
    """The line ``crowdqa aggregate`` prints from the report's calibration block, written out by hand."""
    from crowdqa.jobs.local import calibration_line

    block = {"temperature": 3.5, "source": "experts", "expert_documents": 12, "items": "spans",
             "without_experts": {"ece": 0.0812, "ece_interval": [0.05, 0.12]},
             "with_experts": {"ece": 0.031, "ece_interval": [None, None]}}
    assert calibration_line({"calibration": block}) == (
        "scores at temperature 3.5 (fitted on 12 expert documents); spans ECE against the experts: at the default "
        "0.081 [0.050, 0.120], fitted, cross-fitted 0.031")
    assert calibration_line({}) is None
