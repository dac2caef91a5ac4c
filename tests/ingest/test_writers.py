"""crowdqa.ingest.writers and the parse summary / CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from crowdqa.api.cli import main
from crowdqa.ingest import read_corpus
from crowdqa.ingest.summary import summarize
from crowdqa.ingest.writers import write_labels
from tests.ingest.conftest import write_spans_jsonl

TEXTS = {"d0": "Ann met Bob in Rome", "d1": "Paris"}
ROWS = [("d0", "w1", 0, 3, "PER"), ("d0", "w1", 15, 19, "LOC"), ("d1", "w2", None, None, None),
        ("d0", "md", 8, 11, "PER")]


@pytest.fixture
def corpus(tmp_path):
    p = write_spans_jsonl(tmp_path / "s.jsonl", ROWS, TEXTS, roles={"w1": "crowd", "w2": "crowd", "md": "expert"})
    return read_corpus(p, format="spans-jsonl").corpus


def test_spans_jsonl_round_trips_through_the_reader(corpus, tmp_path):
    """Oracle: writing w1's labels as spans and reading them back (as one annotator) gives w1's labels."""
    labels = corpus.labels_of(0)
    out = tmp_path / "agg.jsonl"
    write_labels(labels, corpus, out, format="spans-jsonl")
    spans = [json.loads(x) for x in out.read_text().splitlines()]
    assert spans == [{"doc_id": "d0", "start": 0, "end": 3, "label": "PER", "text": "Ann"},
                     {"doc_id": "d0", "start": 15, "end": 19, "label": "LOC", "text": "Rome"}]
    rows = [(s["doc_id"], "w1", s["start"], s["end"], s["label"]) for s in spans]
    back = read_corpus(write_spans_jsonl(tmp_path / "b.jsonl", rows, TEXTS), format="spans-jsonl",
                       scheme="bio").corpus
    assert back.class_names == corpus.class_names
    assert back.labels_of(0).tolist() == labels[: back.n_tokens].tolist()


def test_conll_and_ebm_nlp_output(corpus, tmp_path):
    labels = corpus.labels_of(0)  # MISSING on d1 -> O
    write_labels(labels, corpus, tmp_path / "out.conll", format="conll")
    assert (tmp_path / "out.conll").read_text() == (
        "-DOCSTART- d0\n\nAnn\tB-PER\nmet\tO\nBob\tO\nin\tO\nRome\tB-LOC\n\n-DOCSTART- d1\n\nParis\tO\n\n")
    write_labels(labels, corpus, tmp_path / "ebm", format="ebm-nlp")
    types = corpus.entity_types
    assert (tmp_path / "ebm" / "d0.AGGREGATED.ann").read_text().split() == [
        str(types.index("PER") + 1), "0", "0", "0", str(types.index("LOC") + 1)]
    assert (tmp_path / "ebm" / "d1.AGGREGATED.ann").read_text() == "0\n"


def test_categorical_csv_and_bad_input(corpus, tmp_path):
    with pytest.raises(ValueError, match="one-token documents, found 5 tokens in document 'd0'"):
        write_labels(np.zeros(corpus.n_tokens, int), corpus, tmp_path / "c.csv", format="categorical-csv")
    with pytest.raises(ValueError, match="labels must have shape"):
        write_labels(np.zeros(2, int), corpus, tmp_path / "c.csv", format="conll")
    with pytest.raises(ValueError, match="format must be one of"):
        write_labels(np.zeros(corpus.n_tokens, int), corpus, tmp_path / "c.csv", format="xml")
    p = tmp_path / "cat.csv"
    p.write_text("item,annotator,label\nq1,w1,yes\nq1,w2,no\nq2,w1,no\n")
    cat = read_corpus(p, format="categorical").corpus
    write_labels(np.array([cat.class_names.index("yes"), -1]), cat, tmp_path / "o.csv", format="categorical-csv")
    assert (tmp_path / "o.csv").read_text().splitlines() == ["item,label", "q1,yes", "q2,"]


def test_summary_counts(corpus):
    """Oracle: hand count of ROWS (3 annotators; d0 has w1 and md, d1 has w2)."""
    s = summarize(corpus, problems=[])
    assert s["documents"] == 2 and s["tokens"] == 6 and s["annotations"] == 11
    assert s["annotators"] == {"crowd": 2, "expert": 1}
    assert s["coverage"]["annotators_per_document"] == {"min": 1, "median": 1.5, "max": 2}
    assert s["coverage"]["expert"] == {"min": 0, "median": 0.5, "max": 1}
    assert s["coverage"]["documents_with_expert"] == 1 and s["skipped"] == 0
    json.dumps(s)


def test_cli_ingest_merges_expert_saves_and_reports_errors(tmp_path, capsys):
    crowd = write_spans_jsonl(tmp_path / "c.jsonl", ROWS[:3], TEXTS)
    expert = write_spans_jsonl(tmp_path / "e.jsonl", ROWS[3:], TEXTS)
    out = tmp_path / "corpus.npz"
    assert main(["ingest", str(crowd), "--format", "spans-jsonl", "--expert", str(expert), "--save", str(out),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["annotators"] == {"crowd": 2, "expert": 1} and out.exists()
    assert read_corpus(out, format="corpus").corpus.n_obs == summary["annotations"]
    assert main(["ingest", str(out), "--format", "corpus"]) == 0
    assert "annotators   2 crowd, 1 expert" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "d", "annotator": "w", "start": 0, "end": 9, "label": "X", "text": "abc"}\n')
    assert main(["ingest", str(bad), "--format", "spans-jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("crowdqa: error: ") and "bad.jsonl:1: span [0, 9) is not inside" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["ingest", str(bad), "--format", "spans-jsonl", "--on-error", "skip"]) == 0
    assert "skipped rows: 1" in capsys.readouterr().out


@pytest.mark.parametrize("ids, names", [
    (["q1", "q2", "q3", "q4"], ["x", "y", "z"]),  # nothing to escape or quote: the joined fast path
    (["q1", "q2", "q3"], ["+x", "b,c", "y"]),
    (["=1+1", "a,b", 'say "hi"', "'quoted", "-2", "plain\rcr"], ["x", "y", "z"]),
])
def test_categorical_csv_equals_csv_writer(tmp_path, ids, names):
    """Oracle: csv.writer with csv_escape on every cell, row by row (the writer before issue 14)."""
    import csv
    import io

    from crowdqa.aggregation.corpus import Corpus
    from crowdqa.ingest.writers import csv_escape

    n = len(ids)
    corpus = Corpus.from_arrays(token=np.arange(n), worker=np.zeros(n), label=np.zeros(n), doc_lengths=np.ones(n),
                                token_start=np.zeros(n), token_end=np.array([len(d) for d in ids]), doc_ids=ids,
                                texts=ids, worker_ids=["w"], worker_roles=["crowd"], class_names=names)
    labels = np.arange(n) % 4 - 1  # -1 (no label) and every class
    write_labels(labels, corpus, tmp_path / "o.csv", format="categorical-csv")
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(["item", "label"])
    for d, k in zip(ids, labels.tolist(), strict=True):
        w.writerow([csv_escape(d), csv_escape(corpus.class_names[k]) if k >= 0 else ""])
    assert (tmp_path / "o.csv").read_bytes() == buf.getvalue().encode("utf-8")


def test_summary_coverage_brute_force(seed):
    """Oracle: annotators per document counted by a loop over (document, annotator) with labels_of."""
    from tests.quality.test_report import random_corpus

    c = random_corpus(seed, n_docs=15, n_crowd=6, n_experts=2)
    s = summarize(c)
    per_doc = {r: [0] * c.n_docs for r in ("all", "crowd", "expert")}
    for w in range(c.n_workers):
        lab = c.labels_of(w)
        for d in range(c.n_docs):
            if np.any(lab[c.doc_start[d]:c.doc_start[d + 1]] >= 0):
                per_doc["all"][d] += 1
                per_doc[c.worker_roles[w]][d] += 1
    for key, got in (("all", s["coverage"]["annotators_per_document"]), ("crowd", s["coverage"]["crowd"]),
                     ("expert", s["coverage"]["expert"])):
        v = per_doc[key]
        assert got == {"min": min(v), "median": float(np.median(v)), "max": max(v)}, key
    assert s["coverage"]["documents_with_expert"] == sum(1 for n in per_doc["expert"] if n > 0)


def test_conll_output_of_an_inside_outside_corpus_is_bio_and_reads_back(tmp_path):
    """Issue 13: CoNLL output is BIO with -DOCSTART- and document ids, also for IO labels; `crowdqa report`
    reads it back to the same labels (oracle: the labels written)."""
    from crowdqa.ingest.aggregate_input import read_aggregate

    rows = [("a", "w", 0, 9, "P"), ("a", "w", 10, 14, "P"), ("b", "w", None, None, None)]
    texts = {"a": "two words here", "b": "none"}
    c = read_corpus(write_spans_jsonl(tmp_path / "s.jsonl", rows, texts), format="spans-jsonl").corpus
    assert c.scheme == "io"
    labels = c.labels_of(0)
    write_labels(labels, c, tmp_path / "o.conll", format="conll")
    assert (tmp_path / "o.conll").read_text() == ("-DOCSTART- a\n\ntwo\tB-P\nwords\tI-P\nhere\tI-P\n\n"
                                                  "-DOCSTART- b\n\nnone\tO\n\n")
    assert read_aggregate(tmp_path / "o.conll", c, format="conll").tolist() == labels.tolist()
