"""The formats table and the upload options table (crowdqa.ingest.formats) against the code they describe."""

from __future__ import annotations

import importlib
import inspect

import numpy as np
import pytest

from crowdqa.aggregation import corpus as corpus_module
from crowdqa.ingest import check_options, read_corpus
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.formats import (
    AGGREGATE_FORMATS,
    FORMATS,
    READ_FORMATS,
    ROLES,
    UPLOAD_OPTIONS,
    WRITE_FORMATS,
    choice_message,
    option,
)
from crowdqa.ingest.writers import write_labels


@pytest.mark.parametrize("name", READ_FORMATS)
def test_each_reader_takes_the_options_its_row_lists(name):
    """Oracle: the reader's own signature. It takes ``role``, ``problems`` and every option its row names,
    and no upload option its row leaves out (keywords of the Python API alone, such as ebm-nlp's ``phase``,
    are not upload options)."""
    module, _, func = FORMATS[name].reader.partition(":")
    params = inspect.signature(getattr(importlib.import_module(module), func)).parameters
    keywords = {p for p, v in params.items() if v.kind is inspect.Parameter.KEYWORD_ONLY}
    assert {"role", "problems", *FORMATS[name].options} <= keywords
    assert keywords & {o.name for o in UPLOAD_OPTIONS} == set(FORMATS[name].options)


def test_option_names_are_unique_and_format_rows_name_known_options():
    names = [o.name for o in UPLOAD_OPTIONS]
    assert len(set(names)) == len(names)
    for f in FORMATS.values():
        assert set(f.options) <= set(names) - {"on_error"}, f.name
        assert f.reader or f.writer or f.aggregate, f.name
    for o in UPLOAD_OPTIONS:
        assert o.type in (str, bool) and (not o.choices or o.default in o.choices), o.name
        assert (o.type is bool) == isinstance(o.default, bool), o.name


def test_roles_are_the_corpus_roles():
    """One name: the upload table's roles are the corpus data model's, from crowdqa.aggregation.roles."""
    from crowdqa.aggregation import roles

    assert ROLES is corpus_module.ROLES is roles.ROLES


def test_derived_name_lists():
    assert READ_FORMATS[0] == "mturk-csv" and "categorical-csv" not in READ_FORMATS
    assert WRITE_FORMATS == ("spans-jsonl", "conll", "tokens-csv", "tokens-jsonl", "ebm-nlp", "categorical-csv",
                             "token-scores")
    assert AGGREGATE_FORMATS == ("spans-jsonl", "spans-csv", "conll", "ebm-nlp", "categorical-csv", "corpus")


def test_write_labels_refuses_a_format_without_a_writer(tmp_path):
    c = read_corpus(_conll(tmp_path), format="conll").corpus
    with pytest.raises(ValueError, match="format must be one of spans-jsonl, conll, tokens-csv, tokens-jsonl, "
                                         "ebm-nlp, categorical-csv"):
        write_labels(np.zeros(c.n_tokens, dtype=np.int64), c, tmp_path / "x", format="brat")


def _conll(tmp_path):
    p = tmp_path / "a.conll"
    p.write_text("EU B-ORG\nrejects O\n")
    return p


@pytest.mark.parametrize("given, message", [
    ({"text_colum": "x"}, "unknown upload option 'text_colum'; did you mean 'text_column'?"),
    ({"bogus": 1}, "unknown upload option 'bogus' \\(options: docs, category,"),
    ({"scheme": "bilou"}, "scheme must be 'auto', 'io', 'bio' or 'tags', found 'bilou'"),
    ({"on_error": "ignore"}, "on_error must be 'fail' or 'skip', found 'ignore'"),
])
def test_read_corpus_refuses_unknown_options_and_values(tmp_path, given, message):
    """Before: an unknown keyword was a TypeError (a traceback), a misspelt API field silently ignored."""
    with pytest.raises(IngestError, match=message):
        read_corpus(_conll(tmp_path), format="conll", **given)


def test_client_options_exclude_server_paths():
    """An API client sends the docs as a zip; a client string never becomes a server folder."""
    check_options({"docs": "/etc"})
    with pytest.raises(IngestError, match="unknown upload option 'docs'"):
        check_options({"docs": "/etc"}, client=True)
    assert not option("docs").client


def test_defaults_come_from_the_table(tmp_path):
    """Not giving an option, giving None, and giving the table's default read the same corpus."""
    p = _conll(tmp_path)
    a = read_corpus(p, format="conll").corpus
    b = read_corpus(p, format="conll", on_error=None, scheme=None).corpus
    c = read_corpus(p, format="conll", **{o.name: o.default for o in UPLOAD_OPTIONS if o.name != "docs"}).corpus
    assert a.class_names == b.class_names == c.class_names and np.array_equal(a.label, c.label)


def test_choice_messages():
    assert choice_message("role", "boss", ROLES) == "role must be 'crowd' or 'expert', found 'boss'"
    with pytest.raises(IngestError, match=choice_message("on_error", "x")):
        ProblemLog("x")
