"""Tests for crowdqa.quality.report_json (the report's JSON writer): its file is the report as JSON, one row
a line, however the rows are batched."""

from __future__ import annotations

import io
import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.quality import report_json
from crowdqa.quality.json_data import plain_json
from crowdqa.quality.report import build_report_data
from crowdqa.quality.report_json import _rows, dump_report
from tests.quality.test_report import build_report, random_corpus


def test_dump_report_is_the_report_as_json(tmp_path):
    """Oracle: json.loads of the streamed file equals plain_json(report) (NaN, inf -> null; numpy -> numbers)."""
    corpus = random_corpus(3, n_docs=12, n_crowd=5)
    labels = np.zeros(corpus.n_tokens, dtype=np.int64)
    report = build_report(corpus, labels, method="mv", experts_used_in_fit=False, n_boot=50)
    report["extra"] = {"nan": float("nan"), "inf": [np.float64(np.inf), np.int64(3)], "empty": {}, "none": [],
                       "rows": [{"a": np.nan}, [1, 2]]}
    buf = io.StringIO()
    dump_report(report, buf)
    text = buf.getvalue()
    assert json.loads(text) == plain_json(report)
    assert "NaN" not in text and "Infinity" not in text
    workers = text.split('"workers": [\n', 1)[1].split("\n  ]", 1)[0].splitlines()
    assert len(workers) == corpus.n_workers  # one worker per line


_VALUES = st.one_of(st.text(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
                    st.none(), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=1), min_size=1, max_size=5, unique=True), st.data())
def test_rows_are_the_json_of_each_row(keys, data):
    """Oracle: json.dumps of each row (NaN and inf as null, the report's separators), joined by the separator;
    rows of one key order with str, int, float, None or bool values (the column-wise path and the encoder's),
    and rows whose keys differ."""
    n = data.draw(st.integers(1, 6))
    rows = [{k: data.draw(_VALUES) for k in keys} for _ in range(n)]
    if data.draw(st.booleans()) and n > 1:
        rows[-1] = dict(reversed(list(rows[-1].items())))
    want = ",\n    ".join(json.dumps(plain_json(r), ensure_ascii=False, separators=(", ", ": ")) for r in rows)
    assert _rows(rows, ",\n    ") == want


def test_rows_of_worker_pairs_are_their_json():
    """Oracle: json.dumps of each row, for rows shaped like the crowd kappas (ids, counts, a kappa that may be
    NaN, inf or None) and for strings that need escaping."""
    kappas = [0.25, float("nan"), float("inf"), -float("inf"), None, 1, -0.0, 1e-300]
    rows = [{"a": f'w"{i}\\é\n', "b": f"%s{i}", "documents": i, "tokens": 10**19 + i, "kappa": k}
            for i, k in enumerate(kappas)]
    want = ",\n".join(json.dumps(plain_json(r), ensure_ascii=False, separators=(", ", ": ")) for r in rows)
    assert _rows(rows, ",\n") == want


def test_dump_report_in_batches_of_rows_is_the_same_file(monkeypatch):
    """Oracle: the file written with every list of rows encoded at once equals the one written a few rows at
    a time (batches of 2 and 3 rows: worker and crowd-pair lists split unevenly)."""


    corpus = random_corpus(4, n_docs=20, n_crowd=7)
    report = build_report_data(corpus, np.zeros(corpus.n_tokens, dtype=np.int64), method="mv",
                               experts_used_in_fit=False, n_boot=20, min_pair_docs=1)
    texts = []
    for batch in (10**9, 2, 3):
        monkeypatch.setattr(report_json, "_ROWS_AT_ONCE", batch)
        buf = io.StringIO()
        dump_report(report, buf)
        texts.append(buf.getvalue())
    assert len(report["agreement"]["crowd_kappa"]) > 3 and len(report["workers"]) > 3
    assert texts[0] == texts[1] == texts[2]
