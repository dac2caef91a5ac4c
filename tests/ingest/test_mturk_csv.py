"""crowdqa.ingest.mturk_csv: Mechanical Turk batch results."""

from __future__ import annotations

import csv
import json

import pytest

from crowdqa.ingest import read_corpus
from crowdqa.ingest.errors import IngestError
from tests.conftest import shared_path

HEADER = ["HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "Input.id", "Input.text", "Answer.taskAnswers"]
TEXT = "Forty adults with asthma were randomised."


def _answer(*ents):
    return json.dumps([{"crowd-entity-annotation": {"entities": [
        {"startOffset": s, "endOffset": e, "label": lab} for s, e, lab in ents]}}])


def _write(path, rows, header=HEADER):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_task_answers_spans_workers_and_rejected(tmp_path):
    rows = [
        ["H1", "A1", "W1", "Approved", "doc1", TEXT, _answer((0, 12, "participants"))],
        ["H1", "A2", "W2", "Submitted", "doc1", TEXT, _answer()],
        ["H1", "A3", "W3", "Rejected", "doc1", TEXT, _answer((0, 41, "participants"))],
    ]
    p = _write(tmp_path / "batch.csv", rows)
    c = read_corpus(p, format="mturk-csv").corpus
    assert c.worker_ids == ("mturk:W1", "mturk:W2") and c.doc_ids == ("doc1",)
    assert c.class_names == ("O", "participants")
    assert c.labels_of(0).tolist() == [1, 1, 0, 0, 0, 0, 0]  # "Forty adults" = 2 tokens
    assert c.labels_of(1).tolist() == [0] * 7
    kept = read_corpus(p, format="mturk-csv", keep_rejected=True).corpus
    assert kept.worker_ids[-1] == "mturk:W3" and kept.labels_of(2).tolist() == [1] * 7


def test_named_answer_column_with_span_lists_and_input_columns(tmp_path):
    header = ["HITId", "AssignmentId", "WorkerId", "Input.pmid", "Input.abstract", "Answer.spans"]
    rows = [["H1", "A1", "W1", "p1", TEXT, json.dumps([[0, 5], [18, 24]])]]
    p = _write(tmp_path / "b.csv", rows, header)
    with pytest.raises(IngestError, match="cannot tell which column holds the text"):
        read_corpus(p, format="mturk-csv", text_column=None, id_column="Input.pmid")
    c = read_corpus(p, format="mturk-csv", text_column="Input.abstract", id_column="Input.pmid",
                    answer_column="Answer.spans", category="P").corpus
    assert c.doc_ids == ("p1",) and c.class_names == ("O", "P")
    assert c.labels_of(0).tolist() == [1, 0, 0, 1, 0, 0, 0]


def test_duplicate_assignment_and_bad_json_name_the_line(tmp_path):
    rows = [
        ["H1", "A1", "W1", "Approved", "doc1", TEXT, _answer()],
        ["H1", "A2", "W1", "Approved", "doc1", TEXT, _answer()],
    ]
    with pytest.raises(IngestError, match=r"b\.csv:3: duplicate assignment: worker 'mturk:W1'"):
        read_corpus(_write(tmp_path / "b.csv", rows), format="mturk-csv")
    rows = [["H1", "A1", "W1", "Approved", "doc1", TEXT, "[{oops"],
            ["H1", "A2", "W2", "Approved", "doc1", TEXT, _answer((0, 5, "P"))]]
    res = read_corpus(_write(tmp_path / "c.csv", rows), format="mturk-csv", on_error="skip")
    assert [p.line for p in res.problems] == [2] and "JSON spans" in res.problems[0].message
    assert res.corpus.worker_ids == ("mturk:W2",)


def test_span_outside_text_and_wrong_field_count(tmp_path):
    rows = [["H1", "A1", "W1", "Approved", "doc1", TEXT, _answer((0, 500, "P"))]]
    with pytest.raises(IngestError, match=r":2: span \[0, 500\) is not inside document 'doc1'"):
        read_corpus(_write(tmp_path / "b.csv", rows), format="mturk-csv")
    rows = [["H1", "A1", "W1", "Approved", "doc1"]]
    with pytest.raises(IngestError, match=r":2: row has 5 fields, the header has 7"):
        read_corpus(_write(tmp_path / "c.csv", rows), format="mturk-csv")


def test_not_an_mturk_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    with pytest.raises(IngestError, match="no WorkerId column"):
        read_corpus(p, format="mturk-csv")


def test_crowdtruth_example_is_read_as_categorical():
    """The CrowdTruth example holds plain answers (A-E): one one-token item per HIT, answers as classes.

    Oracle: counts taken from the file with csv.DictReader, independently of the reader."""
    path = shared_path("mturk", "crowdtruth_amt_example.csv")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    c = read_corpus(path, format="mturk-csv").corpus
    assert c.n_docs == len({r["HITId"] for r in rows}) and c.doc_lengths.tolist() == [1] * c.n_docs
    assert c.n_obs == len(rows)
    assert c.class_names == tuple(sorted({r["Answer.output"] for r in rows})) and not c.has_outside
    r0 = rows[0]
    w = c.worker_ids.index(f"mturk:{r0['WorkerId']}")
    d = c.doc_ids.index(r0["HITId"])
    assert c.class_names[c.labels_of(w)[d]] == r0["Answer.output"]


def test_a_text_column_given_for_plain_answers_is_noted_as_unused(tmp_path):
    """Found walking the README (`crowdqa ingest batch_results.csv --format mturk-csv --text-column Input.text` on a
    multiple-choice batch): the option was silently ignored; the summary now notes it, and a span batch still
    refuses a text column it does not have."""
    p = tmp_path / "batch.csv"
    p.write_text("HITId,AssignmentId,WorkerId,AssignmentStatus,Answer.choice\n"
                 "h1,a1,W1,Submitted,yes\nh1,a2,W2,Submitted,no\n")
    res = read_corpus(p, format="mturk-csv", text_column="Input.text")
    assert res.corpus.n_docs == 1 and any(
        n == "text_column 'Input.text' is not used: the batch holds plain answers (categorical items), which carry "
             "no text" for n in res.notes)
    assert not any("is not used" in n for n in read_corpus(p, format="mturk-csv").notes)
