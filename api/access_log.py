"""Keep credentials out of uvicorn's access log.

The API takes its key in the ``Authorization`` header only, and refuses one sent in the query string; but uvicorn
logs every request's path with its query string before the app has said anything, so a key sent as
``?api_key=cqa_...`` (a client's mistake, or a link shared by hand) would be written to the log as it was sent.
:class:`CredentialFilter` rewrites each access-log record: the value of a query parameter whose name says it is a
credential (key, token, secret, password, session, auth, csrf), and anything shaped like a crowdqa key
(``cqa_<prefix>_<secret>``) anywhere in the path, becomes ``***``.
"""

from __future__ import annotations

import logging
import re

__all__ = ["CredentialFilter", "redact", "install_access_log_filter", "ACCESS_LOGGER"]

#: uvicorn's access logger.
ACCESS_LOGGER = "uvicorn.access"

_KEY = re.compile(r"cqa_[A-Za-z0-9_\-]+")
_SECRET_NAME = re.compile(r"key|token|secret|password|passwd|session|auth|csrf|signature", re.IGNORECASE)
_PARAM = re.compile(r"([^&=?#]+)=([^&#]*)")


def redact(path: str) -> str:
    """``path`` (with its query string) with credentials replaced by ``***``."""
    path = _KEY.sub("***", path)
    head, sep, query = path.partition("?")
    if not sep:
        return path
    return head + sep + _PARAM.sub(lambda m: f"{m.group(1)}=***" if _SECRET_NAME.search(m.group(1)) else m.group(0),
                                   query)


class CredentialFilter(logging.Filter):
    """Rewrite the string arguments of a log record with :func:`redact` (uvicorn's access record carries the path
    and query as one of them); never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


def install_access_log_filter() -> None:
    """Add one :class:`CredentialFilter` to uvicorn's access logger (again at each start: uvicorn configures its
    loggers before the app starts, and keeps the filters added since)."""
    access = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, CredentialFilter) for f in access.filters):
        access.addFilter(CredentialFilter())
