"""BIO rules and the decoding of token-level posteriors into valid BIO label sequences.

A token-level aggregator (Dawid-Skene, IBCC) gives each token its own posterior and,
by argmax, labels that may break BIO: ``I-ORG`` right after ``B-PER``, or an ``I-X``
after ``O``. conlleval reads such labels by one rule (an ``I-X`` that cannot continue
the current span starts a new one), which splits a span whose tokens disagree on the
type and keeps spans of one token. :func:`bio_decode` instead takes, per document, the
label sequence that maximises the product of the token posteriors among the sequences
that are valid BIO (a Viterbi pass whose transitions are 1 where BIO allows the move
and 0 where it forbids it). This is the MAP sequence under the model's own independent
token posteriors, constrained to well-formed spans; it is what "repair invalid BIO into
spans" means in this project (Simpson & Gurevych 2019, section 4, decode token-level
baselines into spans before scoring them).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._forward_backward import _bucket_index, _viterbi_corpus
from crowdqa.aggregation._sequences import doc_first
from crowdqa.aggregation.corpus import Corpus

__all__ = ["bio_decode", "bio_rules", "repair_bio", "sequence_rules"]


def bio_rules(class_names: tuple[str, ...]) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64]]:
    """Allowed starts (K,), allowed transitions (K, K) and the ``B-X`` class of each class (K,).

    ``I-X`` may follow only ``B-X`` or ``I-X`` and may not start a sequence; every
    other move is allowed (all of them when the names carry no ``B-``/``I-`` prefixes).
    An ``I-X`` whose ``B-X`` is not in the schema is left unconstrained.
    """
    k = len(class_names)
    prefix = np.array([n[:2] for n in class_names])
    kind = np.array([n[2:] if p in ("B-", "I-") else "" for n, p in zip(class_names, prefix, strict=True)])
    begin = np.arange(k)
    for j in np.flatnonzero(prefix == "I-"):
        match = np.flatnonzero((prefix == "B-") & (kind == kind[j]))
        begin[j] = match[0] if match.size else j
    constrained = begin != np.arange(k)
    same = (kind[:, None] == kind[None, :]) & (kind[:, None] != "")
    ok_trans = ~constrained[None, :] | same
    return ~constrained, ok_trans, begin


def sequence_rules(corpus: Corpus) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64]]:
    """:func:`bio_rules` of the corpus's classes, or no rule at all under the ``tags`` scheme.

    A tag set has no spans: every start and every move is allowed (and learned from the data by the
    sequence models), even where tag names look like BIO (``B-PER`` read as one tag of a tag set).
    """
    k = corpus.n_classes
    if corpus.scheme == "tags":
        return np.ones(k, dtype=bool), np.ones((k, k), dtype=bool), np.arange(k)
    return bio_rules(corpus.class_names)


def repair_bio(labels: NDArray[np.int64], *, first: NDArray[np.bool_], class_names: tuple[str, ...]
               ) -> NDArray[np.int64]:
    """``labels`` with each ``I-X`` that cannot follow its predecessor (by :func:`bio_rules`) made ``B-X``.

    An ``I-X`` after ``O``, after another type or at a sequence start begins a span under the
    conlleval rule, so turning it into ``B-X`` keeps every span that rule reads from the labels and
    makes them valid BIO. One pass suffices: the repair changes no token's type. A label of -1
    (unknown) is kept, and a label right after one is left as is.

    Parameters
    ----------
    labels : ndarray of shape (n_tokens,)
        Class indices, or -1.
    first : ndarray of shape (n_tokens,), bool
        True at the first token of each sequence (document or sentence).
    class_names : tuple of str

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        A new array.

    Examples
    --------
    >>> repair_bio(np.array([2, 2, 0, 2, 4]), first=np.array([1, 0, 0, 0, 0], bool),
    ...            class_names=("O", "B-X", "I-X", "B-Y", "I-Y")).tolist()
    [1, 2, 0, 1, 3]
    """
    ok_start, ok_trans, begin = bio_rules(class_names)
    lab = np.maximum(labels, 0)
    prev = np.concatenate([[-1], labels[:-1]])
    bad = (labels >= 0) & np.where(first, ~ok_start[lab], (prev >= 0) & ~ok_trans[np.maximum(prev, 0), lab])
    out = labels.astype(np.int64)  # a copy
    out[bad] = begin[labels[bad]]
    return out


def bio_decode(proba: NDArray[np.float64], corpus: Corpus) -> NDArray[np.int64]:
    """The most probable valid BIO labelling of each document under independent token posteriors.

    Parameters
    ----------
    proba : ndarray of shape (n_tokens, n_classes)
        Posterior of each token's class.
    corpus : Corpus
        Its ``scheme`` decides: a corpus that is not BIO gets the plain argmax (lowest class on ties).

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        ``argmax`` of ``prod_i proba[i, t_i]`` over the label sequences ``t`` of each
        document that BIO allows (ties to the lowest states, as :func:`_viterbi_corpus`).
        Where the argmax labels are valid BIO they are returned unchanged.

    Examples
    --------
    >>> c = Corpus.from_arrays(token=[0, 1], worker=[0, 0], label=[1, 2], doc_lengths=[2], token_start=[0, 2],
    ...     token_end=[1, 3], doc_ids=["d"], texts=["a b"], worker_ids=["u"], worker_roles=["crowd"],
    ...     class_names=["O", "B-X", "I-X", "B-Y", "I-Y"])
    >>> bio_decode(np.array([[.1, .6, 0, .3, 0], [.2, 0, .35, 0, .45]]), c).tolist()  # argmax: B-X I-Y
    [1, 2]
    """
    if corpus.scheme != "bio":
        return proba.argmax(axis=1).astype(np.int64)
    ok_start, ok_trans, _ = bio_rules(corpus.class_names)
    first = np.flatnonzero(doc_first(corpus))
    buckets = _bucket_index(first, lengths=np.diff(np.append(first, corpus.n_tokens)), n_tokens=corpus.n_tokens)
    # A floor instead of log(0): a clamped one-hot row that breaks BIO still leaves a valid path.
    log_frame = np.log(np.maximum(proba, 1e-300))
    return _viterbi_corpus(log_frame, log_startprob=np.where(ok_start, 0.0, -np.inf),
                           log_transmat=np.where(ok_trans, 0.0, -np.inf), buckets=buckets)
