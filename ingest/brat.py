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
from collections import deque
from collections.abc import Callable
from pathlib import Path

import numpy as np

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._common import DocsFolder, SpanCollector, reader_log
from crowdqa.ingest._io import Tree
from crowdqa.ingest.build import Span, UnusualSpans, corpus_from_span_columns
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.limits import DocumentLimits

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
    extra = DocsFolder(docs, limits=problems.limits) if docs is not None else None
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
        # The fast path's reads (member, text) in the order made, which the line loop makes too: if the fast
        # path gives up, the loop takes them again instead of reading every member twice (the I/O, and a zip's
        # budget, counted per read). Equal texts (one document's .txt in each annotator's folder) share a string.
        taken: deque[tuple[str, str]] = deque()
        texts: dict[str, str] = {}

        def record(name: str) -> str:
            text = tree.read_text(name)
            taken.append((name, texts.setdefault(text, text)))
            return taken[-1][1]

        def replay(name: str) -> str:
            return taken.popleft()[1] if taken and taken[0][0] == name else tree.read_text(name)

        fast = _read_at_once(tree, ann_files, txt_by_doc, extra, role=role, category=category, scheme=scheme,
                             read=record, limits=problems.limits)
        if fast is not None:
            return fast
        found = SpanCollector(role=role, problems=problems, category=category)
        _assignments(tree, ann_files, txt_by_doc, extra, found, read=replay,
                     parse=lambda content, annotator, doc_id, src: _parse_ann(content, annotator, doc_id, src,
                                                                              problems))
    return found.corpus(scheme=scheme)


def _assignments(tree: Tree, ann_files: list[str], txt_by_doc: dict[str, list[str]], extra: DocsFolder | None,
                 found: SpanCollector, *, read: Callable[[str], str],
                 parse: Callable[[str, str, str, str], list[Span] | None]) -> None:
    """Hand every ``.ann`` file's assignment (its text, its spans by ``parse``) to ``found``, reporting to
    ``found.problems`` a duplicate assignment, a document without a text or with two different texts.
    ``read`` reads a member of ``tree`` as text."""
    problems = found.problems
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
        text = _text_for(read, doc_id, folder, txt_by_doc, extra)
        if text is None:
            problems.report(f"no text for document {doc_id!r}: add {doc_id}.txt or give docs=DIR", source=src)
            continue
        own, content = text
        earlier = found.other_text(doc_id, content)
        if earlier is not None:
            problems.report(f"text of {doc_id!r} differs from {earlier}", source=tree.source(own) if own else src)
            continue
        spans = parse(read(name), annotator, doc_id, src)
        if spans is None:
            continue
        seen[doc_id, annotator] = src
        found.add(doc_id, content, [annotator], spans, text_source=tree.source(own) if own else f"docs/{doc_id}.txt")


#: In the ``.ann`` files laid end to end, each after a line ``NUL <file number>``: those lines, and the ``T``
#: lines of the usual shape ``T<id><TAB><label> <start> <end>`` (ASCII digits, one fragment) then a tab or
#: the line's end.
_LINE = re.compile(r"^(?:\x00(\d+)|T[^\t\n]*\t([^ \t\n]+) ([0-9]+) ([0-9]+)(?:\t|\r?$))", re.M)
#: What sends the files to the line loop: a NUL (it would pass for a file's marker), or a line break of
#: ``str.splitlines`` other than ``\n`` and ``\r\n`` (the loop would cut lines there).
_UNUSUAL = re.compile("\x00|\r(?!\n)|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _read_at_once(tree: Tree, ann_files: list[str], txt_by_doc: dict[str, list[str]], extra: DocsFolder | None, *,
                  role: str, category: str | None, scheme: str, read: Callable[[str], str],
                  limits: DocumentLimits | None = None) -> Corpus | None:
    """The corpus with every ``T`` line parsed at once, or None to let the line loop read the files.

    The assignments are checked as the loop checks them (:func:`_assignments`), giving up at the first
    problem; the ``.ann`` files are then laid end to end and every ``T`` line found by one
    regular-expression scan, and the spans built as columns
    (:func:`crowdqa.ingest.build.corpus_from_span_columns`), with no :class:`Span` per span. Anything
    the loop would report or read otherwise (a ``T`` line of another shape, a discontinuous span, a span
    outside its text, over whitespace only or of two types on a token) gives None: the loop parses the
    files again (taking the members ``read`` read, not reading them anew) and names the file and line.
    """
    contents: list[tuple[str, str, str]] = []

    def keep(content: str, annotator: str, doc_id: str, src: str) -> list[Span]:
        contents.append((content, annotator, doc_id))
        return []

    found = SpanCollector(role=role, problems=ProblemLog("fail", limits=limits or DocumentLimits()))
    try:
        _assignments(tree, ann_files, txt_by_doc, extra, found, read=read, parse=keep)
    except IngestError:
        return None
    if any(_UNUSUAL.search(content) for content, _, _ in contents):
        return None
    text = "".join(f"\x00{k}\n{content}\n" for k, (content, _, _) in enumerate(contents))
    matches = _LINE.findall(text)
    if len(matches) != len(contents) + text.count("\nT"):
        return None  # a T line of another shape
    number, label, start, end = zip(*matches, strict=True) if matches else ((), (), (), ())
    is_span = np.array([not k for k in number], dtype=bool)
    file_of = np.cumsum(~is_span)[is_span] - 1
    rows = np.flatnonzero(is_span)
    labels = [label[i] for i in rows.tolist()]
    if category is not None:
        keep_rows = [lab == category for lab in labels]
        rows, file_of = rows[keep_rows], file_of[keep_rows]
        labels = [lab for lab, k in zip(labels, keep_rows, strict=True) if k]
    picked = rows.tolist()
    starts, ends = [int(start[i]) for i in picked], [int(end[i]) for i in picked]  # (past 64 bits: refused below)
    annotator_of = [a for _, a, _ in contents]
    doc_of = [d for _, _, d in contents]
    files = file_of.tolist()
    try:
        return corpus_from_span_columns(
            documents=found.documents, assignments=found.assignments, span_doc=[doc_of[k] for k in files],
            span_annotator=[annotator_of[k] for k in files], span_start=starts, span_end=ends, span_label=labels,
            roles=found.roles, scheme=scheme, limits=limits)
    except UnusualSpans:
        return None


def _text_for(
    read: Callable[[str], str], doc_id: str, folder: str, txt_by_doc: dict[str, list[str]], extra: DocsFolder | None
) -> tuple[str | None, str] | None:
    candidates = txt_by_doc.get(doc_id, [])
    own = f"{folder}/{doc_id}.txt"
    ordered = ([own] if own in candidates else []) + [c for c in candidates if c != own]
    if ordered:
        return ordered[0], read(ordered[0])
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
