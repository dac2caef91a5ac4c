"""A document longer than the reading's bound (crowdqa.ingest.limits) is refused by every reader that builds
documents, naming the file, the line where the format has lines, the document and the setting; the same file
within the bound is read. Issue 47 item 4: a spans-jsonl file of one 94M-character document took the server to
2.46 GB.

Oracle: the documents are written by hand, so their lengths in characters and in tokens (the tokenizer's rule:
runs of word characters, each other non-space character alone) are counted by hand: "w0 w1 ... w9" is 29
characters and 10 tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crowdqa.ingest import DocumentLimits, read_corpus
from crowdqa.ingest.errors import DocumentTooLongError

SHORT = "a b"
LONG = " ".join(f"w{i}" for i in range(10))  # 29 characters, 10 tokens
BY_CHARS = DocumentLimits(max_chars=20, max_tokens=100)
BY_TOKENS = DocumentLimits(max_chars=1000, max_tokens=5)


def _spans_jsonl(tmp: Path) -> tuple[Path, dict]:
    rows = [{"doc_id": "d1", "annotator": "a", "start": 0, "end": 1, "label": "X", "text": SHORT},
            {"doc_id": "d2", "annotator": "a", "start": 0, "end": 2, "label": "X", "text": LONG}]
    p = tmp / "s.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p, {"format": "spans-jsonl"}


def _spans_csv(tmp: Path) -> tuple[Path, dict]:
    p = tmp / "s.csv"
    p.write_text(f"doc_id,annotator,start,end,label,text\nd1,a,0,1,X,{SHORT}\nd2,a,0,2,X,{LONG}\n")
    return p, {"format": "spans-csv"}


def _spans_docs(tmp: Path) -> tuple[Path, dict]:
    """Texts in a docs folder: the reader's columnar path (Arrow) and the folder's own check."""
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "d1.txt").write_text(SHORT)
    (docs / "d2.txt").write_text(LONG)
    p = tmp / "s.jsonl"
    p.write_text('{"doc_id": "d1", "annotator": "a", "start": 0, "end": 1, "label": "X"}\n'
                 '{"doc_id": "d2", "annotator": "a", "start": 0, "end": 2, "label": "X"}\n')
    return p, {"format": "spans-jsonl", "docs": str(docs)}


def _label_studio(tmp: Path) -> tuple[Path, dict]:
    def task(k, text):
        return {"id": k, "data": {"text": text}, "annotations": [{"completed_by": 1, "result": [
            {"from_name": "l", "to_name": "t", "type": "labels",
             "value": {"start": 0, "end": 1, "labels": ["X"]}}]}]}
    p = tmp / "ls.json"
    p.write_text("[\n" + json.dumps(task(1, SHORT)) + ",\n" + json.dumps(task(2, LONG)) + "\n]")
    return p, {"format": "label-studio"}


def _doccano(tmp: Path) -> tuple[Path, dict]:
    p = tmp / "ann.jsonl"
    p.write_text(json.dumps({"id": 1, "text": SHORT, "label": [[0, 1, "X"]]}) + "\n"
                 + json.dumps({"id": 2, "text": LONG, "label": [[0, 2, "X"]]}) + "\n")
    return p, {"format": "doccano"}


def _brat(tmp: Path) -> tuple[Path, dict]:
    folder = tmp / "brat" / "ann1"
    folder.mkdir(parents=True)
    for doc, text in (("d1", SHORT), ("d2", LONG)):
        (folder / f"{doc}.txt").write_text(text)
        (folder / f"{doc}.ann").write_text("T1\tX 0 1\ta\n")
    return tmp / "brat", {"format": "brat"}


def _conll(tmp: Path, *, columnar: bool) -> tuple[Path, dict]:
    """Sentences are documents; tab-separated clean lines take the columnar path, a space-aligned file with a
    ``-DOCSTART-`` line the line loop."""
    sep = "\t" if columnar else "  "
    lines = [f"a{sep}O", f"b{sep}B-X", ""] + [f"w{i}{sep}O" for i in range(10)] + [""]
    if not columnar:
        lines = ["-DOCSTART- O", ""] + lines
    p = tmp / "c.conll"
    p.write_text("\n".join(lines) + "\n")
    return p, {"format": "conll"}


def _corpus_npz(tmp: Path) -> tuple[Path, dict]:
    path, options = _spans_jsonl(tmp)
    corpus = read_corpus(path, **options).corpus
    out = tmp / "c.npz"
    corpus.save(out)
    return out, {"format": "corpus"}


CASES = {
    "spans-jsonl": (_spans_jsonl, 2),
    "spans-csv": (_spans_csv, 3),
    "spans-jsonl with docs": (_spans_docs, None),
    "label-studio": (_label_studio, 3),
    "doccano": (_doccano, 2),
    "brat": (_brat, None),
    "conll columnar": (lambda t: _conll(t, columnar=True), 4),
    "conll line loop": (lambda t: _conll(t, columnar=False), 6),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("limits", [BY_CHARS, BY_TOKENS], ids=["chars", "tokens"])
def test_a_document_past_the_bound_is_refused_naming_its_line_and_setting(tmp_path, case, limits):
    make, line = CASES[case]
    path, options = make(tmp_path)
    if case.startswith("conll") and limits is BY_CHARS:
        limits = DocumentLimits(max_chars=20, max_tokens=8)  # a sentence is counted by lines as it is read
    with pytest.raises(DocumentTooLongError) as caught:
        read_corpus(path, limits=limits, on_error="skip", **options)  # not a bad row to skip
    message = str(caught.value)
    setting = "CROWDQA_MAX_DOCUMENT_CHARS" if limits.max_tokens > 10 else "CROWDQA_MAX_DOCUMENT_TOKENS"
    assert setting in message, message
    if line is not None:
        assert f":{line}: " in message, message
    roomy = DocumentLimits(max_chars=29, max_tokens=10)  # the bound is inclusive
    assert read_corpus(path, limits=roomy, **options).corpus.n_docs == 2


def test_a_corpus_file_is_bounded_too(tmp_path):
    path, options = _corpus_npz(tmp_path)
    with pytest.raises(DocumentTooLongError, match="document 'd2' has 10 tokens, more than the 5"):
        read_corpus(path, limits=BY_TOKENS, **options)


def test_a_docs_file_too_large_to_fit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """Bytes past 4 a character (UTF-8's widest) cannot be a text within the bound: refused by size alone."""
    import crowdqa.ingest._common as common

    path, options = _spans_docs(tmp_path)
    (tmp_path / "docs" / "d2.txt").write_text("x " * 60)  # 120 bytes > 4 * 20
    reads = []
    real = common.read_text
    monkeypatch.setattr(common, "read_text", lambda p: reads.append(Path(p).name) or real(p))
    with pytest.raises(DocumentTooLongError, match="is 120 bytes"):
        read_corpus(path, limits=BY_CHARS, **options)
    assert "d2.txt" not in reads


def test_the_defaults_bound_the_issues_document(tmp_path):
    """The issue's shape at a size a test can write: one document of 1,000,001 characters, two annotators."""
    text = ("ab " * 333_334)[:1_000_001]
    p = tmp_path / "one.jsonl"
    p.write_text("".join(json.dumps({"doc_id": "d", "annotator": a, "start": 0, "end": 2, "label": "X",
                                     "text": text}) + "\n" for a in ("a1", "a2")))
    with pytest.raises(DocumentTooLongError, match=r"one\.jsonl:1: document 'd' has 1000001 characters, more "
                                                   r"than the 1000000"):
        read_corpus(p, format="spans-jsonl")



def test_the_command_line_reads_the_services_variables(tmp_path, monkeypatch, capsys):
    """``crowdqa aggregate`` bounds a document by the same variables as the service, in one line naming the file
    and line."""
    from crowdqa.api.cli import main

    path, _ = _spans_jsonl(tmp_path)
    monkeypatch.setenv("CROWDQA_MAX_DOCUMENT_CHARS", "20")
    assert main(["aggregate", str(path), "--format", "spans-jsonl", "--method", "mv",
                 "--output", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # (a progress line first: "mv: reading")
    assert err[-1] == (f"crowdqa: error: {path}:2: document 'd2' has 29 characters, more than the 20 a document may "
                       "have (CROWDQA_MAX_DOCUMENT_CHARS)")
    assert [line for line in err if "error" in line] == err[-1:]
    monkeypatch.setenv("CROWDQA_MAX_DOCUMENT_CHARS", "many")
    assert main(["aggregate", str(path), "--format", "spans-jsonl", "--method", "mv",
                 "--output", str(tmp_path / "out.jsonl")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "crowdqa: error: CROWDQA_MAX_DOCUMENT_CHARS must be a positive integer, found 'many'")
