"""Tests for crowdqa.ingest.categorical.read_categorical (oracle: hand-built expected corpora)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdqa.ingest.categorical import read_categorical
from crowdqa.ingest.errors import IngestError, ProblemLog
from tests.ingest.conftest import assert_same_corpus


def _write(tmp_path, text, name="data.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_csv_three_columns_builds_one_token_documents(tmp_path):
    """Oracle: the corpus written out by hand for a 2-item, 3-annotator file."""
    p = _write(tmp_path, "item,annotator,label\nq1,007,cat\nq1,A9,dog\nq2,007,dog\n")
    c = read_categorical(p)
    assert c.doc_ids == ("q1", "q2") and c.texts == ("q1", "q2")
    assert c.doc_lengths.tolist() == [1, 1]
    assert c.token_start.tolist() == [0, 0] and c.token_end.tolist() == [2, 2]
    assert c.worker_ids == ("007", "A9")  # kept as strings, leading zeros intact
    assert c.worker_roles == ("crowd", "crowd")
    assert c.class_names == ("cat", "dog")
    assert c.token.tolist() == [0, 0, 1]
    assert c.worker.tolist() == [0, 1, 0]
    assert c.label.tolist() == [0, 1, 1]


def test_tsv_with_gold_column_adds_expert(tmp_path):
    """Oracle: hand-built; gold becomes annotator 'gold' with role expert, one label per item."""
    p = _write(tmp_path, "i\tw\tl\tg\nx\tw1\t1\t0\nx\tw2\t0\t0\ny\tw1\t1\t1\nz\tw1\t0\t\n", "d.tsv")
    c = read_categorical(p, role="crowd")
    assert c.class_names == ("0", "1")
    assert c.worker_ids == ("w1", "w2", "gold")
    assert c.worker_roles == ("crowd", "crowd", "expert")
    gold = c.labels_of(2)
    assert gold.tolist() == [0, 1, -1]  # z has no gold
    assert c.labels_of(0).tolist() == [1, 1, 0]


def test_literal_O_label_is_an_ordinary_answer(tmp_path):
    """Categorical answers have no outside class: "O" sorts like any other label."""
    p = _write(tmp_path, "item,annotator,label\na,u,B\na,v,O\nb,u,A\n")
    c = read_categorical(p)
    assert c.class_names == ("A", "B", "O") and not c.has_outside
    assert c.label.tolist() == [1, 2, 0]


def test_numeric_labels_sort_by_value(tmp_path):
    p = _write(tmp_path, "item,annotator,label\na,u,10\na,v,2\nb,u,-1\nb,v,nan\n")
    assert read_categorical(p).class_names == ("-1", "2", "10", "nan")


def test_class_order_does_not_depend_on_row_order(tmp_path):
    a = read_categorical(_write(tmp_path, "i,w,l\nx,u,b\ny,u,a\n", "a.csv"))
    b = read_categorical(_write(tmp_path, "i,w,l\ny,u,a\nx,u,b\n", "b.csv"))
    assert a.class_names == b.class_names == ("a", "b")


def test_quoted_fields_with_commas(tmp_path):
    c = read_categorical(_write(tmp_path, 'item,annotator,label\n"q, 1",u,"yes, really"\n'))
    assert c.doc_ids == ("q, 1",) and c.class_names == ("yes, really",)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("item,annotator,label\na,u\n", r"data.csv:2: expected 3 columns, found 2"),
        ("item,annotator,label\na,u,x,extra\n", r"data.csv:2: expected 3 columns, found 4"),
        ("item,annotator,label\na,,x\n", r"data.csv:2: empty annotator field"),
        ("item,annotator,label,gold\na,u,x,x\na,v,x,y\n", r"data.csv:3: item 'a' has gold 'x' and 'y'"),
        ("item,annotator,label,gold\na,gold,x,x\n", r"data.csv:2: annotator id 'gold' is reserved"),
        ("a,b\nx,y\n", r"data.csv:1: cannot tell the item, annotator and label columns from the header \(a, b\)"),
        ("", r"empty file"),
        ("item,annotator,label\n", r"no annotation rows"),
    ],
)
def test_bad_rows_raise_one_line_ingest_error(tmp_path, text, match):
    p = _write(tmp_path, text)
    with pytest.raises(IngestError, match=match) as info:
        read_categorical(p)
    assert "\n" not in str(info.value)


def test_repeats_refuse_names_the_first_repeated_row(tmp_path):
    """``repeats="refuse"``: the reader's behaviour before the option, one line naming the file and line."""
    p = _write(tmp_path, "item,annotator,label\na,u,x\na,u,y\n")
    with pytest.raises(IngestError, match=r"data.csv:3: duplicate row: annotator 'u' labelled item 'a' twice"):
        read_categorical(p, repeats="refuse")


def test_missing_file_is_ingest_error(tmp_path):
    with pytest.raises(IngestError, match="cannot open file"):
        read_categorical(tmp_path / "absent.csv")


def test_skip_mode_records_problems_and_keeps_good_rows(tmp_path):
    p = _write(tmp_path, "item,annotator,label\na,u,x\na,u,y\nb,u\nb,v,y\n")
    log = ProblemLog("skip")
    c = read_categorical(p, problems=log, repeats="refuse")
    assert [pr.line for pr in log.problems] == [3, 4]
    assert c.n_obs == 2 and c.class_names == ("x", "y")
    assert c.label.tolist() == [0, 1]


def test_blank_lines_are_ignored_and_line_numbers_stay_true(tmp_path):
    p = _write(tmp_path, "item,annotator,label\n\na,u,x\n\na,u,x\n")
    with pytest.raises(IngestError, match=r":5: duplicate row"):
        read_categorical(p, repeats="refuse")


def test_round_trip_against_dense_table(tmp_path, seed):
    """Oracle: a random dense (item x annotator) table written as rows, read back via labels_of."""
    rng = np.random.default_rng(seed)
    n_items, n_workers = 30, 6
    table = rng.integers(-1, 3, size=(n_items, n_workers))  # -1 = not labelled
    table[:, 0] = rng.integers(0, 3, size=n_items)  # every item labelled at least once
    names = ["no", "maybe", "yes"]
    lines = ["item,worker,answer"]
    cells = [(i, w) for i in range(n_items) for w in range(n_workers) if table[i, w] >= 0]
    for k in rng.permutation(len(cells)):
        i, w = cells[k]
        lines.append(f"item{i},w{w:03d},{names[table[i, w]]}")
    c = read_categorical(_write(tmp_path, "\n".join(lines) + "\n"))
    assert c.class_names == ("maybe", "no", "yes")
    to_class = {0: 1, 1: 0, 2: 2}
    for w in range(n_workers):
        if f"w{w:03d}" not in c.worker_ids:
            continue
        dense = c.labels_of(c.worker_ids.index(f"w{w:03d}"))
        for d, doc in enumerate(c.doc_ids):
            v = table[int(doc[4:]), w]
            assert dense[d] == (to_class[v] if v >= 0 else -1)


def test_crowd_and_expert_files_merge_by_answer_name(tmp_path):
    """Oracle: hand-built; classes are the natural-order union and every label keeps its answer."""
    from crowdqa.ingest.merge import merge_corpora

    crowd = read_categorical(_write(tmp_path, "item,annotator,label\nq1,u,10\nq2,u,2\n", "c.csv"))
    expert = read_categorical(_write(tmp_path, "item,annotator,label\nq2,md,7\n", "e.csv"), role="expert")
    m = merge_corpora([crowd, expert])
    assert m.class_names == ("2", "7", "10")
    assert [m.class_names[k] for k in m.labels_of(m.worker_ids.index("u"))] == ["10", "2"]
    assert m.labels_of(m.worker_ids.index("md")).tolist() == [-1, 1]


# ---------------------------------------------------------------- columns by name, option and position
_ROWS = [("q1", "w1", "cat", "cat"), ("q1", "w2", "dog", "cat"), ("q2", "w1", "dog", "dog"), ("q3", "w2", "cat", "")]


def _positional(tmp_path):
    """The oracle: the same answers in the positional ``item, annotator, label, gold`` layout."""
    text = "i,w,l,g\n" + "".join(",".join(r) + "\n" for r in _ROWS)
    return read_categorical(_write(tmp_path, text, "positional.csv"))


def _same(a, b):
    for name in ("doc_ids", "worker_ids", "worker_roles", "class_names"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("token", "worker", "label"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


@pytest.mark.parametrize(
    ("header", "order"),
    [
        ("task,worker,label,true_label", (0, 1, 2, 3)),  # crowd-kit
        ("!amt_annotation_ids\t!amt_worker_ids\torig_id\tresponse\tgold", ("id", 1, 0, 2, 3)),  # Snow et al. 2008
        ("Answer,Question,Worker ID,Gold Label", (2, 0, 1, 3)),  # recognised names in another order
        ("item,annotator,label,expert", (0, 1, 2, 3)),  # positional layout, unrecognised gold name
    ],
)
def test_columns_are_found_by_their_header_names(tmp_path, header, order):
    sep = "\t" if "\t" in header else ","
    lines = [header]
    for n, r in enumerate(_ROWS):
        lines.append(sep.join(f"A{n}" if k == "id" else r[k] for k in order))
    c = read_categorical(_write(tmp_path, "\n".join(lines) + "\n", "named.txt"))
    _same(c, _positional(tmp_path))


def test_options_choose_columns_by_name_or_number(tmp_path):
    text = "when,who,what,item,truth\n" + "".join(f"t,{w},{lab},{i},{g}\n" for i, w, lab, g in _ROWS)
    p = _write(tmp_path, text, "odd.csv")
    with pytest.raises(IngestError, match=r"odd.csv:1: cannot tell the item, annotator and label columns .*"
                                          r"annotator_column"):
        read_categorical(p)
    _same(read_categorical(p, annotator_column="who", answer_column="3"), _positional(tmp_path))
    _same(read_categorical(p, annotator_column="WHO", answer_column="what", id_column="4", gold_column="5"),
          _positional(tmp_path))
    with pytest.raises(IngestError, match=r"odd.csv:1: gold_column 'nope' is not a column of the header"):
        read_categorical(p, annotator_column="who", answer_column="what", gold_column="nope")
    with pytest.raises(IngestError, match="are the same column"):
        read_categorical(p, annotator_column="who", answer_column="who")


def test_reference_file_without_annotators_merges_with_the_crowd_file(tmp_path):
    """A gold file (``task,true_label``, as crowd-kit ships it) merged with the answers = the 4-column file."""
    from crowdqa.ingest.merge import merge_corpora

    answers = read_categorical(_write(tmp_path, "task,worker,label\n" + "".join(
        f"{i},{w},{lab}\n" for i, w, lab, _ in _ROWS), "answers.csv"))
    gold = read_categorical(_write(tmp_path, "task,true_label\nq1,cat\nq2,dog\n", "gold.csv"), role="expert")
    assert gold.worker_ids == ("gold",) and gold.worker_roles == ("expert",) and gold.doc_ids == ("q1", "q2")
    _same(merge_corpora([answers, gold]), _positional(tmp_path))
    same_as_label = read_categorical(_write(tmp_path, "item,label\nq1,cat\nq2,dog\n", "ref.csv"), role="expert")
    _same(same_as_label, gold)
    with pytest.raises(IngestError, match=r"ref2.csv:2: empty gold field"):
        read_categorical(_write(tmp_path, "item,gold\nq1,\n", "ref2.csv"))


def _both_paths(path, monkeypatch, **options):
    """The corpus (or the error) read by the fast paths (bytes, else Arrow) and by the row loop alone."""
    fast, arrow, slow = _three_paths(path, monkeypatch, **options)
    assert_same_corpus(arrow, slow)
    return fast, slow


def _three_paths(path, monkeypatch, **options):
    """The corpus (or the error) read by the fast paths, by Arrow's path (the byte path off) and by the row loop."""
    import crowdqa.ingest.categorical as cat

    def read():
        try:
            return read_categorical(path, **options)
        except IngestError as exc:
            return str(exc)

    fast = read()
    with monkeypatch.context() as m:
        m.setattr(cat, "_byte_columns", lambda *a, **k: None)
        arrow = read()
    with monkeypatch.context() as m:
        m.setattr(cat, "_read_columnar", lambda *a, **k: None)
        slow = read()
    return fast, arrow, slow


_CELLS = st.sampled_from(["a", "b", "c", "2", "10", "-1", " a", "b ", "", "gold", "x,y", 'q"r', "é", "w1", "w2",
                          "a b", "worker0042", "task0000001", "L" * 40, "x\x01y", "tab\tin", "ü" * 9])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.sampled_from(["item,worker,label", "item,worker,label,gold", "task,true_label", "a\tb\tc"]),
       rows=st.lists(st.lists(_CELLS, min_size=1, max_size=5), min_size=0, max_size=12),
       blank=st.booleans())
def test_columnar_fast_path_equals_the_row_loop(tmp_path, monkeypatch, header, rows, blank):
    """Oracle: the row loop. Any file, clean or messy, gives the same corpus or the same one-line error
    whether Arrow's fast path reads it or the row loop does (the fast path gives up on anything unusual)."""
    import csv as _csv
    import io as _io

    delim = "\t" if "\t" in header else ","
    buf = _io.StringIO()
    w = _csv.writer(buf, delimiter=delim, lineterminator="\n")
    for r in rows:
        w.writerow(r)
    text = header + "\n" + ("\n" if blank else "") + buf.getvalue()
    path = tmp_path / "answers.csv"
    path.write_text(text, encoding="utf-8")
    assert_same_corpus(*_both_paths(path, monkeypatch))


def test_columnar_fast_path_on_a_clean_file(tmp_path, monkeypatch, seed):
    """A clean file with a gold column and numeric labels takes the fast path and equals the row loop."""
    import crowdqa.ingest.categorical as cat

    rng = np.random.default_rng(seed)
    lines = ["task,worker,label,gold"]
    gold = {i: str(rng.integers(0, 12)) for i in range(40) if rng.random() < 0.5}
    for i in rng.permutation(40):
        for w in rng.choice(9, size=3, replace=False):
            lines.append(f"t{i},w{w},{rng.integers(0, 12)},{gold.get(i, '') if rng.random() < 0.7 else ''}")
    path = tmp_path / "a.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert cat._read_columnar(path, {"item": None, "annotator": None, "label": None, "gold": None},
                              role="crowd") is not None
    assert cat._byte_columns(path, delimiter=",", n_columns=4, columns=[0, 1, 2, 3]) is not None
    assert_same_corpus(*_both_paths(path, monkeypatch))


def test_columnar_blocks_merge_in_order_of_first_appearance(tmp_path, monkeypatch, seed):
    """Arrow parses a file in blocks. Oracle: the row loop, on a file of many blocks (256 bytes each) where new
    items, workers and labels keep appearing in later blocks."""
    import crowdqa.ingest.categorical as cat

    rng = np.random.default_rng(seed)
    # Item i answered by three distinct workers; rows shuffled within runs of 40, so later blocks bring new
    # items, workers (the pool grows with i) and labels.
    rows = [f"q{i},w{(3 * i + k) % 11 + i // 30},{int(rng.integers(0, 2 + i // 40))}"
            for i in range(150) for k in range(3)]
    lines = ["item,worker,label"] + [r for a in range(0, len(rows), 40) for r in rng.permutation(rows[a:a + 40])]
    path = tmp_path / "blocks.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setattr(cat, "_BLOCK_BYTES", 256)
    monkeypatch.setattr(cat, "_byte_columns", lambda *a, **k: None)  # Arrow's path, not the byte path
    assert cat._read_columnar(path, {"item": None, "annotator": None, "label": None, "gold": None},
                              role="crowd") is not None
    assert_same_corpus(*_both_paths(path, monkeypatch))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_items=st.integers(1, 60), stem=st.sampled_from(["t", "task", "ü", "item-with-a-long-name/", "日本"]),
       workers=st.integers(1, 12), gold=st.booleans(), tab=st.booleans(), end=st.booleans(), seed=st.integers(0, 9))
def test_byte_path_equals_the_row_loop_on_clean_files(tmp_path, monkeypatch, n_items, stem, workers, gold, tab, end,
                                                      seed):
    """Oracle: the row loop (and Arrow's path). Clean files of ids from 1 to 32 bytes (one to four 64-bit words,
    ASCII or not), labels and gold values in any order are read by the byte path, to the same corpus."""
    import crowdqa.ingest.categorical as cat

    rng = np.random.default_rng(seed)
    sep = "\t" if tab else ","
    lines = [sep.join(["item", "worker", "label", "gold"] if gold else ["item", "worker", "label"])]
    truth = {i: str(rng.integers(0, 5)) for i in range(n_items)}
    for i in rng.permutation(n_items):
        for w in rng.choice(workers, size=min(workers, 3), replace=False):
            row = [f"{stem}{i}", f"w{w}", str(rng.integers(0, 5))]
            lines.append(sep.join(row + ([truth[i] if rng.random() < 0.5 else ""] if gold else [])))
    path = tmp_path / "clean.csv"
    path.write_text("\n".join(lines) + ("\n" if end else ""), encoding="utf-8")
    n = 4 if gold else 3
    assert cat._byte_columns(path, delimiter=sep, n_columns=n, columns=list(range(n))) is not None
    fast, arrow, slow = _three_paths(path, monkeypatch)
    assert_same_corpus(fast, slow)
    assert_same_corpus(arrow, slow)


def test_files_above_the_byte_path_limit_go_to_arrow(tmp_path, monkeypatch):
    """Above _BYTE_PATH_LIMIT the byte path declines and Arrow's path reads the file, to the row loop's corpus."""
    import crowdqa.ingest.categorical as cat

    path = _write(tmp_path, "item,worker,label\nq1,u,a\nq2,u,b\nq1,v,b\n", "limit.csv")
    assert cat._byte_columns(path, delimiter=",", n_columns=3, columns=[0, 1, 2]) is not None
    monkeypatch.setattr(cat, "_BYTE_PATH_LIMIT", 10)
    assert cat._byte_columns(path, delimiter=",", n_columns=3, columns=[0, 1, 2]) is None
    assert cat._read_columnar(path, {"item": None, "annotator": None, "label": None, "gold": None},
                              role="crowd") is not None
    assert_same_corpus(*_both_paths(path, monkeypatch))


def test_gold_pairs_past_two_to_the_31_equal_the_row_loop(tmp_path, monkeypatch):
    """The byte path's codes are int32; the gold column's (item, label) pairs are ``item * n_labels + label``,
    past 2**31 here (70,000 items, 32,000 labels). Oracle: the row loop (and Arrow's path, int64 codes)."""
    import crowdqa.ingest.categorical as cat

    n_items, n_labels = 70_000, 32_000
    lines = ["task,true_label"] + [f"q{i},L{i % n_labels}" for i in range(n_items)]
    path = _write(tmp_path, "\n".join(lines) + "\n", "reference.csv")
    assert cat._read_columnar(path, {"item": None, "annotator": None, "label": None, "gold": None},
                              role="crowd") is not None  # (not left to the row loop)
    fast, slow = _both_paths(path, monkeypatch)
    assert_same_corpus(fast, slow)
    assert slow.n_obs == n_items and slow.n_classes == n_labels


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.text(alphabet=st.sampled_from(["a", "é", " ", "\t", "\n", "\x00", "\x1c", "\xa0", "\u3000"]),
                               max_size=4), max_size=6))
def test_clean_values_equal_the_strip_oracle(values):
    """Oracle: each value non-empty and equal to its ``strip()``, checked one by one."""
    import crowdqa.ingest.categorical as cat

    assert cat._clean(values) == all(v and v == v.strip() for v in values)


def test_read_by_position_is_noted_once(tmp_path):
    """A header that names no column gets one note, whether the byte path, Arrow's path (a quoted cell) or the
    row loop (a duplicate row, skipped) reads the file."""
    from crowdqa.ingest import read_corpus

    for name, body in (("bytes.csv", "q1,u,a\nq2,u,b\n"), ("arrow.csv", '"q1",u,a\nq2,u,b\n'),
                       ("loop.csv", "q1,u,a\nq1,u,b\n")):
        parsed = read_corpus(_write(tmp_path, "foo,bar,baz\n" + body, name), format="categorical", on_error="skip",
                             repeats="refuse")
        assert sum("read by position" in n for n in parsed.notes) == 1, (name, parsed.notes)


@pytest.mark.parametrize("rule", ["first", "last", "drop"])
def test_repeated_answers_equal_a_dictionary_oracle(rule, seed):
    """Oracle: a dictionary of each (item, annotator) pair's answers in file order, resolved by hand: identical
    repeats kept once; differing ones the first, the last, or none."""
    from crowdqa.ingest.categorical import repeated_answers

    rng = np.random.default_rng(seed)
    n = 300
    item, worker, label = rng.integers(0, 30, n), rng.integers(0, 6, n), rng.integers(0, 3, n)
    got = repeated_answers(item, worker, label, rule=rule)
    rows: dict[tuple[int, int], list[int]] = {}
    for r in range(n):
        rows.setdefault((int(item[r]), int(worker[r])), []).append(r)
    keep = []
    for rs in rows.values():
        same = len({int(label[r]) for r in rs}) == 1
        if same or rule == "first":
            keep.append(rs[0])
        elif rule == "last":
            keep.append(rs[-1])
    assert got.keep.tolist() == sorted(keep)
    repeated = [rs for rs in rows.values() if len(rs) > 1]
    assert got.pairs == len(repeated) and got.rows_left_out == n - len(keep)
    assert got.identical == sum(len({int(label[r]) for r in rs}) == 1 for rs in repeated)
    assert got.identical + got.differing == got.pairs


def test_repeated_rows_are_counted_and_said_on_both_paths(tmp_path):
    """A plain file (the byte path) and a quoted one (Arrow's path, then the row loop under on_error=skip) give the
    same corpus, the same note and the same count of rows left out."""
    from crowdqa.ingest import read_corpus

    body = "item,annotator,label\na,u,x\na,u,x\na,u,x\nb,u,x\nb,u,y\nb,v,y\nc,v,x\n"
    quoted = body.replace("c,v,x", '"c",v,x')
    results = [read_corpus(_write(tmp_path, text, name), format="categorical", **options)
               for name, text, options in (("plain.csv", body, {}), ("quoted.csv", quoted, {}),
                                           ("loop.csv", body + "d,w\n", {"on_error": "skip"}))]
    for parsed in results:
        c = parsed.corpus
        assert c.n_obs == 4 and c.labels_of(c.worker_ids.index("u"))[:2].tolist() == [0, 0]  # b: first answer
        assert parsed.dropped == {"repeated (item, annotator)": 3}
        assert any("2 (item, annotator) pairs are answered more than once (3 rows left out): 1 with the same "
                   "answer each time, counted once; 1 with differing answers, kept the first answer" in n
                   for n in parsed.notes), parsed.notes
    last = read_corpus(_write(tmp_path, body, "last.csv"), format="categorical", repeats="last").corpus
    assert last.labels_of(last.worker_ids.index("u"))[1] == 1
    drop = read_corpus(_write(tmp_path, body, "drop.csv"), format="categorical", repeats="drop").corpus
    assert drop.n_obs == 3 and drop.labels_of(drop.worker_ids.index("u"))[1] == -1


def test_repeats_option_is_checked_by_the_upload_check(tmp_path):
    from crowdqa.ingest import read_corpus

    with pytest.raises(IngestError, match="repeats must be 'first', 'last', 'drop' or 'refuse', found 'mean'"):
        read_corpus(_write(tmp_path, "item,annotator,label\na,u,x\n"), format="categorical", repeats="mean")
