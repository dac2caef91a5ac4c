"""Reliability fixtures: a tally of the hostile cases each test ran, printed at the end of the run."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

# The API's fixtures (a TestClient on the embedded service in a temp data dir, two projects' keys).
from tests.api.conftest import client, keys, settings  # noqa: F401

#: test name -> number of hostile inputs it ran (printed in the terminal summary).
CASES_RUN: Counter[str] = Counter()


class Hang(BaseException):
    """Raised in the main thread when a call runs past its time bound (a BaseException: no parser swallows it)."""


@contextmanager
def time_bound(seconds: float, what: str) -> Iterator[None]:
    """Fail with :class:`Hang` if the block runs longer than ``seconds`` (SIGALRM; main thread only)."""

    def _alarm(signum, frame):
        raise Hang(f"{what} ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def tally(request):
    """Count hostile inputs: ``tally(n)`` adds n to this test's count."""

    def add(n: int = 1) -> None:
        CASES_RUN[request.node.nodeid] += n

    return add


def pytest_terminal_summary(terminalreporter):
    if CASES_RUN:
        terminalreporter.section("hostile inputs run")
        for nodeid, n in sorted(CASES_RUN.items()):
            terminalreporter.write_line(f"{n:6d}  {nodeid}")
        terminalreporter.write_line(f"{sum(CASES_RUN.values()):6d}  in total")


def pytest_collection_modifyitems(config, items):
    """Soak variants (``slow``) of this folder run only with CROWDQA_SOAK=1 or an explicit ``-m slow``:
    CI runs the bounded variants within its time budget."""
    import os

    if os.environ.get("CROWDQA_SOAK") == "1" or "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="soak variant: set CROWDQA_SOAK=1 (or -m slow) to run it")
    for item in items:
        if "slow" in item.keywords and "tests/reliability/" in item.nodeid:
            item.add_marker(skip)
