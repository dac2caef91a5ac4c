"""Store errors: one name per failure."""

from __future__ import annotations

__all__ = ["StoreError", "SchemaVersionError", "ArtifactMissingError", "UploadTooLargeError", "DataDirLockedError",
           "ConfigurationError"]


class StoreError(Exception):
    """Base class of the store's errors."""


class SchemaVersionError(StoreError):
    """The database was created by another schema version."""


class ArtifactMissingError(StoreError):
    """An artifact named by a row is absent or does not match its sha256."""


class UploadTooLargeError(StoreError):
    """An upload exceeds ``Settings.max_upload_bytes`` (or a request body ``Settings.max_body_bytes``)."""

    def __init__(self, limit: int, *, setting: str = "CROWDQA_MAX_UPLOAD_BYTES", what: str = "the upload") -> None:
        self.limit, self.setting, self.what = limit, setting, what
        super().__init__(f"{what} exceeds the limit of {limit} bytes")


class DataDirLockedError(StoreError):
    """Another embedded ``crowdqa serve`` holds the data directory."""


class ConfigurationError(StoreError):
    """The settings point at a database or queue that cannot be used; the message says what to fix."""
