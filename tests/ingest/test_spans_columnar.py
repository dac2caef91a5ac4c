"""crowdqa.ingest.spans_table's Arrow fast path against its row loop (the oracle), on clean and messy files."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crowdqa.ingest.spans_table as spans_table
from crowdqa.ingest.errors import IngestError
from tests.ingest.conftest import assert_same_corpus

TEXTS = {"d1": "EU rejects German call to boycott", "d2": "Peter  Blackburn", "d 3": "x"}
_DOCS = st.sampled_from(["d1", "d2", "d1", "d 3", "dx", ""])
_WORKERS = st.sampled_from(["alice", "bob", "bob", " carol", "", "O"])
_OFFSETS = st.sampled_from([0, 1, 3, 5, 6, 10, 16, 33, 40, -1, None, "7", " 2", "a", 1.0, True])
_LABELS = st.sampled_from(["PER", "ORG", "ORG", "O", "", " ", " PER", None])


def _read(path, docs, monkeypatch, *, fast: bool, category=None, on_error="fail"):
    from crowdqa.ingest import read_corpus

    with monkeypatch.context() as m:
        if not fast:
            m.setattr(spans_table, "_columnar_corpus", lambda *a, **k: None)
        try:
            fmt = "spans-csv" if path.suffix == ".csv" else "spans-jsonl"
            return read_corpus(path, format=fmt, docs=docs, category=category, on_error=on_error).corpus
        except IngestError as exc:
            return str(exc)


def _write(tmp_path, rows, kind):
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    for d, text in TEXTS.items():
        (docs / f"{d}.txt").write_text(text, encoding="utf-8")
    if kind == "csv":
        path = tmp_path / "s.csv"
        lines = ["doc_id,annotator,start,end,label"]
        lines += [",".join("" if v is None else str(v) for v in row) for row in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    else:
        path = tmp_path / "s.jsonl"
        keys = ("doc_id", "annotator", "start", "end", "label")
        path.write_text("".join(json.dumps({k: v for k, v in zip(keys, row, strict=True) if v is not None}) + "\n"
                                for row in rows), encoding="utf-8")
    return path, docs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_DOCS, _WORKERS, _OFFSETS, _OFFSETS, _LABELS), min_size=1, max_size=8),
       kind=st.sampled_from(["csv", "jsonl"]), category=st.sampled_from([None, "ORG"]),
       on_error=st.sampled_from(["fail", "skip"]))
def test_fast_path_equals_the_row_loop(tmp_path, monkeypatch, rows, kind, category, on_error):
    """Any file gives the same corpus or the same one-line error by either path."""
    path, docs = _write(tmp_path, rows, kind)
    assert_same_corpus(_read(path, docs, monkeypatch, fast=True, category=category, on_error=on_error),
                       _read(path, docs, monkeypatch, fast=False, category=category, on_error=on_error))


def test_clean_files_take_the_fast_path(tmp_path, monkeypatch, seed):
    """Overlapping spans of one type merge; empty rows are assignments; both paths agree (not a fallback)."""
    rng = np.random.default_rng(seed)
    rows = [("d1", "alice", 0, 2, "ORG"), ("d1", "alice", 0, 10, "ORG"), ("d2", "bob", None, None, None)]
    while len(rows) < 33:
        d = ["d1", "d2"][rng.integers(0, 2)]
        s = int(rng.integers(0, len(TEXTS[d]) - 1))
        e = int(rng.integers(s + 1, len(TEXTS[d]) + 1))
        if not TEXTS[d][s:e].strip():
            continue  # a span over spaces alone covers no token: unusual, the row loop's to explain
        rows.append((d, f"w{rng.integers(0, 5)}", s, e, ["PER", "ORG"][rng.integers(0, 2)] if d == "d2" else "ORG"))
    for kind in ("csv", "jsonl"):
        path, docs = _write(tmp_path, rows, kind)
        reader = spans_table._columnar_csv if kind == "csv" else spans_table._columnar_jsonl
        # one type per (document, annotator) here except d2, where two types may clash: take what is clean
        fast = spans_table._columnar_corpus(reader(path), role="crowd", docs=docs, category="ORG", scheme="auto")
        assert fast is not None, kind
        assert_same_corpus(fast, _read(path, docs, monkeypatch, fast=False, category="ORG"))
