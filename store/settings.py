"""Service settings, read once from ``CROWDQA_*`` environment variables.

``get_settings()`` is cached so every request and job sees one object; tests change the
environment and call ``get_settings.cache_clear()`` (or use ``app.dependency_overrides``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

import httpx
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from crowdqa.store.errors import ConfigurationError

__all__ = ["Settings", "get_settings", "PLACEHOLDER_SECRETS", "masked_url", "describe", "url_origin"]

#: Passwords that mean "somebody copied an example and forgot to change it".
PLACEHOLDER_SECRETS = frozenset({"changethis", "changeme", "password", "secret", "example"})


class Settings(BaseSettings):
    """Where crowdqa keeps its data and how it reaches its database and queue."""

    model_config = SettingsConfigDict(env_prefix="CROWDQA_", extra="ignore")

    data_dir: Path = Field(default=Path("./crowdqa-data"), description="Uploads, artifacts and the SQLite file.")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; default SQLite under data_dir.")
    redis_url: str | None = Field(default=None, description="Redis for the job queue; unset = embedded queue.")
    max_upload_bytes: int = Field(default=200 * 1024 * 1024, gt=0, description="Largest accepted upload.")
    max_body_bytes: int = Field(default=1024 * 1024, gt=0, description="Largest request body of a route that "
                                "is not an upload (JSON and form requests).")
    job_timeout: int = Field(default=3600, gt=0, description="Seconds a job may run before rq stops it.")
    job_retries: int = Field(default=1, ge=0, description="Retries after an unexpected (non-input) failure.")
    heartbeat_interval: float = Field(default=5.0, gt=0, description="Seconds between a running job's heartbeats.")
    stale_after: float = Field(default=120.0, gt=0, description="A running job silent this long is abandoned.")
    lost_after: float = Field(default=10.0, gt=0, description="A queued job missing from Redis this long is lost.")
    gc_grace: float = Field(default=900.0, ge=0, description="Unreferenced files younger than this many seconds "
                            "are kept when deleted rows are collected (an upload of the same bytes may be in flight).")
    queue_name: str = Field(default="aggregate")
    auth_failure_burst: int = Field(default=20, ge=1, description="Failed authentications (401s, refused "
                                    "sign-ins) an address may have in a row before it gets 429.")
    auth_failures_per_minute: float = Field(default=10.0, gt=0, description="How fast an address earns "
                                            "failed attempts back after a burst.")
    cookie_secure: bool = Field(default=False, description="Mark the dashboard's cookies Secure even when the "
                                "server sees plain http (behind a TLS proxy whose forwarded headers it does not "
                                "trust). They are Secure whenever the request's scheme is https.")
    # Per-project limits: one tenant cannot take the service (its worker, its disk) from the others.
    max_active_jobs: int = Field(default=20, gt=0, description="Queued and running jobs one project may have at "
                                 "once; more are refused with 429.")
    max_uploads_per_hour: int = Field(default=60, gt=0, description="Upload requests one project may make in any "
                                      "hour (refused and deleted ones count too); more are refused with 429.")
    max_project_bytes: int = Field(default=5 * 1024**3, gt=0, description="Bytes of uploaded files one project "
                                   "may keep; an upload past it is refused with 429 and not kept.")
    job_cpu_seconds: float = Field(default=900.0, gt=0, description="CPU seconds one job may use; it fails with "
                                   "the reason at its next checkpoint past it.")
    embedded_workers: int = Field(default=2, ge=1, le=16, description="Jobs the embedded worker runs at once, "
                                  "at most one per project.")
    # Unset = any http(s) URL: the embedded single-user server, whose one user could reach that URL from their
    # own machine anyway (Label Studio usually runs on the same laptop). A server shared by projects sets it, or
    # any API key can make the server send requests into its network (its Redis, its database, a cloud
    # metadata address) and read from the errors what answers.
    label_studio_urls: str | None = Field(default=None, description="The Label Studio servers (origins, "
                                          "comma-separated: http://localhost:8080,https://ls.example.org) a pull "
                                          "or push of the API or dashboard may reach; 'none' for no server; unset "
                                          "for any http(s) URL.")

    # What a pull or push may spend on the Label Studio it talks to (a slow or huge answer must not hold the
    # server): the time of each request and of the whole exchange, the bytes of an answer and of all of them.
    label_studio_timeout: float = Field(default=30.0, gt=0, le=3600, description="Seconds one request to Label "
                                        "Studio may take, from connecting to the last byte of its answer.")
    label_studio_deadline: float = Field(default=300.0, gt=0, le=86400, description="Seconds one pull or push may "
                                         "spend on its requests to Label Studio in all.")
    label_studio_max_answer_bytes: int = Field(default=64 * 1024**2, gt=0, description="Bytes of one answer of "
                                               "Label Studio; a larger one is refused as it streams in.")
    label_studio_max_pull_bytes: int = Field(default=512 * 1024**2, gt=0, description="Bytes of all the answers "
                                             "one pull or push may read.")
    label_studio_concurrency: int = Field(default=2, ge=1, le=1000, description="Pulls and pushes one project may "
                                          "run at once (across every API process); more are refused with 429.")
    # Reading: a document longer than this is refused while its file is read (naming its line), before the
    # tokens and labels of it are made (a 188 MB one-document file took the reading process to 2.5 GB).
    max_document_chars: int = Field(default=1_000_000, gt=0, description="Characters of one document's text.")
    max_document_tokens: int = Field(default=500_000, gt=0, description="Tokens of one document.")

    @field_validator("database_url", "redis_url")
    @classmethod
    def _refuse_placeholder_passwords(cls, value: str | None) -> str | None:
        if value:
            password = urlsplit(value).password
            if password and password.lower() in PLACEHOLDER_SECRETS:
                scheme = urlsplit(value).scheme
                raise ValueError(f"the password in the {scheme} URL is a placeholder ({password!r}); set a real one")
        return value

    @field_validator("label_studio_urls")
    @classmethod
    def _origins(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if value.strip().lower() == "none":
            return ""
        origins = []
        for entry in (e.strip() for e in value.split(",")):
            if not entry:
                continue
            origins.append(url_origin(entry))
            if httpx.URL(entry).path not in ("", "/") or "?" in entry or "#" in entry:
                raise ValueError(f"{entry!r} is not an origin (scheme://host[:port], no path)")
        return ",".join(origins)

    @property
    def label_studio_origins(self) -> frozenset[str] | None:
        """The origins (:func:`url_origin`) of ``CROWDQA_LABEL_STUDIO_URLS``; None when unset (any URL)."""
        if self.label_studio_urls is None:
            return None
        return frozenset(filter(None, self.label_studio_urls.split(",")))

    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.data_dir / 'crowdqa.db').resolve()}"
        elif self.database_url.startswith("postgresql://") or self.database_url.startswith("postgres://"):
            # psycopg 3 is the driver we ship; SQLAlchemy's bare "postgresql://" means psycopg2.
            self.database_url = "postgresql+psycopg://" + self.database_url.split("://", 1)[1]
        return self

    @property
    def embedded(self) -> bool:
        """True when jobs run on the in-process worker (no ``CROWDQA_REDIS_URL``)."""
        return not self.redis_url


_DEFAULT_PORTS = {"http": 80, "https": 443}


def url_origin(url: str) -> str:
    """``scheme://host:port`` of an http(s) URL as httpx will connect to it (host lower-cased, IDNA-encoded, in
    brackets if IPv6; the port written out). A ValueError for another scheme, no host, or a user name or password
    in the URL (the message then does not repeat the URL). Host names are compared as written, not resolved."""
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ValueError(f"bad URL {url!r}: {exc}") from None
    if parsed.userinfo:
        raise ValueError("a URL holds a user name or password")
    if parsed.scheme not in _DEFAULT_PORTS or not parsed.raw_host:
        raise ValueError(f"{url.strip()!r} does not start with http:// or https:// or names no host")
    host = parsed.raw_host.decode("ascii").lower()
    host = f"[{host}]" if ":" in host else host
    return f"{parsed.scheme}://{host}:{parsed.port or _DEFAULT_PORTS[parsed.scheme]}"


def masked_url(url: str | None) -> str:
    """``url`` with its password replaced by ``***`` (for messages)."""
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return parts._replace(netloc=netloc).geturl()
    return url


def describe(settings: Settings) -> str:
    """Where a command keeps its data: the data directory, the database and the queue, in one line."""
    queue = f"queue {masked_url(settings.redis_url)}" if settings.redis_url else "embedded queue"
    return f"data directory {settings.data_dir.resolve()}, database {masked_url(settings.database_url)}, {queue}"


@lru_cache
def get_settings() -> Settings:
    """The settings of this process (cached); a bad ``CROWDQA_*`` value raises ConfigurationError naming it."""
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "CROWDQA_" + ".".join(str(p) for p in first.get("loc", ())).upper()
        # Our own validators' messages as they were raised: pydantic's msg prefixes them with "Value error, ".
        raised = (first.get("ctx") or {}).get("error") if first.get("type") == "value_error" else None
        raise ConfigurationError(f"{name}: {raised or first.get('msg', 'invalid value')}") from None
