"""Every docstring example in aggregation/ runs as a doctest: an example that no longer runs would teach a reader
something false (the estimators' docstrings end with Examples, as scikit-learn's and crowd-kit's do).

Oracle: the expected output written in each docstring.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

from crowdqa import aggregation

MODULES = sorted(m.name for m in pkgutil.iter_modules(aggregation.__path__, "crowdqa.aggregation."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name} (see the output)"
