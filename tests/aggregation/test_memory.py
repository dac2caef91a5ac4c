"""Memory estimates and refusals (issue 30 item 5: 20,000 distinct answers on 20,000 items died with
``ArrayMemoryError: Unable to allocate 147. GiB`` in the majority vote; 1,000 classes on 5,000 items in the
report's pair confusions). Oracles: the sizes of the arrays written out by hand, the limit's spellings, and
the one line of the CLI and the 422 of the API."""

from __future__ import annotations

import pytest

from crowdqa.aggregation.memory import (
    PARTS,
    MemoryLimitError,
    Shape,
    check_memory,
    fit_bytes,
    max_memory,
    report_bytes,
)
from crowdqa.aggregation.registry import METHODS


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_has_an_estimate(method):
    """Oracle: the entry's counts times the part sizes written out by hand (float64, 3 classes)."""
    shape = Shape(n_tokens=100, n_obs=300, n_workers=5, n_classes=3)
    size = {"confusion": 5 * 9, "tokens": 100 * 3, "answers": 300 * 3, "words": 100 * 3, "sequential": 5 * 27,
            "pairs": 10 * 9}
    assert set(size) == set(PARTS)
    assert fit_bytes(method, shape)[0] == sum(8 * size[part] * n for part, n in METHODS[method].memory.items())


def test_the_issue_cases_by_hand():
    # 20,000 classes, 49 workers: one confusion table is 49 x 20,000^2 float64 = 146.0 GiB (numpy said 147. GiB)
    many = Shape(n_tokens=20_000, n_obs=60_000, n_workers=49, n_classes=20_000)
    assert fit_bytes("mv", many)[0] == 3 * 49 * 20_000**2 * 8 + 2 * 20_000 * 20_000 * 8
    assert "49 annotators x 20,000 x 20,000 classes" in fit_bytes("mv", many)[1]
    with pytest.raises(MemoryLimitError, match=r"^mv and its report on this data would need about 614\.2 GiB "
                                               r"\(largest part: per-annotator confusion matrices: 49 annotators x "
                                               r"20,000 x 20,000 classes\), more than the limit of 12\.0 GiB "
                                               r"\(CROWDQA_MAX_MEMORY\)"):
        check_memory("mv", many, limit=12 << 30)
    # 1,000 classes, 50 workers: the report's 1,225 pairs x 1,000^2 (9.1 GiB of tables) are counted in passes of
    # at most 2^24 cells; measured: 1.6 GiB peak for the whole command (18.3 GiB before the passes)
    pairs = Shape(n_tokens=5_000, n_obs=15_000, n_workers=50, n_classes=1_000)
    assert report_bytes(pairs)[0] == 50 * 1_000**2 * 8 + 8 * 5_000 * 1_000 * 8 + 2 * (1 << 24) * 8
    # The calibration's six token arrays (0.22 GiB here) were added to the estimate after that measurement.
    assert check_memory("mv", pairs, limit=12 << 30) < 5 << 29
    usual = Shape(n_tokens=1_400_000, n_obs=8_800_000, n_workers=310, n_classes=3)  # PICO with BIO tags
    assert check_memory("hmm-crowd", usual, limit=2 << 30) < 2 << 30


@pytest.mark.parametrize("value, expected", [
    ("", 12 << 30), ("8G", 8 << 30), ("512M", 512 << 20), ("1.5GiB", 3 << 29), ("25%", 6 << 30), ("4096", 4096),
])
def test_the_limit(value, expected):
    assert max_memory({"CROWDQA_MAX_MEMORY": value}, ram=lambda: 24 << 30) == expected


def test_a_bad_limit_is_named():
    with pytest.raises(ValueError, match="CROWDQA_MAX_MEMORY must be bytes .* found 'lots'"):
        max_memory({"CROWDQA_MAX_MEMORY": "lots"})
