"""Aggregators (majority vote, Dawid-Skene, HMM-Crowd, BSC) on the canonical :class:`Corpus`.

``HMMCrowd`` and ``BayesianSequenceCombination`` are imported lazily (on first attribute
access), so this package imports even where their modules are absent or being rewritten.
"""

from __future__ import annotations

from typing import Any

from crowdqa.aggregation._base import BaseAggregator, ConvergenceWarning
from crowdqa.aggregation.corpus import MISSING, Corpus
from crowdqa.aggregation.dawid_skene import DawidSkene
from crowdqa.aggregation.majority_vote import MajorityVote
from crowdqa.aggregation.registry import METHODS, make_aggregator

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


def __getattr__(name: str) -> Any:
    if name == "HMMCrowd":
        from crowdqa.aggregation.hmm_crowd import HMMCrowd

        return HMMCrowd
    if name == "BayesianSequenceCombination":
        from crowdqa.aggregation.bsc_seq import BayesianSequenceCombination

        return BayesianSequenceCombination
    raise AttributeError(f"module 'crowdqa.aggregation' has no attribute {name!r}")
