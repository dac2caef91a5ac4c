"""Tar archives (as corpora like EBM-NLP are distributed): same corpus as the folder, and the safety rules."""

from __future__ import annotations

import io
import tarfile

import pytest

from crowdqa.ingest import read_corpus
from crowdqa.ingest._io import Tree
from crowdqa.ingest.errors import IngestError
from tests.ingest.test_ebm_nlp import _layout


def _tar(path, members: dict[str, bytes], mode: str = "w:gz", extra=()):
    with tarfile.open(path, mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for info in extra:
            tf.addfile(info)
    return path


@pytest.mark.parametrize("mode", ["w", "w:gz", "w:bz2", "w:xz"])
def test_ebm_nlp_tarball_reads_like_its_folder(tmp_path, mode):
    """Oracle: the same layout read from the folder."""
    base = _layout(tmp_path / "src")
    archive = tmp_path / "ebm_nlp_2_00.tar.gz"
    with tarfile.open(archive, mode) as tf:
        tf.add(base, arcname="ebm_nlp_2_00")
    assert read_corpus(archive, format="ebm-nlp").corpus.equals(read_corpus(base, format="ebm-nlp").corpus)


def test_brat_and_doccano_read_tar_archives(tmp_path):
    brat = _tar(tmp_path / "brat.tgz", {"export/u/d.txt": b"Ann lives", "export/u/d.ann": b"T1\tPER 0 3\tAnn\n"})
    c = read_corpus(brat, format="brat").corpus
    assert c.worker_ids == ("u",) and c.labels_of(0).tolist() == [1, 0]
    doccano = _tar(tmp_path / "doccano.tar", {"alice.jsonl": b'{"id": 1, "text": "Rome", "label": []}\n'}, "w")
    assert read_corpus(doccano, format="doccano").corpus.worker_ids == ("alice",)


def test_unsafe_members_are_refused(tmp_path):
    with pytest.raises(IngestError, match=r"evil\.tgz: unsafe path '\.\./x\.ann' in tar archive"):
        read_corpus(_tar(tmp_path / "evil.tgz", {"../x.ann": b""}), format="brat")
    with pytest.raises(IngestError, match="unsafe path '/etc/x.ann'"):
        read_corpus(_tar(tmp_path / "abs.tgz", {"/etc/x.ann": b""}), format="brat")
    link = tarfile.TarInfo("u/d.ann")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    with pytest.raises(IngestError, match="'u/d.ann' in tar archive is not a regular file"):
        read_corpus(_tar(tmp_path / "link.tgz", {}, extra=[link]), format="brat")
    hard = tarfile.TarInfo("u/e.ann")
    hard.type, hard.linkname = tarfile.LNKTYPE, "u/d.ann"
    with pytest.raises(IngestError, match="not a regular file"):
        read_corpus(_tar(tmp_path / "hard.tgz", {"u/d.ann": b""}, extra=[hard]), format="brat")
    with pytest.raises(IngestError, match="holds 'u/d.ann' twice"):
        read_corpus(_tar(tmp_path / "dup.tgz", {"u/d.ann": b""}, extra=[tarfile.TarInfo("u/d.ann")]), format="brat")


def test_size_bound_and_truncated_archive(tmp_path, monkeypatch):
    bomb = _tar(tmp_path / "bomb.tgz", {"u/d.txt": b"a" * 5000, "u/d.ann": b""})
    monkeypatch.setattr("crowdqa.ingest._inflate.MAX_ZIP_BYTES", 1000)
    with pytest.raises(IngestError, match=r"bomb\.tgz: tar archive expands to more than 1000 bytes"):
        read_corpus(bomb, format="brat")
    monkeypatch.undo()
    whole = _tar(tmp_path / "whole.tar", {"u/d.txt": b"a" * 5000, "u/d.ann": b""}, "w").read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(whole[:1500])
    with pytest.raises(IngestError, match=r"cut\.tar: unreadable tar archive"):
        read_corpus(cut, format="brat")


def test_the_private_copy_is_removed_on_close(tmp_path):
    tree = Tree(_tar(tmp_path / "a.tgz", {"u/d.txt": b"x"}))
    copy = tree._unpacked
    assert copy is not None and copy.is_dir() and tree.read_text("u/d.txt") == "x"
    assert tree.source("u/d.txt") == f"{tmp_path / 'a.tgz'}/u/d.txt"
    tree.close()
    assert not copy.exists()


def test_hidden_members_are_checked_but_not_unpacked(tmp_path):
    """macOS resource forks (``._x``) and ``__MACOSX`` are left out of the tree and of its copy on disk."""
    tree = Tree(_tar(tmp_path / "mac.tgz", {"u/d.txt": b"x", "u/._d.txt": b"junk", "__MACOSX/u/d.txt": b"junk"}))
    assert tree.names == ["u/d.txt"] and tree.folder is not None
    assert sorted(p.relative_to(tree.folder).as_posix() for p in tree.folder.rglob("*") if p.is_file()) == ["u/d.txt"]
    tree.close()
    with pytest.raises(IngestError, match="holds 'u/._d.txt' twice"):
        Tree(_tar(tmp_path / "dup.tgz", {"u/._d.txt": b""}, extra=[tarfile.TarInfo("u/._d.txt")]))
