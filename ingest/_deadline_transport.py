"""An httpx transport whose every socket operation waits at most until the request's deadline.

httpcore gives each read of an answer the same timeout, taken when the request starts, so a server that trickles
a byte a second would keep a request going long past any timeout; here each connect, read and write waits at most
for what is left of the request's :class:`Deadline`, which the caller sets before each request
(:class:`crowdqa.ingest.label_studio_api.LabelStudio`).
"""

from __future__ import annotations

import time
from typing import Any

import httpcore
import httpx

__all__ = ["Deadline", "DeadlineTransport"]


class Deadline:
    """The instant (``time.monotonic``) the request under way must be done by; None: no bound."""

    def __init__(self) -> None:
        self.at: float | None = None

    def left(self, timeout: float | None, error: type[Exception]) -> float | None:
        """The time one socket operation may take: its own ``timeout`` cut to what is left; ``error`` once none
        is."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise error("the request's deadline passed")
        return left if timeout is None else min(timeout, left)


class DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write waits at most until the request's deadline (httpcore gives each
    read the same timeout, taken when the request starts: a trickling answer would outlive any deadline)."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._stream, self._deadline = stream, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._deadline.left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._deadline.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        stream = self._stream.start_tls(ssl_context, server_hostname,
                                        self._deadline.left(timeout, httpcore.ConnectTimeout))
        return DeadlineStream(stream, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's socket backend with every connect, read and write bounded by a :class:`Deadline`."""

    def __init__(self, deadline: Deadline) -> None:
        self._backend, self._deadline = httpcore.SyncBackend(), deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options=None) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(host, port, self._deadline.left(timeout, httpcore.ConnectTimeout),
                                           local_address, socket_options)
        return DeadlineStream(stream, self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options=None) -> httpcore.NetworkStream:  # pragma: no cover - not used
        raise httpcore.ConnectError("crowdqa speaks to Label Studio over TCP only")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport on a :class:`DeadlineBackend` (httpx takes no network backend, so its pool is made
    again with one; the pool's other arguments are httpx's defaults)."""

    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(), max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            network_backend=DeadlineBackend(deadline))
