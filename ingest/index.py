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

import hashlib
import os
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.merge import _merged_classes
from crowdqa.ingest.summary import summary_fields

__all__ = ["CorpusIndex", "index_corpus", "check_mergeable", "summarize_indexes", "annotator_counts", "KindConflict"]


class KindConflict(IngestError):
    """An upload whose labels are of another kind than the dataset's (categorical vs spans, disjoint answers)."""


@dataclass(frozen=True)
class CorpusIndex:
    """The index of one corpus (see the module docstring); arrays are plain numpy, strings as unicode arrays."""

    doc_ids: NDArray  # (n_docs,) str
    doc_lengths: NDArray  # (n_docs,) int64
    text_hash: NDArray  # (n_docs,) str: sha1 of the text
    token_hash: NDArray  # (n_docs,) str: sha1 of the token offsets
    worker_ids: NDArray  # (n_workers,) str
    worker_roles: NDArray  # (n_workers,) str
    pair_doc: NDArray  # (n_pairs,) int64
    pair_worker: NDArray  # (n_pairs,) int64
    class_names: NDArray  # (n_classes,) str
    label_counts: NDArray  # (n_classes,) int64
    scheme: str
    has_outside: bool
    n_obs: int

    def save(self, path: str | os.PathLike) -> None:
        """Write the index as an uncompressed ``.npz`` (no pickle)."""
        arrays = {k: v for k, v in self.__dict__.items() if isinstance(v, np.ndarray)}
        with open(path, "wb") as fh:
            np.savez(fh, **arrays, scheme=np.array(self.scheme), has_outside=np.array(self.has_outside),
                     n_obs=np.array(self.n_obs))

    @classmethod
    def load(cls, path: str | os.PathLike) -> CorpusIndex:
        with np.load(path, allow_pickle=False) as z:
            return cls(**{k: z[k] for k in z.files if k not in ("scheme", "has_outside", "n_obs")},
                       scheme=str(z["scheme"]), has_outside=bool(z["has_outside"]), n_obs=int(z["n_obs"]))

    @property
    def entity_types(self) -> tuple[str, ...]:
        names = [str(c) for c in self.class_names]
        return tuple(dict.fromkeys(n[2:] if n[:2] in ("B-", "I-") else n for n in names[1:]))


def _strs(values) -> NDArray:
    return np.array(list(values), dtype=str) if len(values) else np.zeros(0, dtype="<U1")


def index_corpus(corpus: Corpus) -> CorpusIndex:
    """The index of ``corpus``: one pass over documents, one ``unique`` over its (document, annotator) pairs."""
    n_w = max(corpus.n_workers, 1)
    pairs = np.unique(corpus.obs_doc * n_w + corpus.worker)
    starts, ends = corpus.token_start, corpus.token_end
    text_hash, token_hash = [], []
    for d, text in enumerate(corpus.texts):  # one hash per document (never per token)
        a, b = int(corpus.doc_start[d]), int(corpus.doc_start[d + 1])
        text_hash.append(hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest())
        token_hash.append(hashlib.sha1(np.ascontiguousarray(
            np.stack([starts[a:b], ends[a:b]]).astype(np.int64)).tobytes()).hexdigest())
    return CorpusIndex(
        doc_ids=_strs(corpus.doc_ids), doc_lengths=np.asarray(corpus.doc_lengths, dtype=np.int64),
        text_hash=_strs(text_hash), token_hash=_strs(token_hash),
        worker_ids=_strs(corpus.worker_ids), worker_roles=_strs(corpus.worker_roles),
        pair_doc=(pairs // n_w).astype(np.int64), pair_worker=(pairs % n_w).astype(np.int64),
        class_names=_strs(corpus.class_names),
        label_counts=np.bincount(corpus.label, minlength=corpus.n_classes).astype(np.int64),
        scheme=str(corpus.scheme), has_outside=bool(corpus.has_outside), n_obs=int(corpus.n_obs),
    )


def _kind(ix: CorpusIndex) -> str:
    return "span labels" if ix.has_outside else "categorical answers"


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
    if new.has_outside != first.has_outside:
        raise KindConflict(
            f"the dataset holds {_kind(first)} ({_classes(first)}) and this file holds {_kind(new)} "
            f"({_classes(new)}); one dataset holds one kind of labels: create another dataset", source=source)
    if not new.has_outside:
        known = {str(c) for ix in parts for c in ix.class_names}
        if not known & {str(c) for c in new.class_names}:
            raise KindConflict(
                f"this file's answers ({_classes(new)}) share no label with the dataset's ({_classes(first)}); "
                "one dataset holds one label scheme: create another dataset", source=source)
    schemes = {ix.scheme for ix in [*parts, new] if ix.has_outside and len(ix.class_names) > 1}
    if {"io", "bio"} <= schemes:
        raise IngestError("cannot merge inside/outside labels into a BIO schema: upload all files with one scheme",
                          source=source)
    docs: dict[str, tuple[str, str]] = {}
    roles: dict[str, str] = {}
    pairs: set[tuple[str, str]] = set()
    for ix in parts:
        docs.update(zip(ix.doc_ids.tolist(), zip(ix.text_hash.tolist(), ix.token_hash.tolist(), strict=True),
                        strict=True))
        roles.update(zip(ix.worker_ids.tolist(), ix.worker_roles.tolist(), strict=True))
        pairs.update(zip(ix.doc_ids[ix.pair_doc].tolist(), ix.worker_ids[ix.pair_worker].tolist(), strict=True))
    for doc_id, th, kh in zip(new.doc_ids.tolist(), new.text_hash.tolist(), new.token_hash.tolist(), strict=True):
        old = docs.get(doc_id)
        if old is not None and old[0] != th:
            raise IngestError(f"document {doc_id!r} has a different text in two uploads", source=source)
        if old is not None and old[1] != kh:
            raise IngestError(f"document {doc_id!r} is tokenized differently in two uploads", source=source)
    for wid, role in zip(new.worker_ids.tolist(), new.worker_roles.tolist(), strict=True):
        if roles.get(wid, role) != role:
            raise IngestError(f"annotator {wid!r} is {roles[wid]!r} in one upload and {role!r} in another",
                              source=source)
    for d, w in zip(new.doc_ids[new.pair_doc].tolist(), new.worker_ids[new.pair_worker].tolist(), strict=True):
        if (d, w) in pairs:
            raise IngestError(f"duplicate assignment: annotator {w!r} labelled document {d!r} in two uploads",
                              source=source)


def _union(parts: list[CorpusIndex]):
    """Merged documents, annotators and unique pairs, in the merge's order of first appearance."""
    doc_pos: dict[str, int] = {}
    lengths: list[int] = []
    worker_pos: dict[str, int] = {}
    roles: list[str] = []
    pair_doc, pair_worker = [], []
    for ix in parts:
        for d, n in zip(ix.doc_ids.tolist(), ix.doc_lengths.tolist(), strict=True):
            if d not in doc_pos:
                doc_pos[d] = len(lengths)
                lengths.append(n)
        for w, r in zip(ix.worker_ids.tolist(), ix.worker_roles.tolist(), strict=True):
            if w not in worker_pos:
                worker_pos[w] = len(roles)
                roles.append(r)
        dmap = np.array([doc_pos[d] for d in ix.doc_ids.tolist()], dtype=np.int64)
        wmap = np.array([worker_pos[w] for w in ix.worker_ids.tolist()], dtype=np.int64)
        pair_doc.append(dmap[ix.pair_doc] if dmap.size else ix.pair_doc)
        pair_worker.append(wmap[ix.pair_worker] if wmap.size else ix.pair_worker)
    n_w = max(len(roles), 1)
    pairs = np.unique(np.concatenate(pair_doc) * n_w + np.concatenate(pair_worker)) if parts else np.zeros(0, int)
    return doc_pos, np.array(lengths, dtype=np.int64), worker_pos, roles, pairs // n_w, pairs % n_w


def merged_class_names(parts: list[CorpusIndex]) -> tuple[str, ...]:
    """The merged corpus' classes, by :func:`crowdqa.ingest.merge.merge_corpora`'s rule."""
    if len(parts) == 1:
        return tuple(str(c) for c in parts[0].class_names)
    stubs = [SimpleNamespace(has_outside=ix.has_outside, scheme=ix.scheme, n_classes=len(ix.class_names),
                             entity_types=ix.entity_types, class_names=tuple(str(c) for c in ix.class_names))
             for ix in parts]
    return _merged_classes(stubs)


def summarize_indexes(parts: list[CorpusIndex]) -> dict:
    """:func:`crowdqa.ingest.summary.summarize` of the merged corpus, computed from the parts' indexes."""
    doc_pos, lengths, _, roles, pair_doc, pair_worker = _union(parts)
    classes = merged_class_names(parts)
    counts = dict.fromkeys(classes, 0)
    for ix in parts:
        for name, k in zip(ix.class_names.tolist(), ix.label_counts.tolist(), strict=True):
            counts[name] += int(k)
    return summary_fields(n_docs=len(doc_pos), n_tokens=int(lengths.sum()), n_obs=int(sum(ix.n_obs for ix in parts)),
                          worker_roles=roles, pair_doc=pair_doc, pair_worker=pair_worker, class_names=classes,
                          label_counts=counts)


def annotator_counts(parts: list[CorpusIndex]) -> list[tuple[str, str, int, int]]:
    """``(id, role, documents, tokens)`` of every annotator of the merge, in the merge's order."""
    _, lengths, worker_pos, roles, pair_doc, pair_worker = _union(parts)
    n = len(roles)
    documents = np.bincount(pair_worker, minlength=n)
    tokens = np.bincount(pair_worker, weights=lengths[pair_doc] if pair_doc.size else None, minlength=n)
    return [(w, roles[i], int(documents[i]), int(tokens[i])) for w, i in worker_pos.items()]
