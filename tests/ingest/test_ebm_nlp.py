"""crowdqa.ingest.ebm_nlp: the EBM-NLP 2.00 layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdqa.ingest import read_corpus
from crowdqa.ingest.ebm_nlp import read_ebm_nlp
from crowdqa.ingest.errors import IngestError
from tests.conftest import shared_path


def _layout(root, *, phase="phase_1", element="participants"):
    base = root / "ebm_nlp_2_00"
    (base / "documents").mkdir(parents=True)
    (base / "documents" / "111.tokens").write_text("Forty\nadults\nwith\nasthma\n.\n")
    ind = base / "annotations" / "individual" / phase / element / "test"
    for sub, wid, labels in (("crowd", "00042", "1 1 0 0 0"), ("crowd", "00007", "0\n1\n0\n0\n0\n"),
                             ("gold", "0001", "1 1 0 1 0")):
        (ind / sub).mkdir(parents=True, exist_ok=True)
        (ind / sub / f"111.{wid}.ann").write_text(labels)
    agg = base / "annotations" / "aggregated" / "starting_spans" / element / "test" / "crowd"
    agg.mkdir(parents=True)
    (agg / "111.AGGREGATED.ann").write_text("1 1 1 1 1")
    return base


def test_phase1_roles_and_zero_padded_ids(tmp_path):
    base = _layout(tmp_path)
    for path in (tmp_path, base, base / "annotations" / "individual" / "phase_1"):
        c = read_corpus(path, format="ebm-nlp").corpus
        assert c.worker_ids == ("ebmnlp:00007", "ebmnlp:00042", "ebmnlp:0001")
        assert c.worker_roles == ("crowd", "crowd", "expert")
        assert c.class_names == ("O", "Participants") and c.texts == ("Forty adults with asthma .",)
        assert c.labels_of(1).tolist() == [1, 1, 0, 0, 0] and c.labels_of(2).tolist() == [1, 1, 0, 1, 0]


def test_phase2_hierarchical_labels_and_category(tmp_path):
    base = _layout(tmp_path, phase="phase_2", element="interventions")
    c = read_ebm_nlp(base / "annotations" / "individual" / "phase_2", category="I")
    assert c.class_names[:3] == ("O", "Surgical", "Physical") and len(c.class_names) == 8
    with pytest.raises(IngestError, match="no phase 2 annotations for category 'outcomes'"):
        read_ebm_nlp(base, category="outcomes", phase=2)


def test_bad_label_and_length_name_the_file_and_line(tmp_path):
    base = _layout(tmp_path)
    bad = next((base / "annotations").rglob("111.00042.ann"))
    bad.write_text("1\n1\n0\n0\n9\n")  # one label a line, as distributed: the message names the line
    with pytest.raises(IngestError, match=r"111\.00042\.ann:5: label 9 out of range"):
        read_corpus(tmp_path, format="ebm-nlp")
    bad.write_text("1\n1\nx\n0\n0\n")
    with pytest.raises(IngestError, match=r"111\.00042\.ann:3: labels must be integers 0\.\.1, found 'x'"):
        read_corpus(tmp_path, format="ebm-nlp")
    bad.write_text("1 1 0")
    res = read_corpus(tmp_path, format="ebm-nlp", on_error="skip")
    assert "3 labels for document '111' of 5 tokens" in str(res.problems[0])
    assert "ebmnlp:00042" not in res.corpus.worker_ids


def test_excerpt_majority_vote_spans():
    """Oracle: the published statement (../shared/data/README.md) that majority vote over the 8 crowd
    workers gives exactly tokens 11-13, 78-88, 91-105; the vote is computed here with vote_counts()."""
    root = shared_path("ebm_nlp_excerpt")
    c = read_corpus(root, format="ebm-nlp").corpus
    crowd = c.select_role("crowd")
    assert len(c.workers_with_role("crowd")) == 8 and len(c.workers_with_role("expert")) == 3
    assert all(w.startswith("ebmnlp:0") and len(w) in (11, 12) for w in c.worker_ids)
    votes = crowd.vote_counts()
    inside = np.flatnonzero(votes[:, 1] > votes[:, 0])  # strict majority of the 8
    runs = np.split(inside, np.flatnonzero(np.diff(inside) > 1) + 1)
    assert [(int(r[0]), int(r[-1])) for r in runs] == [(11, 13), (78, 88), (91, 105)]


def test_zip_upload_equals_the_folder_and_errors_name_the_archive(tmp_path):
    """Oracle: the same layout read as a folder. A zip is what an API upload of this format is."""
    import shutil

    base = _layout(tmp_path / "src")
    archive = shutil.make_archive(str(tmp_path / "ebm"), "zip", root_dir=tmp_path / "src")
    assert read_corpus(archive, format="ebm-nlp").corpus.equals(read_corpus(base, format="ebm-nlp").corpus)
    next((base / "annotations").rglob("111.00042.ann")).write_text("1 1 0")
    bad = shutil.make_archive(str(tmp_path / "bad"), "zip", root_dir=tmp_path / "src")
    with pytest.raises(IngestError, match=r"bad\.zip/.*111\.00042\.ann: 3 labels") as err:
        read_corpus(bad, format="ebm-nlp")
    assert "crowdqa-ebmnlp-" not in str(err.value)
    res = read_corpus(bad, format="ebm-nlp", on_error="skip")
    assert str(res.problems[0]).startswith(f"{bad}/")


def _read_both(path, monkeypatch, **options):
    """The corpus (or one-line error, or skipped-file messages) of the array fast path and of the file loop."""
    import crowdqa.ingest.ebm_nlp as ebm

    out = []
    for fast in (True, False):
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(ebm, "_read_arrays", lambda *a, **k: None)
            try:
                res = read_corpus(path, format="ebm-nlp", **options)
                out.append((res.corpus, [str(p) for p in res.problems]))
            except IngestError as exc:
                out.append((str(exc), []))
    return out


_LABELS = st.sampled_from(["0", "1", "1", "0", "2", "01", "10", "x", "-1", "\ufeff1"])
_SEPS = st.sampled_from([" ", "\n", "\t", "  ", "\r\n", "\xa0"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       files=st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["00042", "00007", "0001", "AGGREGATED", ""]),
                                st.sampled_from(["crowd", "gold", "."]), st.lists(_LABELS, max_size=5), _SEPS,
                                st.integers(-1, 1)), min_size=1, max_size=6),
       role=st.sampled_from(["crowd", "crowd", "expert"]), skip=st.booleans(), clean=st.booleans())
def test_array_path_equals_the_file_loop(tmp_path_factory, monkeypatch, docs, files, role, skip, clean):
    """Oracle: the file loop (``_read_arrays`` off). Any layout, clean or not (bad names, missing tokens files,
    multi-digit, signed or out-of-range labels, wrong lengths, a worker both crowd and gold, a BOM...),
    gives the same corpus and skipped-file messages, or the same one-line error, by either path."""
    from tests.ingest.conftest import assert_same_corpus

    root = tmp_path_factory.mktemp("ebm") / "ebm_nlp_2_00"
    (root / "documents").mkdir(parents=True)
    for d, n in enumerate(docs):
        (root / "documents" / f"{100 + d}.tokens").write_text("\n".join(f"t{d}w{i}" for i in range(n)) + "\n")
    ind = root / "annotations" / "individual" / "phase_1" / "participants" / "train"
    for d, wid, sub, labels, sep, extra in files:
        n = docs[d] if d < len(docs) else 2
        if clean:  # what real files hold: one digit per token, as many as the document's tokens
            labels, sep, extra = [v for v in labels if v in ("0", "1")], sep.strip(" \t\xa0") or " ", 0
        values = [labels[i % len(labels)] if labels else "0" for i in range(max(n + extra, 0))]
        (ind / sub).mkdir(parents=True, exist_ok=True)
        (ind / sub / f"{100 + d}.{wid}.ann").write_text(sep.join(values), encoding="utf-8")
    options = {"role": role, "on_error": "skip" if skip else "fail"}
    (fast, fast_problems), (loop, loop_problems) = _read_both(root, monkeypatch, **options)
    assert_same_corpus(fast, loop)
    assert fast_problems == loop_problems


def test_clean_corpus_takes_the_array_path(tmp_path, monkeypatch):
    """The benchmark's layout (one digit per token, a line or a space between labels) is read by the arrays."""
    import crowdqa.ingest.ebm_nlp as ebm
    from tests.ingest.conftest import assert_same_corpus

    base = _layout(tmp_path)
    taken = []
    real = ebm._read_arrays
    monkeypatch.setattr(ebm, "_read_arrays", lambda *a, **k: taken.append(real(*a, **k)) or taken[-1])
    read_corpus(base, format="ebm-nlp")
    assert taken and taken[0] is not None
    monkeypatch.undo()
    (fast, _), (loop, _) = _read_both(base, monkeypatch)
    assert_same_corpus(fast, loop)
