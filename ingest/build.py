"""Build a :class:`~crowdqa.aggregation.corpus.Corpus` from parsed spans or parsed token labels.

Every parser in ``ingest/`` reduces its format to one of two shapes and calls one of
the two builders here, so the alignment rule and the label schema are the same for all:

* :func:`corpus_from_spans` -- documents with texts, the (document, annotator)
  assignments, and character spans. Tokens come from :func:`crowdqa.ingest.tokenize.tokenize_many`
  (the rule of :func:`crowdqa.ingest.tokenize.tokenize`, vectorised over all documents).
* :func:`corpus_from_token_labels` -- documents as token lists and, per assignment,
  one tag per token (CoNLL, EBM-NLP).

**Alignment rule.** A token is inside a span if their character ranges overlap:
``token_start < span_end and span_start < token_end`` (ends exclusive). It is applied
the same way to crowd, expert and aggregate spans.

**Label schema.** ``scheme="io"`` gives classes ``O, <type1>, <type2>, ...``;
``scheme="bio"`` gives ``O, B-<type1>, I-<type1>, ...``; ``"auto"`` picks IO for one
entity type and BIO for several. Types are sorted by name unless ``types`` fixes the
order, so a permuted upload yields the same schema. Overlapping spans of the *same*
type from one annotator merge into one entity; spans of *different* types that share
a token are an error (an annotator gives a token one label).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import ROLES, Corpus, entity_type
from crowdqa.ingest.errors import IngestError, ProblemLog
from crowdqa.ingest.formats import choice_message
from crowdqa.ingest.limits import DocumentLimits
from crowdqa.ingest.tokenize import offsets_from_tokens, tokenize_many

__all__ = ["Span", "UnusualSpans", "corpus_from_spans", "corpus_from_span_columns", "corpus_from_span_arrays",
           "corpus_from_token_labels",
           "class_names_for", "span_token_ranges", "corpus_order"]


@dataclass(frozen=True)
class Span:
    """One annotated character span, with where it came from (for error messages)."""

    doc_id: str
    annotator: str
    start: int
    end: int
    label: str
    source: str = ""
    line: int | None = None


def class_names_for(types: Sequence[str], scheme: str) -> tuple[str, ...]:
    """Class names for entity ``types`` under ``scheme`` (``"io"`` or ``"bio"``)."""
    if scheme == "io":
        return ("O", *types)
    if scheme == "bio":
        return ("O", *[f"{p}-{t}" for t in types for p in ("B", "I")])
    raise IngestError(choice_message("scheme", scheme))


def _resolve_scheme(scheme: str, n_types: int) -> str:
    if scheme == "tags":
        raise IngestError("scheme 'tags' (one tag per token, no spans) is read from token formats: conll, "
                          "tokens-csv, tokens-jsonl; a format of character spans is read under io or bio")
    if scheme == "auto":
        return "io" if n_types <= 1 else "bio"
    if scheme not in ("io", "bio"):
        raise IngestError(choice_message("scheme", scheme))
    return scheme


def _check_roles(annotators: Sequence[str], roles: dict[str, str]) -> tuple[str, ...]:
    out = []
    for a in annotators:
        r = roles.get(a)
        if r not in ROLES:
            raise IngestError(f"annotator {a!r} needs a role 'crowd' or 'expert', found {r!r}")
        out.append(r)
    return tuple(out)


def corpus_from_spans(*, documents: dict[str, str], assignments: Sequence[tuple[str, str]], spans: Sequence[Span],
                      roles: dict[str, str], scheme: str = "auto", types: Sequence[str] | None = None,
                      problems: ProblemLog | None = None) -> Corpus:
    """Tokenize documents and turn character spans into token labels.

    Parameters
    ----------
    documents : dict of str to str
        ``doc_id -> text``, in the order the corpus should keep.
    assignments : sequence of (doc_id, annotator)
        Who labelled which document, including annotators who marked no span there
        (their tokens are all ``O``). Spans imply their assignment.
    spans : sequence of Span
    roles : dict of str to str
        ``annotator -> "crowd" | "expert"``.
    scheme : {"auto", "io", "bio"}
    types : sequence of str, optional
        Fixed entity types (and their order); spans of other types are errors.
    problems : ProblemLog, optional
        Where bad spans go; default fails on the first.

    Returns
    -------
    Corpus
    """
    problems = problems or ProblemLog("fail")
    doc_index = {d: i for i, d in enumerate(documents)}
    texts = list(documents.values())
    columns = _span_columns(spans, doc_index, texts, types)
    if columns is None:  # a span fails a check: the span-by-span loop reports it (raised or skipped)
        spans = [s for s in spans if _span_ok(s, doc_index, texts, types, problems)]
        columns = _span_columns(spans, doc_index, texts, types)
    return _columns_corpus(documents, doc_index, texts, assignments, columns, roles=roles, scheme=scheme,
                           types=types, spans=spans, problems=problems)


def corpus_from_span_columns(*, documents: dict[str, str], assignments: Sequence[tuple[str, str]],
                             span_doc: list[str], span_annotator: list[str], span_start: list[int],
                             span_end: list[int], span_label: list[str], roles: dict[str, str], scheme: str = "auto",
                             limits: DocumentLimits | None = None) -> Corpus:
    """:func:`corpus_from_spans` of spans given as columns (a reader's fast path, with no :class:`Span` per span).

    Raises :class:`UnusualSpans` where :func:`corpus_from_spans` would report a span (unknown document,
    offsets outside the text, a blank or ``"O"`` label, a span over whitespace only, two types on one
    token): the reader's own loop, which keeps each span's file and line, reads the input then.
    """
    doc_index = {d: i for i, d in enumerate(documents)}
    texts = list(documents.values())
    columns = _checked_columns(span_doc, span_annotator, span_start, span_end, span_label, doc_index, texts, None)
    if columns is None or not all(d in doc_index for d, _ in assignments):
        raise UnusualSpans("a span or an assignment fails a check")
    return _columns_corpus(documents, doc_index, texts, assignments, columns, roles=roles, scheme=scheme, types=None,
                           spans=None, problems=ProblemLog("fail", limits=limits or DocumentLimits()))


def _columns_corpus(documents: dict[str, str], doc_index: dict[str, int], texts: list[str],
                    assignments: Sequence[tuple[str, str]], columns: tuple, *, roles: dict[str, str], scheme: str,
                    types: Sequence[str] | None, spans: Sequence[Span] | None, problems: ProblemLog) -> Corpus:
    """The corpus of checked span columns (:func:`_checked_columns`): assignments, types, then the arrays."""
    span_doc, span_annotator, span_start, span_end, span_label = columns
    type_list = list(types) if types is not None else sorted(set(span_label))
    type_id = {t: i + 1 for i, t in enumerate(type_list)}
    if not all(d in doc_index for d, _ in assignments):  # reported, then left out (they name no annotator)
        for d, _ in assignments:
            if d not in doc_index:
                problems.report(f"assignment on unknown document {d!r}")
        assignments = [(d, a) for d, a in assignments if d in doc_index]
    annotators, pair_doc, pair_worker, span_pair = _pairs(doc_index, assignments, span_doc, span_annotator)
    worker_ids = tuple(annotators)
    worker_roles = _check_roles(worker_ids, roles)
    return corpus_from_span_arrays(
        doc_ids=tuple(documents), texts=tuple(texts), worker_ids=worker_ids, worker_roles=worker_roles,
        pair_doc=pair_doc, pair_worker=pair_worker, span_pair=span_pair, span_start=span_start, span_end=span_end,
        span_type=np.fromiter(map(type_id.__getitem__, span_label), np.int64, len(span_label)),
        types=type_list, scheme=scheme, spans=spans, problems=problems,
    )


def span_token_ranges(*, texts: Sequence[str], doc_lengths: NDArray[np.int64], token_start: NDArray[np.int64],
                      token_end: NDArray[np.int64], span_doc: NDArray[np.int64], span_start: NDArray[np.int64],
                      span_end: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The tokens each character span covers, by the one alignment rule of every upload and aggregate.

    A token is inside a span if their character ranges overlap (ends exclusive): token ``[a, b)`` and
    span ``[s, e)`` overlap iff ``a < e`` and ``s < b``. Crowd, expert and aggregate spans are all aligned
    by this function, vectorised over every span of every document: the documents are laid on one
    character axis (each text followed by one separator), where the tokens' ends are sorted, so one
    ``searchsorted`` finds every span's first and last token.

    Parameters
    ----------
    texts : sequence of str
        The documents' texts, of shape (n_docs,).
    doc_lengths : ndarray of shape (n_docs,)
        Tokens per document.
    token_start, token_end : ndarray of shape (n_tokens,)
        Token character offsets within their document (end exclusive), documents concatenated.
    span_doc, span_start, span_end : ndarray of shape (n_spans,)
        Each span's document index and character offsets within it (end exclusive).

    Returns
    -------
    first, last : ndarray of shape (n_spans,)
        The span covers the tokens ``first <= t < last`` (none when ``first >= last``: a span over
        whitespace alone).
    """
    doc_lengths = np.asarray(doc_lengths, dtype=np.int64)
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])
    text_base = np.concatenate([[0], np.cumsum(np.fromiter((len(t) + 1 for t in texts), np.int64, len(texts)))])
    token_base = np.repeat(text_base[:-1], doc_lengths)
    span_doc = np.asarray(span_doc, dtype=np.int64)
    span_base = text_base[span_doc]
    first = np.searchsorted(token_end + token_base, np.asarray(span_start, dtype=np.int64) + span_base, side="right")
    last = np.searchsorted(token_start + token_base, np.asarray(span_end, dtype=np.int64) + span_base, side="left")
    return np.maximum(first, doc_start[span_doc]), np.minimum(last, doc_start[span_doc + 1])


def _span_ok(s: Span, doc_index: dict[str, int], texts: list[str], types: Sequence[str] | None,
             problems: ProblemLog) -> bool:
    """The cheap scalar checks of one span (alignment is vectorised later); a bad span is reported."""
    msg = None
    if s.doc_id not in doc_index:
        msg = f"span on unknown document {s.doc_id!r}"
    elif not (isinstance(s.start, int) and isinstance(s.end, int)):
        msg = f"span offsets must be integers, found {s.start!r}, {s.end!r}"
    elif s.start >= s.end:
        msg = f"span [{s.start}, {s.end}) is empty: its end must be after its start"
    elif s.start < 0 or s.end > len(texts[doc_index[s.doc_id]]):
        n = len(texts[doc_index[s.doc_id]])
        msg = f"span [{s.start}, {s.end}) is not inside document {s.doc_id!r} of length {n}"
    elif types is not None and s.label not in types:
        msg = f"unknown label {s.label!r}; expected one of {list(types)}"
    elif not s.label or s.label == "O":
        msg = f"span label must be a non-empty entity type other than 'O', found {s.label!r}"
    if msg:
        problems.report(msg, source=s.source, line=s.line)
    return msg is None


def _span_columns(spans: Sequence[Span], doc_index: dict[str, int], texts: list[str], types: Sequence[str] | None
                  ) -> tuple[list[str], list[str], NDArray[np.int64], NDArray[np.int64], list[str]] | None:
    """The spans as columns (document, annotator, start, end, label), or None if one fails a check of
    :func:`_span_ok` (:func:`_checked_columns`; the columns by C-level maps over the spans)."""
    return _checked_columns(list(map(attrgetter("doc_id"), spans)), list(map(attrgetter("annotator"), spans)),
                            list(map(attrgetter("start"), spans)), list(map(attrgetter("end"), spans)),
                            list(map(attrgetter("label"), spans)), doc_index, texts, types)


def _checked_columns(span_doc: list[str], span_annotator: list[str], starts: list, ends: list, span_label: list[str],
                     doc_index: dict[str, int], texts: list[str], types: Sequence[str] | None
                     ) -> tuple[list[str], list[str], NDArray[np.int64], NDArray[np.int64], list[str]] | None:
    """The span columns with the offsets as arrays, or None if a span fails a check of :func:`_span_ok` (all
    checked at once: maps over the columns and array comparisons)."""
    n = len(span_doc)
    if not (all(map(isinstance, starts, repeat(int, n))) and all(map(isinstance, ends, repeat(int, n)))):
        return None
    if not all(t and t != "O" and (types is None or t in types) for t in set(span_label)):
        return None
    doc = np.fromiter(map(doc_index.get, span_doc, repeat(-1, n)), np.int64, n)
    try:
        start, end = np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)
    except OverflowError:  # an offset past 64 bits: outside every document
        return None
    text_len = np.fromiter(map(len, texts), np.int64, len(texts))
    if n and (doc.min() < 0 or start.min() < 0 or np.any(start >= end) or np.any(end > text_len[doc])):
        return None
    return span_doc, span_annotator, start, end, span_label


def _pairs(doc_index: dict[str, int], assignments: Sequence[tuple[str, str]], span_doc: list[str],
           span_annotator: list[str]) -> tuple[dict[str, int], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Annotator -> index, the unique (document index, annotator index) pairs in first-seen order over the
    assignments then the spans, and each span's pair (all documents known), at once."""
    annotators = {a: k for k, a in enumerate(dict.fromkeys(chain((a for _, a in assignments), span_annotator)))}
    n_a, n_w = len(assignments), max(len(annotators), 1)
    doc = np.fromiter(chain((doc_index[d] for d, _ in assignments), map(doc_index.__getitem__, span_doc)),
                      np.int64, n_a + len(span_doc))
    worker = np.fromiter(chain((annotators[a] for _, a in assignments), map(annotators.__getitem__, span_annotator)),
                         np.int64, n_a + len(span_doc))
    uniq, first, inverse = np.unique(doc * n_w + worker, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return annotators, uniq[order] // n_w, uniq[order] % n_w, rank[inverse.ravel()][n_a:]


class UnusualSpans(Exception):
    """Raised by :func:`corpus_from_span_arrays` without ``spans``, where it would report a span: a reader's
    fast path catches it and lets its row loop, which keeps every span's file and line, read the file."""


def corpus_from_span_arrays(
    *,
    doc_ids: tuple[str, ...],
    texts: tuple[str, ...],
    worker_ids: tuple[str, ...],
    worker_roles: tuple[str, ...],
    pair_doc: NDArray[np.int64],
    pair_worker: NDArray[np.int64],
    span_pair: NDArray[np.int64],
    span_start: NDArray[np.int64],
    span_end: NDArray[np.int64],
    span_type: NDArray[np.int64],
    types: Sequence[str],
    scheme: str = "auto",
    spans: Sequence[Span] | None = None,
    problems: ProblemLog | None = None,
) -> Corpus:
    """The array core of :func:`corpus_from_spans`: checked spans as arrays, tokenized and aligned at once.

    Parameters
    ----------
    doc_ids, texts : tuple of str
        The documents, in corpus order.
    worker_ids, worker_roles : tuple of str
        The annotators, in corpus order, and their roles.
    pair_doc, pair_worker : ndarray of shape (n_pairs,)
        The (document, annotator) assignments, in first-seen order.
    span_pair, span_start, span_end, span_type : ndarray of shape (n_spans,)
        Each span's assignment, character offsets (end exclusive, inside its text, start < end)
        and type (1-based index into ``types``).
    types : sequence of str
        The entity types.
    scheme : {"auto", "io", "bio"}
    spans : sequence of Span, optional
        The same spans as objects, for the messages of spans that cover no token or give a
        token two labels; without them such a span raises :class:`UnusualSpans`.
    problems : ProblemLog, optional

    Returns
    -------
    Corpus
    """
    problems = problems or ProblemLog("fail")
    type_list = list(types)
    scheme = _resolve_scheme(scheme, len(type_list))
    class_names = class_names_for(type_list, scheme)
    pair_doc, pair_worker = np.asarray(pair_doc, dtype=np.int64), np.asarray(pair_worker, dtype=np.int64)
    sp_pair, sp_type = np.asarray(span_pair, dtype=np.int64), np.asarray(span_type, dtype=np.int64)

    doc_lengths, token_start, token_end = tokenize_many(texts)
    problems.limits.check_lengths(doc_lengths, doc_ids)
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])
    n_pairs = pair_doc.size

    # One observation row per (assignment, token of its document).
    pair_len = doc_lengths[pair_doc]
    obs_base = np.concatenate([[0], np.cumsum(pair_len)])
    n_obs = int(obs_base[-1])
    # int32 row -> assignment index halves the largest temporaries (n_obs can be ~10M).
    obs_pair = np.repeat(np.arange(n_pairs, dtype=np.int32 if n_pairs < 2**31 else np.int64), pair_len)

    # Spans -> token ranges [first, last) by the overlap rule, then -> observation rows.
    sp_doc = pair_doc[sp_pair]
    first, last = span_token_ranges(texts=texts, doc_lengths=doc_lengths, token_start=token_start,
                                    token_end=token_end, span_doc=sp_doc, span_start=span_start, span_end=span_end)
    empty = first >= last
    if spans is None and empty.any():
        raise UnusualSpans("a span covers no token")
    if empty.any():  # spans over whitespace alone: nothing to label, so a warning with a count, not an error
        s = spans[int(np.flatnonzero(empty)[0])]
        where = s.source + (f":{s.line}" if s.line is not None else "")
        problems.note(f"{int(empty.sum())} span(s) cover only whitespace (no token) and are left out; the first: "
                      f"{where + ': ' if where else ''}span [{s.start}, {s.end}) of document {s.doc_id!r}")
    live = np.flatnonzero(~empty)
    live = _drop_conflicts(live, sp_pair, first, last, sp_type, spans, problems)

    o_first = obs_base[sp_pair[live]] + (first[live] - doc_start[sp_doc[live]])
    o_last = obs_base[sp_pair[live]] + (last[live] - doc_start[sp_doc[live]])
    cover = _range_sum(o_first, o_last, None, n_obs)
    inside = cover > 0
    if len(type_list) == 1:
        obs_type = inside.astype(np.int16)
    else:
        type_sum = _range_sum(o_first, o_last, sp_type[live].astype(np.float64), n_obs)
        obs_type = np.zeros(n_obs, dtype=np.int16)
        obs_type[inside] = np.rint(type_sum[inside] / cover[inside]).astype(np.int16)
        del type_sum
    if scheme == "io":
        label = obs_type
    else:
        # B on a span's first token unless an earlier span of the same type already covers it.
        starts_here = np.bincount(o_first, minlength=n_obs)
        begin = (starts_here > 0) & (cover - starts_here == 0)
        label = np.where(inside, 2 * obs_type - 1 + (~begin), 0).astype(np.int16)
    del cover, inside, obs_type

    token, worker, label = corpus_order(label, pair_doc=pair_doc, pair_worker=pair_worker, doc_lengths=doc_lengths,
                                        obs_base=obs_base, obs_pair=obs_pair)
    return Corpus(token=token, worker=worker, label=label, doc_lengths=doc_lengths, token_start=token_start,
                  token_end=token_end, doc_ids=tuple(doc_ids), texts=tuple(texts), worker_ids=worker_ids,
                  worker_roles=worker_roles, class_names=class_names)


def corpus_order(label: NDArray[np.int16], *, pair_doc: NDArray[np.int64], pair_worker: NDArray[np.int64],
                 doc_lengths: NDArray[np.int64], obs_base: NDArray[np.int64], obs_pair: NDArray
                 ) -> tuple[NDArray[np.int64], NDArray[np.int32], NDArray[np.int16]]:
    """The (assignment, token) rows' labels reordered into the corpus order, (token, worker): the COO arrays.

    For readers that collect labels per assignment (one document read by one annotator: ``pair_doc``,
    ``pair_worker``), each assignment's labels one per token of its document, in order: ``label`` holds them
    all, ``obs_pair`` the assignment of each and ``obs_base`` the first row of each assignment's
    (:func:`corpus_from_span_arrays`, :func:`crowdqa.ingest.ebm_nlp.read_ebm_nlp`).

    Without a sort: within document d (k_d annotators, sorted by index), row (pair p, local token t)
    goes to block_base[d] + t * k_d + rank of p's annotator among the k_d.
    """
    n_docs, n_pairs, n_obs = doc_lengths.size, pair_doc.size, label.size
    by_doc_worker = np.lexsort((pair_worker, pair_doc))
    k = np.bincount(pair_doc, minlength=n_docs)
    rank = np.empty(n_pairs, dtype=np.int64)
    rank[by_doc_worker] = np.arange(n_pairs) - np.concatenate([[0], np.cumsum(k)])[pair_doc[by_doc_worker]]
    block_base = np.concatenate([[0], np.cumsum(k * doc_lengths)])
    local = np.arange(n_obs) - obs_base[obs_pair]
    pos = (block_base[pair_doc] + rank)[obs_pair] + local * k[pair_doc][obs_pair]
    del local
    worker = np.empty(n_obs, dtype=np.int32)
    worker[pos] = pair_worker.astype(np.int32)[obs_pair]
    label_sorted = np.empty(n_obs, dtype=np.int16)
    label_sorted[pos] = label
    del pos
    # Each token of document d appears once per annotator of d, consecutively.
    token = np.repeat(np.arange(doc_lengths.sum(), dtype=np.int64), np.repeat(k, doc_lengths))
    return token, worker, label_sorted


def _range_sum(first: NDArray, last: NDArray, value: NDArray | None, n: int) -> NDArray:
    """Sum ``value`` (default 1) over the half-open index ranges ``[first, last)`` by a difference array."""
    diff = np.bincount(first, weights=value, minlength=n + 1) - np.bincount(last, weights=value, minlength=n + 1)
    return np.cumsum(diff)[:n]


def _drop_conflicts(
    live: NDArray,
    sp_pair: NDArray,
    first: NDArray,
    last: NDArray,
    sp_type: NDArray,
    spans: Sequence[Span] | None,
    problems: ProblemLog,
) -> NDArray:
    """Report spans of different types that share a token within one assignment.

    A vectorised pre-test finds the assignments with any overlapping spans (sorted by
    start, a span overlaps an earlier one iff it starts before their running maximum
    end). Conflicts are rare, so only those assignments are then resolved greedily in
    input order: a span is kept unless it overlaps an already-kept span of another type.
    """
    if live.size < 2 or np.all(sp_type[live] == sp_type[live[0]]):
        return live  # spans of one type merge where they overlap: nothing to report
    order = live[np.lexsort((first[live], sp_pair[live]))]
    p, f, e = sp_pair[order], first[order], last[order]
    # Offsetting ends by pair * big keeps the running maximum inside each assignment.
    big = int(max(e.max(), 0)) + 1
    run_max = np.maximum.accumulate(p * big + e)
    same = p[1:] == p[:-1]
    overlaps = same & (f[1:] < run_max[:-1] - p[1:] * big)
    suspects = np.unique(p[1:][overlaps])
    if suspects.size:  # only an assignment with spans of two types can have a conflict
        head = np.flatnonzero(np.concatenate([[True], ~same]))
        t = sp_type[order]
        mixed = p[head][np.minimum.reduceat(t, head) != np.maximum.reduceat(t, head)]
        suspects = suspects[np.isin(suspects, mixed)]
    if suspects.size == 0:
        return live
    keep = np.ones(sp_pair.size, dtype=bool)
    for pair in suspects.tolist():
        kept: list[int] = []
        for i in sorted(int(j) for j in live[sp_pair[live] == pair]):  # input order
            clash = next(
                (k for k in kept if sp_type[k] != sp_type[i] and first[i] < last[k] and first[k] < last[i]),
                None,
            )
            if clash is None:
                kept.append(i)
                continue
            if spans is None:
                raise UnusualSpans("spans of two types share a token")
            s, o = spans[i], spans[clash]
            problems.report(
                f"annotator {s.annotator!r} gives a token two labels on document {s.doc_id!r}: "
                f"span [{s.start}, {s.end}) {s.label!r} overlaps [{o.start}, {o.end}) {o.label!r}",
                source=s.source,
                line=s.line,
            )
            keep[i] = False
    return live[keep[live]]


def corpus_from_token_labels(
    *,
    documents: dict[str, list[str]],
    labels: Sequence[tuple[str, str, Sequence[str]]],
    roles: dict[str, str],
    class_names: Sequence[str] | None = None,
    problems: ProblemLog | None = None,
    sources: Sequence[tuple[str, int | None]] | None = None,
    tags: bool = False,
) -> Corpus:
    """Build a corpus from documents given as tokens and per-assignment tag sequences.

    Parameters
    ----------
    documents : dict of str to list of str
        ``doc_id -> tokens``; the text is the tokens joined by single spaces.
    labels : sequence of (doc_id, annotator, tags)
        ``tags`` has one class name per token of the document (``"O"`` outside); with ``tags=True`` a
        ``None`` marks a token the annotator left unlabelled.
    roles : dict of str to str
    class_names : sequence of str, optional
        Fixed schema (span tasks start with ``"O"``; categorical answers need not); by default ``O`` then the tags seen,
        sorted by entity type with ``B-`` before ``I-``.
    sources : sequence of (source, line), optional
        Where each entry of ``labels`` came from, for error messages.
    tags : bool, default=False
        The ``tags`` scheme (:attr:`crowdqa.aggregation.corpus.Corpus.tags`): the classes are the tags seen in
        natural order, and an annotator may leave tokens unlabelled.
    """
    problems = problems or ProblemLog("fail")
    doc_index = {d: i for i, d in enumerate(documents)}
    texts, starts, ends = [], [], []
    for doc_id, toks in documents.items():
        problems.limits.check_tokens(len(toks), doc_id=doc_id)
        problems.limits.check_chars(sum(map(len, toks)) + max(len(toks) - 1, 0), doc_id=doc_id)
        t, s, e = offsets_from_tokens(toks)
        texts.append(t)
        starts.append(s)
        ends.append(e)
    doc_lengths = np.fromiter((len(t) for t in documents.values()), np.int64, len(documents))
    doc_start = np.concatenate([[0], np.cumsum(doc_lengths)])

    if class_names is None and tags:
        from crowdqa.ingest.categorical import natural_key

        class_names = sorted({t for _, _, tt in labels for t in tt if t is not None}, key=natural_key) or ["O"]
    if class_names is None:
        # Full schema from the tags seen: every type gets both B- and I- under BIO.
        seen = {tag for _, _, tags in labels for tag in tags} - {"O"}
        bio = any(t[:2] in ("B-", "I-") for t in seen)
        class_names = class_names_for(sorted({entity_type(t) for t in seen}), "bio" if bio else "io")
    class_names = tuple(class_names)
    if not class_names or len(set(class_names)) != len(class_names):
        raise IngestError(f"class_names must be unique and non-empty, found {list(class_names)}")
    class_id = {c: i for i, c in enumerate(class_names)}

    annotators: dict[str, int] = {}
    seen_pairs: set[tuple[int, int]] = set()
    tok_parts, wrk_parts, lab_parts = [], [], []
    for k, (doc_id, annotator, row_tags) in enumerate(labels):
        src, line = sources[k] if sources is not None else ("", None)
        d = doc_index.get(doc_id)
        if d is None:
            problems.report(f"labels for unknown document {doc_id!r}", source=src, line=line)
            continue
        if len(row_tags) != doc_lengths[d]:
            problems.report(
                f"{len(row_tags)} labels for document {doc_id!r} of {int(doc_lengths[d])} tokens",
                source=src, line=line,
            )
            continue
        present = [t is not None for t in row_tags]
        unknown = [t for t in row_tags if t is not None and t not in class_id]
        if unknown:
            problems.report(f"unknown label {unknown[0]!r}; expected one of {list(class_names)}", source=src, line=line)
            continue
        w = annotators.setdefault(annotator, len(annotators))
        if (d, w) in seen_pairs:
            problems.report(f"duplicate assignment: {annotator!r} labelled {doc_id!r} twice", source=src, line=line)
            continue
        seen_pairs.add((d, w))
        given = [t for t in row_tags if t is not None]
        tok_parts.append(np.arange(doc_start[d], doc_start[d + 1], dtype=np.int64)[np.array(present, dtype=bool)])
        wrk_parts.append(np.full(len(given), w, dtype=np.int32))
        lab_parts.append(np.fromiter((class_id[t] for t in given), np.int16, len(given)))

    worker_ids = tuple(annotators)
    empty = np.zeros(0, np.int64)
    return Corpus.from_arrays(
        token=np.concatenate(tok_parts) if tok_parts else empty,
        worker=np.concatenate(wrk_parts) if wrk_parts else empty,
        label=np.concatenate(lab_parts) if lab_parts else empty,
        doc_lengths=doc_lengths,
        token_start=np.concatenate(starts) if starts else empty,
        token_end=np.concatenate(ends) if ends else empty,
        doc_ids=tuple(documents),
        texts=tuple(texts),
        worker_ids=worker_ids,
        worker_roles=_check_roles(worker_ids, roles),
        class_names=class_names,
        tags=tags,
    )
