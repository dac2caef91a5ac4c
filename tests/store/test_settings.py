"""Settings: defaults, URL normalisation, placeholder secrets refused."""

from __future__ import annotations

import pytest

from crowdqa.store.settings import Settings, get_settings


def test_settings_defaults_and_placeholders(tmp_path):
    """SQLite under the data dir by default; bare postgresql:// gets psycopg 3; placeholder passwords refused."""
    s = Settings(data_dir=tmp_path)
    assert s.database_url == f"sqlite:///{(tmp_path / 'crowdqa.db').resolve()}" and s.embedded
    assert Settings(data_dir=tmp_path, database_url="postgresql://u:pw1@h/db").database_url == (
        "postgresql+psycopg://u:pw1@h/db")
    with pytest.raises(ValueError, match="placeholder"):
        Settings(redis_url="redis://:changethis@localhost:6379/0")


def test_settings_from_environment(tmp_path, monkeypatch):
    """CROWDQA_* variables are read once and cached until get_settings.cache_clear()."""
    monkeypatch.setenv("CROWDQA_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CROWDQA_MAX_UPLOAD_BYTES", "123")
    monkeypatch.setenv("CROWDQA_REDIS_URL", "redis://127.0.0.1:1/0")
    get_settings.cache_clear()
    try:
        s = get_settings()
        assert (s.data_dir, s.max_upload_bytes, s.embedded) == (tmp_path, 123, False)
        monkeypatch.setenv("CROWDQA_MAX_UPLOAD_BYTES", "456")
        assert get_settings() is s
        with pytest.raises(ValueError, match="greater than 0"):
            Settings(max_upload_bytes=0)
    finally:
        get_settings.cache_clear()


def test_a_placeholder_password_is_said_in_our_words(monkeypatch):
    """The variable and the validator's own sentence, without pydantic's "Value error, " prefix."""
    from crowdqa.store.errors import ConfigurationError

    monkeypatch.setenv("CROWDQA_DATABASE_URL", "postgresql://u:changeme@localhost/x")
    get_settings.cache_clear()
    try:
        with pytest.raises(ConfigurationError) as caught:
            get_settings()
    finally:
        get_settings.cache_clear()
    assert str(caught.value) == ("CROWDQA_DATABASE_URL: the password in the postgresql URL is a placeholder "
                                 "('changeme'); set a real one")
