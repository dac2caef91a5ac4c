"""How many documents to annotate for a gold standard: SLiCE (Canales et al., 2021).

SLiCE asks for the smallest number of positive (for precision) and actual-positive
(for recall) instances whose exact Clopper-Pearson interval, at the expected value,
is narrower than ``2 * half_width``; it then completes the confusion table from the
expected precision, recall and the event's frequency, and adds the negatives that
frequency implies.

The rules follow the authors' reference code (github.com/Savanamed/slice, MIT,
``src/slice/slice.py``), which differs in two details from a reading of the paper:

* the search stops at the smallest ``n`` whose interval width is *strictly* below
  ``2 * half_width``, evaluating the interval at ``x = round(n * p)`` (Python's
  round-half-to-even);
* with ``external=False`` ("internal" frequency: the frequency was measured on the
  system's own output) the negatives are ``((tp + fp)(1 - f) - f fn) / f``; with
  ``external=True`` (measured in the population) they are ``((tp + fn)(1 - f) - f fp) / f``,
  each clipped at 0; every cell is the larger of the precision- and the recall-driven
  value, rounded half-to-even.

The per-site split divides positives and negatives by the number of sites, rounding
up, and a site's documents are their sum (the paper's example: 249 positives and 270
negatives over 6 hospitals are 42 + 45 = 87 documents each).

References
----------
.. [1] L. Canales, S. Menke, S. Marchesseau, A. D'Agostino, C. del Rio-Bermudez,
   M. Taberna, J. Tello (2021). Assessing the performance of clinical natural language
   processing systems: development of an evaluation methodology. JMIR Medical
   Informatics 9(7), e20492. doi:10.2196/20492
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from crowdqa.quality.intervals import clopper_pearson_bounds

__all__ = ["SampleSize", "binomial_sample_size", "slice_sample_size"]

_N_MAX = 10**6


@dataclass(frozen=True)
class SampleSize:
    """The SLiCE plan.

    Attributes
    ----------
    documents, positives, negatives : int
        ``documents = positives + negatives``; positives are the instances the
        system labels positive (``tp + fp``), negatives ``fn + tn``.
    tp, fp, tn, fn : int
    n_precision, n_recall : int
        Instances needed for the precision and the recall interval.
    per_site : dict or None
        ``{"sites", "documents", "positives", "negatives"}`` per site (rounded up).
    """

    documents: int
    positives: int
    negatives: int
    tp: int
    fp: int
    tn: int
    fn: int
    n_precision: int
    n_recall: int
    per_site: dict | None = None

    def as_dict(self) -> dict:
        d = asdict(self)
        if d["per_site"] is None:
            del d["per_site"]
        return d


def _check_unit(name: str, value: float, *, open_low: bool = True) -> None:
    if not (0.0 < value < 1.0) if open_low else not (0.0 <= value < 1.0):
        raise ValueError(f"{name} must be in (0, 1), found {value}")


def binomial_sample_size(p: float, *, half_width: float, confidence: float = 0.95, n_max: int = _N_MAX) -> int:
    """Smallest ``n`` whose Clopper-Pearson interval at ``x = round(n p)`` is narrower than ``2 half_width``.

    Parameters
    ----------
    p : float
        Expected proportion, in [0, 1].
    half_width : float
        Wanted interval half-width, in (0, 1).
    confidence : float, default=0.95
    n_max : int, default=10**6
        Search cap; reaching it raises ValueError.

    Returns
    -------
    int

    Notes
    -----
    Vectorised: interval widths are evaluated for blocks of candidate ``n`` at once
    (doubling block sizes) and the first one below the target is returned.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], found {p}")
    _check_unit("half_width", half_width)
    _check_unit("confidence", confidence)
    lo, size = 1, 256
    while lo <= n_max:
        n = np.arange(lo, min(lo + size, n_max + 1), dtype=np.float64)
        x = np.round(n * p)  # numpy rounds half to even, as Python's round does
        low, high = clopper_pearson_bounds(x, n, level=confidence)
        hit = np.flatnonzero(high - low < 2 * half_width)
        if hit.size:
            return int(n[hit[0]])
        lo += size
        size *= 2
    raise ValueError(f"no sample size up to {n_max} gives a half-width below {half_width}")


def slice_sample_size(
    *,
    precision: float,
    recall: float,
    frequency: float,
    half_width: float,
    confidence: float = 0.95,
    external: bool = False,
    sites: int | None = None,
) -> SampleSize:
    """Documents, positives and negatives to annotate (SLiCE).

    Parameters
    ----------
    precision, recall : float
        Expected values, in (0, 1).
    frequency : float
        Frequency of the event, in (0, 1).
    half_width : float
        Wanted half-width of the precision and recall intervals.
    confidence : float, default=0.95
    external : bool, default=False
        Whether the frequency was measured externally (in the population) rather
        than internally (on the system's output).
    sites : int, optional
        Split the sample over this many sites.

    Returns
    -------
    SampleSize

    Examples
    --------
    >>> s = slice_sample_size(precision=0.8, recall=0.85, frequency=0.3, half_width=0.05)
    >>> s.documents, s.positives, s.negatives
    (883, 265, 618)
    """
    _check_unit("precision", precision)
    _check_unit("recall", recall)
    _check_unit("frequency", frequency)
    if sites is not None and sites < 1:
        raise ValueError(f"sites must be >= 1, found {sites}")
    n_p = binomial_sample_size(precision, half_width=half_width, confidence=confidence)
    n_r = binomial_sample_size(recall, half_width=half_width, confidence=confidence)
    tp_p = n_p * precision
    tp_r = n_r * recall
    fp_p = n_p - tp_p
    fp_r = tp_r / (precision / (1 - precision))
    fn_p = tp_p / (recall / (1 - recall))
    fn_r = n_r - tp_r
    f = frequency
    if external:
        tn_p = max(0.0, ((tp_p + fn_p) * (1 - f) - f * fp_p) / f)
        tn_r = max(0.0, ((tp_r + fn_r) * (1 - f) - f * fp_r) / f)
    else:
        tn_p = max(0.0, ((tp_p + fp_p) * (1 - f) - f * fn_p) / f)
        tn_r = max(0.0, ((tp_r + fp_r) * (1 - f) - f * fn_r) / f)
    tp = round(max(tp_p, tp_r))
    fp = round(max(fp_p, fp_r))
    tn = round(max(tn_p, tn_r))
    fn = round(max(fn_p, fn_r))
    positives, negatives = tp + fp, fn + tn
    per_site = None
    if sites is not None:
        site_pos, site_neg = math.ceil(positives / sites), math.ceil(negatives / sites)
        per_site = {"sites": sites, "documents": site_pos + site_neg, "positives": site_pos, "negatives": site_neg}
    return SampleSize(
        documents=positives + negatives, positives=positives, negatives=negatives,
        tp=tp, fp=fp, tn=tn, fn=fn, n_precision=n_p, n_recall=n_r, per_site=per_site,
    )
