"""What an upload adds to a dataset, without its label arrays: the index a merge is checked on.

A dataset is the merge of its uploads (:func:`crowdqa.ingest.merge.merge_corpora`). Merging and saving
every label again at each upload costs time in the size of everything already stored, so an
upload is checked against the *indexes* of the earlier ones instead: documents (id, length, a
hash of the text and one of the token offsets), annotators (id, role), the (document, annotator)
pairs, the classes and how many labels each got. Those are enough to refuse what the merge
would refuse, and to compute the merged corpus' summary (:func:`crowdqa.ingest.summary.summarize`) and its
annotator counts exactly; the merge itself happens once, when a job loads the dataset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest._bytes import unique_sorted
from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.merge import merged_classes
from crowdqa.ingest.summary import summary_fields
from crowdqa.ingest.vocabulary import (
    alike_across,
    check_vocabularies,
    expert_label_counts,
    role_labels_of_counts,
    written_otherwise,
)

__all__ = ["CorpusIndex", "IndexUnion", "index_corpus", "index_union", "check_mergeable", "summarize_indexes",
           "annotator_counts", "check_index_vocabularies", "KindConflict", "HASHING"]

#: How :attr:`CorpusIndex.text_hash` and ``token_hash`` are computed (:func:`_segment_hashes`); an index stored
#: with another rule (or none: SHA-1 per document, before) is not comparable and is made again from its corpus.
HASHING = "splitmix64-sum-64-length-bit"


class KindConflict(IngestError):
    """An upload whose labels are of another kind than the dataset's (categorical vs spans, disjoint answers)."""


@dataclass(frozen=True)
class CorpusIndex:
    """The index of one corpus (see the module docstring); arrays are plain numpy, strings as unicode arrays."""

    doc_ids: NDArray  # (n_docs,) str
    doc_lengths: NDArray  # (n_docs,) int64
    text_hash: NDArray  # (n_docs,) uint64: hash of the text (see HASHING)
    token_hash: NDArray  # (n_docs,) uint64: hash of the token offsets
    worker_ids: NDArray  # (n_workers,) str
    worker_roles: NDArray  # (n_workers,) str
    pair_doc: NDArray  # (n_pairs,) int64
    pair_worker: NDArray  # (n_pairs,) int64
    class_names: NDArray  # (n_classes,) str
    label_counts: NDArray  # (n_classes,) int64
    scheme: str
    has_outside: bool
    n_obs: int
    hashing: str = HASHING
    #: (n_classes,) int64: the labels expert annotators gave per class (``label_counts`` less the crowd's);
    #: None in an index stored before it was kept.
    expert_label_counts: NDArray | None = None

    @property
    def current(self) -> bool:
        """True when the document hashes follow :data:`HASHING` (comparable with a new upload's) and the labels
        are counted by role."""
        return self.hashing == HASHING and self.expert_label_counts is not None

    def save(self, path: str | os.PathLike) -> None:
        """Write the index as an uncompressed ``.npz`` (no pickle)."""
        arrays = {k: v for k, v in self.__dict__.items() if isinstance(v, np.ndarray)}
        with open(path, "wb") as fh:
            np.savez(fh, **arrays, scheme=np.array(self.scheme), has_outside=np.array(self.has_outside),
                     n_obs=np.array(self.n_obs), hashing=np.array(self.hashing))

    @classmethod
    def load(cls, path: str | os.PathLike) -> CorpusIndex:
        """Read a saved index; one saved before :data:`HASHING` existed reads with ``hashing="sha1"``."""
        scalars = ("scheme", "has_outside", "n_obs", "hashing")
        with np.load(path, allow_pickle=False) as z:
            return cls(**{k: z[k] for k in z.files if k not in scalars},
                       scheme=str(z["scheme"]), has_outside=bool(z["has_outside"]), n_obs=int(z["n_obs"]),
                       hashing=str(z["hashing"]) if "hashing" in z.files else "sha1")

    @property
    def entity_types(self) -> tuple[str, ...]:
        names = [str(c) for c in self.class_names]
        return tuple(dict.fromkeys(n[2:] if n[:2] in ("B-", "I-") else n for n in names[1:]))


def _strs(values) -> NDArray:
    return np.array(list(values), dtype=str) if len(values) else np.zeros(0, dtype="<U1")


def _mix(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """splitmix64's finaliser, a bijection of uint64 that spreads every input bit over the output (Steele,
    Lea & Flood, OOPSLA 2014, doi:10.1145/2660193.2660195); it works on a copy (``x`` is not changed)."""
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)  # uint64 array arithmetic wraps modulo 2**64, as the finaliser wants
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _positions(lengths: NDArray[np.int64]) -> NDArray[np.uint64]:
    """Each element's position in its segment, for segments of ``lengths`` laid end to end."""
    starts = np.cumsum(lengths) - lengths
    return (np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(starts, lengths)).astype(np.uint64)


def _segment_hashes(keys: NDArray[np.uint64], lengths: NDArray[np.int64]) -> NDArray:
    """A 64-bit hash of each segment of ``keys`` (segments of ``lengths``, laid end to end).

    The hash is ``mix(sum of mix(key) over the segment, modulo 2**64, xor mix(length + 2**63))``: the top bit
    keeps the length term from equalling a one-key segment's term (without it, the text ``"\x01"``, whose key
    is 1, hashed as the empty text: ``mix(1) xor mix(1) == mix(0) xor mix(0) == 0``). A key must say
    both the element and its position in the segment (the callers build it so): then equal segments hash
    equal, and a changed, moved, added or removed element moves the sum as a random 64-bit number does, so
    two different documents with one id hash equal with odds of about 2**-64. Vectorized over all segments
    at once (no Python step per segment), for the check that two uploads agree on a document's text and
    tokens; it is not a defence against someone crafting collisions in their own uploads.

    Parameters
    ----------
    keys : ndarray of shape (n_values,), uint64
    lengths : ndarray of shape (n_segments,), int64

    Returns
    -------
    ndarray of shape (n_segments,), uint64
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    filled = lengths > 0
    sums = np.zeros(lengths.size, dtype=np.uint64)
    if keys.size:  # reduceat over the non-empty segments only (an empty one adds nothing)
        sums[filled] = np.add.reduceat(_mix(keys), (np.cumsum(lengths) - lengths)[filled])
    return _mix(sums ^ _mix(lengths.astype(np.uint64) | np.uint64(1 << 63)))


def _text_hashes(texts: tuple[str, ...], *, chunk_chars: int = 1 << 23) -> NDArray:
    """:func:`_segment_hashes` of each text, in chunks of documents of about ``chunk_chars`` characters (memory
    stays bounded however long the corpus is); a character's key is its position above its code point."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths)
    out, first = [], 0
    while first < len(texts):
        last = max(int(np.searchsorted(ends, (ends[first - 1] if first else 0) + chunk_chars, side="right")),
                   first + 1)
        codes = np.frombuffer("".join(texts[first:last]).encode("utf-32-le", "surrogatepass"), dtype="<u4")
        # Code points are below 2**21, so (position, code point) -> key is one-to-one.
        keys = (_positions(lengths[first:last]) << np.uint64(21)) | codes.astype(np.uint64)
        out.append(_segment_hashes(keys, lengths[first:last]))
        first = last
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint64)


def _token_hashes(corpus: Corpus) -> NDArray:
    """:func:`_segment_hashes` of each document's token offsets; a token's key mixes its start, end and
    position in the document."""
    start = np.asarray(corpus.token_start, dtype=np.int64).astype(np.uint64)
    end = np.asarray(corpus.token_end, dtype=np.int64).astype(np.uint64)
    lengths = np.asarray(corpus.doc_lengths, dtype=np.int64)
    return _segment_hashes(_mix(_mix(_mix(start) + end) + _positions(lengths)), lengths)


def index_corpus(corpus: Corpus) -> CorpusIndex:
    """The index of ``corpus``: document hashes and the unique (document, annotator) pairs, all vectorized."""
    n_w = max(corpus.n_workers, 1)
    pairs = unique_sorted(corpus.obs_doc * n_w + corpus.worker)
    return CorpusIndex(
        doc_ids=_strs(corpus.doc_ids), doc_lengths=np.asarray(corpus.doc_lengths, dtype=np.int64),
        text_hash=_text_hashes(corpus.texts), token_hash=_token_hashes(corpus),
        worker_ids=_strs(corpus.worker_ids), worker_roles=_strs(corpus.worker_roles),
        pair_doc=(pairs // n_w).astype(np.int64), pair_worker=(pairs % n_w).astype(np.int64),
        class_names=_strs(corpus.class_names),
        label_counts=np.bincount(corpus.label, minlength=corpus.n_classes).astype(np.int64),
        expert_label_counts=expert_label_counts(corpus),
        scheme=str(corpus.scheme), has_outside=bool(corpus.has_outside), n_obs=int(corpus.n_obs),
    )


def _kind(ix: CorpusIndex) -> str:
    return "span labels" if ix.has_outside else "tag labels" if ix.scheme == "tags" else "categorical answers"


def _classes(ix: CorpusIndex, n: int = 6) -> str:
    names = [str(c) for c in ix.class_names]
    return ", ".join(names[:n]) + (", ..." if len(names) > n else "")


def check_mergeable(parts: list[CorpusIndex], new: CorpusIndex, *, source: str = "") -> None:
    """Raise what merging ``new`` into the merge of ``parts`` would raise, before anything is merged.

    Raises
    ------
    KindConflict
        ``new`` holds another kind of labels than the dataset (categorical answers next to span
        labels), or categorical answers sharing no class with the dataset's.
    IngestError
        IO labels into a BIO dataset (or back), a document with another text or tokenization, an
        annotator with another role, or an annotator labelling a document in two uploads.
    """
    if not parts:
        return
    first = parts[0]
    if new.has_outside != first.has_outside or (new.scheme == "tags") != (first.scheme == "tags"):
        raise KindConflict(
            f"the dataset holds {_kind(first)} ({_classes(first)}) and this file holds {_kind(new)} "
            f"({_classes(new)}); one dataset holds one kind of labels: create another dataset", source=source)
    if not new.has_outside:
        known = {str(c) for ix in parts for c in ix.class_names}
        if not known & {str(c) for c in new.class_names}:
            names = ("this file's", "the dataset's")
            alike = written_otherwise([str(c) for c in new.class_names], sorted(known), names=names)
            raise KindConflict(
                f"this file's answers ({_classes(new)}) share no label with the dataset's ({_classes(first)})"
                + (f" ({'; '.join(alike)})" if alike else "")
                + "; one dataset holds one label scheme: create another dataset", source=source)
    schemes = {ix.scheme for ix in [*parts, new] if ix.has_outside and len(ix.class_names) > 1}
    if {"io", "bio"} <= schemes:
        raise IngestError("cannot merge inside/outside labels into a BIO schema: upload all files with one scheme",
                          source=source)
    doc_first, doc_pos = _first_seen([ix.doc_ids for ix in [*parts, new]])
    old_doc = np.concatenate(doc_pos[:-1])
    seen = np.full(doc_first.size, -1, dtype=np.int64)  # each merged document's row in the parts' arrays
    seen[old_doc] = np.arange(old_doc.size)  # (any of its rows: their hashes agree, checked when uploaded)
    row = seen[doc_pos[-1]]
    found = row >= 0
    text_differs = np.zeros(new.doc_ids.size, dtype=bool)
    tokens_differ = np.zeros(new.doc_ids.size, dtype=bool)
    text_differs[found] = np.concatenate([ix.text_hash for ix in parts])[row[found]] != new.text_hash[found]
    tokens_differ[found] = np.concatenate([ix.token_hash for ix in parts])[row[found]] != new.token_hash[found]
    if (text_differs | tokens_differ).any():
        d = int(np.argmax(text_differs | tokens_differ))  # the first such document of the upload
        how = "has a different text" if text_differs[d] else "is tokenized differently"
        raise IngestError(f"document {str(new.doc_ids[d])!r} {how} in two uploads", source=source)
    roles: dict[str, str] = {}
    for ix in parts:
        roles.update(zip(ix.worker_ids.tolist(), ix.worker_roles.tolist(), strict=True))
    for wid, role in zip(new.worker_ids.tolist(), new.worker_roles.tolist(), strict=True):
        if roles.get(wid, role) != role:
            raise IngestError(f"annotator {wid!r} is {roles[wid]!r} in one upload and {role!r} in another",
                              source=source)
    worker_first, worker_pos = _first_seen([ix.worker_ids for ix in [*parts, new]])
    n_w = max(worker_first.size, 1)
    keys = [dp[ix.pair_doc] * n_w + wp[ix.pair_worker] for ix, dp, wp in zip([*parts, new], doc_pos, worker_pos,
                                                                              strict=True)]
    twice = np.isin(keys[-1], np.concatenate(keys[:-1]), kind="sort")
    if twice.any():
        k = int(np.argmax(twice))
        d, w = new.doc_ids[new.pair_doc[k]], new.worker_ids[new.pair_worker[k]]
        raise IngestError(f"duplicate assignment: annotator {str(w)!r} labelled document {str(d)!r} in two uploads",
                          source=source)


def _first_seen(ids: list[NDArray]) -> tuple[NDArray[np.int64], list[NDArray[np.int64]]]:
    """The merge's order of the ids in ``ids`` (arrays of ids, each without repeats), by first appearance.

    Returns the index (into the concatenation of ``ids``) of each merged id's first appearance, and for
    each array the merged position of each of its ids; sorted, never a Python step per id.
    """
    if len(ids) == 1:  # ids within one corpus are unique: the merge is the corpus' own order
        return np.arange(ids[0].size, dtype=np.int64), [np.arange(ids[0].size, dtype=np.int64)]
    every = np.concatenate(ids)
    _, first, inverse = np.unique(every, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    return first[order].astype(np.int64), np.split(rank[inverse.ravel()], np.cumsum([a.size for a in ids])[:-1])


@dataclass(frozen=True)
class IndexUnion:
    """The merge of some uploads' indexes: documents, annotators and (document, annotator) pairs in the
    merge's order of first appearance (the order :func:`crowdqa.ingest.merge.merge_corpora` gives)."""

    doc_lengths: NDArray  # (n_docs,) int64
    worker_ids: list[str]  # (n_workers,)
    worker_roles: list[str]  # (n_workers,)
    pair_doc: NDArray  # (n_pairs,) int64, unique pairs sorted by (document, annotator)
    pair_worker: NDArray  # (n_pairs,) int64


def index_union(parts: list[CorpusIndex]) -> IndexUnion:
    """The :class:`IndexUnion` of ``parts`` (made once for :func:`summarize_indexes` and :func:`annotator_counts`)."""
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return IndexUnion(doc_lengths=empty, worker_ids=[], worker_roles=[], pair_doc=empty, pair_worker=empty)
    doc_first, doc_pos = _first_seen([ix.doc_ids for ix in parts])
    worker_first, worker_pos = _first_seen([ix.worker_ids for ix in parts])
    n_w = max(worker_first.size, 1)
    pairs = np.concatenate([dp[ix.pair_doc] * n_w + wp[ix.pair_worker]
                            for ix, dp, wp in zip(parts, doc_pos, worker_pos, strict=True)])
    if len(parts) > 1:  # one index's pairs are unique and sorted already
        pairs = unique_sorted(pairs)
    return IndexUnion(doc_lengths=np.concatenate([ix.doc_lengths for ix in parts])[doc_first],
                      worker_ids=np.concatenate([ix.worker_ids for ix in parts])[worker_first].tolist(),
                      worker_roles=np.concatenate([ix.worker_roles for ix in parts])[worker_first].tolist(),
                      pair_doc=pairs // n_w, pair_worker=pairs % n_w)


def merged_class_names(parts: list[CorpusIndex]) -> tuple[str, ...]:
    """The merged corpus' classes, by :func:`crowdqa.ingest.merge.merge_corpora`'s rule."""
    if len(parts) == 1:
        return tuple(str(c) for c in parts[0].class_names)
    stubs = [SimpleNamespace(has_outside=ix.has_outside, scheme=ix.scheme, n_classes=len(ix.class_names),
                             entity_types=ix.entity_types, class_names=tuple(str(c) for c in ix.class_names))
             for ix in parts]
    return merged_classes(stubs)


def summarize_indexes(parts: list[CorpusIndex], *, union: IndexUnion | None = None) -> dict:
    """:func:`crowdqa.ingest.summary.summarize` of the merged corpus, computed from the parts' indexes (and
    their ``union``, when the caller made it already)."""
    u = index_union(parts) if union is None else union
    classes = merged_class_names(parts)
    counts = dict.fromkeys(classes, 0)
    for ix in parts:
        for name, k in zip(ix.class_names.tolist(), ix.label_counts.tolist(), strict=True):
            counts[name] += int(k)
    return summary_fields(n_docs=u.doc_lengths.size, n_tokens=int(u.doc_lengths.sum()),
                          n_obs=int(sum(ix.n_obs for ix in parts)), worker_roles=u.worker_roles,
                          pair_doc=u.pair_doc, pair_worker=u.pair_worker, class_names=classes, label_counts=counts)


def check_index_vocabularies(parts: list[CorpusIndex], *, source: str = "") -> list[str]:
    """:func:`crowdqa.ingest.vocabulary.check_vocabularies` of the merge of ``parts``: its crowd's and its experts'
    labels, counted from the indexes (IngestError when they share none; the warnings otherwise), and a note when one
    role wrote one label two ways in two uploads (:func:`crowdqa.ingest.vocabulary.alike_across`)."""
    if not parts:
        return []
    classes = merged_class_names(parts)
    position = {name: k for k, name in enumerate(classes)}
    total, expert = np.zeros(len(classes), dtype=np.int64), np.zeros(len(classes), dtype=np.int64)
    for ix in parts:
        at = np.array([position[str(c)] for c in ix.class_names.tolist()], dtype=np.int64)
        np.add.at(total, at, ix.label_counts)
        np.add.at(expert, at, ix.expert_label_counts)
    spans = parts[0].has_outside
    crowd_labels = role_labels_of_counts(classes, total - expert, spans=spans)
    expert_labels = role_labels_of_counts(classes, expert, spans=spans)
    notes = check_vocabularies(crowd_labels, expert_labels, spans=spans, source=source)
    if len(parts) > 1:  # one label written two ways by one role in two uploads (within one: its parse notes)
        each = [role_labels_of_counts(ix.class_names.tolist(), ix.label_counts, spans=spans) for ix in parts]
        notes += alike_across(crowd_labels, each, whose="the crowd's", spans=spans)
        notes += alike_across(expert_labels, each, whose="the experts'", spans=spans)
    return notes


def annotator_counts(parts: list[CorpusIndex], *, union: IndexUnion | None = None) -> list[tuple[str, str, int, int]]:
    """``(id, role, documents, tokens)`` of every annotator of the merge, in the merge's order."""
    u = index_union(parts) if union is None else union
    n = len(u.worker_ids)
    documents = np.bincount(u.pair_worker, minlength=n)
    tokens = np.bincount(u.pair_worker, weights=u.doc_lengths[u.pair_doc] if u.pair_doc.size else None, minlength=n)
    return list(zip(u.worker_ids, u.worker_roles, documents.tolist(), tokens.astype(np.int64).tolist(), strict=True))
