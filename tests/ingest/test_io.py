"""The folder listing of ingest/_io.Tree against pathlib's rglob."""

from __future__ import annotations

import os

from crowdqa.ingest._io import Tree, folder_files


def test_folder_files_equal_rglob(tmp_path):
    """Oracle: ``Path.rglob("*")`` keeping files (links to files too, not the insides of linked folders),
    as the listing was written before. Hidden files are listed by both and left out by the Tree."""
    root = tmp_path / "up"
    (root / "alice" / "deep").mkdir(parents=True)
    (root / "bob").mkdir()
    for name in ("alice/a.ann", "alice/a.txt", "alice/deep/b.ann", "bob/a.ann", ".hidden", "top.txt"):
        (root / name).write_text("x", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c.ann").write_text("x", encoding="utf-8")
    os.symlink(outside, root / "linked_folder")
    os.symlink(root / "top.txt", root / "bob" / "linked.txt")
    os.symlink(tmp_path / "missing", root / "bob" / "broken.txt")
    expected = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    with Tree(root) as tree:
        assert tree._names == expected == sorted("/".join(p) for p in folder_files(root))
        assert tree.names == [n for n in expected if not n.startswith(".")]
        assert tree.read_bytes("bob/linked.txt") == b"x"
        assert tree.source("alice/a.ann") == str(root / "alice" / "a.ann")
