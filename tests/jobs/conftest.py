"""Jobs fixtures: settings in a temp data dir, and a real Redis flushed around each test."""

from __future__ import annotations

import pytest

from crowdqa.store.settings import get_settings


@pytest.fixture
def settings(tmp_path, monkeypatch, redis_url):
    monkeypatch.setenv("CROWDQA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CROWDQA_REDIS_URL", redis_url)
    monkeypatch.delenv("CROWDQA_DATABASE_URL", raising=False)
    monkeypatch.setenv("CROWDQA_HEARTBEAT_INTERVAL", "0.2")
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()
