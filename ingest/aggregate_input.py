"""Read an aggregate written by :mod:`crowdqa.ingest.writers` (or any tool) back onto a corpus' tokens.

The inverse of the writers. A report compares an aggregate with the corpus it came from, so the
aggregate must land on exactly the corpus' tokens. Spans are aligned by the rule every upload uses,
:func:`crowdqa.ingest.build.span_token_ranges`: a token is inside a span if their character ranges
overlap. Formats (:data:`crowdqa.ingest.formats.AGGREGATE_FORMATS`, the outputs of
:func:`crowdqa.ingest.writers.write_labels` and two more):

* ``spans-jsonl`` / ``spans-csv``: one span per row, ``doc_id, start, end, label``
  (an ``annotator`` column, if present, must name a single annotator); documents
  with no row are all ``O``. IO schemes label every covered token with the type;
  BIO schemes give ``B-`` to a span's first token and ``I-`` to the rest.
* ``conll``: the corpus' tokens in order, one ``token<TAB>tag`` per line (the tag
  is the last field), a blank line between documents, ``-DOCSTART- <doc_id>`` lines
  checked against the corpus' ids; BIO tags of an inside/outside corpus read as their type.
* ``ebm-nlp``: a folder of ``<doc_id>.AGGREGATED.ann``, one entity-type number per
  token line (0 = outside); under BIO a run of one type becomes one span (the format
  cannot tell adjacent spans of one type apart).
* ``categorical-csv``: ``item,label`` rows for one-token documents.
* ``corpus``: a corpus ``.npz`` with one annotator on the same documents.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus, run_indices
from crowdqa.ingest._bytes import unique_sorted
from crowdqa.ingest._common import jsonl_lines
from crowdqa.ingest.build import span_token_ranges
from crowdqa.ingest.formats import AGGREGATE_FORMATS, NO_SUCH_PATH
from crowdqa.ingest.writers import csv_unescape

__all__ = ["read_aggregate", "labels_from_spans", "labels_from_corpus"]


def labels_from_spans(
    corpus: Corpus, *, doc: NDArray, start: NDArray, end: NDArray, type_index: NDArray
) -> NDArray[np.int64]:
    """Token labels from character spans by the overlap rule, vectorised over spans.

    Parameters
    ----------
    corpus : Corpus
    doc, start, end : ndarray of shape (n_spans,)
        Document index and character offsets (end exclusive).
    type_index : ndarray of shape (n_spans,)
        Entity type index + 1 (as ``Corpus.class_entity``).

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        Class indices; spans that cover no token are ignored. A later span overwrites an
        earlier one on a shared token.
    """
    doc = np.asarray(doc, dtype=np.int64)
    first, last = span_token_ranges(texts=corpus.texts, doc_lengths=corpus.doc_lengths,
                                    token_start=corpus.token_start, token_end=corpus.token_end,
                                    span_doc=doc, span_start=start, span_end=end)
    ok = last > first
    first, last, t = first[ok], last[ok], np.asarray(type_index, dtype=np.int64)[ok]
    b_class, i_class = _type_classes(corpus)
    out = np.zeros(corpus.n_tokens, dtype=np.int64)
    lengths = last - first
    tok = run_indices(first, lengths)
    span_of = np.repeat(np.arange(first.shape[0]), lengths)
    is_first = tok == first[span_of]
    out[tok] = np.where(is_first, b_class[t[span_of]], i_class[t[span_of]])
    return out


def _type_classes(corpus: Corpus) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The class of a span's first token and of its other tokens, by entity type index (0 = outside)."""
    if corpus.scheme == "bio":
        names = corpus.class_names
        return (np.array([0] + [names.index(f"B-{x}") for x in corpus.entity_types], dtype=np.int64),
                np.array([0] + [names.index(f"I-{x}") for x in corpus.entity_types], dtype=np.int64))
    cls = np.zeros(len(corpus.entity_types) + 1, dtype=np.int64)
    cls[corpus.class_entity[1:]] = np.arange(1, corpus.n_classes)
    return cls, cls


def _span_rows(path: Path, fmt: str) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if fmt == "spans-jsonl":
        rows = []
        for n, line in enumerate(jsonl_lines(text), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line) | {"_line": n})
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: not JSON: {exc.msg}") from None
        return rows
    reader = csv.DictReader(io.StringIO(text, newline=""))
    return [dict(r) | {"_line": n} for n, r in enumerate(reader, 2)]


def _read_spans(path: Path, corpus: Corpus, fmt: str, remarks: list[str] | None = None) -> NDArray[np.int64]:
    rows = _span_rows(path, fmt)
    doc_index = {d: i for i, d in enumerate(corpus.doc_ids)}
    types = {t: i + 1 for i, t in enumerate(corpus.entity_types)}
    annotators = {str(r["annotator"]) for r in rows if r.get("annotator") not in (None, "")}
    if len(annotators) > 1:
        raise ValueError(f"{path}: an aggregate has one annotator, found {len(annotators)}: {sorted(annotators)[:3]}")
    doc, start, end, typ, lines = [], [], [], [], []
    for r in rows:
        where = f"{path}:{r['_line']}"
        if r.get("start") in (None, "") and r.get("end") in (None, ""):
            continue
        d = str(r.get("doc_id"))
        if d not in doc_index:
            raise ValueError(f"{where}: document {d!r} is not in the corpus")
        lab = str(r.get("label"))
        if lab not in types:
            raise ValueError(f"{where}: label {lab!r} is not an entity type of the corpus {list(types)}")
        try:
            s, e = int(r["start"]), int(r["end"])
        except (TypeError, ValueError):
            raise ValueError(
                f"{where}: start and end must be integers, found {r.get('start')!r}, {r.get('end')!r}"
            ) from None
        if s >= e:
            raise ValueError(f"{where}: span [{s}, {e}) is empty: its end must be after its start")
        text = corpus.texts[doc_index[d]]
        if not 0 <= s < e <= len(text):
            raise ValueError(f"{where}: span [{s}, {e}) is not inside document {d!r}")
        quoted = r.get("text")
        if isinstance(quoted, str) and quoted.strip() and quoted.strip() not in (text[s:e].strip(), text.strip()):
            # The writers quote each span's text (an upload's rows quote the document's; another tool may trim
            # it): other words mean the aggregate is of another version of the document, and its offsets would
            # land on other words.
            raise ValueError(f"{where}: the span's text {_clip(quoted)} is not document {d!r}'s text at [{s}, {e}) "
                             f"({_clip(text[s:e])}): the aggregate was made on another text of the document")
        doc.append(doc_index[d])
        lines.append(r["_line"])
        start.append(s)
        end.append(e)
        typ.append(types[lab])
    doc_a, start_a, end_a = (np.array(x, dtype=np.int64) for x in (doc, start, end))
    if remarks is not None:
        first, last = span_token_ranges(texts=corpus.texts, doc_lengths=corpus.doc_lengths,
                                        token_start=corpus.token_start, token_end=corpus.token_end,
                                        span_doc=doc_a, span_start=start_a, span_end=end_a)
        if np.any(blank := first >= last):
            remarks.append(f"{int(blank.sum())} span(s) cover only whitespace (no token) and are left out; the "
                           f"first: {path}:{lines[int(np.flatnonzero(blank)[0])]}")
    return labels_from_spans(corpus, doc=doc_a, start=start_a, end=end_a, type_index=np.array(typ, dtype=np.int64))


def _clip(text: str, n: int = 40) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def _read_conll(path: Path, corpus: Corpus) -> NDArray[np.int64]:
    blocks: list[list[tuple[str, str]]] = [[]]
    ids: list[str | None] = [None]
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if blocks[-1]:
                blocks.append([])
                ids.append(None)
            if fields:  # `-DOCSTART- <doc_id>` names the document that follows
                ids[-1] = fields[1] if len(fields) > 1 and fields[1] != "-X-" else None
            continue
        if len(fields) < 2:
            raise ValueError(f"{path}:{n}: expected a token and a tag, found {line!r}")
        blocks[-1].append((fields[0], fields[-1]))
    kept = [(b, i) for b, i in zip(blocks, ids, strict=True) if b]
    blocks, ids = [b for b, _ in kept], [i for _, i in kept]
    if len(blocks) != corpus.n_docs:
        raise ValueError(f"{path}: the corpus has {corpus.n_docs} documents, found {len(blocks)}")
    named = [(k, i) for k, i in enumerate(ids) if i is not None and i != corpus.doc_ids[k]]
    if named:
        k, i = named[0]
        raise ValueError(f"{path}: document {k + 1} is {i!r}, the corpus has {corpus.doc_ids[k]!r} there")
    tags = [t for b in blocks for _, t in b]
    if len(tags) != corpus.n_tokens or [len(b) for b in blocks] != corpus.doc_lengths.tolist():
        bad = next(i for i, b in enumerate(blocks) if len(b) != int(corpus.doc_lengths[i]))
        raise ValueError(f"{path}: document {bad + 1} has {len(blocks[bad])} tokens, "
                         f"the corpus has {int(corpus.doc_lengths[bad])}")
    names = {c: i for i, c in enumerate(corpus.class_names)}
    if corpus.scheme != "bio":  # BIO tags written for an inside/outside corpus: the type is the class
        names.update({f"{p}{c}": i for c, i in list(names.items()) if i > 0 for p in ("B-", "I-")})
    unknown = sorted(set(tags) - set(names))
    if unknown:
        raise ValueError(f"{path}: tag {unknown[0]!r} is not a class of the corpus {list(corpus.class_names)}")
    return np.array([names[t] for t in tags], dtype=np.int64)


def _read_ebm_nlp(path: Path, corpus: Corpus) -> NDArray[np.int64]:
    if not path.is_dir():
        raise ValueError(f"{path}: ebm-nlp aggregates are a folder of <doc_id>.AGGREGATED.ann files")
    etype = np.zeros(corpus.n_tokens, dtype=np.int64)
    n_types = len(corpus.entity_types)
    for f in sorted(path.glob("*.AGGREGATED.ann")):
        d = f.name[: -len(".AGGREGATED.ann")]
        if d not in corpus.doc_ids:
            raise ValueError(f"{f}: document {d!r} is not in the corpus")
        i = corpus.doc_ids.index(d)
        vals = np.array([int(v) for v in f.read_text().split()], dtype=np.int64)
        if vals.shape[0] != corpus.doc_lengths[i] or (vals.size and (vals.min() < 0 or vals.max() > n_types)):
            raise ValueError(f"{f}: expected {int(corpus.doc_lengths[i])} values in [0, {n_types}]")
        etype[corpus.doc_start[i]:corpus.doc_start[i + 1]] = vals
    b_class, i_class = _type_classes(corpus)
    if corpus.scheme == "io":
        return b_class[etype]
    # BIO: a run of one type starts with B- (at a type change or a document start).
    starts = np.ones(corpus.n_tokens, dtype=bool)
    starts[1:] = etype[1:] != etype[:-1]
    starts[corpus.doc_start[:-1][corpus.doc_lengths > 0]] = True
    return np.where(starts, b_class[etype], i_class[etype])


def _read_categorical(path: Path, corpus: Corpus) -> NDArray[np.int64]:
    rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    if not rows or [h.strip() for h in rows[0][:2]] != ["item", "label"]:
        raise ValueError(f"{path}: expected a header row 'item,label'")
    names = {c: i for i, c in enumerate(corpus.class_names)}
    out = np.full(corpus.n_tokens, MISSING, dtype=np.int64)
    index = {d: i for i, d in enumerate(corpus.doc_ids)}
    for n, r in enumerate(rows[1:], 2):
        if not r:
            continue
        # Cells were escaped against CSV injection by crowdqa.ingest.writers; read them back as written.
        r = [csv_unescape(cell) for cell in r]
        if r[0] not in index or r[1] not in names:
            raise ValueError(f"{path}:{n}: unknown item {r[0]!r} or label {r[1]!r}")
        out[corpus.doc_start[index[r[0]]]] = names[r[1]]
    return out


def labels_from_corpus(other: Corpus, corpus: Corpus, *, annotator: str | None = None) -> NDArray[np.int64]:
    """One annotator's labels in ``other`` (an aggregate read as an upload) moved onto ``corpus``.

    Documents are matched by id and must have the same number of tokens; classes are
    matched by name. Documents of ``corpus`` the annotator did not label are ``MISSING``.

    Parameters
    ----------
    other : Corpus
        The aggregate as a corpus.
    corpus : Corpus
    annotator : str, optional
        Worker id in ``other``; required when it has several annotators.

    Returns
    -------
    ndarray of shape (n_tokens,), int64
    """
    if annotator is None:
        present = unique_sorted(other.worker)
        if present.shape[0] != 1:
            names = [other.worker_ids[i] for i in present[:5]]
            raise ValueError(f"the aggregate has {present.shape[0]} annotators {names}; name the one to score")
        w = int(present[0])
    elif annotator in other.worker_ids:
        w = other.worker_ids.index(annotator)
    else:
        raise ValueError(f"annotator {annotator!r} is not in the aggregate; found {list(other.worker_ids)[:5]}")
    index = {d: i for i, d in enumerate(corpus.doc_ids)}
    missing = [d for d in other.doc_ids if d not in index]
    if missing:
        raise ValueError(f"document {missing[0]!r} of the aggregate is not in the corpus")
    dst = np.array([index[d] for d in other.doc_ids], dtype=np.int64)
    if not np.array_equal(other.doc_lengths, corpus.doc_lengths[dst]):
        bad = int(np.flatnonzero(other.doc_lengths != corpus.doc_lengths[dst])[0])
        raise ValueError(f"document {other.doc_ids[bad]!r} has {int(other.doc_lengths[bad])} tokens in the "
                         f"aggregate and {int(corpus.doc_lengths[dst[bad]])} in the corpus")
    if other.texts and corpus.texts:  # one comparison per document (with its length, checked above)
        differs = [k for k, (a, b) in enumerate(zip(other.texts, (corpus.texts[i] for i in dst), strict=True))
                   if a and b and a != b]
        if differs:
            raise ValueError(f"document {other.doc_ids[differs[0]]!r} has another text in the aggregate than in the "
                             "corpus: the aggregate was made on another version of the documents")
    remap = np.array([corpus.class_names.index(n) if n in corpus.class_names else -2 for n in other.class_names])
    m = other.worker == w
    tok, lab = other.token[m], other.label[m].astype(np.int64)
    if lab.size and np.any(remap[unique_sorted(lab)] < 0):
        raise ValueError(f"the aggregate's classes {list(other.class_names)} are not the corpus' classes")
    d = other.token_doc[tok]
    target = corpus.doc_start[dst[d]] + (tok - other.doc_start[d])
    out = np.full(corpus.n_tokens, MISSING, dtype=np.int64)
    out[target] = remap[lab]
    return out


def _read_corpus_npz(path: Path, corpus: Corpus) -> NDArray[np.int64]:
    return labels_from_corpus(Corpus.load(path), corpus)


def read_aggregate(path: str | os.PathLike, corpus: Corpus, *, format: str,  # noqa: A002
                   remarks: list[str] | None = None) -> NDArray[np.int64]:
    """Read an aggregate onto the corpus' tokens.

    Parameters
    ----------
    path : str or PathLike
    corpus : Corpus
        The corpus the aggregate was computed from (same documents and tokens).
    format : str
        One of :data:`AGGREGATE_FORMATS`.
    remarks : list of str, optional
        Gets a warning counting the spans that cover only whitespace (no token), which are left out.

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        Class indices (``MISSING`` where the aggregate says nothing: categorical items absent).

    Raises
    ------
    ValueError
        Unknown format, or a file that does not fit the corpus (naming file and line).
    FileNotFoundError
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, NO_SUCH_PATH, str(path))
    if format in ("spans-jsonl", "spans-csv"):
        return _read_spans(path, corpus, format, remarks)
    if format == "conll":
        return _read_conll(path, corpus)
    if format == "ebm-nlp":
        return _read_ebm_nlp(path, corpus)
    if format == "categorical-csv":
        return _read_categorical(path, corpus)
    if format == "corpus":
        return _read_corpus_npz(path, corpus)
    raise ValueError(f"aggregate format must be one of {AGGREGATE_FORMATS}, found {format!r}")
