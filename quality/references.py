"""The expert reference labels that workers and aggregates are scored against.

EBM-NLP (Nye et al., ACL 2018) scores against the *union* of its experts: a token
is positive if any expert marked it. A reference here is one label per token,
``MISSING`` (-1) where no expert labelled the token's document.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus

__all__ = ["reference_labels", "leave_one_out_references", "RULES"]

RULES = ("union", "majority")


def reference_labels(corpus: Corpus, *, rule: str = "union") -> NDArray[np.int64]:
    """Combine the experts' labels into one reference label per token.

    Parameters
    ----------
    corpus : Corpus
        Annotators with role ``"expert"`` give the reference.
    rule : str, default="union"
        ``"union"``: a token is positive if any expert marked it non-``O``; its class is
        the most frequent non-``O`` expert label there (lowest class index on ties).
        ``"majority"``: the most frequent label among the experts who labelled the
        token, ``O`` included (lowest class index on ties). Any other value is taken
        as one annotator's worker id (``corpus.worker_ids``), whose labels are used as is.

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        Class indices; ``MISSING`` where no expert labelled the token.

    Raises
    ------
    ValueError
        If ``rule`` is neither a rule nor a known worker id.

    Examples
    --------
    >>> c = Corpus.from_arrays(token=[0, 0, 1, 1], worker=[0, 1, 0, 1], label=[1, 0, 0, 0],
    ...     doc_lengths=[2, 1], token_start=[0, 2, 0], token_end=[1, 3, 1], doc_ids=["a", "b"],
    ...     texts=["x y", "z"], worker_ids=["e1", "e2"], worker_roles=["expert", "expert"],
    ...     class_names=["O", "P"])
    >>> reference_labels(c).tolist(), reference_labels(c, rule="majority").tolist()
    ([1, 0, -1], [0, 0, -1])
    """
    if rule not in RULES:
        if rule not in corpus.worker_ids:
            raise ValueError(
                f"reference must be one of {RULES} or an annotator id, found {rule!r}"
            )
        return corpus.labels_of(corpus.worker_ids.index(rule))
    out = np.full(corpus.n_tokens, MISSING, dtype=np.int64)
    _, token, _, row, counts = _expert_counts(corpus)
    out[token[np.flatnonzero(np.diff(row, prepend=-1))]] = _rule_labels(counts, rule=rule)
    return out


def _expert_counts(corpus: Corpus) -> tuple[NDArray, NDArray, NDArray, NDArray, NDArray]:
    """The experts' annotations (indices, tokens, labels), each one's distinct token (0, 1, ... in token
    order: annotations are sorted by token) and the expert label counts of each distinct token
    (n_expert_tokens, n_classes). Only the experts' annotations are read past one gather of roles."""
    is_expert = np.asarray(corpus.worker_roles) == "expert"
    rows = np.flatnonzero(is_expert[corpus.worker]) if corpus.n_workers else np.zeros(0, dtype=np.int64)
    token = corpus.token[rows]
    label = corpus.label[rows].astype(np.int64)
    row = np.cumsum(np.diff(token, prepend=-1) != 0) - 1
    n_distinct = int(row[-1]) + 1 if row.size else 0
    k = corpus.n_classes
    counts = np.bincount(row * k + label, minlength=n_distinct * k).reshape(n_distinct, k)
    return rows, token, label, row, counts


def _rule_labels(counts: NDArray, *, rule: str) -> NDArray[np.int64]:
    """The reference label of each row of expert label counts under ``rule`` (see :func:`reference_labels`).

    Parameters
    ----------
    counts : ndarray of shape (n_rows, n_classes)
        Expert labels of each class on a token; every row has at least one.
    rule : {"union", "majority"}

    Returns
    -------
    ndarray of shape (n_rows,), int64
    """
    # argmax returns the lowest index among ties: the documented tie rule.
    if rule == "union":
        pos = counts[:, 1:]
        return np.where(pos.sum(axis=1) > 0, pos.argmax(axis=1) + 1, 0)
    return counts.argmax(axis=1)


def leave_one_out_references(corpus: Corpus, *, rule: str = "union") -> dict[int, tuple[NDArray, NDArray, NDArray]]:
    """Every expert's labels beside the reference made by the *other* experts, from the experts' labels alone.

    Parameters
    ----------
    corpus : Corpus
    rule : {"union", "majority"}, default="union"

    Returns
    -------
    dict of int to (token, label, reference)
        For each expert index: the tokens the expert and at least one other expert labelled (sorted),
        the expert's labels there, and :func:`reference_labels` of the corpus without that expert there.
        Experts who share no token with another expert are absent.

    Notes
    -----
    One count of the expert labels per token serves every expert: an expert's leave-one-out counts on a
    token are the token's counts less their own label, so the cost follows the experts' labels, not the
    number of experts times the corpus.
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, found {rule!r}")
    rows, token, label, row, counts = _expert_counts(corpus)
    worker = corpus.worker[rows]
    others = counts[row]  # (n_expert_obs, n_classes): the token's counts ...
    others[np.arange(rows.shape[0]), label] -= 1  # ... without this annotation
    shared = others.sum(axis=1) > 0
    ref = _rule_labels(others[shared], rule=rule)
    token, worker, label = token[shared], worker[shared], label[shared]
    order = np.argsort(worker, kind="stable")  # by expert, tokens still sorted within each
    bounds = np.flatnonzero(np.diff(worker[order])) + 1
    return {int(worker[o[0]]): (token[o], label[o], ref[o]) for o in np.split(order, bounds) if o.size}
