"""Aggregators (majority vote, Dawid-Skene, HMM-Crowd, BSC, ...) on the canonical :class:`Corpus`.

Every name is imported on first attribute access (PEP 562), so importing a submodule that needs
no numpy (the method table of :mod:`crowdqa.aggregation.registry`, which ``crowdqa aggregate
--help`` lists) does not import numpy, and the package imports even where one method's module is
absent or being rewritten.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "BaseAggregator",
    "BayesianSequenceCombination",
    "ConvergenceWarning",
    "Corpus",
    "DawidSkene",
    "HMMCrowd",
    "MISSING",
    "METHODS",
    "MajorityVote",
    "make_aggregator",
]

#: Public name -> the submodule that defines it.
_HOME = {
    "BaseAggregator": "_base", "ConvergenceWarning": "_base", "Corpus": "corpus", "MISSING": "corpus",
    "DawidSkene": "dawid_skene", "MajorityVote": "majority_vote", "HMMCrowd": "hmm_crowd",
    "BayesianSequenceCombination": "bsc_seq", "METHODS": "registry", "make_aggregator": "registry",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'crowdqa.aggregation' has no attribute {name!r}")
    return getattr(importlib.import_module(f"crowdqa.aggregation.{_HOME[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
