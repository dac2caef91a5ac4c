"""Tests for crowdqa.aggregation.registry: where each method's estimator lives.

Oracle: crowd-kit's layout (one module per method, named after it) and the package's exports as they were
before the skill-weighted votes left their shared module (issue 32).
"""

from __future__ import annotations

import importlib

import crowdqa.aggregation as aggregation
from crowdqa.aggregation.registry import METHODS, aggregator_class

EXPORTS = {"BaseAggregator", "ConvergenceWarning", "Corpus", "MISSING", "make_aggregator", "METHODS",
           "MajorityVote", "DawidSkene", "HMMCrowd", "BayesianSequenceCombination", "Wawa", "ZeroBasedSkill",
           "GoldMajorityVote", "GLAD", "MACE", "KOS", "MMSR", "IBCC", "HMMCrowdTagger"}


def test_one_module_per_method() -> None:
    modules = [entry.module for entry in METHODS.values()]
    assert len(set(modules)) == len(modules), f"methods sharing a module: {sorted(modules)}"
    for method, entry in METHODS.items():
        cls = aggregator_class(method)
        assert cls.__module__ == entry.module, method
        assert entry.name in importlib.import_module(entry.module).__all__, entry.module


def test_the_package_exports_every_method_by_class_name() -> None:
    assert set(aggregation.__all__) == EXPORTS
    for method, entry in METHODS.items():
        assert getattr(aggregation, entry.name) is aggregator_class(method)
