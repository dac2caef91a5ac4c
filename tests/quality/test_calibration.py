"""ECE, Brier score, reliability bins and their bootstrap intervals, against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from crowdqa.quality.calibration import (
    brier_score,
    calibration_summary,
    expected_calibration_error,
    low_score_error_ratio,
    reliability_bins,
)


def test_ece_and_brier_by_hand():
    """Oracle, by hand: scores .15, .25, .95, .95, .85 with outcomes 0, 1, 1, 0, 1 in 10 bins. Bins 1 (.15: gap
    -.15), 2 (.25: +.75), 8 (.85: +.15), 9 (.95, .95: 1 - 1.9 = -.9): ECE = (.15 + .75 + .15 + .9) / 5 = .39.
    Brier = (.0225 + .5625 + .0025 + .9025 + .0225) / 5 = .3025."""
    score = np.array([.15, .25, .95, .95, .85])
    right = np.array([0, 1, 1, 0, 1], dtype=bool)
    assert expected_calibration_error(score, right) == pytest.approx(0.39, abs=1e-12)
    assert brier_score(score, right) == pytest.approx(0.3025, abs=1e-12)
    count, mean, acc = reliability_bins(score, right)
    assert count.tolist() == [0, 1, 1, 0, 0, 0, 0, 0, 1, 2]
    assert mean[9] == pytest.approx(0.95) and acc[9] == 0.5 and np.isnan(acc[0])


def test_ece_edges_and_errors():
    """A score of exactly 1 falls in the last bin; a perfectly calibrated bin contributes nothing."""
    assert expected_calibration_error(np.array([1.0, 1.0]), np.array([1, 1])) == 0.0
    assert expected_calibration_error(np.array([0.5, 0.5]), np.array([1, 0])) == 0.0
    assert np.isnan(expected_calibration_error(np.zeros(0), np.zeros(0)))
    with pytest.raises(ValueError, match=r"scores must be in \[0, 1\], found 1.5 at item 1"):
        expected_calibration_error(np.array([0.2, 1.5]), np.array([0, 1]))


def test_low_score_error_ratio_by_hand():
    """Oracle, by hand: 20 items, 4 wrong (share .2); the lowest-scored tenth (2 items) holds 1 wrong (share .5):
    ratio 2.5."""
    score = np.linspace(0.05, 1.0, 20)
    right = np.ones(20, dtype=bool)
    right[[1, 10, 15, 19]] = False
    assert low_score_error_ratio(score, right) == pytest.approx(2.5)
    assert np.isnan(low_score_error_ratio(score, np.ones(20, dtype=bool)))


def test_summary_intervals_hold_the_estimates_and_resample_documents(seed):
    """The bootstrap intervals contain the estimates; with one item per document and identical documents the
    interval is a point (oracle: every resample is the same sample)."""
    rng = np.random.default_rng(seed)
    score = rng.random(400)
    right = rng.random(400) < score ** 2
    doc = np.repeat(np.arange(80), 5)
    s = calibration_summary(score, right, doc, n_boot=300, rng=seed)
    assert s.ece_interval.low <= s.ece <= s.ece_interval.high
    assert s.brier_interval.low <= s.brier <= s.brier_interval.high
    assert s.n_items == 400 and sum(s.count) == 400
    same = calibration_summary(np.full(10, 0.8), np.ones(10, dtype=bool), np.arange(10), n_boot=50)
    assert same.ece_interval.low == pytest.approx(0.2) and same.ece_interval.high == pytest.approx(0.2)
    data = same.as_data()
    assert data["ece"] == pytest.approx(0.2) and data["bins"]["count"][8] == 10
