"""A synthetic tag-sequence crowd with a known transition matrix, and partial labelling of real crowds.

:func:`tag_crowd` draws sentences from a Markov chain over a tag set (a part-of-speech-like chain: a few
frequent tags, each strongly predicting the next), each token's word from a per-tag vocabulary with words
shared between tags (as "run" is a noun and a verb), and crowd labels token by token: every token gets
``labels_per_token`` annotators drawn from the crowd, each answering through its own confusion matrix, so a
worker labels scattered tokens of a sentence (a HIT per token), never the whole sentence. The expert labels
the truth on every token. Both are returned as a :class:`~crowdqa.aggregation.corpus.Corpus` of the ``tags``
scheme.

:func:`hide_per_token` keeps each annotation of a corpus with a probability (per token, independently), the
partial labelling of a crowd that labelled whole sentences; :func:`hide_per_sentence` keeps or drops each
(annotator, document) pair whole, the same share of labels as whole sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus

__all__ = ["TagCrowd", "tag_crowd", "pos_like_chain", "hide_per_token", "hide_per_sentence"]

#: A universal part-of-speech-like tag set (Petrov, Das, McDonald 2012's twelve tags).
POS_TAGS = ("ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT", "PUNCT", "VERB", "X")


@dataclass(frozen=True)
class TagCrowd:
    """A synthetic crowd and what generated it."""

    corpus: Corpus  # crowd and expert labels, tags scheme
    truth: NDArray[np.int64]  # (n_tokens,) true tag of every token
    start: NDArray[np.float64]  # (n_classes,) the chain's start distribution
    transition: NDArray[np.float64]  # (n_classes, n_classes) the chain's transition matrix, rows sum to 1
    confusion: NDArray[np.float64]  # (n_workers, n_classes, n_classes) each worker's answer distribution


def pos_like_chain(n_classes: int, *, rng: np.random.Generator, sharpness: float = 0.15
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A start distribution and a transition matrix where each tag strongly predicts a few successors.

    Each row is a Dirichlet(``sharpness``) draw (small: most mass on one to three tags) mixed with 5% of a
    uniform row, so every move is possible.
    """
    trans = rng.dirichlet(np.full(n_classes, sharpness), size=n_classes)
    trans = 0.95 * trans + 0.05 / n_classes
    start = 0.9 * rng.dirichlet(np.full(n_classes, 0.5)) + 0.1 / n_classes
    return start, trans


def tag_crowd(*, n_docs: int = 400, n_workers: int = 60, n_classes: int = 12, labels_per_token: int = 5,
              mean_length: int = 14, vocab_per_tag: int = 30, shared_words: float = 0.3,
              accuracy: tuple[float, float] = (6.0, 2.5), shared_errors: float = 0.0, sharpness: float = 0.15,
              seed: int = 0) -> TagCrowd:
    """Draw a synthetic tag-sequence crowd (see the module notes).

    Parameters
    ----------
    n_docs, n_workers, n_classes : int
    labels_per_token : int
        Annotators drawn (without replacement) for every token.
    mean_length : int
        Sentence lengths are 3 + Poisson(mean_length - 3).
    vocab_per_tag : int
        Words of each tag's vocabulary.
    shared_words : float
        Share of each tag's words that another tag also emits (ambiguous words).
    accuracy : (float, float), default=(6.0, 2.5)
        Beta parameters of the workers' accuracies (mean ``a / (a + b)``).
    shared_errors : float, default=0.0
        Weight of one confusion pattern all workers share in their wrong answers (systematic errors, as one
        tag mistaken for another by most of a crowd); the rest is each worker's own.
    sharpness : float, default=0.15
        Dirichlet concentration of the transition rows (:func:`pos_like_chain`): smaller, more predictable.
    seed : int

    Returns
    -------
    TagCrowd
    """
    if not 1 <= labels_per_token <= n_workers:
        raise ValueError(f"labels_per_token must be in [1, n_workers={n_workers}], found {labels_per_token}")
    rng = np.random.default_rng(seed)
    start, trans = pos_like_chain(n_classes, rng=rng, sharpness=sharpness)
    lengths = 3 + rng.poisson(mean_length - 3, size=n_docs)
    n_tokens = int(lengths.sum())
    doc_start = np.r_[0, np.cumsum(lengths)[:-1]]
    first = np.zeros(n_tokens, dtype=bool)
    first[doc_start] = True
    # The chain, vectorised over documents: one step of every document at once.
    truth = np.empty(n_tokens, dtype=np.int64)
    cum_start, cum_trans = np.cumsum(start), np.cumsum(trans, axis=1)
    step = np.arange(n_tokens) - np.repeat(doc_start, lengths)
    for t in range(int(lengths.max())):
        at = np.flatnonzero(step == t)
        u = rng.random(at.size)
        if t == 0:
            truth[at] = np.minimum(np.searchsorted(cum_start, u, side="right"), n_classes - 1)
        else:
            prev = truth[at - 1]
            truth[at] = np.minimum((u[:, None] > cum_trans[prev]).sum(axis=1), n_classes - 1)
    # Words: tag k emits word k * vocab_per_tag + j, or (shared) a word of tag (k + 1) mod K.
    j = rng.integers(0, vocab_per_tag, size=n_tokens)
    owner = np.where(rng.random(n_tokens) < shared_words, (truth + 1) % n_classes, truth)
    word = owner * vocab_per_tag + j
    # Workers: accuracy from Beta(accuracy), errors spread over a few confusable tags (shared and own).
    acc = rng.beta(*accuracy, size=n_workers)
    common = rng.dirichlet(np.full(n_classes, 0.3), size=n_classes)
    confusion = np.empty((n_workers, n_classes, n_classes))
    for w in range(n_workers):  # one small matrix per worker
        wrong = shared_errors * common + (1 - shared_errors) * rng.dirichlet(np.full(n_classes, 0.3), size=n_classes)
        np.fill_diagonal(wrong, 0.0)
        wrong /= wrong.sum(axis=1, keepdims=True)
        confusion[w] = (1 - acc[w]) * wrong + acc[w] * np.eye(n_classes)
    # Annotators per token: labels_per_token distinct workers, drawn per token.
    order = np.argsort(rng.random((n_tokens, n_workers)), axis=1)[:, :labels_per_token]
    token = np.repeat(np.arange(n_tokens), labels_per_token)
    worker = order.ravel()
    cum_conf = np.cumsum(confusion, axis=2)
    u = rng.random(token.size)
    label = np.minimum((u[:, None] > cum_conf[worker, truth[token]]).sum(axis=1), n_classes - 1)
    # The expert (last annotator) labels every token with the truth.
    token = np.r_[token, np.arange(n_tokens)]
    worker = np.r_[worker, np.full(n_tokens, n_workers)]
    label = np.r_[label, truth]
    words = [f"w{v}" for v in word.tolist()]
    texts, starts, ends = [], [], []
    for a, n in zip(doc_start.tolist(), lengths.tolist(), strict=True):
        ws = words[a:a + n]
        ln = np.fromiter(map(len, ws), dtype=np.int64, count=n)
        s = np.cumsum(ln + 1) - ln - 1
        texts.append(" ".join(ws))
        starts.append(s)
        ends.append(s + ln)
    names = POS_TAGS[:n_classes] if n_classes <= len(POS_TAGS) else tuple(f"T{k:02d}" for k in range(n_classes))
    corpus = Corpus.from_arrays(
        token=token, worker=worker, label=label, doc_lengths=lengths, token_start=np.concatenate(starts),
        token_end=np.concatenate(ends), doc_ids=[f"s{d}" for d in range(n_docs)], texts=texts,
        worker_ids=[*(f"w{w:03d}" for w in range(n_workers)), "expert"],
        worker_roles=[*(["crowd"] * n_workers), "expert"], class_names=names, tags=True)
    return TagCrowd(corpus, truth, start, trans, confusion)


def hide_per_token(corpus: Corpus, *, keep: float, seed: int, roles: tuple[str, ...] = ("crowd",)) -> Corpus:
    """``corpus`` as the ``tags`` scheme with each annotation of an annotator of ``roles`` kept with probability
    ``keep``, token by token (the others' annotations all kept)."""
    rng = np.random.default_rng(seed)
    hideable = np.isin(np.asarray(corpus.worker_roles)[corpus.worker], roles)
    kept = ~hideable | (rng.random(corpus.n_obs) < keep)
    return _subset(corpus, kept)


def hide_per_sentence(corpus: Corpus, *, keep: float, seed: int, roles: tuple[str, ...] = ("crowd",)) -> Corpus:
    """``corpus`` as the ``tags`` scheme with each (annotator, document) pair of an annotator of ``roles`` kept
    whole with probability ``keep``: the same expected share of labels as :func:`hide_per_token`, as whole
    sentences."""
    rng = np.random.default_rng(seed)
    draw = rng.random((corpus.n_docs, corpus.n_workers))
    hideable = np.isin(np.asarray(corpus.worker_roles)[corpus.worker], roles)
    kept = ~hideable | (draw[corpus.obs_doc, corpus.worker] < keep)
    return _subset(corpus, kept)


def _subset(corpus: Corpus, kept: NDArray[np.bool_]) -> Corpus:
    return Corpus(token=corpus.token[kept], worker=corpus.worker[kept], label=corpus.label[kept],
                  doc_lengths=corpus.doc_lengths, token_start=corpus.token_start, token_end=corpus.token_end,
                  doc_ids=corpus.doc_ids, texts=corpus.texts, worker_ids=corpus.worker_ids,
                  worker_roles=corpus.worker_roles, class_names=corpus.class_names, tags=True)
