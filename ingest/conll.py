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
from pathlib import Path

import numpy as np

from crowdqa.aggregation.corpus import Corpus, entity_type
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


def _read_columnar(path: Path, *, role: str) -> Corpus | None:
    """The whole file read by Arrow's CSV reader (:mod:`crowdqa.ingest._columnar`), or None for the line loop.

    Applies to files whose fields are separated by single tabs (or single spaces) throughout, with
    no ``-DOCSTART-`` line and no line of only spaces; gives up on anything the line loop would
    report (a row of another width, a column mixing ``?`` and tags in a sentence, fields with
    spaces at their ends), so messages naming the line, and ``on_error="skip"``, come from the
    line loop. The corpus is the line loop's: documents ``"1"``, ``"2"``, ... in file order,
    annotators numbered in order of first appearance, tags mapped to the same schema.
    """
    import pyarrow as pa

    from crowdqa.ingest._columnar import clean_strings, factorize, int_values, read_csv_columns

    try:
        data = path.read_bytes()
    except OSError:
        return None
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")) or b"-DOCSTART-" in data or b"\r" in data:
        return None
    names = None
    skip = 0
    first_end = data.find(b"\n")
    first = data[: first_end if first_end >= 0 else len(data)]
    if first.lstrip().lower().startswith(b"# annotators:"):
        try:
            names = first.decode("utf-8").split(":", 1)[1].split()
        except UnicodeDecodeError:
            return None
        if not names or len(set(names)) != len(names):
            return None
        skip = 1
    body = np.frombuffer(data, dtype=np.uint8)
    # Lines: a blank line (nothing at all between two newlines) ends a sentence; a line of spaces is left to
    # the line loop.
    nl = np.flatnonzero(body == 10)
    ends = np.append(nl, body.size) if body.size and body[-1] != 10 else nl
    starts = np.concatenate([[0], ends[:-1] + 1])
    starts, ends = starts[skip:], ends[skip:]
    width = ends - starts
    token_line = width > 0
    n_rows = int(np.count_nonzero(token_line))
    if n_rows == 0:
        return None
    row_start = starts[token_line]
    first_byte = body[row_start]
    if np.any((first_byte == 32) | (first_byte == 9)) or np.any(body[ends[token_line] - 1] == 32):
        return None  # a line starting or ending with a space: the line loop splits it
    delimiter = "\t" if body[row_start[0]: ends[token_line][0]].tobytes().find(b"\t") >= 0 else " "
    n_fields = body[row_start[0]: ends[token_line][0]].tobytes().count(delimiter.encode()) + 1
    if names is None:
        names = [f"{role}:{i}" for i in range(1, n_fields)]
    if n_fields != len(names) + 1 or n_fields < 2:
        return None
    table = read_csv_columns(_Skip(data, skip), delimiter=delimiter, n_columns=n_fields, columns=range(n_fields),
                             header=False)
    if table is None or len(table[0]) != n_rows:
        return None
    # Sentence of every token row: blank lines between rows start a new sentence.
    sentence = np.cumsum(~token_line)[token_line]
    _, sentence = np.unique(sentence, return_inverse=True)
    n_docs = int(sentence[-1]) + 1
    doc_lengths = np.bincount(sentence, minlength=n_docs).astype(np.int64)
    tokens, token_names = factorize(table[0])
    if not clean_strings(token_names, inner_space=False):
        return None
    # Tags: one factorisation per column; "?" marks an absent annotator.
    codes, vocab = [], []
    for k in range(1, n_fields):
        c, v = factorize(table[k])
        if not clean_strings(v, inner_space=False):
            return None
        codes.append(c)
        vocab.append(v.to_pylist())
    seen = {t for v in vocab for t in v} - {"O", _MISSING}
    bio = any(t[:2] in ("B-", "I-") for t in seen)
    class_names = class_names_for(sorted({entity_type(t) for t in seen}), "bio" if bio else "io")
    class_id = {c: i for i, c in enumerate(class_names)}
    label = np.empty((n_rows, len(names)), dtype=np.int16)
    present_doc = np.zeros((n_docs, len(names)), dtype=bool)
    for k, (c, v) in enumerate(zip(codes, vocab, strict=True)):
        if any(t not in class_id and t != _MISSING for t in v):
            return None  # a tag the schema does not have (e.g. "B-" alone)
        lut = np.array([class_id.get(t, -1) for t in v], dtype=np.int16)
        lab = lut[c]
        missing = lab < 0
        miss_in_doc = np.bincount(sentence, weights=missing, minlength=n_docs)
        if np.any((miss_in_doc > 0) & (miss_in_doc < doc_lengths)):
            return None  # "?" mixed with tags in a sentence: the line loop names the line
        present_doc[:, k] = miss_in_doc == 0
        label[:, k] = lab
    # Annotators in order of first appearance (sentence by sentence, columns left to right), as the line loop.
    first_doc = np.where(present_doc.any(axis=0), present_doc.argmax(axis=0), n_docs)
    used = np.flatnonzero(first_doc < n_docs)
    order = used[np.lexsort((used, first_doc[used]))]
    present = present_doc[:, order][sentence]  # (n_rows, n_workers) in worker order
    row, worker = np.nonzero(present)  # sorted by (token, worker)
    labels = label[:, order][row, worker]
    token_text = np.asarray(token_names.to_pylist(), dtype=object)[tokens]
    lengths = int_values(pa.compute.utf8_length(token_names))[tokens]
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])
    token_doc = np.repeat(np.arange(n_docs), doc_lengths)
    # Texts: tokens joined by single spaces (crowdqa.ingest.tokenize.offsets_from_tokens, for every document at once).
    gap = lengths + 1
    start = np.cumsum(gap) - gap
    start -= start[doc_start[:-1]][token_doc]
    texts = [" ".join(token_text[a:b]) for a, b in zip(doc_start[:-1].tolist(), doc_start[1:].tolist(), strict=True)]
    worker_ids = [names[k] for k in order.tolist()]
    return Corpus(
        token=row.astype(np.int64), worker=worker.astype(np.int32), label=labels.astype(np.int16),
        doc_lengths=doc_lengths, token_start=start, token_end=start + lengths,
        doc_ids=tuple(str(d) for d in range(1, n_docs + 1)), texts=tuple(texts),
        worker_ids=tuple(worker_ids), worker_roles=tuple(role for _ in worker_ids), class_names=class_names,
    )


class _Skip:
    """The bytes after the first ``lines`` lines, as a file object Arrow can read."""

    def __new__(cls, data: bytes, lines: int):
        import io

        at = 0
        for _ in range(lines):
            at = data.find(b"\n", at) + 1
        return io.BytesIO(memoryview(data)[at:])
