"""Tests for crowdqa.quality.report_table (the report as a terminal table)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.quality.report import build_report as build_typed_report
from crowdqa.quality.report import build_report_data
from crowdqa.quality.report_table import TABLE_SORT_KEYS, format_report
from tests.quality.test_report import build_report, categorical_corpus, random_corpus


def test_categorical_report_is_printed_as_accuracy(tmp_path):
    from crowdqa.ingest.categorical import read_categorical

    p = tmp_path / "c.csv"
    p.write_text("task,worker,label,gold\na,u,no,no\nb,u,yes,no\nc,u,yes,yes\na,v,no,no\nc,v,no,yes\n")
    c = read_categorical(p)
    rep = build_report(c, c.labels_of(c.worker_ids.index("u")), method="mv", experts_used_in_fit=False, n_boot=0)
    assert rep["kind"] == "categorical"
    v = next(w for w in rep["workers"] if w["annotator"] == "v")
    assert (v["vs_expert"]["accuracy"]["correct"], v["vs_expert"]["accuracy"]["compared"]) == (1, 2)
    text = format_report(rep)
    assert "3 items, 2 crowd workers, 1 experts on 3 items" in text
    assert "accuracy 0.667" in text and "(2 of 3 items)" in text
    assert "Acc(exp)" in text and "span_location" not in text


def test_every_section_and_the_typed_report_prints_as_the_plain_one():
    """Oracle: the typed report (pydantic) prints as its plain data does; the table has the header, the
    aggregate's levels (headline first), the worker rows and the agreement lines."""
    corpus = random_corpus(5, n_docs=14, n_crowd=6, bio=True)
    labels = np.zeros(corpus.n_tokens, dtype=np.int64)
    fit = {"iterations": 4, "converged": True, "seconds": 1.25, "log_likelihood": [-2.0, -1.5]}
    options = dict(method="ds", experts_used_in_fit=False, n_boot=20, min_pair_docs=1)
    text = format_report(build_report_data(corpus, labels, fit=fit, **options))
    assert format_report(build_typed_report(corpus, labels, fit=fit, **options)) == text
    lines = text.splitlines()
    assert lines[0].startswith("method ds   reference: expert union") and lines[1].startswith("fit: 4 iterations")
    aggregate = lines.index(next(x for x in lines if x.startswith("Aggregate vs experts")))
    assert lines[aggregate + 1].startswith("  span_location_and_type") and "<- headline (conlleval)" in text
    assert sum(x.split()[1:2] == ["crowd"] for x in lines) == 6 and "Agreement: Krippendorff's alpha" in text


@pytest.mark.parametrize("sort", TABLE_SORT_KEYS)
def test_rows_in_natural_id_order_break_ties(sort):
    """Workers with equal scores come in natural id order (``w2`` before ``w10``), whatever the sort key."""
    corpus = random_corpus(6, n_docs=8, n_crowd=4)
    rep = build_report(corpus, np.zeros(corpus.n_tokens, dtype=np.int64), method="mv", experts_used_in_fit=False,
                       n_boot=0)
    for w, name in zip(rep["workers"], ["w10", "w2", "w1", "w3", "e1", "e0"], strict=True):
        w.update(annotator=name, vs_expert=None, vs_aggregate=None, span_vs_expert=None, documents=1, quality=None)
    rows = [x.split()[0] for x in format_report(rep, sort=sort).splitlines()
            if x.split()[1:2] in (["crowd"], ["expert"])]
    assert rows == ["e0", "e1", "w1", "w2", "w3", "w10"]


def test_a_categorical_table_refuses_a_span_sort():
    rep = build_report(categorical_corpus(1), np.zeros(60, int), method="mv", experts_used_in_fit=False, n_boot=0)
    with pytest.raises(ValueError, match="accuracy, documents, annotator, accuracy_low, .*, verdict for categorical"):
        format_report(rep, sort="f1")
