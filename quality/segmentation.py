"""Segmentation scores: boundary similarity B (segeval) and the ClinAIS / Sec-CodiEsp B2.

A segmentation is a *boundary string*: one set of boundary types per position.
Here each set is an integer bit mask (bit ``t`` set = a boundary of type ``t``), so
the string is an int64 array and the set algebra of segeval is vectorised as
``&``, ``|`` and ``^`` over all positions at once.

Boundary edit distance (Fournier 2013) finds, in order, (1) *transpositions*: a
boundary of type ``d`` that the two strings place ``k`` positions apart
(``1 <= k < n_t``), taken greedily for ``k = 1, 2, ...`` and positions left to
right, skipping one that would overlap an earlier transposition of ``d`` or remove
two substitutions; (2) per position, *substitutions* (pairs of different types,
matched in sorted type order) and *additions* (the rest). Candidate transpositions
are found with array operations; only those candidates (a handful of boundaries,
never every token) go through the sequential greedy checks.

B = (|A| + |S| + |T| + |M| - edits) / (|A| + |S| + |T| + |M|), 1 when nothing is
counted; ``M`` are the matching boundaries; segeval's default weights count an
addition as 1, a substitution as its ordinal distance over the type range, and a
transposition as its distance over ``n_t``.

B2 is the ClinAIS section-identification metric (de la Iglesia et al., 2023), as
its reference code implements it (github.com/Iker0610/Sec-Identification-in-Spanish-
Clinical-Notes @3049dde, evaluation/segeval/similarity/{weight,boundary}.py), with
``n_t = 40`` and

* ``w_A(n) = n (0.75 + tanh(n - 3.5) / 4)`` for the total number ``n`` of additions
  (0 when ``n = 0``; the code writes ``tanh((n - 1.5) - 2)``);
* ``w_S = 1.3`` per substitution;
* ``w_T(d) = 0`` for a transposition over ``d <= 2`` positions, else
  ``0.35 + tanh((d - 15) / 10) / 3``;
* denominator ``|A| + |S| + |T| + |M| + (|T| - w_T)`` and the numerator
  ``denominator - edits`` clipped at 0 (the code's ``if numerator < 0``).

References
----------
.. [1] C. Fournier (2013). Evaluating text segmentation using boundary edit distance.
   ACL 2013, 1702-1712. https://aclanthology.org/P13-1167
.. [2] I. de la Iglesia, M. Vivó, P. Chocrón, G. de Maeztu, K. Gojenola, A. Atutxa (2023).
   An open source corpus and automatic tool for section identification in Spanish health
   records. Journal of Biomedical Informatics 145, 104461. doi:10.1016/j.jbi.2023.104461
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BoundaryEdits",
    "boundary_edits",
    "boundary_string_from_masses",
    "boundary_string_from_sections",
    "boundary_similarity",
    "boundary_similarity_strings",
    "b2_similarity",
]


@dataclass(frozen=True)
class BoundaryEdits:
    """The edits between two boundary strings (``a`` = hypothesis, ``b`` = reference).

    Attributes
    ----------
    matches : int
    additions : list of (type, side)
        ``side`` is ``"a"`` (only the hypothesis has it) or ``"b"``.
    substitutions : list of (type_a, type_b)
    transpositions : list of (i, j, type)
    """

    matches: int
    additions: list = field(default_factory=list)
    substitutions: list = field(default_factory=list)
    transpositions: list = field(default_factory=list)


def _bits(mask: int) -> list[int]:
    return [t for t in range(mask.bit_length()) if mask >> t & 1]


def boundary_string_from_masses(masses: NDArray | list[int], *, boundary_type: int = 1) -> NDArray[np.int64]:
    """segeval's boundary string of a segmentation given as segment masses (lengths).

    Parameters
    ----------
    masses : array-like of int, shape (n_segments,)

    Returns
    -------
    ndarray of shape (sum(masses) - 1,), int64
        Bit ``boundary_type`` set where a segment ends.
    """
    masses = np.asarray(masses, dtype=np.int64)
    if masses.ndim != 1 or masses.size == 0 or np.any(masses < 1):
        raise ValueError(f"masses must be a non-empty 1-D array of integers >= 1, found {masses.tolist()}")
    out = np.zeros(int(masses.sum()) - 1, dtype=np.int64)
    out[np.cumsum(masses)[:-1] - 1] = 1 << boundary_type
    return out


def boundary_string_from_sections(labels: NDArray) -> NDArray[np.int64]:
    """ClinAIS boundary string of per-token section labels.

    Parameters
    ----------
    labels : ndarray of shape (n_tokens,) of int
        Section class index of each token (``0 <= label < 63``).

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        Token 0 and every token whose section differs from its predecessor's hold the
        bit of their section label; other positions are 0.
    """
    labels = np.asarray(labels, dtype=np.int64)
    if labels.ndim != 1 or (labels.size and (labels.min() < 0 or labels.max() >= 63)):
        raise ValueError("labels must be a 1-D array of class indices in [0, 63)")
    starts = np.ones(labels.shape, dtype=bool)
    starts[1:] = labels[1:] != labels[:-1]
    return np.where(starts, np.left_shift(1, labels), 0).astype(np.int64)


def boundary_edits(a: NDArray, b: NDArray, *, n_t: int = 2) -> BoundaryEdits:
    """Boundary edit distance operations between two boundary strings.

    Parameters
    ----------
    a, b : ndarray of shape (n_positions,), int64 bit masks
    n_t : int, default=2
        Transpositions span at most ``n_t - 1`` positions.

    Returns
    -------
    BoundaryEdits
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"boundary strings must be 1-D of one length, found {a.shape} and {b.shape}")
    if n_t < 1:
        raise ValueError(f"n_t must be >= 1, found {n_t}")
    matches = int(sum(bin(int(x)).count("1") for x in (a & b)[(a & b) != 0]))
    # Potential set edits per position: a-only and b-only types (their union is the symmetric difference).
    only_a = a & ~b
    only_b = b & ~a
    diff_orig = a ^ b
    placed = np.zeros_like(a)  # types already used by a transposition at each position
    transpositions: list[tuple[int, int, int]] = []
    n = a.shape[0]
    for k in range(1, n_t):
        if k >= n:
            break
        i = np.arange(n - k)
        j = i + k
        cand = (a[i] ^ b[i]) & (a[j] ^ b[j]) & (a[i] ^ a[j]) & (b[i] ^ b[j])
        for pos in np.flatnonzero(cand):
            pi, pj = int(i[pos]), int(j[pos])
            for d in _bits(int(cand[pos])):
                bit = 1 << d
                if (placed[pi] | placed[pj]) & bit:
                    continue  # would overlap a transposition of this type
                # Both positions would lose a substitution: keep the substitutions instead.
                sub_i = bool(only_a[pi]) and bool(only_b[pi])
                sub_j = bool(only_a[pj]) and bool(only_b[pj])
                in_both = diff_orig[pi] != 0 and diff_orig[pj] != 0
                if in_both and ((only_a[pi] | only_b[pi]) & bit) and ((only_a[pj] | only_b[pj]) & bit) \
                        and sub_i and sub_j:
                    continue
                transpositions.append((pi, pj, d))
                placed[pi] |= bit
                placed[pj] |= bit
                for p in (pi, pj):
                    only_a[p] &= ~bit
                    only_b[p] &= ~bit
    additions: list[tuple[int, str]] = []
    substitutions: list[tuple[int, int]] = []
    for p in np.flatnonzero(only_a | only_b):
        ta, tb = _bits(int(only_a[p])), _bits(int(only_b[p]))
        m = min(len(ta), len(tb))
        substitutions.extend(zip(ta[:m], tb[:m], strict=True))
        additions.extend((t, "a") for t in ta[m:])
        additions.extend((t, "b") for t in tb[m:])
    return BoundaryEdits(matches, additions, substitutions, transpositions)


def boundary_similarity(hypothesis: NDArray | list[int], reference: NDArray | list[int], *, n_t: int = 2) -> float:
    """segeval's boundary similarity B of two segmentations given as masses.

    Parameters
    ----------
    hypothesis, reference : array-like of int
        Segment masses; they must sum to the same length.
    n_t : int, default=2

    Returns
    -------
    float

    Examples
    --------
    >>> boundary_similarity([2, 3, 6], [5, 6])
    0.5
    """
    a = boundary_string_from_masses(hypothesis)
    b = boundary_string_from_masses(reference)
    if a.shape != b.shape:
        raise ValueError(f"segmentations must have one length, found {a.size + 1} and {b.size + 1}")
    return boundary_similarity_strings(a, b, n_t=n_t)


def boundary_similarity_strings(a: NDArray, b: NDArray, *, n_t: int = 2, unweighted: bool = False) -> float:
    """Boundary similarity B of two boundary strings (bit masks).

    Parameters
    ----------
    a, b : ndarray of shape (n_positions,), int64
        Hypothesis and reference.
    n_t : int, default=2
    unweighted : bool, default=False
        Count every edit as 1 (segeval's ``weight_a, weight_s, weight_t``) instead of
        segeval's default scaled substitutions and transpositions.

    Returns
    -------
    float
    """
    e = boundary_edits(a, b, n_t=n_t)
    if unweighted:
        w_s, w_t = float(len(e.substitutions)), float(len(e.transpositions))
    else:
        both = np.concatenate([np.asarray(a, np.int64), np.asarray(b, np.int64)])
        types = sorted({t for x in np.unique(both).tolist() for t in _bits(int(x))}) or [1]
        w_s = sum(abs(x - y) for x, y in e.substitutions) / (max(types) - min(types) + 1)
        w_t = sum(abs(i - j) for i, j, _ in e.transpositions) / n_t
    edits = len(e.additions) + w_s + w_t
    den = len(e.additions) + len(e.substitutions) + len(e.transpositions) + e.matches
    return 1.0 if den == 0 else float((den - edits) / den)


def _b2_weight_a(n: int) -> float:
    return n * (0.75 + math.tanh(n - 3.5) / 4) if n else 0.0


def _b2_weight_t(d: int) -> float:
    return 0.0 if d <= 2 else 0.35 + math.tanh((d - 15) / 10) / 3


def b2_similarity(
    hypothesis: NDArray, reference: NDArray, *, n_t: int = 40, return_edits: bool = False
) -> float | tuple[float, BoundaryEdits]:
    """The ClinAIS / Sec-CodiEsp B2 score of a predicted section segmentation.

    Parameters
    ----------
    hypothesis, reference : ndarray of shape (n_tokens,), int64 bit masks
        Boundary strings from :func:`boundary_string_from_sections`.
    n_t : int, default=40
    return_edits : bool, default=False
        Also return the :class:`BoundaryEdits`.

    Returns
    -------
    float, or (float, BoundaryEdits)
    """
    e = boundary_edits(hypothesis, reference, n_t=n_t)
    w_t = sum(_b2_weight_t(abs(i - j)) for i, j, _ in e.transpositions)
    edits = _b2_weight_a(len(e.additions)) + 1.3 * len(e.substitutions) + w_t
    den = len(e.additions) + len(e.substitutions) + len(e.transpositions) + e.matches
    den += len(e.transpositions) - w_t
    num = max(den - edits, 0.0)
    value = 1.0 if den <= 0 else float(num / den)
    return (value, e) if return_edits else value
