"""Tests for crowdqa.aggregation._base: the one-BLAS-thread decorator on every aggregator's ``fit``.

Oracles: each registered estimator's ``fit`` source (the decorator is written above it, where a reader
sees it); threadpoolctl's own report of the BLAS threads while a fit runs.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from crowdqa.aggregation._base import BaseAggregator
from crowdqa.aggregation.dawid_skene import DawidSkene
from crowdqa.aggregation.registry import METHODS, aggregator_class
from tests.aggregation.test_dawid_skene import random_corpus


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_registered_fit_is_decorated_where_it_is_defined(method: str) -> None:
    cls = aggregator_class(method)
    fit = cls.fit
    assert getattr(fit, "one_blas_thread", False), f"{cls.__name__}.fit does not run with one BLAS thread"
    source = inspect.getsource(fit.__wrapped__).lstrip()
    assert source.startswith("@one_blas_thread\n"), f"{cls.__name__}.fit: write @one_blas_thread above it"


def test_a_subclass_fit_is_not_wrapped_behind_its_back() -> None:
    """The base class wraps nothing: a ``fit`` without the decorator is the function its class defines."""

    class Plain(BaseAggregator):
        def fit(self, corpus, *, true_labels=None, callback=None):
            return self

    assert Plain.__dict__["fit"].__qualname__.endswith("Plain.fit")
    assert not hasattr(Plain.fit, "__wrapped__")


def test_a_fit_runs_with_one_blas_thread_and_restores_the_setting(seed) -> None:
    """Dawid-Skene's progress callback runs inside ``fit``: it sees one BLAS thread, the caller two again after."""
    seen: list[list[int]] = []
    corpus, _ = random_corpus(np.random.default_rng(seed))
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        if not before or max(before) < 2:
            pytest.skip(f"BLAS offers fewer than 2 threads here ({before}): a limit of 1 could not be seen")
        DawidSkene().fit(corpus, callback=lambda iteration, value: seen.append(_blas_threads()))
        assert _blas_threads() == before
    assert seen and all(threads == [1] * len(before) for threads in seen)
