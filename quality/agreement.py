"""Inter-annotator agreement: Cohen's kappa, Fleiss' kappa, Krippendorff's alpha, pairwise F1.

All functions take integer class indices with ``MISSING`` (-1) for "not labelled"
and count with ``bincount``; none loops over items.

Edge convention
---------------
A chance-corrected coefficient ``(p_o - p_e) / (1 - p_e)`` is *undefined* when the
expected agreement ``p_e`` is 1 (both raters used one and the same class throughout,
or Krippendorff's expected disagreement is 0). It is returned as ``nan`` (JSON
``null``), never as 1 or 0: scikit-learn's ``cohen_kappa_score`` does the same
(``replace_undefined_by=np.nan``) and a test pins it. With fewer than one
comparable item the coefficient is also ``nan``.

References
----------
.. [1] J. Cohen (1960). A coefficient of agreement for nominal scales. Educational and
   Psychological Measurement 20(1), 37-46. doi:10.1177/001316446002000104
.. [2] J. L. Fleiss (1971). Measuring nominal scale agreement among many raters.
   Psychological Bulletin 76(5), 378-382. doi:10.1037/h0031619
.. [3] K. Krippendorff (2011). Computing Krippendorff's alpha-reliability. Annenberg
   School for Communication, University of Pennsylvania.
.. [4] G. Hripcsak, A. S. Rothschild (2005). Agreement, the F-measure, and reliability in
   information retrieval. JAMIA 12(3), 296-298. doi:10.1197/jamia.M1733
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.quality.metrics import PRF, token_prf

__all__ = [
    "cohen_kappa",
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
    "krippendorff_alpha_corpus",
    "pairwise_f1",
    "pairwise_kappa",
]


def cohen_kappa(a: NDArray, b: NDArray, *, n_classes: int | None = None) -> float:
    """Cohen's kappa of two raters over the items both labelled.

    Parameters
    ----------
    a, b : ndarray of shape (n_items,)
        Class indices, ``MISSING`` where a rater did not label an item.
    n_classes : int, optional
        Number of classes; default one more than the largest label seen.

    Returns
    -------
    float
        ``(p_o - p_e) / (1 - p_e)``; ``nan`` when ``p_e == 1`` or no item is shared.

    Examples
    --------
    >>> round(cohen_kappa(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0])), 6)
    0.5
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be 1-D of one shape, found {a.shape} and {b.shape}")
    both = (a != MISSING) & (b != MISSING)
    a, b = a[both], b[both]
    if a.size == 0:
        return float("nan")
    if min(a.min(), b.min()) < 0:
        raise ValueError(f"labels must be >= -1, found {int(min(a.min(), b.min()))}")
    k = int(max(a.max(), b.max())) + 1 if n_classes is None else n_classes
    cm = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(np.float64)
    n = cm.sum()
    p_o = np.trace(cm) / n
    p_e = float(cm.sum(axis=1) @ cm.sum(axis=0)) / (n * n)
    if np.isclose(p_e, 1.0, rtol=0.0, atol=1e-15):
        return float("nan")
    return float((p_o - p_e) / (1.0 - p_e))


def fleiss_kappa(counts: NDArray) -> float:
    """Fleiss' kappa from per-item category counts.

    Parameters
    ----------
    counts : ndarray of shape (n_items, n_classes)
        ``counts[i, c]`` raters put item ``i`` in class ``c``; every item must have
        the same number of raters (at least 2).

    Returns
    -------
    float
        ``nan`` when the expected agreement is 1.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[0] == 0:
        raise ValueError(f"counts must have shape (n_items, n_classes) with n_items >= 1, found {counts.shape}")
    m = counts.sum(axis=1)
    if np.any(m != m[0]) or m[0] < 2:
        raise ValueError(f"every item needs one number of raters >= 2, found {np.unique(m).tolist()}")
    r = m[0]
    p_i = ((counts * counts).sum(axis=1) - r) / (r * (r - 1))
    p_bar = p_i.mean()
    p_c = counts.sum(axis=0) / counts.sum()
    p_e = float(p_c @ p_c)
    if np.isclose(p_e, 1.0, rtol=0.0, atol=1e-15):
        return float("nan")
    return float((p_bar - p_e) / (1.0 - p_e))


def _alpha_from_counts(counts: NDArray) -> float:
    """Krippendorff's nominal alpha from per-unit value counts (n_units, n_classes)."""
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    if counts.shape[0] == 0:
        return float("nan")
    # Coincidence matrix o[c, k] = sum_u n_uc (n_uk - [c == k]) / (m_u - 1), all units at once.
    w = 1.0 / (m - 1.0)
    o = (counts * w[:, None]).T @ counts
    o[np.diag_indices_from(o)] -= (counts * w[:, None]).sum(axis=0)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    observed = o.sum() - np.trace(o)
    expected = (n_c.sum() ** 2 - n_c @ n_c) / (n - 1.0)
    if expected <= 0:
        return float("nan")
    return float(1.0 - observed / expected)


def krippendorff_alpha_nominal(data: NDArray) -> float:
    """Krippendorff's alpha for nominal data with missing values.

    Parameters
    ----------
    data : ndarray of shape (n_workers, n_items)
        Values as numbers; ``nan`` (or ``MISSING`` for integer input) marks a missing value.
        Units with fewer than two values are not pairable and are left out.

    Returns
    -------
    float
        ``1 - D_o / D_e``; ``nan`` when no unit is pairable or ``D_e == 0``.
    """
    data = np.asarray(data, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"data must have shape (n_workers, n_items), found {data.shape}")
    present = np.isfinite(data) & (data != MISSING)
    values, codes = np.unique(data[present], return_inverse=True)
    n_classes = max(len(values), 1)
    item = np.nonzero(present)[1]
    counts = np.bincount(item * n_classes + codes, minlength=data.shape[1] * n_classes)
    return _alpha_from_counts(counts.reshape(data.shape[1], n_classes))


def krippendorff_alpha_corpus(corpus: Corpus, *, workers: NDArray | None = None) -> float:
    """Krippendorff's nominal alpha over a corpus' tokens, every annotator a coder.

    Parameters
    ----------
    corpus : Corpus
    workers : ndarray of int, optional
        Annotator indices to include; default all.

    Returns
    -------
    float
    """
    token, label = corpus.token, corpus.label.astype(np.int64)
    if workers is not None:
        keep = np.isin(corpus.worker, np.asarray(workers, dtype=np.int64))
        token, label = token[keep], label[keep]
    k = corpus.n_classes
    counts = np.bincount(token * k + label, minlength=corpus.n_tokens * k).reshape(corpus.n_tokens, k)
    return _alpha_from_counts(counts)


def pairwise_kappa(corpus: Corpus, workers: NDArray, *, min_overlap: int = 1) -> list[dict]:
    """Cohen's kappa for every pair of the given annotators that share at least ``min_overlap`` tokens.

    Parameters
    ----------
    corpus : Corpus
    workers : ndarray of int
        Annotator indices (e.g. the experts).
    min_overlap : int, default=1

    Returns
    -------
    list of dict
        ``{"a", "b", "tokens", "kappa"}`` with worker ids; ``kappa`` is ``None`` when undefined.
    """
    workers = [int(w) for w in workers]
    dense = {w: corpus.labels_of(w) for w in workers}
    out = []
    for i, wa in enumerate(workers):
        for wb in workers[i + 1:]:
            shared = int(np.count_nonzero((dense[wa] != MISSING) & (dense[wb] != MISSING)))
            if shared < min_overlap:
                continue
            kappa = cohen_kappa(dense[wa], dense[wb], n_classes=corpus.n_classes)
            out.append({
                "a": corpus.worker_ids[wa],
                "b": corpus.worker_ids[wb],
                "tokens": shared,
                "kappa": None if not np.isfinite(kappa) else kappa,
            })
    return out


def pairwise_f1(a: NDArray, b: NDArray) -> PRF:
    """F1 of rater ``a`` against rater ``b`` as an agreement measure (Hripcsak & Rothschild 2005).

    Swapping ``a`` and ``b`` swaps precision and recall and leaves F1 unchanged, which is
    why clinical NLP evaluations report it when kappa is ill-defined for spans.

    Parameters
    ----------
    a, b : ndarray of shape (n_tokens,)

    Returns
    -------
    PRF
    """
    return token_prf(a, b)
