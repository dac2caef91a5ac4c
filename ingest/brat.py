"""brat standoff annotations, one folder per annotator (brat.nlplab.org/standoff.html).

Layout (a folder or a zip archive)::

    alice/doc1.ann  alice/doc1.txt  bob/doc1.ann  bob/doc1.txt ...

The annotator is the name of the folder holding the ``.ann`` file; the document id is
the file name without ``.ann``. Every ``.ann`` file is an assignment (an empty one
means "labelled, nothing found"). The text is the ``.txt`` beside it, else the same
document's ``.txt`` in another annotator's folder, else ``docs/<doc_id>.txt``; copies
must agree. Only text-bound annotations (``T`` lines:
``T1<TAB>Label 0 5;9 12<TAB>text``) are read; relations, events, attributes and notes
are ignored. A discontinuous span is split into its fragments, each a span of the
label (so each fragment starts an entity under BIO). ``category`` keeps one label.
Offsets are characters of the ``.txt`` as stored (line endings included).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import DocsFolder, SpanCollector, reader_log
from crowdqa.ingest._io import Tree
from crowdqa.ingest.build import Span
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_brat"]

_FRAGMENT = re.compile(r"^(\d+) (\d+)$")


def read_brat(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
              docs: str | os.PathLike | None = None, category: str | None = None, scheme: str = "auto") -> Corpus:
    """Read brat standoff files, one folder per annotator.

    Parameters
    ----------
    path : str or PathLike
        A folder or a ``.zip`` archive.
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
    docs, category, scheme
        Upload options (:data:`crowdqa.ingest.formats.UPLOAD_OPTIONS`); ``docs`` holds the texts of
        documents without a ``.txt`` in the upload.

    Returns
    -------
    Corpus
    """
    problems = reader_log(role, problems)
    extra = DocsFolder(docs) if docs is not None else None
    found = SpanCollector(role=role, problems=problems, category=category)
    with Tree(path) as tree:
        ann_files = list(tree.iter_files(".ann"))
        if not ann_files:
            raise IngestError("no .ann files found", source=str(path))
        loose = [n for n in ann_files if "/" not in n]
        if loose:
            raise IngestError(
                f"{loose[0]} is not in an annotator folder: put each annotator's files in a folder named after them",
                source=str(path),
            )
        txt_by_doc: dict[str, list[str]] = {}
        for n in tree.iter_files(".txt"):
            txt_by_doc.setdefault(Path(n).stem, []).append(n)

        seen: dict[tuple[str, str], str] = {}
        for name in ann_files:
            folder, _, fname = name.rpartition("/")
            annotator, doc_id = folder.rsplit("/", 1)[-1], fname[: -len(".ann")]
            src = tree.source(name)
            if (doc_id, annotator) in seen:
                problems.report(
                    f"duplicate assignment: {annotator!r} annotated {doc_id!r} twice (also {seen[doc_id, annotator]})",
                    source=src,
                )
                continue
            text = _text_for(tree, doc_id, folder, txt_by_doc, extra)
            if text is None:
                problems.report(f"no text for document {doc_id!r}: add {doc_id}.txt or give docs=DIR", source=src)
                continue
            own, content = text
            earlier = found.other_text(doc_id, content)
            if earlier is not None:
                problems.report(f"text of {doc_id!r} differs from {earlier}", source=tree.source(own) if own else src)
                continue
            spans = _parse_ann(tree.read_text(name), annotator, doc_id, src, problems)
            if spans is None:
                continue
            seen[doc_id, annotator] = src
            found.add(doc_id, content, [annotator], spans,
                      text_source=tree.source(own) if own else f"docs/{doc_id}.txt")
    return found.corpus(scheme=scheme)


def _text_for(
    tree: Tree, doc_id: str, folder: str, txt_by_doc: dict[str, list[str]], extra: DocsFolder | None
) -> tuple[str | None, str] | None:
    candidates = txt_by_doc.get(doc_id, [])
    own = f"{folder}/{doc_id}.txt"
    ordered = ([own] if own in candidates else []) + [c for c in candidates if c != own]
    if ordered:
        return ordered[0], tree.read_text(ordered[0])
    if extra is not None:
        text = extra.get(doc_id)
        if text is not None:
            return None, text
    return None


def _parse_ann(content: str, annotator: str, doc_id: str, src: str, problems: ProblemLog) -> list[Span] | None:
    """Spans of the ``T`` lines; None if a line is malformed and was reported."""
    out: list[Span] = []
    for lineno, line in enumerate(content.splitlines(), start=1):
        if not line.startswith("T"):
            continue
        parts = line.split("\t")
        head = parts[1].split(" ", 1) if len(parts) >= 2 else []
        if len(head) != 2:
            problems.report("text-bound annotation must be 'T<id><TAB><label> <start> <end><TAB><text>'",
                            source=src, line=lineno)
            return None
        label, ranges = head
        frags = []
        for frag in ranges.split(";"):
            m = _FRAGMENT.match(frag.strip())
            if m is None:
                problems.report(f"bad offsets {ranges!r}: expected '<start> <end>[;<start> <end>...]'",
                                source=src, line=lineno)
                return None
            frags.append((int(m.group(1)), int(m.group(2))))
        out.extend(Span(doc_id, annotator, s, e, label, source=src, line=lineno) for s, e in frags)
    return out
