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
    """An upload exceeds ``Settings.max_upload_bytes``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"upload exceeds the limit of {limit} bytes")


class DataDirLockedError(StoreError):
    """Another embedded ``crowdqa serve`` holds the data directory."""


class ConfigurationError(StoreError):
    """The settings point at a database or queue that cannot be used; the message says what to fix."""
