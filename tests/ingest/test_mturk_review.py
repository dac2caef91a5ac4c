"""crowdqa.ingest.mturk_review: a batch-results file written back with decisions, every other byte kept.

Oracles: Python's csv reader (the one the mturk-csv reader uses) for how records and fields split,
and the input bytes themselves for everything not written.
"""

from __future__ import annotations

import codecs
import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.mturk_review import RowDecision, _split, assignments, read_batch, write_reviewed

MTURK_HEADER = ("HITId", "AssignmentId", "WorkerId", "AssignmentStatus", "RequesterFeedback", "Input.text",
                "Answer.taskAnswers", "Approve", "Reject")


def _mturk_file(rows, *, newline="\r\n", bom=True) -> bytes:
    """A batch file as the requester site writes it: every field quoted, CRLF, a UTF-8 byte-order mark."""
    lines = [",".join('"' + str(v).replace('"', '""') + '"' for v in r) for r in [MTURK_HEADER, *rows]]
    return (codecs.BOM_UTF8 if bom else b"") + (newline.join(lines) + newline).encode("utf-8")


def _values(data: bytes) -> list[list[str]]:
    text = data.decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text, newline="")))


ROWS = [
    ("H1", "A1", "W1", "Submitted", "", "Forty adults, with \"asthma\"\nwere randomised.", "[]", "", ""),
    ("H1", "A2", "W2", "Approved", "", "Forty adults", "[]", "", ""),
    ("H2", "A3", "W1", "Submitted", "", "Zürich café", "[{}]", "", ""),
    ("H2", "A4", "W3", "Submitted", "", "text", "[]", "x", ""),
    ("H2", "A5", "W4", "Rejected", "bad", "text", "[]", "", ""),
]


def test_no_decisions_gives_back_the_same_bytes():
    data = _mturk_file(ROWS)
    assert write_reviewed(read_batch(data, source="b.csv"), {}) == data


def test_decisions_fill_approve_reject_and_feedback_and_nothing_else():
    data = _mturk_file(ROWS)
    batch = read_batch(data, source="b.csv")
    rows, malformed = assignments(batch)
    assert malformed == []
    assert [(a.row, a.line, a.worker, a.assignment_id, a.open, a.status) for a in rows] == [
        (1, 2, "W1", "A1", True, "Submitted"), (2, 4, "W2", "A2", False, "Approved"),
        (3, 5, "W1", "A3", True, "Submitted"), (4, 6, "W3", "A4", False, "decided in the file"),
        (5, 7, "W4", "A5", False, "Rejected")]
    out = write_reviewed(batch, {1: RowDecision(approve=True, feedback="Approved: fine."),
                                 3: RowDecision(approve=False, feedback="Rejected: F1 0.10, below 0.20.")})
    assert out.startswith(codecs.BOM_UTF8)
    before, after = _values(data), _values(out)
    assert after[1][7:9] == ["x", ""] and after[1][4] == "Approved: fine."
    assert after[3][7:9] == ["", "Rejected: F1 0.10, below 0.20."] and after[3][4] == after[3][8]
    for r in (0, 2, 4, 5):
        assert after[r] == before[r]
    # Byte level: outside the written cells the two files are the same bytes.
    assert out.replace(b'"x"', b'""', 1).replace(b'"Approved: fine."', b'""').replace(
        b'"Rejected: F1 0.10, below 0.20."', b'""', 2) == data


def test_missing_columns_are_added_at_the_end_keeping_line_endings_and_quoting():
    # The CrowdTruth example's layout: no status, no review columns, a bare first field; mixed line endings,
    # no newline at the end, a blank line, a row with too few fields.
    text = ('"HITId","AssignmentId","WorkerId","Input.input","Answer.output"\r\n'
            '1,"A1","W1","-","E"\n'
            '\n'
            '1,"A2","W2","-","B"\r\n'
            '2,"A3"\r\n'
            '2,"A4","W1","-","C"')
    batch = read_batch(text.encode(), source="c.csv")
    rows, malformed = assignments(batch)
    assert [a.row for a in rows] == [1, 3, 5] and malformed == [5]
    out = write_reviewed(batch, {1: RowDecision(True, "ok"), 5: RowDecision(False, "no")}).decode()
    assert out == ('"HITId","AssignmentId","WorkerId","Input.input","Answer.output","Approve","Reject",'
                   '"RequesterFeedback"\r\n'
                   '1,"A1","W1","-","E","x","","ok"\n'
                   '\n'
                   '1,"A2","W2","-","B","","",""\r\n'
                   '2,"A3"\r\n'
                   '2,"A4","W1","-","C","","no","no"')


def test_written_cells_are_csv_injection_safe():
    batch = read_batch(_mturk_file(ROWS), source="b.csv")
    out = write_reviewed(batch, {1: RowDecision(False, '=HYPERLINK("http://x")'),
                                 3: RowDecision(False, "@SUM(1)"), 5: RowDecision(False, "\tcmd")})
    after = _values(out)
    assert after[1][8] == "'=HYPERLINK(\"http://x\")" and after[3][8] == "'@SUM(1)" and after[5][8] == "'\tcmd"
    for cell in (after[1][4], after[1][8], after[3][8], after[5][4]):
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))


@pytest.mark.parametrize("bom, codec", [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
                                        (b"", "utf-8")])
def test_encodings_come_back_as_they_went(bom, codec):
    text = '"AssignmentId","WorkerId","Input.text"\r\n"A1","W1","naïve — “quoted”"\r\n'
    data = bom + text.encode(codec)
    batch = read_batch(data, source="u.csv")
    assert write_reviewed(batch, {}) != data  # the review columns are added ...
    out = write_reviewed(batch, {1: RowDecision(True, "ok")})
    assert out.startswith(bom)
    decoded = out[len(bom):].decode(codec)
    assert decoded == ('"AssignmentId","WorkerId","Input.text","Approve","Reject","RequesterFeedback"\r\n'
                       '"A1","W1","naïve — “quoted”","x","","ok"\r\n')


def test_not_a_batch_file_and_bad_bytes_are_refused():
    with pytest.raises(IngestError, match="no WorkerId column"):
        read_batch(b"a,b\n1,2\n", source="x.csv")
    with pytest.raises(IngestError, match="empty file"):
        read_batch(b"", source="x.csv")
    with pytest.raises(IngestError, match=r"x.csv:2: not UTF-8 text"):
        read_batch(b"AssignmentId,WorkerId\n\xff,W\n", source="x.csv")


# ----------------------------------------------------------------------------- the split is csv's
_CELL = st.text(alphabet=st.sampled_from(list('ab ,"\r\n\'=x')), max_size=6)


@st.composite
def _csv_text(draw):
    """Random CSV-ish text: fields quoted or not, junk after closing quotes, every line ending, blank lines."""
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        fields = []
        for _ in range(draw(st.integers(1, 4))):
            v = draw(_CELL)
            kind = draw(st.sampled_from(["plain", "quoted", "junk"]))
            if kind == "plain":
                fields.append(v.replace(",", "").replace("\r", "").replace("\n", "").lstrip('"'))
            elif kind == "quoted":
                fields.append('"' + v.replace('"', '""') + '"')
            else:
                fields.append('"' + v.replace('"', '""') + '"' + draw(st.sampled_from(["a", 'b"', "c d"])))
        parts.append(",".join(fields) + draw(st.sampled_from(["\r\n", "\n", "\r", "\n\n", "\r\n\r\n"])))
    text = "".join(parts)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")
    if draw(st.booleans()):
        text += '"unclosed, field\nto the end'
    return text


@settings(max_examples=300, deadline=None)
@given(_csv_text())
def test_split_agrees_with_the_csv_module(text):
    expected = list(csv.reader(io.StringIO(text, newline="")))
    records = _split(text)
    from crowdqa.ingest.mturk_review import _unquote

    got = [[_unquote(text[s:e]) for s, e in rec.fields] for rec in records]
    assert got == expected
    # Every character is in a field, a separator or a record's line ending: pieces put back give the text.
    pieces, pos = [], 0
    for rec in records:
        for s, e in rec.fields:
            pieces.append(text[pos:s])
            pieces.append(text[s:e])
            pos = e
    assert "".join(pieces) + text[pos:] == text


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_CELL, st.sampled_from(["Submitted", "Approved", ""]), st.booleans()), min_size=1,
                max_size=8),
       st.sampled_from(["\r\n", "\n"]), st.booleans())
def test_round_trip_keeps_every_untouched_cell(rows, newline, bom):
    body = [(f"H{i}", f"A{i}", f"W{i % 3}", status, "", text, "[]", "", "") for i, (text, status, _) in
            enumerate(rows)]
    data = _mturk_file(body, newline=newline, bom=bom)
    batch = read_batch(data, source="r.csv")
    open_rows = [a.row for a in assignments(batch)[0] if a.open]
    decisions = {r: RowDecision(approve=rows[r - 1][2], feedback=f"why {r}") for r in open_rows}
    out = write_reviewed(batch, decisions)
    assert out.startswith(codecs.BOM_UTF8) == bom
    before, after = _values(data), _values(out)
    assert len(before) == len(after)
    for r, (b, a) in enumerate(zip(before, after, strict=True)):
        touched = {4, 7, 8} if r in decisions else set()
        assert [v for j, v in enumerate(a) if j not in touched] == [v for j, v in enumerate(b) if j not in touched]
    # Reviewing the reviewed file again changes nothing: every assignment is decided in it.
    again = read_batch(out, source="r.csv")
    assert not any(a.open for a in assignments(again)[0])
    assert write_reviewed(again, {}) == out
