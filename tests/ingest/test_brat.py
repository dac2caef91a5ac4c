"""brat's fast path (every T line at once, spans as columns) against its line loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdqa.ingest.errors import IngestError, ProblemLog
from tests.ingest.conftest import assert_same_corpus

TEXT = "Patients with asthma were given drug X and drug Y ."

_LINES = st.one_of(
    st.tuples(st.integers(0, 60), st.integers(0, 60), st.sampled_from(["P", "I", "O", "", "Drug X"])).map(
        lambda t: f"T{t[0]}\t{t[2]} {min(t[0], t[1])} {max(t[0], t[1])}\tx"),
    st.sampled_from(["T1\tP 0 8;9 13\tPatients asthma", "T2\tP  0 8\tx", "T3\tP 0 8", "T4\tP 0 8\r", "T5 P 0 8",
                     "T6\tP 0 0\tx", "T7\tP 0 99999999999999999999999\tx", "T8\tP 0 ８\tx", "R1\tRel A:T1 B:T2",
                     "#1\tAnnotatorNotes T1\tnote", "A1\tNeg T1", "T9\tP 7 8\tx", "", "T", "T10\tP 0 8\x0bx",
                     "T11\tP 52 60\tx", "T12\tI 0 20\tx"]))


def _read(root, monkeypatch, *, fast: bool, **options):
    import crowdqa.ingest.brat as brat

    with monkeypatch.context() as m:
        if not fast:
            m.setattr(brat, "_read_at_once", lambda *a, **k: None)
        try:
            return brat.read_brat(root, docs=root.parent / "docs", **options)
        except IngestError as exc:
            return str(exc)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.lists(st.tuples(st.sampled_from(["alice", "bob", "carol"]), st.sampled_from(["d1", "d2", "d3"]),
                                st.lists(_LINES, max_size=5), st.sampled_from(["\n", "\r\n"])),
                      min_size=1, max_size=6),
       category=st.sampled_from([None, "P"]), skip=st.booleans())
def test_fast_path_equals_the_line_loop(tmp_path_factory, monkeypatch, files, category, skip):
    """Oracle: the line loop (``_parse_ann`` file by file, Span objects, ``corpus_from_spans``). Any folder,
    clean or not, gives the same corpus or the same one-line error either way (and with on_error=skip the
    same skipped problems)."""
    base = tmp_path_factory.mktemp("brat")
    (base / "docs").mkdir()
    for d in ("d1", "d2", "d3"):
        (base / "docs" / f"{d}.txt").write_text(TEXT, encoding="utf-8")
    root = base / "ann"
    for annotator, doc, lines, end in files:
        (root / annotator).mkdir(parents=True, exist_ok=True)
        (root / annotator / f"{doc}.ann").write_bytes(end.join(lines).encode("utf-8"))
    options = {"category": category}
    if skip:
        got = {}
        for fast in (True, False):
            log = ProblemLog("skip")
            got[fast] = (_read(root, monkeypatch, fast=fast, problems=log, **options), [str(p) for p in log.problems])
        assert_same_corpus(got[True][0], got[False][0])
        assert got[True][1] == got[False][1]
    else:
        assert_same_corpus(_read(root, monkeypatch, fast=True, **options),
                           _read(root, monkeypatch, fast=False, **options))


def test_clean_folder_takes_the_fast_path(tmp_path, monkeypatch):
    """A clean folder is read by _read_at_once (not None) and equals the line loop's corpus."""
    import crowdqa.ingest.brat as brat

    rng = np.random.default_rng(0)
    (tmp_path / "docs").mkdir()
    root = tmp_path / "ann"
    for d in range(5):
        (tmp_path / "docs" / f"d{d}.txt").write_text(TEXT, encoding="utf-8")
        for a in ("alice", "bob"):
            (root / a).mkdir(parents=True, exist_ok=True)
            starts = sorted(rng.choice([0, 9, 15, 21, 26, 32], size=2, replace=False).tolist())
            (root / a / f"d{d}.ann").write_text("".join(f"T{i}\tP {s} {s + 4}\tx\n" for i, s in enumerate(starts)),
                                                encoding="utf-8")
    from crowdqa.ingest._io import Tree

    with Tree(root) as tree:
        anns = list(tree.iter_files(".ann"))
        assert brat._read_at_once(tree, anns, {}, brat.DocsFolder(tmp_path / "docs"), role="crowd", category=None,
                                  scheme="auto", read=tree.read_text) is not None
    assert_same_corpus(_read(root, monkeypatch, fast=True), _read(root, monkeypatch, fast=False))


def _folder(base, files: dict[tuple[str, str], str]):
    """An upload of ``.ann`` files by (annotator, document), the texts in ``base/docs``."""
    (base / "docs").mkdir()
    for d in {d for _, d in files}:
        (base / "docs" / f"{d}.txt").write_text(TEXT, encoding="utf-8")
    root = base / "ann"
    for (annotator, doc), content in files.items():
        (root / annotator).mkdir(parents=True, exist_ok=True)
        (root / annotator / f"{doc}.ann").write_bytes(content.encode("utf-8"))
    return root


def test_category_on_the_fast_path(tmp_path, monkeypatch):
    """Oracle: the line loop. A clean folder of two labels read with ``category`` is read by the fast path,
    which keeps that label's spans only (a P span and an I span over other tokens: nothing sends it to the loop)."""
    import crowdqa.ingest.brat as brat
    from crowdqa.ingest._io import Tree

    root = _folder(tmp_path, {("alice", "d1"): "T1\tP 0 8\tPatients\nT2\tI 32 38\tdrug X\n",
                              ("bob", "d1"): "T1\tI 32 38\tdrug X\nT2\tP 0 8\tPatients\r\n"})
    with Tree(root) as tree:
        fast = brat._read_at_once(tree, list(tree.iter_files(".ann")), {}, brat.DocsFolder(tmp_path / "docs"),
                                  role="crowd", category="P", scheme="auto", read=tree.read_text)
    assert fast is not None and not any("I" in c.split("-")[-1] for c in fast.class_names)
    assert_same_corpus(fast, _read(root, monkeypatch, fast=False, category="P"))


@pytest.mark.parametrize("brk", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r", "\x00"],
                         ids=repr)
def test_line_breaks_of_splitlines_go_to_the_line_loop(tmp_path, monkeypatch, brk):
    """Oracle: the line loop, which cuts lines where ``str.splitlines`` does: a T line after any of its line
    breaks (or after a NUL, which the fast path's file markers would take for one of theirs) is read."""
    root = _folder(tmp_path, {("alice", "d1"): f"T1\tP 0 8\tPatients{brk}T2\tI 32 38\tdrug X\n",
                              ("bob", "d1"): f"T1\tP 0 8\tx\n{brk}1\nT2\tP 15 21\tasthma\n"})
    assert_same_corpus(_read(root, monkeypatch, fast=True), _read(root, monkeypatch, fast=False))


def test_the_line_loop_takes_the_fast_paths_reads(tmp_path, monkeypatch):
    """Oracle: the line loop alone. When the fast path gives up (a discontinuous span, read by the loop), every
    member (``.ann`` and ``.txt``) is read from the upload as often as by the loop alone: the loop takes again
    what the fast path read, so neither the I/O nor a zip's budget (counted per read) is spent twice."""
    from collections import Counter

    import crowdqa.ingest.brat as brat
    from crowdqa.ingest._io import Tree

    root = tmp_path / "ann"
    for annotator, content in (("alice", "T1\tP 0 8;9 13\tPatients asthma\n"), ("bob", "T1\tP 0 8\tPatients\n")):
        (root / annotator).mkdir(parents=True)
        (root / annotator / "d1.ann").write_text(content, encoding="utf-8")
        (root / annotator / "d1.txt").write_text(TEXT, encoding="utf-8")
    reads: Counter = Counter()
    read_bytes = Tree.read_bytes

    def counted(self, name):
        reads[name] += 1
        return read_bytes(self, name)

    monkeypatch.setattr(Tree, "read_bytes", counted)
    fast = brat.read_brat(root)
    fast_reads, reads = reads, Counter()
    with monkeypatch.context() as m:
        m.setattr(brat, "_read_at_once", lambda *a, **k: None)
        assert_same_corpus(fast, brat.read_brat(root))
    assert fast_reads == reads == Counter({"alice/d1.ann": 1, "alice/d1.txt": 1, "bob/d1.ann": 1, "bob/d1.txt": 1})
