"""The expert reference labels that workers and aggregates are scored against.

EBM-NLP (Nye et al., ACL 2018) scores against the *union* of its experts: a token
is positive if any expert marked it. A reference here is one label per token,
``MISSING`` (-1) where no expert labelled the token's document.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus

__all__ = ["reference_labels", "RULES"]

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
    is_expert = np.asarray(corpus.worker_roles) == "expert"
    keep = is_expert[corpus.worker] if corpus.n_workers else np.zeros(corpus.n_obs, dtype=bool)
    out = np.full(corpus.n_tokens, MISSING, dtype=np.int64)
    if not np.any(keep):
        return out
    # Only the experts' tokens are counted: annotations are sorted by token, so the distinct tokens are
    # the starts of runs.
    token = corpus.token[keep]
    label = corpus.label[keep].astype(np.int64)
    new = np.concatenate([[True], token[1:] != token[:-1]])
    covered = token[new]
    row = np.cumsum(new) - 1
    n_classes = corpus.n_classes
    counts = np.bincount(row * n_classes + label, minlength=covered.shape[0] * n_classes)
    counts = counts.reshape(covered.shape[0], n_classes)
    if rule == "union":
        pos = counts[:, 1:]
        # argmax returns the lowest index among ties: the documented tie rule.
        out[covered] = np.where(pos.sum(axis=1) > 0, pos.argmax(axis=1) + 1, 0)
    else:
        out[covered] = counts.argmax(axis=1)
    return out
