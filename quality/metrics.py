"""Token-wise precision, recall and F1 of one label source against a reference.

The EBM-NLP evaluation (Nye et al., ACL 2018) scores crowd workers and aggregates
token by token: a token is *positive* if its label is not ``O`` (span detection),
and precision, recall and F1 are taken over the tokens both sources cover. This
module computes those scores, per label (one-vs-rest over the non-``O`` classes)
with micro and macro averages, and the per-group counts (per document, per worker)
that intervals and reports are built from. Everything is a count by ``bincount``.

Conventions
-----------
* ``MISSING`` (-1) in either array means "not covered": the token is left out.
* A ratio whose denominator is 0 is *undefined* and returned as ``nan``
  (``precision`` when nothing was predicted positive, ``recall`` when the
  reference has no positive, ``f1 = 2 tp / (2 tp + fp + fn)`` when both are
  empty). JSON reports print it as ``null``. This differs from scikit-learn's
  ``zero_division=0`` (which would score a worker who marked nothing on a
  document with nothing to find as 0) and is pinned by a test.
* When defined, ``f1`` equals the harmonic mean of precision and recall, and is
  0 when ``tp == 0``.
* Macro averages are the unweighted mean over labels that occur in the
  reference or the prediction, an undefined per-label value counting as 0
  (scikit-learn's ``average="macro"`` with ``zero_division=0`` over those labels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import MISSING

__all__ = ["PRF", "prf_from_counts", "safe_ratio", "token_counts", "token_prf", "per_label_prf", "grouped_counts",
           "grouped_outcomes"]


@dataclass(frozen=True)
class PRF:
    """Precision, recall and F1 with the counts they came from.

    Attributes
    ----------
    tp, fp, fn : int
    precision, recall, f1 : float
        ``nan`` where undefined (see the module notes).
    """

    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    f1: float

    def as_dict(self) -> dict:
        """Plain JSON-ready dict; ``nan`` becomes ``None``."""
        return {
            "precision": _none_if_nan(self.precision),
            "recall": _none_if_nan(self.recall),
            "f1": _none_if_nan(self.f1),
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
        }


def _none_if_nan(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def safe_ratio(num: NDArray | float, den: NDArray | float) -> NDArray[np.float64]:
    """``num / den`` elementwise, ``nan`` where ``den == 0``."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def prf_from_counts(tp: NDArray | int, fp: NDArray | int, fn: NDArray | int) -> tuple[NDArray, NDArray, NDArray]:
    """Precision, recall and F1 from counts, elementwise.

    Parameters
    ----------
    tp, fp, fn : array-like of one shape

    Returns
    -------
    precision, recall, f1 : ndarray of that shape, float64 (``nan`` where undefined)
    """
    tp = np.asarray(tp, dtype=np.float64)
    fp = np.asarray(fp, dtype=np.float64)
    fn = np.asarray(fn, dtype=np.float64)
    if np.any(tp < 0) or np.any(fp < 0) or np.any(fn < 0):
        raise ValueError("counts must be >= 0, found a negative count")
    return safe_ratio(tp, tp + fp), safe_ratio(tp, tp + fn), safe_ratio(2 * tp, 2 * tp + fp + fn)


def make_prf(tp: int, fp: int, fn: int) -> PRF:
    """A :class:`PRF` from scalar counts."""
    p, r, f = prf_from_counts(tp, fp, fn)
    return PRF(int(tp), int(fp), int(fn), float(p), float(r), float(f))


def _check_pair(pred: NDArray, ref: NDArray) -> tuple[NDArray, NDArray]:
    pred = np.asarray(pred)
    ref = np.asarray(ref)
    if pred.ndim != 1 or pred.shape != ref.shape:
        raise ValueError(f"prediction and reference must be 1-D of one shape, found {pred.shape} and {ref.shape}")
    for name, a in (("prediction", pred), ("reference", ref)):
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{name} must hold integer class indices, found dtype {a.dtype}")
        if a.size and a.min() < MISSING:
            raise ValueError(f"{name} labels must be >= -1 (MISSING), found {int(a.min())}")
    return pred.astype(np.int64, copy=False), ref.astype(np.int64, copy=False)


def token_counts(pred: NDArray, ref: NDArray, *, mask: NDArray | None = None) -> tuple[int, int, int]:
    """Binary token counts (positive = any non-``O`` label) over tokens both cover.

    Parameters
    ----------
    pred, ref : ndarray of shape (n_tokens,)
        Class indices, ``MISSING`` where a source did not label the token.
    mask : ndarray of shape (n_tokens,) of bool, optional
    outside : bool, default=True
        Whether class 0 is the outside class ``O`` (span tasks), which is not a label.
        Categorical answers (``False``) score every class, class 0 included.
        Further restrict the tokens compared.

    Returns
    -------
    tp, fp, fn : int
    """
    pred, ref = _check_pair(pred, ref)
    both = (pred != MISSING) & (ref != MISSING)
    if mask is not None:
        both &= np.asarray(mask, dtype=bool)
    p = (pred > 0) & both
    r = (ref > 0) & both
    return int(np.count_nonzero(p & r)), int(np.count_nonzero(p & ~r)), int(np.count_nonzero(~p & r))


def token_prf(pred: NDArray, ref: NDArray, *, mask: NDArray | None = None) -> PRF:
    """Token-wise span-detection scores (positive = non-``O``) of ``pred`` against ``ref``.

    Parameters
    ----------
    pred, ref : ndarray of shape (n_tokens,)
    mask : ndarray of shape (n_tokens,) of bool, optional

    Returns
    -------
    PRF

    Examples
    --------
    >>> s = token_prf(np.array([1, 1, 0, -1]), np.array([1, 0, 1, 1]))
    >>> (s.tp, s.fp, s.fn, s.precision)
    (1, 1, 1, 0.5)
    """
    return make_prf(*token_counts(pred, ref, mask=mask))


def per_label_prf(
    pred: NDArray, ref: NDArray, *, n_classes: int, mask: NDArray | None = None, outside: bool = True
) -> dict[str, object]:
    """Per-label one-vs-rest scores over the non-``O`` classes, with micro and macro averages.

    Parameters
    ----------
    pred, ref : ndarray of shape (n_tokens,)
    n_classes : int
    mask : ndarray of shape (n_tokens,) of bool, optional

    Returns
    -------
    dict
        ``tp``, ``fp``, ``fn``, ``precision``, ``recall``, ``f1``: ndarrays of shape
        (n_classes,) (entry 0, ``O``, is not a label and holds zeros / ``nan``);
        ``micro``: :class:`PRF` over classes 1..n_classes-1 (labels must agree);
        ``macro``: dict of ``precision``, ``recall``, ``f1`` floats.
    """
    pred, ref = _check_pair(pred, ref)
    if pred.size and max(pred.max(), ref.max()) >= n_classes:
        raise ValueError(f"labels must be < n_classes={n_classes}, found {int(max(pred.max(), ref.max()))}")
    both = (pred != MISSING) & (ref != MISSING)
    if mask is not None:
        both &= np.asarray(mask, dtype=bool)
    p, r = pred[both], ref[both]
    # Confusion counts with rows = reference, columns = prediction.
    cm = np.bincount(r * n_classes + p, minlength=n_classes * n_classes).reshape(n_classes, n_classes)
    tp = np.diag(cm).copy()
    fp = cm.sum(axis=0) - tp
    fn = cm.sum(axis=1) - tp
    if outside:
        tp[0] = fp[0] = fn[0] = 0
    prec, rec, f1 = prf_from_counts(tp, fp, fn)
    present = (tp + fp + fn) > 0
    if outside:
        prec[0] = rec[0] = f1[0] = np.nan
        present[0] = False
    if np.any(present):
        macro = {k: float(np.mean(np.nan_to_num(v[present], nan=0.0))) for k, v in
                 (("precision", prec), ("recall", rec), ("f1", f1))}
    else:
        macro = {"precision": float("nan"), "recall": float("nan"), "f1": float("nan")}
    micro = make_prf(int(tp.sum()), int(fp.sum()), int(fn.sum()))
    return {"tp": tp, "fp": fp, "fn": fn, "precision": prec, "recall": rec, "f1": f1, "micro": micro, "macro": macro}


def grouped_counts(
    pred_pos: NDArray[np.bool_], ref_pos: NDArray[np.bool_], group: NDArray, *, n_groups: int
) -> NDArray[np.int64]:
    """Binary tp/fp/fn per group (per document, per worker) in one pass of ``bincount``.

    Parameters
    ----------
    pred_pos, ref_pos : ndarray of shape (n_obs,) of bool
        Whether the compared source and the reference are positive, for each compared pair.
    group : ndarray of shape (n_obs,) of int
        Group index of each pair, in ``[0, n_groups)``.
    n_groups : int

    Returns
    -------
    counts : ndarray of shape (n_groups, 3)
        Columns tp, fp, fn.
    """
    return grouped_outcomes(pred_pos, ref_pos, group, n_groups=n_groups)[:, [3, 2, 1]]


def grouped_outcomes(
    pred_pos: NDArray[np.bool_], ref_pos: NDArray[np.bool_], group: NDArray, *, n_groups: int,
    mask: NDArray[np.bool_] | None = None,
) -> NDArray[np.int64]:
    """The four binary outcomes per group, over the rows in ``mask`` (default all), in one ``bincount``.

    Parameters
    ----------
    pred_pos, ref_pos : ndarray of shape (n_obs,) of bool
    group : ndarray of shape (n_obs,) of int
        Group index of each row, in ``[0, n_groups)``.
    n_groups : int
    mask : ndarray of shape (n_obs,) of bool, optional
        The rows compared; the others are counted nowhere.

    Returns
    -------
    outcomes : ndarray of shape (n_groups, 4)
        Columns tn, fn, fp, tp (``2 * pred_pos + ref_pos``); a group with a compared row has a
        positive row sum.
    """
    pred_pos = np.asarray(pred_pos, dtype=bool)
    ref_pos = np.asarray(ref_pos, dtype=bool)
    group = np.asarray(group)
    if not (pred_pos.shape == ref_pos.shape == group.shape) or (mask is not None and mask.shape != group.shape):
        raise ValueError(f"pred_pos, ref_pos, group and mask must have one shape, found {pred_pos.shape}, "
                         f"{ref_pos.shape}, {group.shape}" + ("" if mask is None else f", {mask.shape}"))
    if mask is not None and 4 * np.count_nonzero(mask) < mask.shape[0]:  # few rows compared: take them first
        pred_pos, ref_pos, group, mask = pred_pos[mask], ref_pos[mask], group[mask], None
    # One code per row, built in place: group * 4 + 2 * pred_pos + ref_pos (a row left out: the last slot).
    code = np.multiply(group, 4, dtype=np.intp)
    code += pred_pos
    code += pred_pos
    code += ref_pos
    if mask is not None:
        code[~mask] = 4 * n_groups
    return np.bincount(code, minlength=4 * n_groups + 1)[:4 * n_groups].reshape(n_groups, 4)
