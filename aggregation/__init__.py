"""Aggregators of crowd labels on the canonical :class:`Corpus`, by method id (:data:`METHODS`).

Every estimator class of the registry is exported by its class name (``DawidSkene``,
``HMMCrowd``, ...). Every name is imported on first attribute access (PEP 562), as
:func:`make_aggregator` imports a method's module: importing a submodule that needs no
numpy (the method table of :mod:`crowdqa.aggregation.registry`, which ``crowdqa aggregate
--help`` lists) does not import numpy, and a command that fits one method does not import
the others' scipy optimisers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crowdqa.aggregation.registry import METHODS

if TYPE_CHECKING:  # the same names, written out for editors and type checkers, which cannot run __getattr__
    from crowdqa.aggregation._base import BaseAggregator as BaseAggregator
    from crowdqa.aggregation._base import ConvergenceWarning as ConvergenceWarning
    from crowdqa.aggregation.bsc_seq import BayesianSequenceCombination as BayesianSequenceCombination
    from crowdqa.aggregation.corpus import MISSING as MISSING
    from crowdqa.aggregation.corpus import Corpus as Corpus
    from crowdqa.aggregation.dawid_skene import DawidSkene as DawidSkene
    from crowdqa.aggregation.glad import GLAD as GLAD
    from crowdqa.aggregation.gold_majority_vote import GoldMajorityVote as GoldMajorityVote
    from crowdqa.aggregation.hmm_crowd import HMMCrowd as HMMCrowd
    from crowdqa.aggregation.hmm_crowd_tagger import HMMCrowdTagger as HMMCrowdTagger
    from crowdqa.aggregation.ibcc import IBCC as IBCC
    from crowdqa.aggregation.kos import KOS as KOS
    from crowdqa.aggregation.mace import MACE as MACE
    from crowdqa.aggregation.majority_vote import MajorityVote as MajorityVote
    from crowdqa.aggregation.mmsr import MMSR as MMSR
    from crowdqa.aggregation.registry import make_aggregator as make_aggregator
    from crowdqa.aggregation.wawa import Wawa as Wawa
    from crowdqa.aggregation.zero_based_skill import ZeroBasedSkill as ZeroBasedSkill

#: Public name -> the module that defines it: the shared names, then every method of the registry.
_HOME = {
    "BaseAggregator": "crowdqa.aggregation._base", "ConvergenceWarning": "crowdqa.aggregation._base",
    "Corpus": "crowdqa.aggregation.corpus", "MISSING": "crowdqa.aggregation.corpus",
    "make_aggregator": "crowdqa.aggregation.registry",
    **{entry.name: entry.module for entry in METHODS.values()},
}

__all__ = ["METHODS", *_HOME]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'crowdqa.aggregation' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
