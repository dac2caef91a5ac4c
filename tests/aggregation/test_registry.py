"""Tests for crowdqa.aggregation.registry: where each method's estimator lives, its place in the cost order, and
the registration of a method of another package.

Oracle: crowd-kit's layout (one module per method, named after it); the package's shared exports as they were
before the skill-weighted votes left their shared module (issue 32); the registration rules of the registry's
docstring (issue 45).
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

import crowdqa.aggregation as aggregation
from crowdqa.aggregation.registry import (
    BASELINE,
    DATA_KINDS,
    EXAMPLE_METHOD,
    METHODS,
    MethodEntry,
    aggregator_class,
    default_method,
    methods_by_cost,
    register_method,
)

ROOT = Path(__file__).resolve().parents[2]
#: What the package exports beside one estimator class per method.
SHARED = {"BaseAggregator", "ConvergenceWarning", "Corpus", "MISSING", "make_aggregator", "METHODS"}


def test_one_module_per_method() -> None:
    modules = [entry.module for entry in METHODS.values()]
    assert len(set(modules)) == len(modules), f"methods sharing a module: {sorted(modules)}"
    for method, entry in METHODS.items():
        cls = aggregator_class(method)
        assert cls.__module__ == entry.module, method
        assert entry.name in importlib.import_module(entry.module).__all__, entry.module


def test_the_package_exports_every_method_by_class_name() -> None:
    assert set(aggregation.__all__) == SHARED | {entry.name for entry in METHODS.values()}
    for method, entry in METHODS.items():
        assert getattr(aggregation, entry.name) is aggregator_class(method)


def test_the_cost_order_is_the_entries_costs_and_no_two_share_one() -> None:
    """Issue 45: compare's cost order is read from the entries (it was a list of its own in quality/compare.py).
    Oracle: the order the README and compare documented before (cheapest first), for the methods it listed."""
    costs = [entry.cost for entry in METHODS.values()]
    assert len(set(costs)) == len(costs)
    documented = ["mv", "ds", "wawa", "zbs", "gold-mv", "kos", "mmsr", "glad", "mace", "ibcc", "hmm-crowd", "bsc-seq"]
    assert [m for m in methods_by_cost() if m in documented] == documented
    assert methods_by_cost()[0] == BASELINE


def test_every_kind_of_data_has_one_default_method() -> None:
    """The defaults ``auto`` runs without experts, as documented: HMM-Crowd with a tagger on typed BIO (it took
    HMM-Crowd's place by the protocol, issue 43: benchmarks/results/tagger.json), BSC-seq on one span type,
    Dawid-Skene on categorical answers, BSC-seq on tag labels (best on the tags benchmark's synthetic
    part-of-speech crowd: benchmarks/results/tags.json, issue 44)."""
    assert {kind: default_method(kind) for kind in DATA_KINDS} == {
        "typed-bio": "hmm-crowd-tagger", "spans": "bsc-seq", "categorical": "ds", "tags": "bsc-seq"}
    for kind in DATA_KINDS:
        assert sum(kind in entry.default_for for entry in METHODS.values()) == 1
    with pytest.raises(ValueError, match="kind must be one of typed-bio, spans, categorical, tags, found 'tables'"):
        default_method("tables")


def test_the_example_method_takes_the_parameters_the_examples_set() -> None:
    assert {"max_iter", "tol", "alpha"} <= set(aggregator_class(EXAMPLE_METHOD)._get_param_names())


def _entry(**changes) -> MethodEntry:
    fields = {"cost": 10_007, "memory": {"confusion": 3, "tokens": 2}} | changes
    return MethodEntry("crowdqa.aggregation.majority_vote", changes.pop("name", "MajorityVote"),
                       **{k: v for k, v in fields.items() if k != "name"})


@pytest.mark.parametrize(("method", "entry", "message"), [
    ("Vote", _entry(), "lower-case letters and digits joined by hyphens, at most 32 characters, found 'Vote'"),
    ("vote_again", _entry(), "found 'vote_again'"),
    ("v" * 33, _entry(), "at most 32 characters"),
    ("ds", _entry(), "method id 'ds' is already taken"),
    ("auto", _entry(), "method id 'auto' is already taken"),
    ("vote-again", _entry(cost=METHODS["ds"].cost), "cost 20 is ds's: give vote-again a cost no method has"),
    ("vote-again", _entry(default_for=("categorical",)), "ds is already the default for categorical"),
    ("vote-again", _entry(name="NoSuchVote"), "crowdqa.aggregation.majority_vote has no class NoSuchVote"),
])
def test_a_registration_is_checked(method, entry, message) -> None:
    before = dict(METHODS)
    with pytest.raises(ValueError, match=re.escape(message)):
        register_method(method, entry)
    assert METHODS == before


@pytest.mark.parametrize(("changes", "message"), [
    ({"memory": {"pixels": 1}}, "memory part 'pixels' is not one of confusion, tokens, answers"),
    ({"memory": {}}, "memory must count at least one part"),
    ({"cost": 1.5}, "cost must be an integer, found 1.5"),
    ({"classes": (3, 2)}, "classes must be"),
    ({"default_for": ("tables",)}, "default_for 'tables' is not one of typed-bio, spans, categorical"),
])
def test_an_entry_is_checked(changes, message) -> None:
    with pytest.raises(ValueError, match=message):
        _entry(**changes)


def test_a_registered_method_is_made_listed_and_ordered() -> None:
    register_method("vote-again", _entry(cost=15))
    try:
        assert type(aggregation.make_aggregator("vote-again")).__name__ == "MajorityVote"
        assert methods_by_cost()[:3] == ["mv", "vote-again", "ds"]
    finally:
        del METHODS["vote-again"]


def _texts_of(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of every string literal (docstrings and the literal parts of f-strings included) and every
    comment of a Python file, or of every line of any other text file."""
    source = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(source.splitlines(), 1))
    found = [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    found += [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(source).readline)
              if tok.type == tokenize.COMMENT]
    return found


def test_no_product_module_outside_aggregation_names_a_method_id() -> None:
    """Issue 45's done-criterion: a method is one estimator module and one registry entry, so outside aggregation/
    no product file (code, docstring, comment, template) names a method id: lists, orders, defaults and examples
    are read from the registry. Oracle: every string and comment of those files, searched for each id as a word."""
    ids = sorted(METHODS, key=len, reverse=True)
    word = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, ids)) + r")(?![\w-])")
    named = []
    for folder in ("api", "jobs", "quality", "store", "ingest"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in {".py", ".html", ".svg", ".js", ".css"} or "sample" in path.parts:
                continue
            named += [f"{path.relative_to(ROOT)}:{line}: {word.findall(text)}" for line, text in _texts_of(path)
                      if word.search(text)]
    assert not named, named
