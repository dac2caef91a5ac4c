"""The site's generators (docs/_hooks/): the Sphinx markup of the docstrings as Markdown, and the reference pages'
parts read tolerantly from the method registry."""

from __future__ import annotations

import importlib.util
import sys
from types import SimpleNamespace

import pytest

from tests.utils.docs import DOCS


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_hooks_{name}", DOCS / "_hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rst():
    return _hook("rst_docstrings")


@pytest.fixture(scope="module")
def reference():
    return _hook("reference")


def test_math_roles_and_references_become_markdown(rst):
    """Oracle: latex2mathml's own conversion of each expression; the roles' names as code spans."""
    from latex2mathml.converter import convert

    text = ("Each token :math:`z_i \\sim \\pi`; see :func:`~crowdqa.aggregation._bio.bio_decode`.\n\n"
            ".. math::\n\n    x_i = \\sum_w A_{iw}\n        y_w\n\nAfter.\n\n.. [1] A. Author (2001). A title.\n"
            ".. [2] B. Author.\n")
    out = rst.rst_to_markdown(text)
    assert convert("z_i \\sim \\pi", display="inline").replace("\n", "") in out
    assert convert("x_i = \\sum_w A_{iw} y_w", display="block").replace("\n", "") in out
    assert "`crowdqa.aggregation._bio.bio_decode`" in out and ":func:" not in out
    assert "\\[1\\] A. Author (2001). A title." in out and "\\[2\\] B. Author." in out and ".. [" not in out
    assert out.split("</div>", 1)[1].lstrip("\n").startswith("After.")
    assert rst.rst_to_markdown("No markup: `x` and ``y``.") == "No markup: `x` and ``y``."
    assert rst.rst_to_markdown("the exact interval [1]_ of") == "the exact interval \\[1\\] of"


def test_an_inline_equation_at_a_line_start_stays_in_its_paragraph(rst):
    """A line that starts with ``<math>`` would be an HTML block in Markdown; the span keeps it inline."""
    out = rst.rst_to_markdown("worker\n:math:`w` has an ability")
    assert out.startswith('worker\n<span class="math"><math') and out.endswith("</span> has an ability")


def test_data_kinds_read_an_entry_by_its_public_names_only(reference):
    """An entry with only the rules (another version of MethodEntry) is described; missing fields are defaults."""
    assert reference.data_kinds(SimpleNamespace(classes=(2, 2), sequences=False, experts=False)) == (
        "span labels and categorical answers; binary labels only")
    assert reference.data_kinds(SimpleNamespace(classes=(1, None), sequences=True, experts=False)) == (
        "token sequences (span labels in documents) only; any number of classes")
    assert reference.data_kinds(SimpleNamespace()) == "span labels and categorical answers; any number of classes"
    assert "needs the experts' labels" in reference.data_kinds(SimpleNamespace(experts=True))


def test_the_memory_model_is_the_entrys_or_the_estimates_table(reference):
    entry = SimpleNamespace(memory={"confusion": 2, "tokens": 1})
    assert reference.memory_model("x", entry) == "2 × n_workers × K² + 1 × n_tokens × K float64 values"
    assert reference.memory_model("no-such-method", SimpleNamespace()) == "not estimated"


def test_every_method_page_and_the_nav_follow_the_registry(reference):
    from crowdqa.aggregation.registry import METHODS

    config = {"nav": [{"Reference": [{"Methods": "reference/methods.md"}, {"Settings": "reference/settings.md"}]}]}
    nav = reference.on_config(config)["nav"]
    assert nav[0]["Reference"][0]["Methods"] == ["reference/methods.md", *(f"reference/methods/{m}.md"
                                                                           for m in METHODS)]
    for method in METHODS:
        page = reference.method_page(method)
        assert page.startswith(f"# `{method}`: ") and "::: crowdqa.aggregation." in page
