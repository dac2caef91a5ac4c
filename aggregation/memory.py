"""How much memory a fit and its report will take, estimated from the corpus's sizes before anything is allocated.

A corpus with many classes makes every method's per-annotator confusion matrices (annotators x K x K, a fitted
attribute of every aggregator) and the report's per-pair confusions (pairs x K x K) grow with the square of K:
20,000 distinct answers from 49 workers ask 147 GiB of ``MajorityVote``. Such a run is refused before it starts,
naming the estimate, its largest part and the limit, instead of dying part-way with numpy's
``ArrayMemoryError`` (or being killed by the system).

The estimates count the float64 arrays each method keeps at once, from its fit (its registry entry says how
many of each part: :attr:`crowdqa.aggregation.registry.MethodEntry.memory`): class scores per token (tokens x K),
per answer (answers x K), the confusion matrices, and what is method-specific (HMM-Crowd's word emissions,
K x vocabulary, bounded by the tokens; BSC-seq's sequential annotator model, annotators x K x K x K). They are
upper bounds within a small factor, not measurements.

The limit is ``CROWDQA_MAX_MEMORY`` (bytes, or with a unit: ``512M``, ``8G``, or a share of RAM: ``50%``);
by default half of the machine's RAM.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["PARTS", "Shape", "MemoryLimitError", "max_memory", "fit_bytes", "report_bytes", "check_memory", "gib"]

_FLOAT = 8
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
#: Cells of the report's pair kappas counted at once (:data:`crowdqa.quality.pair_agreement.KAPPA_CELLS`).
KAPPA_CELLS = 1 << 24
#: Share of RAM a run may take when ``CROWDQA_MAX_MEMORY`` is not set.
DEFAULT_SHARE = 0.5


class MemoryLimitError(ValueError):
    """A run whose estimated memory exceeds ``CROWDQA_MAX_MEMORY``: refused before it allocates (CLI: one line,
    exit 2; API: 422)."""


@dataclass(frozen=True)
class Shape:
    """The sizes an estimate needs, from a corpus or from a dataset's stored summary (no corpus loaded)."""

    n_tokens: int
    n_obs: int
    n_workers: int
    n_classes: int

    @classmethod
    def of_corpus(cls, corpus) -> Shape:
        """The sizes of a :class:`~crowdqa.aggregation.corpus.Corpus`."""
        return cls(corpus.n_tokens, corpus.n_obs, corpus.n_workers, corpus.n_classes)

    @classmethod
    def of_summary(cls, summary: Mapping) -> Shape | None:
        """The sizes of an ingest summary (:func:`crowdqa.ingest.summary.summarize`); None if it lacks them."""
        try:
            return cls(int(summary["tokens"]), int(summary["annotations"]), sum(summary["annotators"].values()),
                       len(summary["labels"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None


#: The parts an estimate adds up (:func:`_parts`), by name: what a registry entry's ``memory`` counts.
PARTS: tuple[str, ...] = ("confusion", "tokens", "answers", "words", "sequential", "pairs")


def _parts(s: Shape) -> dict[str, tuple[float, str]]:
    """The arrays the estimates add up, in bytes, each with the words that name it in a refusal."""
    k = s.n_classes
    return {
        "confusion": (s.n_workers * k * k * _FLOAT,
                      f"per-annotator confusion matrices: {s.n_workers:,} annotators x {k:,} x {k:,} classes"),
        "tokens": (s.n_tokens * k * _FLOAT, f"class scores per token: {s.n_tokens:,} tokens x {k:,} classes"),
        "answers": (s.n_obs * k * _FLOAT, f"class scores per answer: {s.n_obs:,} answers x {k:,} classes"),
        "words": (s.n_tokens * k * _FLOAT,
                  f"word emissions: {k:,} classes x up to {s.n_tokens:,} distinct words"),
        "sequential": (s.n_workers * k ** 3 * _FLOAT,
                       f"sequential annotator models: {s.n_workers:,} annotators x {k:,} x {k:,} x {k:,}"),
        "pairs": (min(s.n_workers * (s.n_workers - 1) // 2 * k * k, KAPPA_CELLS) * _FLOAT,
                  f"the report's pair confusions: up to {s.n_workers * (s.n_workers - 1) // 2:,} annotator pairs x "
                  f"{k:,} x {k:,} classes, counted {KAPPA_CELLS:,} cells at a time"),
    }


#: The report: the aggregate's and every worker's confusion against the experts, and the pair confusions (their
#: counts and a float copy: ``crowdqa aggregate --method mv`` of 5,000 items, 50 workers and 300 classes peaked at
#: 1.74 GiB, of 1,000 classes at 18.3 GiB; this table estimates 1.8 and 19.9 with the fit).
#: The calibration of the scores adds six token arrays (tokens x K): the tempered chain's two factors and its
#: forward, backward and frame variables, and the calibrated marginals (:mod:`crowdqa.aggregation.confidence`).
REPORT_ARRAYS: dict[str, float] = {"confusion": 1, "tokens": 8, "pairs": 2}


def _total(arrays: Mapping[str, float], shape: Shape) -> tuple[int, str]:
    parts = _parts(shape)
    sized = {name: parts[name][0] * times for name, times in arrays.items()}
    largest = max(sized, key=sized.__getitem__)
    return int(sum(sized.values())), parts[largest][1]


def fit_bytes(method: str, shape: Shape) -> tuple[int, str]:
    """Estimated bytes of fitting ``method`` on a corpus of ``shape``, and the words naming its largest part.

    The arrays counted are the method's registry entry's (:attr:`~crowdqa.aggregation.registry.MethodEntry.memory`).
    """
    from crowdqa.aggregation.registry import METHODS  # here: the registry's entries check their parts against PARTS

    return _total(METHODS[method].memory, shape)


def report_bytes(shape: Shape) -> tuple[int, str]:
    """Estimated bytes of the quality report of a corpus of ``shape``, and the words naming its largest part."""
    return _total(REPORT_ARRAYS, shape)


def _ram() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def max_memory(environ: Mapping[str, str] | None = None, *, ram: Callable[[], int] = _ram) -> int:
    """The limit in bytes: ``CROWDQA_MAX_MEMORY`` (``123456``, ``512M``, ``8G``, ``50%`` of RAM), else half of RAM.

    Raises ValueError naming the variable when its value is none of these.
    """
    value = (os.environ if environ is None else environ).get("CROWDQA_MAX_MEMORY", "").strip()
    if not value:
        return int(ram() * DEFAULT_SHARE)
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(%|[KMGT]?)(?:i?B)?", value, flags=re.IGNORECASE)
    if m is None or float(m[1]) <= 0:
        raise ValueError(f"CROWDQA_MAX_MEMORY must be bytes (e.g. 8G, 512M) or a share of RAM (50%), found {value!r}")
    if m[2] == "%":
        return int(ram() * float(m[1]) / 100)
    return int(float(m[1]) * _UNITS[m[2].upper()])


def gib(n: float) -> str:
    """Bytes as ``"147.0 GiB"`` (or MiB below a GiB)."""
    return f"{n / (1 << 30):,.1f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):,.1f} MiB"


def check_memory(method: str | None, shape: Shape, *, report: bool = True, limit: int | None = None) -> int:
    """Refuse a fit of ``method`` (None: no fit) and, with ``report``, its report, when the estimate exceeds the
    limit (:func:`max_memory`); return the estimate in bytes.

    Raises
    ------
    MemoryLimitError
        One line: the method, the estimate, its largest part, and the limit.
    """
    limit = max_memory() if limit is None else limit
    fit, fit_part = fit_bytes(method, shape) if method is not None else (0, "")
    rep, rep_part = report_bytes(shape) if report else (0, "")
    total = fit + rep
    if total > limit:
        what = f"{method} and its report" if method is not None and report else (method or "the report")
        largest = fit_part if fit >= rep else rep_part
        raise MemoryLimitError(
            f"{what} on this data would need about {gib(total)} (largest part: {largest}), more than the limit of "
            f"{gib(limit)} (CROWDQA_MAX_MEMORY); merge rare classes, or split the data")
    return total
