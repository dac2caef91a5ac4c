"""The canonical corpus: crowd labels on tokens as COO triplets.

Every upload format is parsed into one :class:`Corpus` (see ``ingest/``), and every
aggregator, metric and job works on its integer arrays. Documents are concatenated
token sequences; ``doc_lengths`` delimits them (hmmlearn's ``X, lengths``).

Two kinds of token labels share the corpus. Under a span scheme (inside/outside or BIO) an
annotator who labelled a document gives every one of its tokens a label (tokens outside every
span get class 0, ``"O"``): a span cut by an unlabelled token would be ambiguous. Under the
``tags`` scheme (:attr:`Corpus.tags`: one class of a tag set per token, no spans) an annotator
may label any subset of a document's tokens. Either way a token an annotator did not label is
*absent* for that annotator, never ``O``: a missing annotation is an absent row, never a ``-1``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.roles import ROLES

__all__ = ["Corpus", "MISSING", "ROLES", "entity_type", "first_unordered_row", "npz_bytes", "run_indices",
           "sort_rows"]

#: Sentinel used only in *dense derived views* (e.g. :meth:`Corpus.labels_of`)
#: for tokens an annotator did not label. The COO arrays never contain it.
MISSING = -1

_FORMAT_VERSION = 1

#: Annotations per block of the per-annotation passes that run on every fit (the votes and tallies
#: of ``aggregation._votes`` and ``_confusion``, :attr:`Corpus.worker_answers`). Over whole arrays their
#: temporaries (a cast index, a gathered weight per annotation) are fresh memory on every call, and
#: the page faults that map it can cost more than the arithmetic; a block's (256 KiB an array) stay in
#: cache and are reused.
BLOCK_OBS = 1 << 15


def entity_type(class_name: str) -> str:
    """Return the entity type of a class name: ``"B-PER"`` -> ``"PER"``, ``"O"`` -> ``"O"``."""
    if class_name[:2] in ("B-", "I-"):
        return class_name[2:]
    return class_name


@dataclass(frozen=True, eq=False)
class Corpus:
    """Crowd labels on tokens as COO triplets; documents are concatenated.

    Parameters
    ----------
    token : ndarray of shape (n_obs,), int64
        Global token index of each annotation, in ``[0, n_tokens)``.
    worker : ndarray of shape (n_obs,), int32
        Annotator index of each annotation, in ``[0, n_workers)``.
    label : ndarray of shape (n_obs,), int16
        Class index of each annotation, in ``[0, n_classes)``; 0 is ``"O"`` in span tasks.
    doc_lengths : ndarray of shape (n_docs,), int64
        Number of tokens of each document; sums to ``n_tokens``.
    token_start, token_end : ndarray of shape (n_tokens,), int64
        Character offsets of each token in its document's text (end exclusive).
    doc_ids : tuple of str, length n_docs
    texts : tuple of str, length n_docs
        Document texts. Token-only formats (CoNLL, EBM-NLP) join tokens with one space.
    worker_ids : tuple of str, length n_workers
        Namespaced by source, e.g. ``"mturk:A1FG..."``, ``"upwork:md2"``.
    worker_roles : tuple of str, length n_workers
        ``"crowd"`` or ``"expert"``.
    class_names : tuple of str, length n_classes
        Span tasks have ``class_names[0] == "O"`` (outside) and use either
        inside/outside per category (``"O", "Participants"``) or BIO
        (``"O", "B-PER", "I-PER", ...``). Categorical corpora (one-token items) have
        no outside class: their classes are the answers in natural order, so no
        model carries a phantom class (see :attr:`has_outside`). Tag sets (``tags``) are any
        names, in natural order; a class named ``"O"`` is then one tag like the others.
    tags : bool, default=False
        The ``tags`` label scheme: every token carries one class of a tag set, there are no
        spans and no outside class, and an annotator may label any subset of a document's
        tokens (a token it left unlabelled is missing, not ``O``).

    Notes
    -----
    The triplets are sorted by ``(token, worker)`` and unique. Under a span scheme each
    (document, annotator) pair present covers every token of that document; under ``tags``
    any subset. Validation runs once, here; code after ingest trusts the object. Use
    :meth:`from_arrays` to build one from unsorted triplets.
    """

    token: NDArray[np.int64]
    worker: NDArray[np.int32]
    label: NDArray[np.int16]
    doc_lengths: NDArray[np.int64]
    token_start: NDArray[np.int64]
    token_end: NDArray[np.int64]
    doc_ids: tuple[str, ...]
    texts: tuple[str, ...]
    worker_ids: tuple[str, ...]
    worker_roles: tuple[str, ...]
    class_names: tuple[str, ...]
    tags: bool = False
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_corpus(self)
        self._freeze()

    def _freeze(self) -> None:
        for name in ("token", "worker", "label", "doc_lengths", "token_start", "token_end"):
            getattr(self, name).flags.writeable = False

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_arrays(
        cls,
        *,
        token: NDArray,
        worker: NDArray,
        label: NDArray,
        doc_lengths: NDArray,
        token_start: NDArray,
        token_end: NDArray,
        doc_ids: tuple[str, ...] | list[str],
        texts: tuple[str, ...] | list[str],
        worker_ids: tuple[str, ...] | list[str],
        worker_roles: tuple[str, ...] | list[str],
        class_names: tuple[str, ...] | list[str],
        tags: bool = False,
    ) -> Corpus:
        """Build a corpus from triplets in any order: cast dtypes, sort by (token, worker)."""
        token = np.asarray(token, dtype=np.int64)
        worker = np.asarray(worker, dtype=np.int32)
        label = np.asarray(label, dtype=np.int16)
        if not (token.shape == worker.shape == label.shape) or token.ndim != 1:
            raise ValueError(
                f"token, worker and label must be 1-D of one length, found shapes "
                f"{token.shape}, {worker.shape}, {label.shape}"
            )
        token, worker, label = sort_rows(token, worker, label, len(worker_ids))
        return cls(
            token=token,
            worker=worker,
            label=label,
            doc_lengths=np.asarray(doc_lengths, dtype=np.int64),
            token_start=np.asarray(token_start, dtype=np.int64),
            token_end=np.asarray(token_end, dtype=np.int64),
            doc_ids=tuple(doc_ids),
            texts=tuple(texts),
            worker_ids=tuple(worker_ids),
            worker_roles=tuple(worker_roles),
            class_names=tuple(class_names),
            tags=bool(tags),
        )

    # ------------------------------------------------------------------ sizes
    @property
    def n_obs(self) -> int:
        return int(self.token.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.token_start.shape[0])

    @property
    def n_docs(self) -> int:
        return int(self.doc_lengths.shape[0])

    @property
    def n_workers(self) -> int:
        return len(self.worker_ids)

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    # ------------------------------------------------------------------ derived views
    @property
    def doc_start(self) -> NDArray[np.int64]:
        """ndarray of shape (n_docs + 1,): first token of each document, then n_tokens."""
        if "doc_start" not in self._cache:
            start = np.zeros(self.n_docs + 1, dtype=np.int64)
            np.cumsum(self.doc_lengths, out=start[1:])
            start.flags.writeable = False
            self._cache["doc_start"] = start
        return self._cache["doc_start"]

    @property
    def token_doc(self) -> NDArray[np.int64]:
        """ndarray of shape (n_tokens,): document index of each token."""
        if "token_doc" not in self._cache:
            td = np.repeat(np.arange(self.n_docs, dtype=np.int64), self.doc_lengths)
            td.flags.writeable = False
            self._cache["token_doc"] = td
        return self._cache["token_doc"]

    @property
    def doc_obs_start(self) -> NDArray[np.int64]:
        """ndarray of shape (n_docs + 1,): first annotation of each document, then n_obs.

        Annotations are sorted by token, so a document's are one run (empty for a document without
        tokens or annotators); found by a binary search of each document's first token.
        """
        if "doc_obs_start" not in self._cache:
            start = np.searchsorted(self.token, self.doc_start).astype(np.int64, copy=False)
            start.flags.writeable = False
            self._cache["doc_obs_start"] = start
        return self._cache["doc_obs_start"]

    @property
    def token_obs_start(self) -> NDArray[np.int64]:
        """ndarray of shape (n_tokens + 1,): first annotation of each token, then n_obs.

        Annotations are sorted by token, so a token's are one run. The check of a new corpus counts them
        (its coverage rule compares each token's run with its document's first), so a checked corpus has
        them at no further cost; a subset that skips the check counts them on first use.
        """
        if "token_obs_start" not in self._cache:
            start = np.zeros(self.n_tokens + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.token, minlength=self.n_tokens), out=start[1:])
            start.flags.writeable = False
            self._cache["token_obs_start"] = start
        return self._cache["token_obs_start"]

    @property
    def doc_annotators(self) -> NDArray[np.int64]:
        """ndarray of shape (n_docs,): how many annotators labelled each document (0 for one without tokens).

        Under a span scheme an annotator present on a document labels all of its tokens, so each of its tokens
        lists the same annotators: a document's annotations over its tokens. Under ``tags`` (partial labelling)
        the distinct annotators of each document are counted.
        """
        if "doc_annotators" not in self._cache:
            if self.tags:
                pairs = np.unique(self.obs_doc * max(self.n_workers, 1) + self.worker)
                n = np.bincount(pairs // max(self.n_workers, 1), minlength=self.n_docs)
            else:
                n = np.diff(self.doc_obs_start) // np.maximum(self.doc_lengths, 1)
            n.flags.writeable = False
            self._cache["doc_annotators"] = n
        return self._cache["doc_annotators"]

    @property
    def single_token_docs(self) -> bool:
        """True when no document has more than one token (categorical items; a document may have none), so
        each annotation is its annotator's only one on its document."""
        return self.n_docs == 0 or int(self.doc_lengths.max()) <= 1

    @property
    def worker_answers(self) -> NDArray[np.int64]:
        """ndarray of shape (n_workers,): number of annotations of each annotator (0: listed, never answered)."""
        if "worker_answers" not in self._cache:
            counts = np.zeros(self.n_workers, dtype=np.int64)
            for a in range(0, self.n_obs, BLOCK_OBS):  # bincount casts to intp: a block at a time (see BLOCK_OBS)
                counts += np.bincount(self.worker[a : a + BLOCK_OBS], minlength=self.n_workers)
            counts.flags.writeable = False
            self._cache["worker_answers"] = counts
        return self._cache["worker_answers"]

    @property
    def worker_index(self) -> NDArray[np.intp]:
        """ndarray of shape (n_obs,): ``worker`` as ``np.intp``, the type numpy indexes with (computed once).

        Gathering a per-annotator table with int32 indices converts them on every call:
        ``skills[corpus.worker]`` over 300k annotations took 1.4 ms against 0.5 ms with these.
        """
        if "worker_index" not in self._cache:
            index = self.worker.astype(np.intp)
            index.flags.writeable = False
            self._cache["worker_index"] = index
        return self._cache["worker_index"]

    @property
    def obs_cell(self) -> NDArray[np.intp]:
        """ndarray of shape (n_obs,): ``label * n_tokens + token``, each annotation's cell of a class-major table.

        The votes, posteriors and vote-derived tables of the aggregators are (n_classes,
        n_tokens) arrays (their per-class rows are contiguous); this key scatters into and
        gathers from them. Computed once per corpus.
        """
        if "obs_cell" not in self._cache:
            cell = self.label.astype(np.intp) * self.n_tokens + self.token
            cell.flags.writeable = False
            self._cache["obs_cell"] = cell
        return self._cache["obs_cell"]

    @property
    def obs_doc(self) -> NDArray[np.int64]:
        """ndarray of shape (n_obs,): document index of each annotation."""
        return self.token_doc[self.token]

    @property
    def worker_rank(self) -> NDArray[np.intp]:
        """ndarray of shape (n_workers,): each annotator's position among the annotators sorted by id.

        Readers number annotators (and documents) by first appearance, so another export of the
        same annotations numbers them otherwise. An estimator that draws one random value per
        annotator draws them in this canonical order, ``rng.uniform(size=n_workers)[worker_rank]``,
        so that a seed gives every annotator the same start whatever the row order.
        """
        if "worker_rank" not in self._cache:
            self._cache["worker_rank"] = _ranks(np.argsort(np.array(self.worker_ids, dtype=object), kind="stable"))
        return self._cache["worker_rank"]

    @property
    def obs_rank(self) -> NDArray[np.intp]:
        """ndarray of shape (n_obs,): each annotation's position in the canonical order of annotations.

        The canonical order sorts annotations by document id, then token position in the
        document, then annotator id (:attr:`worker_rank`): ``rng.normal(size=n_obs)[obs_rank]``
        gives each annotation the same draw for any row order of an export.
        """
        if "obs_rank" not in self._cache:
            order = np.lexsort((self.worker_rank[self.worker], self.token_rank[self.token]))
            self._cache["obs_rank"] = _ranks(order)
        return self._cache["obs_rank"]

    @property
    def token_rank(self) -> NDArray[np.intp]:
        """ndarray of shape (n_tokens,): each token's position among the tokens sorted by document id, then
        position in the document.

        An estimator whose sums run over tokens adds them in this order (renumbering the tokens by it) when its
        result must not change, even by a rounding, with the document order of an export.
        """
        if "token_rank" not in self._cache:
            doc_rank = _ranks(np.argsort(np.array(self.doc_ids, dtype=object), kind="stable"))
            position = np.arange(self.n_tokens, dtype=np.int64) - self.doc_start[:-1][self.token_doc]
            self._cache["token_rank"] = _ranks(np.lexsort((position, doc_rank[self.token_doc])))
        return self._cache["token_rank"]

    @property
    def has_outside(self) -> bool:
        """True if class 0 is the outside class ``"O"`` (span tasks); False for categorical answers and tags."""
        return not self.tags and self.class_names[0] == "O"

    @property
    def scheme(self) -> Literal["io", "bio", "tags"]:
        """``"tags"`` for a tag set (:attr:`tags`), else ``"bio"`` if any class name starts with ``B-``, else
        ``"io"``."""
        if self.tags:
            return "tags"
        return "bio" if any(c.startswith("B-") for c in self.class_names) else "io"

    def token_items(self) -> Corpus:
        """The same annotations with every token its own one-token document (id ``"<doc_id>:<position>"``).

        What per-token scoring reads a tag corpus as: each token is an item, as a categorical answer is, so
        every count that pairs an annotator with a document pairs it with a token.
        """
        if "token_items" not in self._cache:
            position = np.arange(self.n_tokens, dtype=np.int64) - self.doc_start[:-1][self.token_doc]
            ids = [f"{self.doc_ids[d]}:{p}" for d, p in zip(self.token_doc.tolist(), position.tolist(), strict=True)]
            words = [self.texts[d][a:b] for d, a, b in zip(self.token_doc.tolist(), self.token_start.tolist(),
                                                           self.token_end.tolist(), strict=True)]
            items = Corpus(token=self.token, worker=self.worker, label=self.label,
                           doc_lengths=np.ones(self.n_tokens, dtype=np.int64),
                           token_start=np.zeros(self.n_tokens, dtype=np.int64),
                           token_end=np.fromiter(map(len, words), dtype=np.int64, count=self.n_tokens),
                           doc_ids=tuple(ids), texts=tuple(words), worker_ids=self.worker_ids,
                           worker_roles=self.worker_roles, class_names=self.class_names, tags=self.tags)
            self._cache["token_items"] = items
        return self._cache["token_items"]

    @property
    def entity_types(self) -> tuple[str, ...]:
        """Entity types in class order, without ``"O"``: ``("PER", "LOC")``."""
        seen: dict[str, None] = {}
        for c in self.class_names[1:]:
            seen.setdefault(entity_type(c), None)
        return tuple(seen)

    @property
    def class_entity(self) -> NDArray[np.int64]:
        """ndarray of shape (n_classes,): entity-type index + 1 of each class (0 for ``O``)."""
        types = {t: i + 1 for i, t in enumerate(self.entity_types)}
        return np.array([0] + [types[entity_type(c)] for c in self.class_names[1:]], dtype=np.int64)

    def workers_with_role(self, role: str) -> NDArray[np.int64]:
        """Indices of the annotators with this role (``"crowd"`` or ``"expert"``)."""
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, found {role!r}")
        return np.flatnonzero(np.asarray(self.worker_roles) == role) if self.n_workers else np.zeros(0, np.int64)

    def select_workers(self, workers: NDArray | list[int]) -> Corpus:
        """Keep only the annotations of these annotator indices (the vocabulary is kept).

        When every annotation is kept the corpus itself is returned (it is immutable), not a checked copy.
        """
        keep = np.isin(self.worker, np.asarray(workers, dtype=np.int64))
        return self if keep.all() else self._with_obs(keep, whole_workers=True)

    def select_role(self, role: str) -> Corpus:
        """Keep only the annotations of annotators with this role."""
        return self.select_workers(self.workers_with_role(role))

    def labels_of(self, worker: int) -> NDArray[np.int64]:
        """Dense labels of one annotator: ndarray of shape (n_tokens,), ``MISSING`` where absent."""
        out = np.full(self.n_tokens, MISSING, dtype=np.int64)
        m = self.worker == worker
        out[self.token[m]] = self.label[m]
        return out

    def vote_counts(self, weights: NDArray | None = None) -> NDArray[np.float64]:
        """Per-token label counts: ndarray of shape (n_tokens, n_classes).

        ``weights`` (shape (n_workers,)) weighs each annotator's vote; default 1.
        """
        w = None if weights is None else np.asarray(weights, dtype=np.float64)[self.worker]
        flat = np.bincount(
            self.token * self.n_classes + self.label,
            weights=w,
            minlength=self.n_tokens * self.n_classes,
        )
        return flat.reshape(self.n_tokens, self.n_classes).astype(np.float64, copy=False)

    def token_text(self, i: int) -> str:
        """The text of global token ``i``."""
        d = int(self.token_doc[i])
        return self.texts[d][int(self.token_start[i]) : int(self.token_end[i])]

    def doc_tokens(self, d: int) -> list[str]:
        """The token strings of document ``d``."""
        s, e = int(self.doc_start[d]), int(self.doc_start[d + 1])
        text = self.texts[d]
        return [text[a:b] for a, b in zip(self.token_start[s:e].tolist(), self.token_end[s:e].tolist(), strict=True)]

    def _with_obs(self, keep: NDArray[np.bool_], *, whole_workers: bool = False) -> Corpus:
        """The annotations where ``keep`` is set, checked as any new corpus is.

        ``whole_workers=True`` (:meth:`select_workers`) says ``keep`` selects whole annotators; the subset is
        then not checked again: the rows of a valid corpus kept in order stay sorted and unique, their indices
        in range, and an annotator kept whole still labels every token of its documents or none. Validation
        runs once, where a corpus enters, not again before each fit.
        """
        arrays = {name: getattr(self, name)[keep] for name in ("token", "worker", "label")}
        if not whole_workers:
            return dataclasses.replace(self, **arrays)
        sub = object.__new__(Corpus)
        for name, value in {**vars(self), **arrays, "_cache": {}}.items():
            object.__setattr__(sub, name, value)
        sub._freeze()
        return sub

    # ------------------------------------------------------------------ equality
    def equals(self, other: Corpus) -> bool:
        """True if both corpora hold identical arrays and vocabularies."""
        arrays = ("token", "worker", "label", "doc_lengths", "token_start", "token_end")
        meta = ("doc_ids", "texts", "worker_ids", "worker_roles", "class_names", "tags")
        return all(np.array_equal(getattr(self, a), getattr(other, a)) for a in arrays) and all(
            getattr(self, m) == getattr(other, m) for m in meta
        )

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Write the corpus to one ``.npz`` file (:meth:`to_bytes`), atomically (temp file + rename)."""
        path = Path(path)
        data = self.to_bytes()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def to_bytes(self) -> bytes:
        """The bytes of the ``.npz`` file :meth:`save` writes and :meth:`load` reads (deflate level 1)."""
        meta = {
            "version": _FORMAT_VERSION,
            "doc_ids": self.doc_ids,
            "texts": self.texts,
            "worker_ids": self.worker_ids,
            "worker_roles": self.worker_roles,
            "class_names": self.class_names,
            **({"tags": True} if self.tags else {}),  # absent in span and categorical corpora, as before
        }
        return npz_bytes(
            {"token": self.token, "worker": self.worker, "label": self.label, "doc_lengths": self.doc_lengths,
             "token_start": self.token_start, "token_end": self.token_end,
             "meta": np.frombuffer(json.dumps(meta, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)},
            compresslevel=1,
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> Corpus:
        """Read a corpus written by :meth:`save` (a file the server wrote; uploads are read by
        ``crowdqa.ingest``, which bounds their decompression first)."""
        with np.load(path, allow_pickle=False) as z:
            return cls.from_saved(z, source=str(path))

    @classmethod
    def from_saved(cls, arrays: Mapping[str, NDArray], *, source: str = "corpus") -> Corpus:
        """A corpus from the arrays of a file written by :meth:`save`; ValueError or KeyError otherwise."""
        meta = json.loads(np.asarray(arrays["meta"]).tobytes().decode("utf-8"))
        if meta.get("version") != _FORMAT_VERSION:
            raise ValueError(f"{source}: corpus file version {_FORMAT_VERSION} expected, found {meta.get('version')}")
        return cls(
            token=arrays["token"],
            worker=arrays["worker"],
            label=arrays["label"],
            doc_lengths=arrays["doc_lengths"],
            token_start=arrays["token_start"],
            token_end=arrays["token_end"],
            doc_ids=tuple(meta["doc_ids"]),
            texts=tuple(meta["texts"]),
            worker_ids=tuple(meta["worker_ids"]),
            worker_roles=tuple(meta["worker_roles"]),
            class_names=tuple(meta["class_names"]),
            tags=bool(meta.get("tags", False)),
        )


def _check_corpus(c: Corpus) -> None:
    """Validate a corpus once, vectorised; raise ValueError naming expected vs found."""
    expected_dtypes = {
        "token": np.int64,
        "worker": np.int32,
        "label": np.int16,
        "doc_lengths": np.int64,
        "token_start": np.int64,
        "token_end": np.int64,
    }
    for name, dt in expected_dtypes.items():
        a = getattr(c, name)
        if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype != dt:
            found = f"{a.dtype} array of ndim {a.ndim}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ValueError(f"{name} must be a 1-D {np.dtype(dt).name} array, found {found}")
    n_obs = c.token.shape[0]
    if c.worker.shape[0] != n_obs or c.label.shape[0] != n_obs:
        raise ValueError(
            f"token, worker and label must have one length, found {n_obs}, "
            f"{c.worker.shape[0]}, {c.label.shape[0]}"
        )
    n_docs = c.doc_lengths.shape[0]
    if len(c.doc_ids) != n_docs or len(c.texts) != n_docs:
        raise ValueError(
            f"doc_ids and texts must have n_docs={n_docs} entries, found {len(c.doc_ids)} and {len(c.texts)}"
        )
    if len(set(c.doc_ids)) != n_docs:
        raise ValueError("doc_ids must be unique")
    if n_docs and c.doc_lengths.min() < 0:
        raise ValueError("doc_lengths must be >= 0")
    n_tokens = int(c.doc_lengths.sum())
    if c.token_start.shape[0] != n_tokens or c.token_end.shape[0] != n_tokens:
        raise ValueError(
            f"token_start and token_end must have n_tokens={n_tokens} entries, "
            f"found {c.token_start.shape[0]} and {c.token_end.shape[0]}"
        )
    if n_tokens and (np.any(c.token_start < 0) or np.any(c.token_end < c.token_start)):
        bad = int(np.flatnonzero((c.token_start < 0) | (c.token_end < c.token_start))[0])
        raise ValueError(f"token offsets must satisfy 0 <= start <= end, found token {bad}")
    if n_tokens:
        text_len = np.fromiter(map(len, c.texts), dtype=np.int64, count=n_docs)
        tdoc = np.repeat(np.arange(n_docs), c.doc_lengths)
        over = c.token_end > text_len[tdoc]
        if np.any(over):
            bad = int(np.flatnonzero(over)[0])
            raise ValueError(
                f"token {bad} ends at {int(c.token_end[bad])}, past the end of document "
                f"{c.doc_ids[tdoc[bad]]!r} (length {int(text_len[tdoc[bad]])})"
            )
    n_workers = len(c.worker_ids)
    if len(c.worker_roles) != n_workers:
        raise ValueError(f"worker_roles must have {n_workers} entries, found {len(c.worker_roles)}")
    if len(set(c.worker_ids)) != n_workers:
        raise ValueError("worker_ids must be unique")
    bad_roles = sorted(set(c.worker_roles) - set(ROLES))
    if bad_roles:
        raise ValueError(f"worker_roles must be 'crowd' or 'expert', found {bad_roles[0]!r}")
    if not c.class_names:
        raise ValueError("class_names must name at least one class, found none")
    if len(set(c.class_names)) != len(c.class_names):
        raise ValueError("class_names must be unique")
    if n_obs == 0:
        return
    for name, hi in (("token", n_tokens), ("worker", n_workers), ("label", len(c.class_names))):
        a = getattr(c, name)
        out = (a < 0) | (a >= hi)
        if np.any(out):
            row = int(np.flatnonzero(out)[0])
            raise ValueError(f"{name} index must be in [0, {hi}), found {int(a[row])} at row {row}")
    _check_sorted_unique(c, n_workers)
    if not c.tags:  # a tag set may be labelled token by token; a span scheme is labelled whole documents
        _check_coverage(c)


_CHUNK = 1 << 20  # rows per chunk: keeps validation's temporaries near 10 MB at any corpus size


def run_indices(start: NDArray, length: NDArray) -> NDArray[np.int64]:
    """The indices of runs laid end to end: ``start[0] .. start[0] + length[0] - 1``, then the next run's.

    One ``repeat`` of each run's offset and one ``arange``, no loop over the runs (a document's
    annotations from :attr:`Corpus.doc_obs_start`, a span's tokens, ...).

    >>> run_indices(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist()
    [5, 6, 9, 10, 11]
    """
    start = np.asarray(start, dtype=np.int64)
    length = np.asarray(length, dtype=np.int64)
    return np.repeat(start - (np.cumsum(length) - length), length) + np.arange(int(length.sum()), dtype=np.int64)


def _ranks(order: NDArray) -> NDArray[np.intp]:
    """The inverse of a permutation: ``ranks[order[i]] == i``, read-only."""
    ranks = np.empty(order.size, dtype=np.intp)
    ranks[order] = np.arange(order.size, dtype=np.intp)
    ranks.flags.writeable = False
    return ranks


def first_unordered_row(token: NDArray, worker: NDArray, n_workers: int) -> int | None:
    """The first row whose ``(token, worker)`` key is not above the previous row's, or None.

    Rows in corpus order strictly increase in ``token * n_workers + worker``; a row equal
    to its predecessor is a duplicate, a smaller one is out of order. Checked in chunks, so
    the temporaries stay near 10 MB at any corpus size.
    """
    n_obs = token.shape[0]
    for a in range(0, n_obs - 1, _CHUNK):
        b = min(a + _CHUNK + 1, n_obs)
        step = np.diff(token[a:b] * max(n_workers, 1) + worker[a:b])
        if np.any(step <= 0):
            return a + int(np.flatnonzero(step <= 0)[0]) + 1
    return None


def sort_rows(
    token: NDArray, worker: NDArray, label: NDArray, n_workers: int, *, inplace: bool = False
) -> tuple[NDArray, NDArray, NDArray]:
    """Triplets sorted by ``(token, worker)``, stable, with their labels.

    Rows already in order are returned as they are. When only the annotators within a
    token are out of order (tokens non-decreasing, as after appending uploads of
    different documents), each chunk of whole tokens is sorted on its own, so the
    temporaries stay near the chunk size; otherwise one global stable argsort.
    ``inplace=True`` lets the chunked sort reorder the caller's ``worker`` and ``label``.
    """
    n_w = max(n_workers, 1)
    if first_unordered_row(token, worker, n_w) is None:
        return token, worker, label
    n_obs = token.shape[0]
    tokens_ordered = all(
        np.all(np.diff(token[a : min(a + _CHUNK + 1, n_obs)]) >= 0) for a in range(0, n_obs - 1, _CHUNK)
    )
    if not tokens_ordered:
        order = np.argsort(token * n_w + worker, kind="stable")
        return token[order], worker[order], label[order]
    if not inplace:
        worker, label = worker.copy(), label.copy()
    a = 0
    while a < n_obs:
        b = min(a + _CHUNK, n_obs)
        if b < n_obs:  # end the chunk on a token boundary
            b = int(np.searchsorted(token, token[b], side="left"))
            if b <= a:
                b = int(np.searchsorted(token, token[a], side="right"))
        order = np.argsort((token[a:b] - token[a]) * n_w + worker[a:b], kind="stable")
        worker[a:b] = worker[a:b][order]
        label[a:b] = label[a:b][order]
        a = b
    return token, worker, label


def _check_sorted_unique(c: Corpus, n_workers: int) -> None:
    """Rows strictly increase in ``token * n_workers + worker``: sorted and without duplicates."""
    row = first_unordered_row(c.token, c.worker, n_workers)
    if row is not None:
        same = c.token[row] == c.token[row - 1] and c.worker[row] == c.worker[row - 1]
        what = "duplicate (token, worker)" if same else "triplets not sorted by (token, worker)"
        raise ValueError(f"{what} at row {row}; use Corpus.from_arrays to sort")


def _check_coverage(c: Corpus) -> None:
    """An annotator present on a document labels every token of it.

    Rows are sorted by (token, worker), so every token's annotators form a sorted block;
    coverage holds iff each token's block equals the block of its document's first
    token. Compared row by row through an offset per token, in chunks, without sorting.
    """
    block, doc_start = c.token_obs_start, c.doc_start
    per_token = np.diff(block)
    first = np.repeat(doc_start[:-1], c.doc_lengths)
    bad = np.flatnonzero(per_token != per_token[first])
    if bad.size:
        _raise_coverage(c, int(bad[0]), block, doc_start)
    offset = block[first] - block[:-1]
    n_obs = c.token.shape[0]
    for a in range(0, n_obs, _CHUNK):
        b = min(a + _CHUNK, n_obs)
        tok = c.token[a:b]
        mismatch = c.worker[np.arange(a, b) + offset[tok]] != c.worker[a:b]
        if np.any(mismatch):
            _raise_coverage(c, int(tok[np.flatnonzero(mismatch)[0]]), block, doc_start)


def _raise_coverage(c: Corpus, t: int, block: NDArray, doc_start: NDArray) -> None:
    """Name an annotator who labels some but not all tokens of token ``t``'s document."""
    d = int(np.searchsorted(doc_start, t, side="right") - 1)
    f = int(doc_start[d])
    here = set(c.worker[block[t] : block[t + 1]].tolist())
    there = set(c.worker[block[f] : block[f + 1]].tolist())
    w = min(here ^ there)
    rows = c.worker[block[f] : block[doc_start[d + 1]]]
    raise ValueError(
        f"annotator {c.worker_ids[w]!r} labels {int(np.count_nonzero(rows == w))} of the "
        f"{int(c.doc_lengths[d])} tokens of document {c.doc_ids[d]!r}; under a span scheme (io, bio) an annotator "
        f"labels all tokens of a document or none (a span cut by an unlabelled token is ambiguous); the tags "
        f"scheme lets an annotator label any tokens"
    )


def npz_bytes(arrays: dict[str, NDArray], *, compresslevel: int | None) -> bytes:
    """The ``.npz`` archive of ``arrays`` that :func:`numpy.load` reads, without pickle.

    ``compresslevel`` is zlib's deflate level, or None to store the arrays uncompressed.
    :func:`numpy.savez_compressed` always deflates at zlib's default level 6, which costs
    about five times level 1's time on the integer codes of a corpus for a few percent of size,
    and gains almost nothing on floating-point posteriors; uploads and jobs write these once and
    a user waits for them.
    """
    buf = io.BytesIO()
    method = zipfile.ZIP_STORED if compresslevel is None else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(buf, "w", compression=method, compresslevel=compresslevel) as zf:
        for name, array in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(array), allow_pickle=False)
    return buf.getvalue()
