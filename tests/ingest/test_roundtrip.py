"""One set of spans written in several formats gives the identical corpus."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdqa.ingest import read_corpus
from crowdqa.ingest.tokenize import tokenize
from tests.ingest.conftest import (
    write_brat,
    write_doccano,
    write_label_studio,
    write_spans_csv,
    write_spans_jsonl,
)

WORDS = ["alpha", "beta", "IL-2", "(n=40)", "x", "ü", "9.5%"]


@st.composite
def annotated_docs(draw):
    """Documents, annotators and non-overlapping spans on token boundaries, in annotator-major order."""
    n_docs = draw(st.integers(1, 3))
    texts = {}
    for d in range(n_docs):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8))
        sep = draw(st.sampled_from([" ", "\n", "  "]))
        texts[f"d{d}"] = sep.join(words)
    rows = []
    for a in range(draw(st.integers(1, 3))):
        for d, text in texts.items():
            if not draw(st.booleans()):
                continue
            starts, ends = tokenize(text)
            n = len(starts)
            cuts = sorted(draw(st.sets(st.integers(0, n), max_size=4)))
            pairs = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2)]
            spans = [(int(starts[i]), int(ends[j - 1]), draw(st.sampled_from(["PER", "LOC"]))) for i, j in pairs]
            if not spans:
                rows.append((d, f"a{a}", None, None, None))
            rows.extend((d, f"a{a}", s, e, lab) for s, e, lab in spans)
    return texts, rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(annotated_docs(), st.sampled_from(["io", "bio"]))
def test_same_spans_in_five_formats_give_identical_corpus(case, scheme):
    """Oracle: the spans-jsonl reading; brat (folder and zip), doccano, spans-csv and, for a
    doc-major file order, Label Studio must equal it exactly (Corpus.equals)."""
    texts, rows = case
    if not rows:
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ref = read_corpus(write_spans_jsonl(tmp / "s.jsonl", rows, texts), format="spans-jsonl", scheme=scheme).corpus
        others = {
            "spans-csv": write_spans_csv(tmp / "s.csv", rows, texts),
            "brat": write_brat(tmp / "brat", rows, texts),
            "doccano": write_doccano(tmp / "doccano", rows, texts),
        }
        for fmt, path in others.items():
            assert read_corpus(path, format=fmt, scheme=scheme).corpus.equals(ref), fmt
        archive = shutil.make_archive(str(tmp / "bratzip"), "zip", tmp, "brat")
        assert zipfile.is_zipfile(archive)
        assert read_corpus(archive, format="brat", scheme=scheme).corpus.equals(ref)
        # Label Studio groups by task (document first): compare with a doc-major spans file.
        doc_major = sorted(rows, key=lambda r: list(texts).index(r[0]))
        ref2 = read_corpus(write_spans_jsonl(tmp / "s2.jsonl", doc_major, texts), format="spans-jsonl",
                           scheme=scheme).corpus
        ls = read_corpus(write_label_studio(tmp / "ls.json", doc_major, texts), format="label-studio", scheme=scheme)
        assert ls.corpus.equals(ref2)
