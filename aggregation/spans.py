"""Decode token labels into entity spans, vectorised over the whole corpus.

A label array (an annotator's labels, an aggregate's ``labels_``, an expert
reference) is one class index per global token. :func:`decode_spans` turns it into
a :class:`SpanArray`: one row per entity, with its document, its token range and
its character range, so span metrics, writers and reports share one decoder.

Rules
-----
* ``MISSING`` (-1) counts as ``O``.
* Spans never cross a document boundary.
* IO schemes: a span is a maximal run of tokens of one entity type.
* BIO schemes: ``B-X`` starts a span; ``I-X`` continues the current span when the
  previous token (in the same document) has type ``X``; an ``I-X`` after ``O`` or
  after another type starts a new span (the rule of conlleval, CoNLL-2000).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus

__all__ = ["SpanArray", "decode_spans", "span_bounds"]


@dataclass(frozen=True)
class SpanArray:
    """Entity spans as parallel int64 arrays, sorted by first token.

    Parameters
    ----------
    doc : ndarray of shape (n_spans,)
        Document index of each span.
    first : ndarray of shape (n_spans,)
        First global token of the span.
    last : ndarray of shape (n_spans,)
        One past the last global token of the span.
    type : ndarray of shape (n_spans,)
        Entity type index + 1, as in :attr:`Corpus.class_entity`.
    start, end : ndarray of shape (n_spans,)
        Character offsets in the document's text; ``end`` is exclusive.
    """

    doc: NDArray[np.int64]
    first: NDArray[np.int64]
    last: NDArray[np.int64]
    type: NDArray[np.int64]
    start: NDArray[np.int64]
    end: NDArray[np.int64]

    def __post_init__(self) -> None:
        n = self.doc.shape[0]
        for name in ("doc", "first", "last", "type", "start", "end"):
            a = getattr(self, name)
            if not isinstance(a, np.ndarray) or a.shape != (n,) or a.dtype != np.int64:
                found = f"{a.dtype} array of shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
                raise ValueError(f"SpanArray.{name} must be an int64 array of shape ({n},), found {found}")

    def __len__(self) -> int:
        return int(self.doc.shape[0])

    @property
    def n_spans(self) -> int:
        return len(self)

    @classmethod
    def empty(cls) -> SpanArray:
        """A SpanArray with no spans."""
        z = np.zeros(0, dtype=np.int64)
        return cls(doc=z, first=z, last=z, type=z, start=z, end=z)

    def select(self, mask: NDArray[np.bool_]) -> SpanArray:
        """Keep the spans where ``mask`` (shape (n_spans,)) is true."""
        return SpanArray(
            doc=self.doc[mask],
            first=self.first[mask],
            last=self.last[mask],
            type=self.type[mask],
            start=self.start[mask],
            end=self.end[mask],
        )


def decode_spans(labels: NDArray, corpus: Corpus) -> SpanArray:
    """Decode one label per token into entity spans.

    Parameters
    ----------
    labels : ndarray of shape (n_tokens,)
        Class indices into ``corpus.class_names``; ``MISSING`` (-1) counts as ``O``.
    corpus : Corpus
        Gives the document boundaries, token offsets and the label scheme.

    Returns
    -------
    SpanArray
        Spans sorted by first token.

    Raises
    ------
    ValueError
        If ``labels`` has the wrong shape or holds an index outside ``[-1, n_classes)``.

    Examples
    --------
    >>> from crowdqa.aggregation.corpus import Corpus
    >>> c = Corpus.from_arrays(token=[], worker=[], label=[], doc_lengths=[4], token_start=[0, 2, 4, 6],
    ...     token_end=[1, 3, 5, 7], doc_ids=["d"], texts=["a b c d"], worker_ids=[], worker_roles=[],
    ...     class_names=["O", "B-X", "I-X"])
    >>> s = decode_spans(np.array([1, 2, 0, 2]), c)
    >>> s.first.tolist(), s.last.tolist(), s.start.tolist(), s.end.tolist()
    ([0, 3], [2, 4], [0, 6], [3, 7])
    """
    labels = np.asarray(labels)
    n_tokens = corpus.n_tokens
    if labels.shape != (n_tokens,):
        raise ValueError(f"labels must have shape ({n_tokens},), found {labels.shape}")
    if n_tokens == 0:
        return SpanArray.empty()
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integer class indices, found dtype {labels.dtype}")
    n_classes = corpus.n_classes
    bad = (labels < MISSING) | (labels >= n_classes)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"labels must be in [-1, {n_classes}), found {int(labels[i])} at token {i}")

    doc_first = np.zeros(n_tokens, dtype=bool)
    doc_first[corpus.doc_start[:-1][corpus.doc_lengths > 0]] = True
    first, last, etype = span_bounds(labels, doc_first, corpus=corpus)
    return SpanArray(
        doc=corpus.token_doc[first].astype(np.int64),
        first=first,
        last=last,
        type=etype,
        start=corpus.token_start[first].astype(np.int64),
        end=corpus.token_end[last - 1].astype(np.int64),
    )


def span_bounds(
    labels: NDArray, new_sequence: NDArray[np.bool_], *, corpus: Corpus
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """The spans of label sequences laid end to end, by the rules of :func:`decode_spans`.

    A sequence plays the part of a document: a span never crosses the start of one. The sequences may be
    the corpus's documents (:func:`decode_spans`) or any others, such as each annotator's labels of each
    document one after the other, so that all annotators are decoded at once.

    Parameters
    ----------
    labels : ndarray of shape (n_positions,)
        Class indices into ``corpus.class_names`` (checked by the caller); ``MISSING`` counts as ``O``.
    new_sequence : ndarray of shape (n_positions,) of bool
        True where a sequence begins (at least at position 0).
    corpus : Corpus
        Gives the label scheme (class names) only.

    Returns
    -------
    first, last : ndarray of shape (n_spans,)
        First position of each span and one past its last, in position order.
    type : ndarray of shape (n_spans,)
        Entity type index + 1, as in :attr:`Corpus.class_entity`.
    """
    n = labels.shape[0]
    lab = np.where(labels == MISSING, 0, labels).astype(np.int64)
    is_begin = np.array([c.startswith("B-") for c in corpus.class_names], dtype=bool)
    etype = corpus.class_entity[lab]  # (n_positions,), 0 = outside
    positive = etype > 0

    # A position starts a span if it is positive and it cannot continue its predecessor:
    # first of a sequence, predecessor of another type (or O), or a B- tag.
    prev_type = np.empty(n, dtype=np.int64)
    prev_type[:1] = 0
    prev_type[1:] = etype[:-1]
    starts = positive & (new_sequence | (prev_type != etype) | is_begin[lab])
    # A span ends after position i when position i + 1 does not continue it.
    cont_next = np.zeros(n, dtype=bool)
    cont_next[:-1] = positive[1:] & ~starts[1:]
    ends = positive & ~cont_next

    first = np.flatnonzero(starts).astype(np.int64)
    return first, np.flatnonzero(ends).astype(np.int64) + 1, etype[first]
