"""crowdqa.ingest.ebm_nlp: the EBM-NLP 2.00 layout."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_bad_label_and_length_name_the_file(tmp_path):
    base = _layout(tmp_path)
    bad = next((base / "annotations").rglob("111.00042.ann"))
    bad.write_text("1 1 0 0 9")
    with pytest.raises(IngestError, match=r"111\.00042\.ann: label 9 out of range"):
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
