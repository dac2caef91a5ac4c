"""The generic readers (conll, brat, label-studio, doccano, spans tables) and their bad input."""

from __future__ import annotations

import json
import zipfile

import pytest

from crowdqa.ingest import read_corpus
from crowdqa.ingest._io import MAX_ZIP_BYTES
from crowdqa.ingest.errors import IngestError

CONLL = """# annotators: ann7 ann9 ann12
EU B-ORG ? B-ORG
rejects O ? O
German B-MISC ? I-MISC

Peter B-PER B-PER ?
Blackburn I-PER I-PER ?
"""


def test_conll_header_missing_annotators_and_schema(tmp_path):
    p = tmp_path / "answers.txt"
    p.write_text(CONLL)
    c = read_corpus(p, format="conll").corpus
    assert c.doc_ids == ("1", "2") and c.worker_ids == ("ann7", "ann12", "ann9")
    assert c.class_names == ("O", "B-MISC", "I-MISC", "B-ORG", "I-ORG", "B-PER", "I-PER")
    assert c.texts == ("EU rejects German", "Peter Blackburn")
    assert c.labels_of(0).tolist() == [3, 0, 1, 5, 6]
    assert c.labels_of(1).tolist() == [3, 0, 2, -1, -1]  # ann12 did not label sentence 2
    assert c.labels_of(2).tolist() == [-1, -1, -1, 5, 6]


def test_conll_numbered_columns_and_partial_question_marks(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("EU B-ORG O\nrejects ? O\n\nPeter B-PER O\n")
    with pytest.raises(IngestError, match=r"a\.txt:2: annotator 'crowd:1' labels only part of the sentence"):
        read_corpus(p, format="conll")
    res = read_corpus(p, format="conll", on_error="skip")
    assert res.corpus.doc_ids == ("2",) and res.corpus.worker_ids == ("crowd:1", "crowd:2") and len(res.problems) == 1
    p.write_text("EU B-ORG O\nrejects O\n")
    with pytest.raises(IngestError, match=r":2: expected a token and 2 annotator columns, found 2 fields"):
        read_corpus(p, format="conll")


def _brat(root, annotator, doc, text, ann):
    (root / annotator).mkdir(parents=True, exist_ok=True)
    (root / annotator / f"{doc}.txt").write_text(text)
    (root / annotator / f"{doc}.ann").write_text(ann)


def test_brat_discontinuous_fragments_and_ignored_lines(tmp_path):
    text = "left and right lung"
    _brat(tmp_path, "md1", "doc", text, "T1\tOrgan 0 4;15 19\tleft lung\nR1\tRel Arg1:T1 Arg2:T1\n#1\tNote T1\tx\n")
    _brat(tmp_path, "md2", "doc", text, "")
    c = read_corpus(tmp_path, format="brat", role="expert", scheme="bio").corpus
    assert c.worker_ids == ("md1", "md2") and c.worker_roles == ("expert", "expert")
    assert c.labels_of(0).tolist() == [1, 0, 0, 1]  # two fragments, each B-Organ
    assert c.labels_of(1).tolist() == [0, 0, 0, 0]


def test_brat_errors(tmp_path):
    _brat(tmp_path, "a", "doc", "one two", "T1\tX 0 three\tone\n")
    with pytest.raises(IngestError, match=r"doc\.ann:1: bad offsets"):
        read_corpus(tmp_path, format="brat")
    _brat(tmp_path, "a", "doc", "one two", "T1\tX 0 3\tone\n")
    _brat(tmp_path, "b", "doc", "one twp", "")
    with pytest.raises(IngestError, match=r"b/doc\.txt: text of 'doc' differs"):
        read_corpus(tmp_path, format="brat")
    (tmp_path / "c.ann").write_text("")
    with pytest.raises(IngestError, match="not in an annotator folder"):
        read_corpus(tmp_path, format="brat")


def test_zip_path_traversal_and_size_bound(tmp_path, monkeypatch):
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("../../etc/x.ann", "")
    with pytest.raises(IngestError, match=r"evil\.zip: unsafe path '\.\./\.\./etc/x\.ann'"):
        read_corpus(evil, format="brat")
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("u/d.txt", "a" * 5000)
        z.writestr("u/d.ann", "")
    monkeypatch.setattr("crowdqa.ingest._inflate.MAX_ZIP_BYTES", 1000)
    with pytest.raises(IngestError, match="expands to more than 1000 bytes"):
        read_corpus(bomb, format="brat")
    assert MAX_ZIP_BYTES == 1 << 30


def test_label_studio_completed_by_cancelled_and_multi_label(tmp_path):
    tasks = [{"id": 1, "data": {"text": "Ann lives in Rome"}, "annotations": [
        {"completed_by": 3, "result": [{"type": "labels", "value": {"start": 13, "end": 17, "labels": ["LOC"]}},
                                       {"type": "choices", "value": {"choices": ["ok"]}}]},
        {"completed_by": {"id": 4, "email": "b@x.org"}, "result": []},
        {"completed_by": 5, "was_cancelled": True, "result": [
            {"type": "labels", "value": {"start": 0, "end": 3, "labels": ["PER"]}}]},
    ]}]
    p = tmp_path / "export.json"
    p.write_text(json.dumps(tasks))
    c = read_corpus(p, format="label-studio").corpus
    assert c.worker_ids == ("3", "b@x.org") and c.class_names == ("O", "LOC")
    assert c.labels_of(0).tolist() == [0, 0, 0, 1] and c.labels_of(1).tolist() == [0, 0, 0, 0]
    tasks[0]["annotations"][0]["result"][0]["value"]["labels"] = ["LOC", "PER"]
    p.write_text(json.dumps(tasks))
    with pytest.raises(IngestError, match=r"export\.json:1: annotator '3' gives a token two labels"):
        read_corpus(p, format="label-studio")



def test_label_studio_problems_name_the_line_of_the_task_or_annotation(tmp_path):
    """Polish 1: a bad task is named by the line where it starts, a bad annotation by its own line (before: by
    the task's position in the list)."""
    ok = {"id": 1, "data": {"text": "Ann"}, "annotations": [{"completed_by": 3, "result": []}]}
    dup = {"id": 2, "data": {"text": "Rome"}, "annotations": [{"completed_by": 3, "result": []},
                                                              {"completed_by": 3, "result": []}]}
    p = tmp_path / "export.json"
    p.write_text("[\n" + json.dumps(ok, indent=1) + ",\n\n  7\n]\n")
    with pytest.raises(IngestError, match=r"export\.json:15: task must be an object"):
        read_corpus(p, format="label-studio")
    p.write_text("[" + json.dumps(ok) + ",\n" + json.dumps(dup, indent=2) + "]")
    with pytest.raises(IngestError, match=r"export\.json:12: duplicate assignment: '3'"):
        read_corpus(p, format="label-studio")
    assert read_corpus(p, format="label-studio", on_error="skip").corpus.n_docs == 1



@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85"])
def test_json_lines_are_cut_only_at_json_line_breaks(tmp_path, sep):
    """Polish 1: a text holding a raw U+2028 / U+2029 / U+0085 (valid in a JSON string, as json.dumps with
    ensure_ascii=False writes it) is one line of doccano or spans JSONL, and a later bad line is named by its
    true number (before: str.splitlines cut the first line: "line 1: not a JSON object: Unterminated
    string"). Windows line ends still count as one."""
    text = f"Ann{sep}lives in Rome"
    (tmp_path / "u").mkdir()
    doccano = tmp_path / "u" / "alice.jsonl"
    rows = [{"id": 1, "text": text, "label": [[0, 3, "PER"]]}, {"id": 2, "text": "Rome", "label": [[0, 4, 5]]}]
    doccano.write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    with pytest.raises(IngestError, match=r"alice\.jsonl:2: bad spans"):
        read_corpus(doccano, format="doccano")
    doccano.write_text(json.dumps(rows[0], ensure_ascii=False), encoding="utf-8")
    assert read_corpus(doccano, format="doccano").corpus.texts == (text,)
    spans = tmp_path / "s.jsonl"
    rows = [{"doc_id": "d", "text": text, "annotator": "w", "start": 0, "end": 3, "label": "PER"},
            {"doc_id": "d", "text": text, "annotator": "w", "start": 13, "end": "x", "label": "LOC"}]
    spans.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    with pytest.raises(IngestError, match=r"s\.jsonl:2: offset must be"):
        read_corpus(spans, format="spans-jsonl")


def test_doccano_single_file_zip_and_duplicate(tmp_path):
    lines = [{"id": 1, "text": "Ann lives", "label": [[0, 3, "PER"]]}, {"id": 2, "text": "Rome", "label": []}]
    (tmp_path / "u").mkdir()
    p = tmp_path / "u" / "alice.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in lines))
    one = read_corpus(p, format="doccano").corpus
    zp = tmp_path / "export.zip"
    with zipfile.ZipFile(zp, "w") as z:
        z.write(p, "export/alice.jsonl")
    assert read_corpus(zp, format="doccano").corpus.equals(one)
    assert one.worker_ids == ("alice",) and one.doc_ids == ("1", "2")
    p.write_text("\n".join(json.dumps(x) for x in [*lines, lines[0]]))
    with pytest.raises(IngestError, match=r"alice\.jsonl:3: duplicate assignment"):
        read_corpus(p, format="doccano")


def test_spans_csv_docs_folder_role_column_and_bad_rows(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "d1.txt").write_text("Ann lives in Rome")
    p = tmp_path / "s.csv"
    p.write_text("doc_id,annotator,start,end,label,role\nd1,w1,0,3,PER,crowd\nd1,md,,,,expert\n"
                 "d1,w1,x,3,PER,crowd\nd1,w2,0,99,PER,crowd\n")
    with pytest.raises(IngestError, match=r"s\.csv:4: offset must be a non-negative integer"):
        read_corpus(p, format="spans-csv", docs=tmp_path / "docs")
    res = read_corpus(p, format="spans-csv", docs=tmp_path / "docs", on_error="skip")
    assert [x.line for x in res.problems] == [4, 5]
    c = res.corpus
    assert c.worker_ids == ("w1", "md", "w2") and c.worker_roles == ("crowd", "expert", "crowd")
    assert c.labels_of(0).tolist() == [1, 0, 0, 0] and c.labels_of(1).tolist() == [0, 0, 0, 0]
    with pytest.raises(IngestError, match="no text for document 'd1': add a text column or give docs"):
        read_corpus(p, format="spans-csv")


def test_encodings_bom_utf16_and_latin1(tmp_path):
    rows = "doc_id,annotator,start,end,label,text\nd,w,0,4,X,Zürich ist\n"
    ref = tmp_path / "ref.csv"
    ref.write_bytes(rows.encode("utf-8"))
    want = read_corpus(ref, format="spans-csv").corpus
    for enc, data in (("utf-8-sig", rows.encode("utf-8-sig")), ("utf-16", rows.encode("utf-16"))):
        p = tmp_path / f"{enc}.csv"
        p.write_bytes(data)
        assert read_corpus(p, format="spans-csv").corpus.equals(want), enc
    bad = tmp_path / "latin.csv"
    bad.write_bytes(rows.encode("latin-1"))
    with pytest.raises(IngestError, match=r"latin\.csv:2: not UTF-8 text: byte 0xfc cannot be decoded"):
        read_corpus(bad, format="spans-csv")


def test_unknown_format_missing_path_and_bad_corpus_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("a")
    with pytest.raises(IngestError, match="unknown format 'xml'; expected one of mturk-csv"):
        read_corpus(p, format="xml")
    with pytest.raises(IngestError, match="no such file or folder"):
        read_corpus(tmp_path / "nope", format="conll")
    with pytest.raises(IngestError, match="not a corpus file written by crowdqa"):
        read_corpus(p, format="corpus")
    with pytest.raises(IngestError, match="on_error must be 'fail' or 'skip'"):
        read_corpus(p, format="conll", on_error="ignore")


def test_conll_crowd_answers_and_ground_truth_merge(tmp_path):
    """Rodrigues et al.'s release: answers.txt (a column per worker, '?' = not labelled) and
    ground_truth.txt (token and gold tag), space separated. Oracle: hand-written expectations."""
    from crowdqa.ingest import read_merged

    (tmp_path / "answers.txt").write_text(
        "EU B-ORG ? O\nrejects O ? O\n\nPeter B-PER B-PER ?\nBlackburn I-PER O ?\n", encoding="utf-8")
    (tmp_path / "ground_truth.txt").write_text(
        "EU B-ORG\nrejects O\n\nPeter B-PER\nBlackburn I-PER\n", encoding="utf-8")
    c = read_merged([dict(path=tmp_path / "answers.txt", format="conll", role="crowd"),
                     dict(path=tmp_path / "ground_truth.txt", format="conll", role="expert")]).corpus
    assert c.worker_ids == ("crowd:1", "crowd:3", "crowd:2", "expert:1")
    assert c.worker_roles == ("crowd", "crowd", "crowd", "expert")
    gold = c.labels_of(c.worker_ids.index("expert:1"))
    assert [c.class_names[k] for k in gold] == ["B-ORG", "O", "B-PER", "I-PER"]
    assert c.labels_of(c.worker_ids.index("crowd:3")).tolist()[2:] == [-1, -1]


def test_spans_jsonl_reads_a_document_nobody_labelled(tmp_path):
    """A JSON line of doc_id and text without an annotator is a document with no assignment (what pre-annotation
    labels): its tokens are read, no label and no annotator; a line without an annotator that marks a span stays a
    problem (oracle: the same texts read from doccano's JSONL give the same tokens)."""
    texts = {"d1": "Aspirin was given to 40 adults .", "d2": "No effect was seen ."}
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in texts.items()))
    corpus = read_corpus(path, format="spans-jsonl").corpus
    assert (corpus.n_docs, corpus.n_obs, corpus.n_workers) == (2, 0, 0)
    doccano = tmp_path / "doccano.jsonl"
    doccano.write_text("".join(json.dumps({"doc_id": d, "text": t, "label": []}) + "\n" for d, t in texts.items()))
    same = read_corpus(doccano, format="doccano", id_column="doc_id").corpus
    assert corpus.doc_ids == same.doc_ids and list(corpus.doc_lengths) == list(same.doc_lengths)
    assert [corpus.token_text(t) for t in range(corpus.n_tokens)] == [same.token_text(t) for t in range(same.n_tokens)]
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"doc_id": "d1", "text": texts["d1"], "annotator": "w1", "start": 0, "end": 7,
                                 "label": "I"}) + "\n"
                     + json.dumps({"doc_id": "d2", "text": texts["d2"]}) + "\n")
    both = read_corpus(mixed, format="spans-jsonl").corpus
    assert (both.n_docs, both.n_workers) == (2, 1) and set(both.token_doc[both.token].tolist()) == {0}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"doc_id": "d1", "text": texts["d1"], "start": 0, "end": 7, "label": "I"}) + "\n")
    with pytest.raises(IngestError, match="missing keys \\['annotator'\\]"):
        read_corpus(bad, format="spans-jsonl")
