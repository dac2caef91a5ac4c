"""benchmarks/method_choice.py: its loader's rule for repeated rows, the prior fit by hand, and the committed
prior being the one its committed run fitted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.method_choice import _dedupe_csv, fit_prior, spammer_crowd
from crowdqa.aggregation.registry import DATA_KINDS
from crowdqa.quality.method_choice import prior_for

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "method_choice.json"


def test_repeated_rows_identical_once_differing_the_last(tmp_path):
    """Oracle: the rows counted by hand."""
    src = tmp_path / "in.csv"
    src.write_text("task,worker,label\na,w1,X\na,w1,X\nb,w1,G\nb,w1,P\nb,w2,G\n", encoding="utf-8")
    out, note = _dedupe_csv(src, tmp_path / "out.csv")
    assert out.read_text(encoding="utf-8").split() == ["task,worker,label", "a,w1,X", "b,w1,P", "b,w2,G"]
    assert note == {"rows": 5, "kept": 3, "repeated_pairs": 2, "differing_pairs": 1}


def _split(held: dict[str, float], boot_sd: float, rng) -> dict:
    names = list(held)
    return {"held_out": held, "_names": names,
            "_h_boot": np.array([held[n] for n in names]) + rng.normal(0, boot_sd, size=(400, len(names)))}


def test_the_prior_is_fitted_by_the_method_of_moments_on_the_training_sets_only():
    """Oracle: the anchor, mean and variance worked by hand from the held-out scores (the check set, whose
    numbers would move all three, is left out)."""
    rng = np.random.default_rng(0)
    sets = {
        "a": {"role": "train", "kind": "categorical",
              "splits": [_split({"ds": 0.90, "mv": 0.80, "glad": 0.88}, 0.0, rng),
                         _split({"ds": 0.92, "mv": 0.84, "glad": 0.90}, 0.0, rng)]},
        "b": {"role": "check", "kind": "categorical",
              "splits": [_split({"ds": 0.50, "mv": 0.99, "glad": 0.10}, 0.0, rng)]},
    }
    prior = fit_prior(sets)
    assert prior["anchors"]["categorical"]["anchor"] == "ds"
    assert prior["anchors"]["spans"] == {"anchor": "bsc-seq", "fitted": False}
    diffs = np.array([-0.10, -0.02, -0.08, -0.02])
    assert prior["shortfall"] == pytest.approx(-diffs.mean(), abs=1e-4)
    assert prior["spread"] == pytest.approx(np.sqrt(np.mean((diffs - diffs.mean()) ** 2)), abs=1e-4)


def test_a_spammer_crowd_has_its_planted_spammers():
    rows, truth = spammer_crowd(3, n_classes=2, spammers=0.4, n_items=200)
    assert len(rows) == 200 * 5 and truth.shape == (200,)
    constant = [r for r in rows if r[1] in {f"spam{w}" for w in range(6)}]  # 12 spammers, the first 6 constant
    assert constant and all(r[2] == f"c{int(r[1][4:]) % 2}" for r in constant)


@pytest.mark.skipif(not RESULTS.exists(), reason="benchmarks/results/method_choice.json not committed")
def test_the_committed_prior_is_the_one_the_committed_run_fitted():
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    fitted = data["prior_fitted"]
    for kind in DATA_KINDS:
        prior = prior_for(kind)
        assert prior.anchor == fitted["anchors"][kind]["anchor"], kind
        assert (prior.shortfall, prior.spread) == (fitted["shortfall"], fitted["spread"]), kind
        assert data["prior_committed"][kind]["anchor"] == prior.anchor
