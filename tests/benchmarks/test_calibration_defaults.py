"""The registry's label-free temperatures are the calibration benchmark's choice, and its quick run agrees with
its own inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import calibration
from crowdqa.aggregation.registry import METHODS
from tests.conftest import shared_path

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "calibration.json"


def test_registry_temperatures_are_the_committed_runs_choice():
    """Each method the committed run measured has, in its registry entry, the scope and temperature the run's rule
    chose (a regression figure: the run's own choice, not an oracle); a method it could not fit keeps 1."""
    if not RESULTS.is_file():
        pytest.skip(f"{RESULTS} not written yet")
    chosen = json.loads(RESULTS.read_text())["methods"]
    for method, entry in METHODS.items():
        if method in chosen:
            assert (entry.temperature_scope, entry.temperature) == (chosen[method]["scope"],
                                                                    chosen[method]["temperature"]), method
        else:
            assert entry.temperature == 1.0, method


@pytest.mark.shared_data
def test_quick_run_chooses_the_lowest_mean_ece(tmp_path):
    """Oracle: the rule recomputed from the run's own grid (the argmin of the ECE per candidate, one set in the
    quick run); the as-fitted summary is the grid's first candidate (temperature 1)."""
    shared_path("conll_val", "answers.conll")
    assert calibration.main(["--quick", "--methods", "hmm-crowd", "--out", str(tmp_path)]) == 0
    res = json.loads((tmp_path / "calibration_quick.json").read_text())
    m = res["methods"]["hmm-crowd"]
    grid = m["sets"]["conll_val"]["grid_ece"]
    best = m["candidates"][int(np.argmin(grid))]
    assert [m["scope"], m["temperature"]] == best
    assert m["sets"]["conll_val"]["as_fitted"]["ece"] == pytest.approx(grid[0], abs=1e-6)
