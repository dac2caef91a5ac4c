"""CoNLL with one tag column per annotator (Rodrigues, Pereira, Ribeiro 2014).

The layout of the CoNLL-2003 Mechanical Turk release of F. Rodrigues et al. (2014),
"Sequence labeling with multiple annotators", Machine Learning 95(2), 165-181,
doi:10.1007/s10994-013-5411-2::

    # annotators: alice bob carol        (optional first line)
    EU      B-ORG  ?  B-ORG
    rejects O      ?  O

Fields are separated by whitespace: the token, then one IOB/BIO tag per annotator.
``?`` means that annotator did not label the sentence: a column must be all ``?`` or
all tags within a sentence. A blank line ends a sentence; each sentence is one
document, with id ``"1"``, ``"2"``, ... in file order. ``-DOCSTART-`` lines are
skipped. Without the header the annotator columns are named ``"<role>:1"``,
``"<role>:2"``, ... (``crowd:1`` in a crowd upload, ``expert:1`` in a gold file).
Tags are kept as written (IOB1 ``I-X`` after ``O`` is an entity start by the
conlleval rule of :mod:`crowdqa.aggregation.spans`); the schema is ``O`` then ``B-``/``I-``
of every type seen.
"""

from __future__ import annotations

import os
import re
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
    read_padded,
)
from crowdqa.ingest._common import reader_log
from crowdqa.ingest._io import read_text
from crowdqa.ingest.build import class_names_for, corpus_from_token_labels
from crowdqa.ingest.errors import IngestError, ProblemLog

__all__ = ["read_conll"]

_MISSING = "?"


def read_conll(path: str | os.PathLike, *, role: str = "crowd", problems: ProblemLog | None = None) -> Corpus:
    """Read a multi-annotator CoNLL file.

    Parameters
    ----------
    path : str or PathLike
    role, problems
        The keywords every reader takes (:func:`crowdqa.ingest._common.reader_log`).
        A bad sentence is skipped whole under ``on_error="skip"``.

    Returns
    -------
    Corpus
    """
    problems = reader_log(role, problems)
    src = str(Path(path))
    fast = _read_columnar(Path(path), role=role)
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

    documents: dict[str, list[str]] = {}
    labels: list[tuple[str, str, list[str]]] = []
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
            if any(missing):
                ln = rows[missing.index(True) if not missing[0] else missing.index(False)][0]
                problems.report(f"annotator {name!r} labels only part of the sentence ('?' mixed with tags)",
                                source=src, line=ln)
                return
            entries.append((doc_id, name, tags))
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
    flush()
    if not documents:
        raise IngestError("no sentences found", source=src)
    roles = {name: role for _, name, _ in labels}
    return corpus_from_token_labels(documents=documents, labels=labels, roles=roles, problems=problems, sources=sources)


#: Beyond ASCII, the characters ``str.split`` and ``str.splitlines`` also cut at (ASCII ones are bytes below 33).
_WIDE_SPACE = "[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def _read_columnar(path: Path, *, role: str) -> Corpus | None:
    """The whole file read as one byte array, or None for the line loop.

    Applies to files whose fields are separated by single tabs (or single spaces) throughout, with
    no other whitespace or control byte (no ``\r``, no line of only spaces, no empty field), no
    ``-DOCSTART-`` line, valid UTF-8 and tags of at most
    :data:`~crowdqa.ingest._bytes.MAX_FIELD_BYTES` bytes; gives up on anything the line loop would
    report (a row of another width, a column mixing ``?`` and tags in a sentence), so messages
    naming the line, and ``on_error="skip"``, come from the line loop. The corpus is the line
    loop's: documents ``"1"``, ``"2"``, ... in file order, annotators numbered in order of first
    appearance, tags mapped to the same schema.

    Fields are found from the positions of the newline and delimiter bytes; tags are encoded by
    their bytes (:mod:`crowdqa.ingest._bytes`) and token texts copied out of the bytes
    (:func:`_token_texts`), with no Python string per row.
    """
    try:
        data = read_padded(path)
    except OSError:
        return None
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")) or b"-DOCSTART-" in data:
        return None
    names = None
    at = 0  # where the rows start: after the header line, if any
    n_bytes = len(data) - MAX_FIELD_BYTES  # the file's (then the zero padding)
    first_end = data.find(b"\n", 0, n_bytes)
    first = data[: first_end if first_end >= 0 else n_bytes]
    if first.lstrip().lower().startswith(b"# annotators:"):
        if re.search(rb"[\x00-\x08\x0a-\x1f]", first):
            return None  # a byte splitlines() cuts at: the line loop reads another header
        try:
            names = first.decode("utf-8").split(":", 1)[1].split()
        except UnicodeDecodeError:
            return None
        if not names or len(set(names)) != len(names):
            return None
        at = n_bytes if first_end < 0 else first_end + 1
    if not data.isascii():  # (one C scan, no array of a bool per byte)
        try:
            if re.search(_WIDE_SPACE, data.decode("utf-8")):
                return None
        except UnicodeDecodeError:
            return None
    body, size = padded(data, at)
    # Lines: a blank line (nothing at all between two newlines) ends a sentence.
    starts, ends = line_bounds(body, size)
    token_line = ends > starts
    row_start, row_end = starts[token_line], ends[token_line]
    n_rows = row_start.size
    if n_rows == 0:
        return None
    delim = 9 if np.any(body[row_start[0]:row_end[0]] == 9) else 32
    if other_controls(body, size, below=33, allowed=(10, delim)):
        return None  # whitespace other than single delimiters and newlines, or a control byte
    n_fields = int(np.count_nonzero(body[row_start[0]:row_end[0]] == delim)) + 1
    if names is None:
        names = [f"{role}:{i}" for i in range(1, n_fields)]
    if n_fields != len(names) + 1 or n_fields < 2:
        return None
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
    seen = set(vocab) - {"O", _MISSING}
    bio = any(t[:2] in ("B-", "I-") for t in seen)
    class_names = class_names_for(sorted({entity_type(t) for t in seen}), "bio" if bio else "io")
    class_id = {c: i for i, c in enumerate(class_names)}
    if any(t not in class_id and t != _MISSING for t in vocab):
        return None  # a tag the schema does not have (e.g. "B-" alone)
    n_ann = len(names)
    label = np.array([class_id.get(t, -1) for t in vocab], dtype=np.int16)[codes].reshape(n_rows, n_ann)
    del codes
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])
    missing = np.add.reduceat(label < 0, doc_start[:-1], axis=0, dtype=np.int64)  # (n_docs, n_ann)
    if np.any((missing > 0) & (missing < doc_lengths[:, None])):
        return None  # "?" mixed with tags in a sentence: the line loop names the line
    present_doc = missing == 0
    # Annotators in order of first appearance (sentence by sentence, columns left to right), as the line loop.
    first_doc = np.where(present_doc.any(axis=0), present_doc.argmax(axis=0), n_docs)
    used = np.flatnonzero(first_doc < n_docs)
    order = used[np.lexsort((used, first_doc[used]))]
    label = label[:, order].ravel()
    cell = np.flatnonzero(label >= 0)  # (row, worker) cells present, sorted by (token, worker)
    labels = label[cell]
    row, worker = np.divmod(cell, order.size)
    del cell, label
    texts, start, lengths = _token_texts(body, row_start, bounds[:, 1], doc_lengths)
    worker_ids = [names[k] for k in order.tolist()]
    return Corpus(
        token=row.astype(np.int64), worker=worker.astype(np.int32), label=labels,
        doc_lengths=doc_lengths, token_start=start, token_end=start + lengths,
        doc_ids=tuple(map(str, range(1, n_docs + 1))), texts=texts,
        worker_ids=tuple(worker_ids), worker_roles=tuple(role for _ in worker_ids), class_names=class_names,
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


