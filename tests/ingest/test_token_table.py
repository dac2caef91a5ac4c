"""Token tables (tokens-csv, tokens-jsonl) and CoNLL under the tags scheme: reading rules, round trips, and the
Arrow path against the row loop (the oracle)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crowdqa.ingest.token_table as token_table
from benchmarks._tag_crowd import hide_per_token, tag_crowd
from crowdqa.aggregation.dawid_skene import DawidSkene
from crowdqa.ingest import read_corpus
from crowdqa.ingest.conll import read_conll
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.writers import write_labels
from tests.ingest.conftest import assert_same_corpus

CSV = "doc_id,token_index,token,annotator,label\n"


def _rows(corpus):
    """Every annotation as a token-table row (doc_id, token_index, token, annotator, label), and a '?' row for each
    token nobody labelled."""
    position = np.arange(corpus.n_tokens) - corpus.doc_start[:-1][corpus.token_doc]
    rows = [(corpus.doc_ids[corpus.token_doc[t]], int(position[t]), corpus.token_text(int(t)),
             corpus.worker_ids[w], corpus.class_names[k])
            for t, w, k in zip(corpus.token.tolist(), corpus.worker.tolist(), corpus.label.tolist(), strict=True)]
    for t in np.flatnonzero(np.diff(corpus.token_obs_start) == 0).tolist():
        rows.append((corpus.doc_ids[corpus.token_doc[t]], int(position[t]), corpus.token_text(t),
                     corpus.worker_ids[0], "?"))
    return rows


def _write_csv(path, rows, *, delimiter=","):
    path.write_text(delimiter.join(token_table.TOKEN_COLUMNS) + "\n"
                    + "".join(delimiter.join(map(str, r)) + "\n" for r in rows), encoding="utf-8")


def _slow(path, monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setattr(token_table, "_arrow_rows", lambda *a, **k: None)
        try:
            return read_corpus(path, **kw).corpus
        except IngestError as exc:
            return str(exc)


def _fast(path, **kw):
    try:
        return read_corpus(path, **kw).corpus
    except IngestError as exc:
        return str(exc)


def test_partial_rows_read_as_missing_and_question_marks_give_tokens(tmp_path):
    """A token without a row of an annotator is missing for it (no O row); a '?' row gives a token nobody
    labelled; classes are the labels in natural order; the text is the tokens joined by spaces."""
    path = tmp_path / "t.csv"
    path.write_text(CSV + "s1,0,I,a,PRON\ns1,1,ran,b,VERB\ns1,2,home,a,10\ns1,2,home,b,9\ns1,3,.,a,?\n"
                    "s2,0,Go,b,VERB\n", encoding="utf-8")
    c = read_corpus(path, format="tokens-csv").corpus
    assert c.scheme == "tags" and c.class_names == ("9", "10", "PRON", "VERB")
    assert c.doc_ids == ("s1", "s2") and c.texts == ("I ran home .", "Go") and c.doc_lengths.tolist() == [4, 1]
    assert c.token.tolist() == [0, 1, 2, 2, 4] and c.worker.tolist() == [0, 1, 0, 1, 1]
    assert c.label.tolist() == [2, 3, 1, 0, 3]
    assert c.labels_of(0).tolist() == [2, -1, 1, -1, -1]


@pytest.mark.parametrize("body, message", [
    ("s1,0,I,a,X\ns1,2,home,a,Y\n", r"t.csv:2: token 1 of document 's1' is on no row.*label '\?'"),
    ("s1,0,I,a,X\ns1,0,I,a,Y\n", r"t.csv:3: annotator 'a' labels token 0 of document 's1' twice"),
    ("s1,0,I,a,X\ns1,0,Me,b,Y\n", r"t.csv:3: token 0 of document 's1' is 'Me' here and 'I' on an earlier row"),
    ("s1,x,I,a,X\n", r"t.csv:2: token_index must be an integer >= 0, found 'x'"),
    ("s1,0,I,a\n", r"t.csv:2: expected 5 fields, found 4"),
    ("s1,0,?,a,?\n", r"no labels found"),
])
def test_bad_rows_name_file_and_line(tmp_path, body, message):
    path = tmp_path / "t.csv"
    path.write_text(CSV + body, encoding="utf-8")
    with pytest.raises(IngestError, match=message):
        read_corpus(path, format="tokens-csv")


def test_skip_leaves_bad_rows_out(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(CSV + "s1,0,I,a,X\ns1,0,I,a,Y\ns1,1,x,b,Y\n", encoding="utf-8")
    problems = ProblemLog("skip")
    c = token_table.read_tokens_csv(path, problems=problems)
    assert c.label.tolist() == [0, 1] and c.worker_ids == ("a", "b") and len(problems.problems) == 1


def test_role_column_and_jsonl(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"doc_id": "s1", "token_index": 0, "token": "I", "annotator": "a", "label": "X"},
            {"doc_id": "s1", "token_index": 1, "token": "go", "annotator": "g", "label": "Y", "role": "expert"},
            {"doc_id": "s1", "token_index": 0, "token": "I", "annotator": "g", "label": "X", "role": "expert"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    c = read_corpus(path, format="tokens-jsonl").corpus
    assert c.worker_roles == ("crowd", "expert") and c.n_obs == 3 and c.scheme == "tags"


@pytest.mark.parametrize("fmt", ["tokens-csv", "tokens-jsonl", "conll"])
def test_aggregate_round_trip(tmp_path, fmt, seed):
    """Written aggregates read back: a token table of the aggregate (annotator 'aggregate') and CoNLL with one
    column, under tags, give the same documents, tokens, tag per token ('?' for a token without one)."""
    crowd = tag_crowd(n_docs=20, n_workers=8, seed=seed % 1000).corpus
    labels = DawidSkene().fit(crowd).labels_.copy()
    labels[3] = -1
    path = tmp_path / f"out.{fmt}"
    write_labels(labels, crowd, path, format=fmt)
    back = read_corpus(path, format=fmt, **({"scheme": "tags"} if fmt == "conll" else {})).corpus
    assert back.doc_lengths.tolist() == crowd.doc_lengths.tolist() and back.texts == crowd.texts
    assert back.scheme == "tags"
    got = np.full(back.n_tokens, -1)
    got[back.token] = [crowd.class_names.index(back.class_names[k]) for k in back.label]
    np.testing.assert_array_equal(got, labels)


@pytest.mark.filterwarnings("ignore::crowdqa.aggregation._base.ConvergenceWarning")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), keep=st.floats(0.3, 1.0))
def test_crowd_round_trip_and_row_order(tmp_path_factory, seed, keep):
    """A partly labelled crowd written as a token table reads back as the same corpus (Arrow path and row loop
    alike), and any permutation of its rows gives the same Dawid-Skene aggregate per (document, token)."""
    tmp = tmp_path_factory.mktemp("t")
    crowd = hide_per_token(tag_crowd(n_docs=6, n_workers=5, labels_per_token=3, seed=seed).corpus, keep=keep,
                           seed=seed).select_role("crowd")
    rows = _rows(crowd)
    _write_csv(tmp / "a.csv", rows)
    back = read_corpus(tmp / "a.csv", format="tokens-csv").corpus

    def triplets(corpus):
        return sorted(zip(corpus.token.tolist(), (corpus.worker_ids[w] for w in corpus.worker.tolist()),
                          (corpus.class_names[k] for k in corpus.label.tolist()), strict=True))

    assert triplets(back) == triplets(crowd) and back.texts == crowd.texts and back.doc_ids == crowd.doc_ids
    order = np.random.default_rng(seed).permutation(len(rows))
    _write_csv(tmp / "b.csv", [rows[i] for i in order])
    shuffled = read_corpus(tmp / "b.csv", format="tokens-csv").corpus

    def by_token(corpus):
        labels = DawidSkene().fit(corpus).labels_
        pos = np.arange(corpus.n_tokens) - corpus.doc_start[:-1][corpus.token_doc]
        return {(corpus.doc_ids[d], int(p)): corpus.class_names[k]
                for d, p, k in zip(corpus.token_doc.tolist(), pos.tolist(), labels.tolist(), strict=True)}

    assert by_token(shuffled) == by_token(back)


_CELLS = st.sampled_from(["s1", "s2", "a", "b", "X", "Y", "?", "", " X", "0", "1", "2", "7", "-1", "x y", "é"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_CELLS, _CELLS, _CELLS, _CELLS, _CELLS), min_size=1, max_size=8),
       tsv=st.booleans())
def test_arrow_path_equals_the_row_loop(tmp_path_factory, monkeypatch, rows, tsv):
    """Any file gives the same corpus or the same one-line error by either path."""
    path = tmp_path_factory.mktemp("t") / "a.csv"
    _write_csv(path, rows, delimiter="\t" if tsv else ",")
    assert_same_corpus(_fast(path, format="tokens-csv"), _slow(path, monkeypatch, format="tokens-csv"))


def test_conll_tags_scheme_reads_partial_columns_and_span_schemes_refuse_them(tmp_path):
    """Under tags a column may mix '?' and tags within a sentence; under a span scheme the line is named with the
    rule."""
    path = tmp_path / "a.conll"
    path.write_text("I\tPRON\t?\nran\t?\tVERB\n\nGo\tVERB\tVERB\n", encoding="utf-8")
    c = read_conll(path, scheme="tags")
    assert c.class_names == ("PRON", "VERB") and c.token.tolist() == [0, 1, 2, 2] and c.worker.tolist() == [0, 1, 0, 1]
    with pytest.raises(IngestError, match=r"a.conll:2: annotator 'crowd:1' labels only part of the sentence.*"
                                          r"a span cut by an unlabelled token is ambiguous.*--scheme tags"):
        read_conll(path)


def test_span_formats_refuse_the_tags_scheme(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("doc_id,annotator,start,end,label,text\nd,a,0,1,X,ab\n", encoding="utf-8")
    with pytest.raises(IngestError, match="scheme 'tags'.*token formats"):
        read_corpus(path, format="spans-csv", scheme="tags")


def test_saved_corpus_keeps_the_scheme(tmp_path):
    crowd = tag_crowd(n_docs=3, n_workers=4, labels_per_token=3, seed=1).corpus
    crowd.save(tmp_path / "c.npz")
    back = read_corpus(tmp_path / "c.npz", format="corpus").corpus
    assert back.scheme == "tags" and back.equals(crowd)
