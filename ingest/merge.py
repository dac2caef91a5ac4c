"""Merge corpora parsed from several uploads (crowd and expert files) into one."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus, first_unordered_row, sort_rows
from crowdqa.ingest.build import class_names_for
from crowdqa.ingest.categorical import natural_key
from crowdqa.ingest.errors import IngestError

__all__ = ["merge_corpora", "merged_classes", "drop_expert_only", "select_documents", "unmatched_ids_hint"]


def merged_classes(corpora: Sequence[Corpus]) -> tuple[str, ...]:
    """The merged label schema: span schemes by entity type, categorical answers by natural order (what
    :func:`merge_corpora` labels the merge with, and :func:`crowdqa.ingest.index.merged_class_names` a
    dataset's uploads by, from their indexes); tag sets (the ``tags`` scheme) by natural order too. Raises
    IngestError for inside/outside labels next to BIO, categorical answers next to BIO, or tags next to anything
    else."""
    tags = [c.scheme == "tags" for c in corpora]
    if any(tags) and not all(tags):
        raise IngestError("cannot merge tag labels (scheme tags) with span labels or categorical answers: read "
                          "every file of the dataset with scheme tags")
    if all(c.has_outside for c in corpora):
        schemes = {c.scheme for c in corpora if c.n_classes > 1}
        types = sorted({t for c in corpora for t in c.entity_types})
        scheme = "bio" if "bio" in schemes else "io"
        if scheme == "bio" and "io" in schemes:
            raise IngestError("cannot merge inside/outside labels into a BIO schema: upload all files with one scheme")
        return class_names_for(types, scheme)
    if any(c.scheme == "bio" for c in corpora):
        raise IngestError("cannot merge categorical answers with BIO span labels")
    return tuple(sorted({n for c in corpora for n in c.class_names}, key=natural_key))


def merge_corpora(corpora: Sequence[Corpus], *, sources: Sequence[str] | None = None) -> Corpus:
    """Merge uploads of the same (or overlapping) documents into one corpus.

    Documents are matched by id and must agree on their text and tokens; annotators
    are matched by id and must agree on their role; one annotator may not label the
    same document in two uploads. The label schema is the union of the inputs' entity
    types (sorted), under BIO if any input is BIO, else IO; an IO input merged into a
    BIO schema is an error, since its boundaries are unknown.

    Parameters
    ----------
    corpora : sequence of Corpus
    sources : sequence of str, optional
        The file each corpus was read from: an error names the file that conflicts with an earlier one (and
        that one), as the API's upload check (:func:`crowdqa.ingest.index.check_mergeable`) does.

    Returns
    -------
    Corpus
    """
    names = list(sources) if sources is not None else [""] * len(corpora)
    if not corpora:
        raise IngestError("nothing to merge: no corpus given")
    if len(corpora) == 1:
        return corpora[0]
    class_names = merged_classes(corpora)
    class_id = {n: i for i, n in enumerate(class_names)}

    doc_pos: dict[str, int] = {}
    texts: list[str] = []
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    worker_pos: dict[str, int] = {}
    roles: list[str] = []
    doc_source: list[int] = []  # the corpus each merged document came from first
    for i, c in enumerate(corpora):
        for d, doc_id in enumerate(c.doc_ids):
            s, e = c.doc_start[d], c.doc_start[d + 1]
            if doc_id in doc_pos:
                k = doc_pos[doc_id]
                if texts[k] != c.texts[d]:
                    how = "has a different text"
                elif not (np.array_equal(starts[k], c.token_start[s:e]) and np.array_equal(ends[k], c.token_end[s:e])):
                    how = "is tokenized differently"
                else:
                    continue
                earlier = f" (here and in {names[doc_source[k]]})" if names[doc_source[k]] else ""
                raise IngestError(f"document {doc_id!r} {how} in two uploads{earlier}", source=names[i])
            doc_pos[doc_id] = len(texts)
            doc_source.append(i)
            texts.append(c.texts[d])
            starts.append(np.asarray(c.token_start[s:e]))
            ends.append(np.asarray(c.token_end[s:e]))
        for w, wid in enumerate(c.worker_ids):
            if wid in worker_pos:
                if roles[worker_pos[wid]] != c.worker_roles[w]:
                    raise IngestError(
                        f"annotator {wid!r} is {roles[worker_pos[wid]]!r} in one upload and "
                        f"{c.worker_roles[w]!r} in another", source=names[i]
                    )
                continue
            worker_pos[wid] = len(roles)
            roles.append(c.worker_roles[w])

    lengths = np.array([len(s) for s in starts], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(lengths)])
    # Fill the merged triplets in place, one input at a time (no per-input copies to concatenate).
    n_obs = sum(c.n_obs for c in corpora)
    token = np.empty(n_obs, dtype=np.int64)
    worker = np.empty(n_obs, dtype=np.int32)
    label = np.empty(n_obs, dtype=np.int16)
    pos = 0
    for c in corpora:
        rows = slice(pos, pos + c.n_obs)
        pos += c.n_obs
        doc_map = np.array([doc_pos[d] for d in c.doc_ids], dtype=np.int64)
        w_map = np.array([worker_pos[w] for w in c.worker_ids], dtype=np.int32)
        l_map = np.array([class_id[n] for n in c.class_names], dtype=np.int16)
        # Token shift per document, gathered per token then per row (no per-row doc index kept).
        shift = np.repeat(base[doc_map] - c.doc_start[:-1], c.doc_lengths)
        np.take(shift, c.token, out=token[rows])
        token[rows] += c.token
        np.take(w_map, c.worker, out=worker[rows])
        np.take(l_map, c.label, out=label[rows])
    # Annotator numbers change between inputs, and shared documents interleave their rows.
    token, worker, label = sort_rows(token, worker, label, len(roles), inplace=True)
    dup = first_unordered_row(token, worker, len(roles))  # sorted now, so only a repeat remains
    if dup is not None:
        d = int(np.searchsorted(base, token[dup], side="right") - 1)
        raise IngestError(
            f"duplicate assignment: annotator {list(worker_pos)[int(worker[dup])]!r} labelled document "
            f"{list(doc_pos)[d]!r} in two uploads"
        )
    arrays = dict(
        doc_lengths=lengths,
        token_start=np.concatenate(starts) if starts else np.zeros(0, np.int64),
        token_end=np.concatenate(ends) if ends else np.zeros(0, np.int64),
        doc_ids=tuple(doc_pos),
        texts=tuple(texts),
        worker_ids=tuple(worker_pos),
        worker_roles=tuple(roles),
        class_names=class_names,
    )
    return Corpus(token=token, worker=worker, label=label, tags=all(c.tags for c in corpora), **arrays)


def drop_expert_only(corpus: Corpus, *, source: str = "") -> tuple[Corpus, int]:
    """Leave out the documents (categorical: items) that only experts labelled.

    An aggregate is the crowd's: a document no crowd annotator labelled would get the model's prior (or,
    clamped, the experts' own labels) and read as if the crowd had answered it. Such documents come from an
    expert file whose ids do not match the crowd's (another prefix, another numbering) or that covers more
    than the crowd did. A corpus without crowd labels (an expert upload on its own) or without expert labels
    is returned as it is.

    Parameters
    ----------
    corpus : Corpus
    source : str, default=""
        The expert file(s), named in the error.

    Returns
    -------
    corpus : Corpus
        The documents with at least one crowd label, in their order; every annotator is kept.
    n_expert_only : int
        How many expert-labelled documents matched no crowd document and were left out.

    Raises
    ------
    IngestError
        When experts labelled documents but none of them is a crowd document (the ids do not match).
    """
    crowd_docs, expert_docs = _role_documents(corpus)
    expert_only = expert_docs & ~crowd_docs
    if not crowd_docs.any() or not expert_only.any():
        return corpus, 0
    n_expert_only = int(np.count_nonzero(expert_only))
    if not (expert_docs & crowd_docs).any():
        crowd_ids = [corpus.doc_ids[d] for d in np.flatnonzero(crowd_docs)[:3]]
        expert_ids = [corpus.doc_ids[d] for d in np.flatnonzero(expert_docs)[:3]]
        alike = unmatched_ids_hint(corpus)
        raise IngestError(f"none of the {n_expert_only} expert documents (items) matches a crowd document by id "
                          f"(expert ids {expert_ids}, crowd ids {crowd_ids}{'; ' + alike if alike else ''}): "
                          "the expert labels grade nothing", source=source)
    return select_documents(corpus, crowd_docs), n_expert_only


def unmatched_ids_hint(corpus: Corpus) -> str:
    """Expert-only document ids that are a crowd document's id written otherwise (case, surrounding spaces, a
    number's form: ``Q1``/``q1``, ``7``/``7.0``), as a phrase naming up to three (empty when there are none).

    Ids are matched exactly, so such documents are left out of the aggregate and the scores; the phrase is
    added to what :func:`drop_expert_only` raises and to the note of the documents it left out."""
    from crowdqa.ingest.vocabulary import written_otherwise

    crowd_docs, expert_docs = _role_documents(corpus)
    expert_only = [corpus.doc_ids[d] for d in np.flatnonzero(expert_docs & ~crowd_docs)]
    pairs = written_otherwise(expert_only, [corpus.doc_ids[d] for d in np.flatnonzero(crowd_docs)], limit=3,
                              say_how=False)
    return f"ids written otherwise: {', '.join(pairs)}" if pairs else ""


def _role_documents(corpus: Corpus) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Which documents a crowd annotator and which an expert labelled: two masks of shape (n_docs,)."""
    is_expert = np.asarray([r == "expert" for r in corpus.worker_roles], dtype=bool)
    if corpus.n_obs == 0 or not is_expert.size:
        return np.zeros(corpus.n_docs, dtype=bool), np.zeros(corpus.n_docs, dtype=bool)
    by_expert = is_expert[corpus.worker]
    doc = corpus.obs_doc
    return (np.bincount(doc[~by_expert], minlength=corpus.n_docs) > 0,
            np.bincount(doc[by_expert], minlength=corpus.n_docs) > 0)


def select_documents(corpus: Corpus, keep: NDArray[np.bool_]) -> Corpus:
    """The documents where ``keep`` (shape (n_docs,)) is set, with their tokens and annotations, in order."""
    keep_token = np.repeat(keep, corpus.doc_lengths)
    new_token = np.cumsum(keep_token) - 1  # a kept token's index in the subset
    rows = keep_token[corpus.token]
    return Corpus(token=new_token[corpus.token[rows]], worker=corpus.worker[rows], label=corpus.label[rows],
                  doc_lengths=corpus.doc_lengths[keep], token_start=corpus.token_start[keep_token],
                  token_end=corpus.token_end[keep_token],
                  doc_ids=tuple(d for d, k in zip(corpus.doc_ids, keep.tolist(), strict=True) if k),
                  texts=tuple(t for t, k in zip(corpus.texts, keep.tolist(), strict=True) if k),
                  worker_ids=corpus.worker_ids, worker_roles=corpus.worker_roles, class_names=corpus.class_names,
                  tags=corpus.tags)
