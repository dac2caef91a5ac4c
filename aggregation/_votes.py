"""Vote counting: per-token (weighted) label counts, the tie rule, and what a vote fits.

The shared kernel of :class:`~crowdqa.aggregation.majority_vote.MajorityVote`, the skill-weighted
votes (:mod:`~crowdqa.aggregation.wawa` and its siblings), Dawid-Skene's vote initialisation and
HMM-Crowd's hard counts. The vote is ``np.bincount`` over ``label * n_tokens + token``, block by
block (:func:`vote_counts`); ties are resolved by a documented, deterministic rule
(:func:`break_ties`, :data:`TIE_RULES`) rather than by whichever label happens to be seen first.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation._base import one_hot_columns
from crowdqa.aggregation._confusion import empirical_confusion
from crowdqa.aggregation.corpus import BLOCK_OBS, Corpus

__all__ = ["TIE_RULES", "break_ties", "vote_counts", "vote_fit", "vote_labels"]

#: ``"lowest"``: the lowest class index among the tied classes (``O`` wins an
#: ``O``/entity tie). ``"entity"``: a tie between ``O`` and one or more non-``O``
#: classes goes to the lowest tied non-``O`` class; ties without ``O`` are as "lowest".
TIE_RULES = ("entity", "lowest")


def _token_blocks(corpus: Corpus) -> list[tuple[int, int, int, int]]:
    """Blocks of whole tokens of about :data:`BLOCK_OBS` annotations each (the corpus is sorted by token).

    Returns
    -------
    blocks : list of (first token, end token, first annotation, end annotation)
        Together they cover every token, the unlabelled ones included.
    """
    cuts = np.concatenate(([0], corpus.token[BLOCK_OBS::BLOCK_OBS], [corpus.n_tokens]))
    obs = np.searchsorted(corpus.token, cuts)
    return [b for b in zip(cuts[:-1].tolist(), cuts[1:].tolist(), obs[:-1].tolist(), obs[1:].tolist(), strict=True)
            if b[0] < b[1]]


def _vote_blocks(
    corpus: Corpus, weights: NDArray[np.float64] | None, *, tie_break: str
) -> Iterator[tuple[int, int, NDArray[np.float64], NDArray[np.int64]]]:
    """The class-major (weighted) label counts and the winning classes, block by block of whole tokens.

    :meth:`Corpus.vote_counts` transposed, built as such: the vote and its tie rule then
    run along contiguous rows (one elementwise operation per class), where reductions over
    the short last axis of an (n_tokens, n_classes) array are many times slower. Counted and
    decided block by block (:func:`_token_blocks`; why: :data:`~crowdqa.aggregation.corpus.BLOCK_OBS`),
    one ``np.bincount`` each, so that what a caller keeps of a block (the counts, their fractions,
    only the winners) is taken while the block is in cache.

    Yields
    ------
    t0, t1 : int
        The block's first and end token; the blocks cover every token, in order.
    votes : ndarray of shape (n_classes, t1 - t0)
    labels : ndarray of shape (t1 - t0,)
        :func:`break_ties` of ``votes`` under ``tie_break``; on categorical answers (no outside class
        to avoid) every tie goes to the lowest index.
    """
    n_classes = corpus.n_classes
    tie_break = tie_break if corpus.has_outside else "lowest"
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    for t0, t1, o0, o1 in _token_blocks(corpus):
        width = t1 - t0
        cell = np.multiply(corpus.label[o0:o1], width, dtype=np.intp)  # label * width + token - t0, in place
        cell += corpus.token[o0:o1]
        cell -= t0
        block = np.bincount(cell, weights=None if w is None else w.take(corpus.worker[o0:o1]),
                            minlength=n_classes * width).reshape(n_classes, width)
        yield t0, t1, block, break_ties(block, tie_break=tie_break)


def vote_counts(
    corpus: Corpus, weights: NDArray[np.float64] | None = None, *, tie_break: str = "lowest"
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per-token (weighted) label counts, class-major, and the winning class of each token (:func:`_vote_blocks`).

    Returns
    -------
    votes : ndarray of shape (n_classes, n_tokens)
    labels : ndarray of shape (n_tokens,)
    """
    votes = np.empty((corpus.n_classes, corpus.n_tokens))
    labels = np.empty(corpus.n_tokens, dtype=np.int64)
    for t0, t1, block, winners in _vote_blocks(corpus, weights, tie_break=tie_break):
        votes[:, t0:t1] = block
        labels[t0:t1] = winners
    return votes, labels


def vote_labels(
    corpus: Corpus, weights: NDArray[np.float64] | None = None, *, tie_break: str = "lowest"
) -> NDArray[np.int64]:
    """The winning class of each token alone: no (n_classes, n_tokens) table is built (:func:`_vote_blocks`)."""
    labels = np.empty(corpus.n_tokens, dtype=np.int64)
    for t0, t1, _, winners in _vote_blocks(corpus, weights, tie_break=tie_break):
        labels[t0:t1] = winners
    return labels


def break_ties(votes: NDArray[np.float64], *, tie_break: str) -> NDArray[np.int64]:
    """The winning class of each column of class-major ``votes`` under the tie rule.

    Parameters
    ----------
    votes : ndarray of shape (n_classes, n_tokens)
        (Weighted) vote counts (see :func:`vote_counts`).
    tie_break : {"entity", "lowest"}
        See :data:`TIE_RULES`.

    Returns
    -------
    labels : ndarray of shape (n_tokens,)
        Columns with no votes get class 0.
    """
    n_classes, n_tokens = votes.shape
    if n_classes == 0:
        return np.zeros(n_tokens, dtype=np.int64)
    top = votes.max(axis=0)
    # Weighted votes are float sums of weights >= 0; classes within a few ulps of the top count are tied.
    floor = top - 16 * np.finfo(np.float64).eps * np.maximum(top, 1.0)
    # The lowest tied class from `first` on wins ("entity": first = 1; "lowest": first = 0). Counting, class
    # by class, the columns whose classes first..k are all below the top gives that index minus `first`
    # without a boolean-mask assignment per class (those cost 20x an elementwise operation).
    first = 1 if tie_break == "entity" and n_classes > 1 else 0
    below = votes[first] < floor
    labels = below.astype(np.int64)
    for k in range(first + 1, n_classes - 1):  # one pass per class, each over all tokens
        below &= votes[k] < floor
        labels += below
    labels += first
    if first:  # "entity" with no tied class after O: O is the only top class
        below &= votes[n_classes - 1] < floor
        labels *= ~below
    return labels



def vote_fit(
    corpus: Corpus, weights: NDArray[np.float64] | None, *, tie_break: str, known: NDArray[np.int64] | None
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """What :class:`MajorityVote` fits, for checked ``weights`` and ``known``; the skill-weighted votes end with it.

    Returns
    -------
    labels : ndarray of shape (n_tokens,)
    proba : ndarray of shape (n_tokens, n_classes)
    class_prior : ndarray of shape (n_classes,)
    worker_confusion : ndarray of shape (n_workers, n_classes, n_classes)
    """
    n_tokens, n_classes = corpus.n_tokens, corpus.n_classes
    proba = np.empty((n_classes, n_tokens))  # class-major; the vote fractions, block by block
    labels = np.empty(n_tokens, dtype=np.int64)
    informed = np.empty(n_tokens, dtype=bool)
    with np.errstate(invalid="ignore"):  # 0/0 in tokens nobody voted on, replaced below
        for t0, t1, block, winners in _vote_blocks(corpus, weights, tie_break=tie_break):
            labels[t0:t1] = winners
            total = block.sum(axis=0)
            np.greater(total, 0, out=informed[t0:t1])
            np.divide(block, total, out=proba[:, t0:t1])
    if known is not None:
        idx = np.flatnonzero(known >= 0)
        one_hot_columns(proba, idx, known[idx])
        labels[idx] = known[idx]
        informed[idx] = True
    n_informed = int(np.count_nonzero(informed))
    blank = np.flatnonzero(~informed) if n_informed < n_tokens else np.empty(0, dtype=np.intp)  # a scan saved
    if blank.size:
        proba[:, blank] = 0.0
    prior = proba.sum(axis=1) / n_informed if n_informed else np.full(n_classes, 1.0 / n_classes)
    proba[:, blank] = prior[:, None]
    labels[blank] = int(np.argmax(prior))  # lowest index on ties
    # proba.T: (n_tokens, n_classes), a view of the class-major buffer
    return labels, proba.T, prior, empirical_confusion(corpus, labels)

