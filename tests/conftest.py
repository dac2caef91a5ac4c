"""Shared fixtures: the seed, and the location of ../shared/data."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CROWDQA_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture
def seed() -> int:
    """A seed from CROWDQA_SEED, or a fresh one that is printed so a failure can be replayed."""
    value = os.environ.get("CROWDQA_SEED")
    s = int(value) if value else random.SystemRandom().randrange(2**31)
    print(f"CROWDQA_SEED={s}")
    return s


@pytest.fixture
def shared_data() -> Path:
    """The real data folder beside the project; skip (with a message) where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA} (set CROWDQA_SHARED_DATA or place ../shared/data)")
    return SHARED_DATA


def shared_path(*parts: str) -> Path:
    """A path inside ../shared/data, skipping the calling test where it is absent."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not found: {p} is absent")
    return p
