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
    r"""Krippendorff's nominal alpha from class-major value counts.

    Parameters
    ----------
    counts : ndarray of int of shape (n_classes, n_units)
        ``counts[c, u]``: values ``c`` in unit ``u`` (class-major, so the sums over classes run
        over contiguous rows).

    Returns
    -------
    float

    Notes
    -----
    With :math:`n_{cu}` = ``counts[c, u]`` and :math:`m_u = \sum_c n_{cu}` (pairable units:
    :math:`m_u \ge 2`), the coincidence matrix is
    :math:`o_{ck} = \sum_u n_{cu} (n_{ku} - [c = k]) / (m_u - 1)`. The nominal metric only needs its
    off-diagonal sum :math:`D_o' = \sum_u (m_u^2 - \sum_c n_{cu}^2) / (m_u - 1)` and its margins
    :math:`n_c = \sum_{u\ \mathrm{pairable}} n_{cu}`, :math:`n = \sum_c n_c`, so
    ``alpha = 1 - (n - 1) D_o' / (n^2 - sum_c n_c^2)``. The numerators are integers (zero for a unit
    with one value), summed per value of :math:`m_u` before the one division each, so no
    (n_classes x n_classes) product over the units is formed.
    """
    counts = np.asarray(counts, dtype=np.int64)
    m = counts.sum(axis=0)
    pairable = m >= 2
    if not np.any(pairable):
        return float("nan")
    disagree = m * m - np.einsum("cu,cu->u", counts, counts)  # 0 where m <= 1
    per_m = np.bincount(m, weights=disagree)  # integers, exact below 2**53
    sizes = np.flatnonzero(per_m)
    observed = float(np.sum(per_m[sizes] / (sizes - 1.0)))
    n_c = (counts @ pairable.astype(np.int64)).tolist()
    n = sum(n_c)
    expected = (n * n - sum(c * c for c in n_c)) / (n - 1.0)
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
    counts = np.bincount(codes * data.shape[1] + item, minlength=n_classes * data.shape[1])
    return _alpha_from_counts(counts.reshape(n_classes, data.shape[1]))


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
    cell = corpus.obs_cell  # label * n_tokens + token, cached by the corpus
    if workers is not None:
        cell = cell[np.isin(corpus.worker, np.asarray(workers, dtype=np.int64))]
    size = corpus.n_classes * corpus.n_tokens
    return _alpha_from_counts(np.bincount(cell, minlength=size).reshape(corpus.n_classes, corpus.n_tokens))


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
