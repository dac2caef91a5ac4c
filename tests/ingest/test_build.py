"""The span/token builders (ingest/build.py), the tokenizer and merge_corpora."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdqa.ingest.build import Span, corpus_from_spans, corpus_from_token_labels
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.merge import merge_corpora
from crowdqa.ingest.tokenize import tokenize

WORDS = ["a", "bb", "ccc", "IL-2", "(n=4)", "x.y", "é"]


def _brute_force_labels(text: str, spans: list[tuple[int, int, int]], scheme: str) -> list[int]:
    """Oracle: walk tokens one by one, apply the documented overlap rule and the BIO begin rule."""
    starts, ends = tokenize(text)
    out = []
    prev_cover: set[int] = set()
    for ts, te in zip(starts.tolist(), ends.tolist(), strict=True):
        cover = {i for i, (s, e, _) in enumerate(spans) if ts < e and s < te}
        if not cover:
            out.append(0)
        else:
            t = spans[min(cover)][2]
            if scheme == "io":
                out.append(t)
            else:
                # B unless a span covering this token also covered the previous token.
                out.append(2 * t - 1 + (1 if cover & prev_cover else 0))
        prev_cover = cover
    return out


@st.composite
def doc_and_spans(draw):
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12))
    seps = draw(st.lists(st.sampled_from([" ", "  ", "\n"]), min_size=len(words), max_size=len(words)))
    text = "".join(w + s for w, s in zip(words, seps, strict=True))
    n = len(text)
    raw = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(1, n)), max_size=4))
    spans = []
    for s, e in raw:
        s, e = min(s, e - 1), max(e, s + 1)
        if text[s:e].strip():
            spans.append((s, e, 1))
    return text, spans


@settings(max_examples=150, deadline=None)
@given(doc_and_spans(), st.sampled_from(["io", "bio"]))
def test_alignment_matches_brute_force(case, scheme):
    """Oracle: a per-token Python loop over the overlap rule (token_start < span_end and
    span_start < token_end) and the BIO begin rule, compared exactly with the vectorised builder."""
    text, spans = case
    corpus = corpus_from_spans(
        documents={"d": text},
        assignments=[("d", "w")],
        spans=[Span("d", "w", s, e, "X") for s, e, _ in spans],
        roles={"w": "crowd"},
        scheme=scheme,
        types=["X"],
    )
    assert corpus.labels_of(0).tolist() == _brute_force_labels(text, spans, scheme)


def test_partial_token_overlap_marks_whole_token():
    """Hand-worked: 'hello world' with span [3, 7) touches both tokens."""
    c = corpus_from_spans(documents={"d": "hello world"}, assignments=[], spans=[Span("d", "w", 3, 7, "X")],
                          roles={"w": "crowd"})
    assert c.labels_of(0).tolist() == [1, 1]


def test_bio_adjacent_spans_are_two_entities_and_overlapping_ones_merge():
    """Hand-worked BIO begin rule: adjacent same-type spans -> B I B; overlapping -> one entity."""
    text = "a b c d"
    adj = corpus_from_spans(documents={"d": text}, assignments=[],
                            spans=[Span("d", "w", 0, 3, "X"), Span("d", "w", 4, 5, "X"), Span("d", "w", 6, 7, "Y")],
                            roles={"w": "crowd"}, scheme="bio")
    assert adj.class_names == ("O", "B-X", "I-X", "B-Y", "I-Y")
    assert adj.labels_of(0).tolist() == [1, 2, 1, 3]
    ov = corpus_from_spans(documents={"d": text}, assignments=[],
                           spans=[Span("d", "w", 0, 3, "X"), Span("d", "w", 2, 7, "X")], roles={"w": "crowd"},
                           scheme="bio")
    assert ov.labels_of(0).tolist() == [1, 2, 2, 2]


def test_conflicting_types_from_one_annotator_is_an_error_naming_the_line():
    spans = [Span("d", "w", 0, 3, "X", source="f.csv", line=2), Span("d", "w", 2, 5, "Y", source="f.csv", line=3)]
    with pytest.raises(IngestError, match=r"^f\.csv:3: annotator 'w' gives a token two labels"):
        corpus_from_spans(documents={"d": "a b c"}, assignments=[], spans=spans, roles={"w": "crowd"})


def test_conflict_skip_keeps_the_first_span_and_other_annotators_may_disagree():
    spans = [Span("d", "w", 0, 3, "X"), Span("d", "w", 2, 5, "Y"), Span("d", "v", 0, 5, "Y")]
    log = ProblemLog("skip")
    c = corpus_from_spans(documents={"d": "a b c"}, assignments=[], spans=spans,
                          roles={"w": "crowd", "v": "crowd"}, scheme="io", problems=log)
    assert len(log.problems) == 1 and "two labels" in log.problems[0].message
    assert c.labels_of(0).tolist() == [1, 1, 0]
    assert c.labels_of(1).tolist() == [2, 2, 2]


@pytest.mark.parametrize(
    ("span", "message"),
    [
        (Span("d", "w", 0, 99, "X"), "not inside document"),
        (Span("d", "w", 3, 2, "X"), r"span \[3, 2\) is empty: its end must be after its start"),
        (Span("d", "w", 1, 1, "X"), r"span \[1, 1\) is empty"),
        (Span("e", "w", 0, 1, "X"), "unknown document"),
        (Span("d", "w", 0, 1, "O"), "other than 'O'"),
    ],
)
def test_bad_spans_are_reported(span, message):
    with pytest.raises(IngestError, match=message):
        corpus_from_spans(documents={"d": "a b"}, assignments=[], spans=[span], roles={"w": "crowd"})


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_whitespace_only_spans_are_a_warning_with_a_count(on_error):
    """Issue 30 item 8: a span over whitespace alone (the PICO authors' published aggregate has some) covers no
    token; it was an error (a skipped row under on_error=skip). Now it is left out with one note that counts
    such spans and names the first; the other spans are read."""
    log = ProblemLog(on_error)
    spans = [Span("d", "w", 1, 2, "X", "f.jsonl", 3), Span("d", "w", 0, 1, "X"), Span("d", "w", 3, 4, "X")]
    c = corpus_from_spans(documents={"d": "a b  c"}, assignments=[], spans=spans, roles={"w": "crowd"},
                          scheme="io", problems=log)
    assert c.labels_of(0).tolist() == [1, 0, 0] and log.problems == []
    assert log.notes == ["2 span(s) cover only whitespace (no token) and are left out; the first: "
                         "f.jsonl:3: span [1, 2) of document 'd'"]


def test_token_labels_checks_length_and_duplicates():
    docs = {"s1": ["a", "b"]}
    with pytest.raises(IngestError, match="1 labels for document 's1' of 2 tokens"):
        corpus_from_token_labels(documents=docs, labels=[("s1", "w", ["O"])], roles={"w": "crowd"})
    log = ProblemLog("skip")
    c = corpus_from_token_labels(documents=docs, labels=[("s1", "w", ["B-X", "I-X"]), ("s1", "w", ["O", "O"])],
                                 roles={"w": "crowd"}, problems=log)
    assert "duplicate assignment" in log.problems[0].message
    assert c.class_names == ("O", "B-X", "I-X") and c.labels_of(0).tolist() == [1, 2]


def test_tokenizer_rule():
    """Hand-worked example from the tokenizer docstring."""
    s, e = tokenize("IL-2 (n=40).")
    assert [("IL-2 (n=40).")[a:b] for a, b in zip(s, e, strict=True)] == ["IL", "-", "2", "(", "n", "=", "40", ")", "."]


def _one(doc_text: str, annotator: str, role: str, spans: list[tuple[int, int]]):
    return corpus_from_spans(documents={"d": doc_text}, assignments=[("d", annotator)],
                             spans=[Span("d", annotator, s, e, "P") for s, e in spans], roles={annotator: role})


def test_merge_crowd_and_expert_of_same_document():
    crowd = _one("a b c", "w1", "crowd", [(0, 1)])
    expert = _one("a b c", "e1", "expert", [(2, 5)])
    m = merge_corpora([crowd, expert])
    assert m.worker_ids == ("w1", "e1") and m.worker_roles == ("crowd", "expert")
    assert m.labels_of(0).tolist() == [1, 0, 0] and m.labels_of(1).tolist() == [0, 1, 1]


def test_merge_rejects_text_mismatch_role_clash_and_duplicates():
    with pytest.raises(IngestError, match="different text"):
        merge_corpora([_one("a b c", "w1", "crowd", []), _one("a b d", "e1", "expert", [])])
    with pytest.raises(IngestError, match="is 'crowd' in one upload and 'expert'"):
        merge_corpora([_one("a b c", "w1", "crowd", []), _one("a b c", "w1", "expert", [])])
    with pytest.raises(IngestError, match="duplicate assignment"):
        merge_corpora([_one("a b c", "w1", "crowd", []), _one("a b c", "w1", "crowd", [(0, 1)])])


def test_merge_unions_schemas():
    a = _one("a b", "w1", "crowd", [(0, 1)])
    b = corpus_from_spans(documents={"d2": "c d"}, assignments=[], spans=[Span("d2", "w2", 0, 1, "I")],
                          roles={"w2": "crowd"}, scheme="io")
    m = merge_corpora([a, b])
    assert m.class_names == ("O", "I", "P")
    assert m.labels_of(0)[:2].tolist() == [2, 0] and m.labels_of(1)[2:].tolist() == [1, 0]
    assert np.all(m.labels_of(0)[2:] == -1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab_ 9-.\n\t\u00e9\u00a0\u2003\u4e2d\U0001d400\U0001f600()")),
                        max_size=15), max_size=5))
def test_tokenize_many_matches_the_regex_tokenizer(texts):
    """Oracle: the regex tokenizer ``tokenize`` applied text by text (same rule, written with re)."""
    from crowdqa.ingest.tokenize import tokenize_many

    lengths, start, end = tokenize_many(texts)
    want = [tokenize(t) for t in texts]
    assert lengths.tolist() == [len(s) for s, _ in want]
    assert start.tolist() == [x for s, _ in want for x in s.tolist()]
    assert end.tolist() == [x for _, e in want for x in e.tolist()]


def test_merge_reorders_when_annotator_order_differs():
    """Oracle: each annotator's dense labels are unchanged by the merge (labels_of before and after)."""
    def two(doc, first, second):
        return corpus_from_spans(documents={doc: "a b c"}, assignments=[(doc, first), (doc, second)],
                                 spans=[Span(doc, first, 0, 1, "P")], roles={first: "crowd", second: "crowd"})

    x, y = two("d1", "A", "B"), two("d2", "B", "A")
    m = merge_corpora([x, y])
    assert m.worker_ids == ("A", "B")
    assert m.labels_of(0).tolist() == [1, 0, 0, 0, 0, 0] and m.labels_of(1).tolist() == [0, 0, 0, 1, 0, 0]


def test_merge_of_disjoint_uploads_renumbers_annotators_in_order():
    """The second upload sees its annotators in another order: rows are re-sorted per token."""
    first = corpus_from_spans(
        documents={"d1": "a b"},
        assignments=[("d1", "w1"), ("d1", "w2")],
        spans=[Span("d1", "w2", 0, 1, "P")],
        roles={"w1": "crowd", "w2": "crowd"},
    )
    second = corpus_from_spans(
        documents={"d2": "c d e"},
        assignments=[("d2", "w2"), ("d2", "w3"), ("d2", "w1")],
        spans=[Span("d2", "w1", 2, 3, "P"), Span("d2", "w3", 4, 5, "P")],
        roles={"w1": "crowd", "w2": "crowd", "w3": "crowd"},
    )
    m = merge_corpora([first, second])
    assert m.worker_ids == ("w1", "w2", "w3")
    assert m.token.tolist() == [0, 0, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    assert m.worker.tolist() == [0, 1, 0, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert m.label.tolist() == [0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 9), st.integers(1, 4), st.integers(1, 3)), max_size=12))
def test_conflicts_match_a_greedy_loop_over_every_assignment(raw):
    """Oracle: the documented rule run on every assignment with no pre-test: in input order, a span is kept
    unless it overlaps (shares a token with) a kept span of another type of the same assignment."""
    from crowdqa.ingest.build import _drop_conflicts

    pair = np.array([r[0] for r in raw], dtype=np.int64)
    first = np.array([r[1] for r in raw], dtype=np.int64)
    last = first + np.array([r[2] for r in raw], dtype=np.int64)
    kind = np.array([r[3] for r in raw], dtype=np.int64)
    expected = []
    for i in range(len(raw)):
        if not any(pair[k] == pair[i] and kind[k] != kind[i] and first[i] < last[k] and first[k] < last[i]
                   for k in expected):
            expected.append(i)
    log = ProblemLog("skip")
    spans = [Span("d", f"w{p}", int(f), int(e), f"T{t}") for p, f, e, t in zip(pair, first, last, kind, strict=True)]
    kept = _drop_conflicts(np.arange(len(raw)), pair, first, last, kind, spans, log)
    assert kept.tolist() == expected
    assert len(log.problems) == len(raw) - len(expected)


def _assignment_index(doc_index, assignments):
    """Annotator -> index and unique (document index, annotator index) -> pair index, in first-seen order, by a
    dict loop (the builder's loop before ``_pairs``)."""
    annotators, pair_index = {}, {}
    for d, a in assignments:
        w = annotators.setdefault(a, len(annotators))
        pair_index.setdefault((doc_index[d], w), len(pair_index))
    return annotators, pair_index


def test_pairs_equal_the_assignment_loop(seed):
    """Oracle: ``_assignment_index``, the dict loop over assignments then spans. ``_pairs`` numbers annotators
    and (document, annotator) pairs in the same first-seen order and gives each span its pair."""
    from crowdqa.ingest.build import _pairs

    rng = np.random.default_rng(seed)
    doc_index = {f"d{i}": i for i in range(30)}
    assignments = [(f"d{rng.integers(30)}", f"a{rng.integers(12)}") for _ in range(60)]
    span_doc = [f"d{rng.integers(30)}" for _ in range(200)]
    span_annotator = [f"a{rng.integers(15)}" for _ in range(200)]  # a12-a14 only ever in spans
    span_pairs = list(zip(span_doc, span_annotator, strict=True))
    annotators, pair_index = _assignment_index(doc_index, [*assignments, *span_pairs])
    got_annotators, pair_doc, pair_worker, span_pair = _pairs(doc_index, assignments, span_doc, span_annotator)
    assert got_annotators == annotators
    assert list(zip(pair_doc.tolist(), pair_worker.tolist(), strict=True)) == list(pair_index)
    assert span_pair.tolist() == [pair_index[(doc_index[d], annotators[a])] for d, a in span_pairs]


def test_span_columns_refuse_what_the_span_loop_reports(seed):
    """Oracle: ``_span_ok`` span by span. The columns are given exactly when no span would be reported."""
    from crowdqa.ingest.build import _span_columns, _span_ok

    rng = np.random.default_rng(seed)
    doc_index, texts = {"d0": 0, "d1": 1}, ["x" * 10, "y" * 4]
    odd = [("d9", 0, 1, "P"), ("d0", 2, 2, "P"), ("d0", -1, 2, "P"), ("d1", 0, 5, "P"), ("d0", True, 2, "P"),
           ("d0", 0.0, 2, "P"), ("d0", np.int64(0), 2, "P"), ("d0", 0, 10**30, "P"), ("d0", 0, 2, ""),
           ("d0", 0, 2, "O"), ("d0", 0, 2, "Q"), ("d0", 0, 2, None)]
    for _ in range(200):
        n = int(rng.integers(5))
        spans = [Span(f"d{rng.integers(2)}", "a", 0, 1 + int(rng.integers(3)), "P") for _ in range(n)]
        if rng.random() < 0.6:
            d, s, e, lab = odd[rng.integers(len(odd))]
            spans.insert(int(rng.integers(len(spans) + 1)), Span(d, "b", s, e, lab))
        types = ["P"] if rng.random() < 0.5 else None
        ok = all(_span_ok(s, doc_index, texts, types, ProblemLog("skip")) for s in spans)
        columns = _span_columns(spans, doc_index, texts, types)
        assert (columns is not None) == ok, spans
        if ok:
            assert columns[2].tolist() == [s.start for s in spans] and columns[3].tolist() == [s.end for s in spans]


def test_assignments_on_unknown_documents_are_reported_and_left_out():
    """Oracle: the corpus of the other assignments. An assignment on a document the corpus lacks fails the
    read, or with on_error=skip is reported and left out, its annotator ('z', in no other assignment) too."""
    documents = {"d1": "a b c", "d2": "d e"}
    known = [("d2", "v"), ("d1", "w"), ("d1", "v")]
    spans = [Span("d1", "w", 0, 1, "X"), Span("d2", "u", 2, 3, "X")]
    roles = {"u": "crowd", "v": "crowd", "w": "expert", "z": "crowd"}
    with pytest.raises(IngestError, match="assignment on unknown document 'd9'"):
        corpus_from_spans(documents=documents, assignments=[("d9", "z"), *known], spans=spans, roles=roles)
    log = ProblemLog("skip")
    got = corpus_from_spans(documents=documents, assignments=[known[0], ("d9", "z"), *known[1:], ("d8", "w")],
                            spans=spans, roles=roles, problems=log)
    assert [p.message for p in log.problems] == ["assignment on unknown document 'd9'",
                                                 "assignment on unknown document 'd8'"]
    expected = corpus_from_spans(documents=documents, assignments=known, spans=spans, roles=roles)
    assert got.equals(expected) and got.worker_ids == ("v", "w", "u")
