"""crowdqa.ingest.conll's Arrow fast path against its line loop (the oracle), on clean and messy files."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crowdqa.ingest.conll as conll
from crowdqa.ingest.errors import IngestError
from tests.ingest.conftest import assert_same_corpus


def _read(path, monkeypatch, *, fast: bool, scheme: str = "auto"):
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(conll, "_read_columnar", lambda *a, **k: None)
        try:
            return conll.read_conll(path, scheme=scheme)
        except IngestError as exc:
            return str(exc)


_TAGS = st.sampled_from(["O", "O", "B-PER", "I-PER", "B-LOC", "I-ORG", "?", "?", "B-", "X", "B-Participants",
                         "I-Participants", "B-Participantz", "B-Über", "I-" + "Y" * 40])
_TOKENS = st.sampled_from(["EU", "rejects", "é", "a\"b", "1,5", "-DOCSTART-", "x y", "a\xa0b", "x\x0by", "\u2028",
                           "", "tab\tin", "\x00", "日本語", "cr\r"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=st.booleans(), sep=st.sampled_from(["\t", " ", "  "]), n_ann=st.integers(1, 4),
       sentences=st.lists(st.lists(st.tuples(_TOKENS, st.lists(_TAGS, min_size=4, max_size=4)), min_size=1,
                                   max_size=4), min_size=1, max_size=5),
       coherent=st.booleans(), part=st.sampled_from([1, 24, conll.PART_BYTES]),
       scheme=st.sampled_from(["auto", "tags"]))
def test_fast_path_equals_the_line_loop(tmp_path, monkeypatch, header, sep, n_ann, sentences, coherent, part, scheme):
    """Any file gives the same corpus or the same one-line error by either path, read in parts of any size, under
    a span scheme (whole sentences) and under tags (any tokens left '?')."""
    monkeypatch.setattr(conll, "PART_BYTES", part)
    lines = ["# annotators: " + " ".join(f"ann{i}" for i in range(n_ann))] if header else []
    for sent in sentences:
        # coherent: each annotator labels a whole sentence or none of it (what real files hold)
        absent = [tags[k] == "?" for k, tags in zip(range(n_ann), [sent[0][1]] * n_ann, strict=True)]
        for tok, tags in sent:
            row = [("?" if absent[k] else (tags[k] if tags[k] != "?" else "O")) if coherent else tags[k]
                   for k in range(n_ann)]
            lines.append(sep.join([tok, *row]))
        lines.append("")
    path = tmp_path / "a.conll"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert_same_corpus(_read(path, monkeypatch, fast=True, scheme=scheme),
                       _read(path, monkeypatch, fast=False, scheme=scheme))


def test_clean_file_takes_the_fast_path(tmp_path, monkeypatch, seed):
    rng = np.random.default_rng(seed)
    tags = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG"]
    lines = ["# annotators: a b c d e"]
    for _ in range(30):
        who = rng.random(5) < 0.5
        for t in range(int(rng.integers(1, 9))):
            lines.append("\t".join([f"w{t}"] + [tags[rng.integers(0, 5)] if w else "?" for w in who]))
        lines.append("")
    lines.insert(8, "")  # two blank lines in a row
    path = tmp_path / "b.conll"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from pathlib import Path

    assert conll._read_columnar(Path(path), role="crowd") is not None
    for part in (7, 100, conll.PART_BYTES):  # one part, or many, cut after a blank line
        monkeypatch.setattr(conll, "PART_BYTES", part)
        assert_same_corpus(_read(path, monkeypatch, fast=True), _read(path, monkeypatch, fast=False))
