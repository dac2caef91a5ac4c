"""CoNLL with one tag column per annotator (Rodrigues, Pereira, Ribeiro 2014).

The layout of the CoNLL-2003 Mechanical Turk release of F. Rodrigues et al. (2014),
"Sequence labeling with multiple annotators", Machine Learning 95(2), 165-181,
doi:10.1007/s10994-013-5411-2::

    # annotators: alice bob carol        (optional first line)
    EU      B-ORG  ?  B-ORG
    rejects O      ?  O

Fields are separated by whitespace: the token, then one tag per annotator. ``?`` means
that annotator did not label the token. What a column may leave unlabelled depends on the
label scheme:

* span schemes (``scheme="auto"``, ``"io"``, ``"bio"``; IOB/BIO tags): a column is all
  ``?`` or all tags within a sentence. A span cut by an unlabelled token is ambiguous (does
  it end there or run on?), and spans are compared whole, so a sentence is labelled whole
  or not at all; a mixed column is refused, naming the line;
* ``scheme="tags"`` (one class of a tag set per token, no spans): a column may leave any
  tokens of a sentence ``?``; they are missing for that annotator, never ``O``. The classes
  are the tags seen, in natural order (``B-PER`` is then one tag like ``NOUN``).

A blank line ends a sentence; each sentence is one
document, with id ``"1"``, ``"2"``, ... in file order. ``-DOCSTART-`` lines are
skipped. Without the header the annotator columns are named ``"<role>:1"``,
``"<role>:2"``, ... (``crowd:1`` in a crowd upload, ``expert:1`` in a gold file).
Tags are kept as written (IOB1 ``I-X`` after ``O`` is an entity start by the
conlleval rule of :mod:`crowdqa.aggregation.spans`); under a span scheme the schema is ``O``
then ``B-``/``I-`` of every type seen, whichever of ``"auto"``, ``"io"`` or ``"bio"`` is asked:
the tags' prefixes decide.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus, entity_type
from crowdqa.ingest._bytes import (
    MAX_FIELD_BYTES,
    field_bounds,
    field_codes,
    joined,
    line_bounds,
    other_controls,
    padded,
)
from crowdqa.ingest._common import reader_log
from crowdqa.ingest._io import read_text
from crowdqa.ingest.build import class_names_for, corpus_from_token_labels
from crowdqa.ingest.categorical import natural_key
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.limits import DocumentLimits

__all__ = ["read_conll"]

_MISSING = "?"


def read_conll(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None,
               scheme: str | None = "auto") -> Corpus:
    """Read a multi-annotator CoNLL file.

    Parameters
    ----------
    path : str or PathLike
    scheme : {"auto", "io", "bio", "tags"}, default="auto"
        ``"tags"`` reads a tag set labelled token by token (see the module notes); the others read
        IOB/BIO span tags as written.
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
        A bad sentence is skipped whole under ``on_error="skip"``.

    Returns
    -------
    Corpus
    """
    problems = reader_log(role, problems)
    src = str(Path(path))
    tags = scheme == "tags"
    fast = _read_columnar(Path(path), role=role, tags=tags, limits=problems.limits)
    if fast is not None:
        return fast
    lines = read_text(path).splitlines()
    names: list[str] | None = None
    first = 0
    if lines and lines[0].lstrip().lower().startswith("# annotators:"):
        names = lines[0].split(":", 1)[1].split()
        if len(set(names)) != len(names) or not names:
            raise IngestError("'# annotators:' must list distinct names", source=src, line=1)
        first = 1

    tags_scheme = tags
    documents: dict[str, list[str]] = {}
    labels: list[tuple[str, str, list[str | None]]] = []
    sources: list[tuple[str, int]] = []
    sentence: list[tuple[int, list[str]]] = []
    counter = [0]  # sentence number, counting skipped sentences too, so ids follow the file

    def flush() -> None:
        nonlocal names
        if not sentence:
            return
        counter[0] += 1
        rows = list(sentence)
        sentence.clear()
        line0 = rows[0][0]
        width = len(rows[0][1])
        if names is None:
            # Unnamed columns are numbered per role, so a crowd file and an expert (gold) file
            # of the same sentences merge without their column numbers colliding.
            names = [f"{role}:{i}" for i in range(1, width)]
        bad = next(((ln, f) for ln, f in rows if len(f) != len(names) + 1), None)
        if bad is not None:
            problems.report(
                f"expected a token and {len(names)} annotator columns, found {len(bad[1])} fields",
                source=src, line=bad[0],
            )
            return
        doc_id = str(counter[0])
        cols = list(zip(*(f for _, f in rows), strict=True))
        entries = []
        for k, name in enumerate(names):
            tags = list(cols[k + 1])
            missing = [t == _MISSING for t in tags]
            if all(missing):
                continue
            if any(missing) and not tags_scheme:
                ln = rows[missing.index(True) if not missing[0] else missing.index(False)][0]
                problems.report(f"annotator {name!r} labels only part of the sentence ('?' mixed with tags): "
                                "under a span scheme an annotator labels a whole sentence or none of it, since a "
                                "span cut by an unlabelled token is ambiguous; read with scheme 'tags' "
                                "(--scheme tags) to let annotators label any tokens", source=src, line=ln)
                return
            entries.append((doc_id, name, [None if m else t for t, m in zip(tags, missing, strict=True)]))
        documents[doc_id] = list(cols[0])
        labels.extend(entries)
        sources.extend((src, line0) for _ in entries)

    for lineno, raw in enumerate(lines[first:], start=first + 1):
        fields = raw.split()
        if not fields:
            flush()
        elif fields[0] == "-DOCSTART-":
            flush()
        else:
            sentence.append((lineno, fields))
            if len(sentence) > problems.limits.max_tokens:
                problems.limits.check_tokens(len(sentence), doc_id=str(counter[0] + 1), source=src,
                                             line=sentence[0][0], at_least=True)
    flush()
    if not documents:
        raise IngestError("no sentences found", source=src)
    roles = {name: role for _, name, _ in labels}
    return corpus_from_token_labels(documents=documents, labels=labels, roles=roles, problems=problems, sources=sources,
                                    tags=tags)


#: Beyond ASCII, the characters ``str.split`` and ``str.splitlines`` also cut at (ASCII ones are bytes below 33).
_WIDE_SPACE = "[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


#: Bytes of the file the columnar path parses at once (whole sentences: a part ends at a blank line). Its
#: arrays take some twenty times the bytes they parse, so parts keep the peak near the size of the result.
PART_BYTES = 1 << 19


@dataclass
class _Part:
    """One part's present cells, sentences and tokens, with tags as indices into the reader's tag list."""

    row: NDArray[np.int32]
    column: NDArray[np.int32]
    tag: NDArray[np.int32]
    doc_lengths: NDArray[np.int64]
    first_doc: NDArray[np.int64]  # per annotator column: the part's first sentence it labels (n_docs: none)
    texts: tuple[str, ...]
    start: NDArray[np.int32]
    lengths: NDArray[np.int32]


def _read_columnar(path: Path, *, role: str, tags: bool = False, limits: DocumentLimits | None = None
                   ) -> Corpus | None:
    """The file read part by part as byte arrays (:data:`PART_BYTES` of whole sentences each), or None for the
    line loop.

    Applies to files whose fields are separated by single tabs (or single spaces) throughout, with
    no other whitespace or control byte (no ``\r``, no line of only spaces, no empty field), no
    ``-DOCSTART-`` line, valid UTF-8 and tags of at most
    :data:`~crowdqa.ingest._bytes.MAX_FIELD_BYTES` bytes; gives up on anything the line loop would
    report (a row of another width, a column mixing ``?`` and tags in a sentence under a span scheme), so messages
    naming the line, and ``on_error="skip"``, come from the line loop. The corpus is the line
    loop's: documents ``"1"``, ``"2"``, ... in file order, annotators numbered in order of first
    appearance, tags mapped to the same schema.

    Fields are found from the positions of the newline and delimiter bytes; tags are encoded by
    their bytes (:mod:`crowdqa.ingest._bytes`) and token texts copied out of the bytes
    (:func:`_token_texts`), with no Python string per row. Parts, not the whole file, are held as
    arrays, so the peak memory follows the corpus, not the file's bytes times the arrays per byte. A sentence (a
    document) of more lines than ``limits.max_tokens`` is refused as it is read (:func:`_sentence_parts`): a
    part holds whole sentences, so one endless sentence would be one endless part.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below, on every return
    except OSError:
        return None
    with fh:
        first = fh.readline()
        if first.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")):
            return None
        names = None
        rest = first
        if first.lstrip().lower().startswith(b"# annotators:"):
            line = first[:-1] if first.endswith(b"\n") else first
            if re.search(rb"[\x00-\x08\x0a-\x1f]", line):
                return None  # a byte splitlines() cuts at: the line loop reads another header
            try:
                names = line.decode("utf-8").split(":", 1)[1].split()
            except UnicodeDecodeError:
                return None
            if not names or len(set(names)) != len(names):
                return None
            rest = b""
        vocab: dict[str, int] = {}
        parts: list[_Part] = []
        layout: list = [names, None]  # annotator names, then (delimiter, n_fields) from the first row
        limits = limits or DocumentLimits()
        for chunk, line in _sentence_parts(fh, rest, limits=limits, source=str(path), line=1 if rest else 2):
            part = _columnar_part(chunk, layout, vocab, role=role, partial=tags)
            if part is None:
                return None
            _check_part(part, chunk, line, limits=limits, source=str(path),
                        first_doc=sum(p.doc_lengths.size for p in parts) + 1)
            parts.append(part)
    if not parts:
        return None
    return _joined_parts(parts, list(vocab), layout[0], role=role, tags=tags)


def _sentence_parts(fh, head: bytes, *, limits: DocumentLimits, source: str, line: int):
    """The file's bytes from ``head`` on in parts of about :data:`PART_BYTES`, each ending after a blank line
    (or at the end of the file), so no sentence is cut, with the line each starts at (``line``: ``head``'s). A
    sentence of more lines than ``limits.max_tokens`` is refused (naming the line it starts at) before it is held
    whole."""
    buffer = bytearray(head)
    while True:
        more = fh.read(PART_BYTES)
        buffer += more
        cut = buffer.rfind(b"\n\n") + 2 if more else len(buffer)
        if cut < 2 and more:
            if buffer.count(b"\n") > limits.max_tokens + 1:  # one sentence of more lines than tokens allowed
                limits.check_tokens(buffer.count(b"\n"), doc_id="?", source=source, line=line, at_least=True)
            continue  # no sentence ends yet: read on
        if cut:
            yield bytes(buffer[:cut]), line
            line += buffer.count(b"\n", 0, cut)
            del buffer[:cut]
        if not more:
            return


def _check_part(part: _Part, chunk: bytes, line: int, *, limits: DocumentLimits, source: str, first_doc: int
                ) -> None:
    """Refuse a part's longest sentence past ``limits`` (tokens, or its text's characters), naming the line it
    starts at (``chunk`` starts at ``line``; sentence ids count from ``first_doc``)."""
    chars = np.fromiter(map(len, part.texts), dtype=np.int64, count=len(part.texts))
    over = np.flatnonzero((part.doc_lengths > limits.max_tokens) | (chars > limits.max_chars))
    if not over.size:
        return
    d = int(over[0])
    starts = [k for k, (prev, this) in enumerate(zip([b""] + chunk.split(b"\n"), chunk.split(b"\n"), strict=False))
              if this.strip() and not prev.strip()]
    where = dict(doc_id=str(first_doc + d), source=source, line=line + starts[d] if d < len(starts) else None)
    limits.check_tokens(int(part.doc_lengths[d]), **where)
    limits.check_chars(int(chars[d]), **where)


def _columnar_part(chunk: bytes, layout: list, tags: dict[str, int], *, role: str, partial: bool = False
                   ) -> _Part | None:
    """One part's cells by the columnar rules of :func:`_read_columnar`, or None where the line loop must read."""
    if b"-DOCSTART-" in chunk:
        return None
    if not chunk.isascii():  # (one C scan, no array of a bool per byte)
        try:
            if re.search(_WIDE_SPACE, chunk.decode("utf-8")):
                return None
        except UnicodeDecodeError:
            return None
    data = bytearray(len(chunk) + MAX_FIELD_BYTES)
    data[:len(chunk)] = chunk
    body, size = padded(data, 0)
    # Lines: a blank line (nothing at all between two newlines) ends a sentence.
    starts, ends = line_bounds(body, size)
    token_line = ends > starts
    row_start, row_end = starts[token_line], ends[token_line]
    n_rows = row_start.size
    if n_rows == 0:
        none = np.zeros(0, np.int64)  # blank lines alone: no sentence (first_doc 0 = n_docs: no annotator)
        return None if layout[1] is None else _Part(none, none, none, none, np.zeros(len(layout[0]), np.int64),
                                                    (), none, none)
    if layout[1] is None:
        delim = 9 if np.any(body[row_start[0]:row_end[0]] == 9) else 32
        n_fields = int(np.count_nonzero(body[row_start[0]:row_end[0]] == delim)) + 1
        if layout[0] is None:
            layout[0] = [f"{role}:{i}" for i in range(1, n_fields)]
        if n_fields != len(layout[0]) + 1 or n_fields < 2:
            return None
        layout[1] = (delim, n_fields)
    delim, n_fields = layout[1]
    if other_controls(body, size, below=33, allowed=(10, delim)):
        return None  # whitespace other than single delimiters and newlines, or a control byte
    bounds = field_bounds(body, size, row_start, row_end, delimiter=delim, n_fields=n_fields)
    if bounds is None:
        return None
    width = np.diff(bounds, axis=1) - 1  # bytes of each field
    if np.any(width < 1):
        return None  # an empty field (a delimiter at a line's start or end, or two in a row)
    # Sentence of every token row: a blank line before a row starts a new sentence.
    blanks_before = np.cumsum(~token_line)[token_line]
    sentence = np.cumsum(np.diff(blanks_before, prepend=-1) != 0) - 1
    n_docs = int(sentence[-1]) + 1
    doc_lengths = np.bincount(sentence, minlength=n_docs).astype(np.int64)
    # Tags: one encoding of every tag cell (row by row, columns left to right); "?" marks an absent annotator.
    encoded = field_codes(body, (bounds[:, 1:-1] + 1).ravel(), width[:, 1:].ravel())
    if encoded is None:
        return None
    codes, vocab = encoded
    n_ann = n_fields - 1
    tag = np.array([-1 if t == _MISSING else tags.setdefault(t, len(tags)) for t in vocab],
                   dtype=np.int64)[codes].reshape(n_rows, n_ann)
    del codes
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])
    missing = np.add.reduceat(tag < 0, doc_start[:-1], axis=0, dtype=np.int64)  # (n_docs, n_ann)
    if not partial and np.any((missing > 0) & (missing < doc_lengths[:, None])):
        return None  # "?" mixed with tags in a sentence: the line loop names the line
    present_doc = missing < doc_lengths[:, None]  # the annotator labelled some token of the sentence
    first_doc = np.where(present_doc.any(axis=0), present_doc.argmax(axis=0), n_docs)
    cell = np.flatnonzero(tag.ravel() >= 0)  # (row, column) cells present, row by row
    row, column = np.divmod(cell, n_ann)
    texts, start, lengths = _token_texts(body, row_start, bounds[:, 1], doc_lengths)
    # Narrow types: every part's cells are kept until the end (a part's rows and columns are few).
    return _Part(row.astype(np.int32), column.astype(np.int32), tag.ravel()[cell].astype(np.int32), doc_lengths,
                 first_doc, texts, start.astype(np.int32), lengths.astype(np.int32))


def _joined_parts(parts: list[_Part], vocab: list[str], names: list[str], *, role: str, tags: bool = False
                  ) -> Corpus | None:
    """The corpus of every part: tags mapped to the schema (a tag set's in natural order under ``tags``),
    annotators numbered by first appearance."""
    if tags:
        class_names = tuple(sorted(vocab, key=natural_key)) or ("O",)
    else:
        seen = set(vocab) - {"O"}
        bio = any(t[:2] in ("B-", "I-") for t in seen)
        class_names = class_names_for(sorted({entity_type(t) for t in seen}), "bio" if bio else "io")
    class_id = {c: i for i, c in enumerate(class_names)}
    if any(t not in class_id for t in vocab):
        return None  # a tag the schema does not have (e.g. "B-" alone)
    doc_lengths = np.concatenate([p.doc_lengths for p in parts])
    n_docs = doc_lengths.size
    doc_base = np.cumsum([0] + [p.doc_lengths.size for p in parts])
    # Annotators in order of first appearance (sentence by sentence, columns left to right), as the line loop.
    first_doc = np.min([np.where(p.first_doc < p.doc_lengths.size, p.first_doc + base, n_docs)
                        for p, base in zip(parts, doc_base, strict=False)], axis=0)
    used = np.flatnonzero(first_doc < n_docs)
    order = used[np.lexsort((used, first_doc[used]))]
    rank = np.full(len(names), -1, dtype=np.int64)
    rank[order] = np.arange(order.size)
    row_base = np.cumsum([0] + [int(p.doc_lengths.sum()) for p in parts])
    token = np.concatenate([p.row.astype(np.int64) + base for p, base in zip(parts, row_base, strict=False)])
    worker = np.concatenate([rank[p.column] for p in parts]).astype(np.int32)
    label = np.array([class_id[t] for t in vocab], dtype=np.int16)[np.concatenate([p.tag for p in parts])]
    by_cell = np.lexsort((worker, token))  # rows are in order already; within a row, by annotator number
    worker_ids = [names[k] for k in order.tolist()]
    return Corpus(
        token=token[by_cell], worker=worker[by_cell], label=label[by_cell],
        doc_lengths=doc_lengths, token_start=np.concatenate([p.start for p in parts]).astype(np.int64),
        token_end=np.concatenate([p.start + p.lengths for p in parts]).astype(np.int64),
        doc_ids=tuple(map(str, range(1, n_docs + 1))), texts=tuple(t for p in parts for t in p.texts),
        worker_ids=tuple(worker_ids), worker_roles=tuple(role for _ in worker_ids), class_names=class_names,
        tags=tags,
    )


def _token_texts(body: NDArray[np.uint8], first: NDArray[np.int64], last: NDArray[np.int64],
                 doc_lengths: NDArray[np.int64]) -> tuple[tuple[str, ...], NDArray[np.int64], NDArray[np.int64]]:
    """Document texts (tokens joined by single spaces) and token offsets, from the tokens' bytes.

    The rule of :func:`crowdqa.ingest.tokenize.offsets_from_tokens`, for every document at once:
    token ``i`` is ``body[first[i]:last[i]]`` (UTF-8); each is copied with one space after it into
    one buffer, decoded once and cut per document. Offsets count characters: a UTF-8 continuation
    byte (``0b10xxxxxx``) is not one.

    Returns
    -------
    texts : tuple of str, length n_docs
    start, lengths : ndarray of shape (n_tokens,)
        Each token's first character in its document's text, and its length in characters.
    """
    size = last - first
    out_end = np.cumsum(size + 1)
    out_start = out_end - size - 1
    out = joined(body, first, size, separator=32)
    if np.any(out >= 128):
        cont = np.zeros(out.size + 1, dtype=np.int64)
        np.cumsum((out & 0xC0) == 0x80, out=cont[1:])
        size = size - (cont[out_end - 1] - cont[out_start])
        out_start = out_start - cont[out_start]
    text = out.tobytes().decode("utf-8")
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])
    text_start = out_start[doc_start[:-1]].tolist()
    text_end = (out_start[doc_start[1:] - 1] + size[doc_start[1:] - 1]).tolist()
    texts = tuple(text[a:b] for a, b in zip(text_start, text_end, strict=True))
    start = out_start - np.repeat(out_start[doc_start[:-1]], doc_lengths)
    return texts, start, size


