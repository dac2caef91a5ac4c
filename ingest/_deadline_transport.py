"""An httpx transport whose every socket operation waits at most until the request's deadline.

httpcore gives each read of an answer the same timeout, taken when the request starts, so a server that trickles
a byte a second would keep a request going long past any timeout; here each connect, read and write waits at most
for what is left of the request's :class:`Deadline`, which the caller sets before each request
(:class:`crowdqa.ingest.label_studio_api.LabelStudio`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

__all__ = ["Deadline", "DeadlineTransport", "environment_proxy"]


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


class DeadlineTransport(httpx.BaseTransport):
    """httpx's transport interface over an httpcore pool on a :class:`DeadlineBackend`: straight to the server, or
    through ``proxy`` (an HTTP proxy: an ``http://`` URL forwarded, an ``https://`` one tunnelled with CONNECT),
    every socket operation bounded alike.

    httpx's own :class:`httpx.HTTPTransport` takes no network backend, so the pool is httpcore's, made here with
    httpx's default pool limits and TLS context; requests, answers and errors are translated as httpx's transport
    translates them (httpcore's errors become httpx's of the same name).
    """

    def __init__(self, deadline: Deadline, *, proxy: httpx.URL | None = None) -> None:
        backend, ssl_context = DeadlineBackend(deadline), httpx.create_ssl_context()
        limits = {"max_connections": 100, "max_keepalive_connections": 20, "keepalive_expiry": 5.0}
        if proxy is None:
            self._pool: httpcore.ConnectionPool = httpcore.ConnectionPool(
                ssl_context=ssl_context, network_backend=backend, **limits)
        else:
            auth = (proxy.username, proxy.password) if proxy.username else None
            self._pool = httpcore.HTTPProxy(
                proxy_url=httpcore.URL(scheme=proxy.raw_scheme, host=proxy.raw_host, port=proxy.port,
                                       target=proxy.raw_path),
                proxy_auth=auth, ssl_context=ssl_context,
                proxy_ssl_context=ssl_context if proxy.scheme == "https" else None, network_backend=backend, **limits)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core = httpcore.Request(method=request.method, url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host,
                                                                        port=url.port, target=url.raw_path),
                                headers=request.headers.raw, content=request.stream, extensions=request.extensions)
        with _as_httpx_errors():
            answer = self._pool.handle_request(core)
        return httpx.Response(answer.status, headers=answer.headers, stream=_AnswerStream(answer.stream),
                              extensions=answer.extensions)

    def close(self) -> None:
        self._pool.close()


class _AnswerStream(httpx.SyncByteStream):
    """An answer's body as httpcore streams it, with httpx's errors."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._stream

    def close(self) -> None:
        self._stream.close()


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """Raise httpcore's errors as httpx's of the same name (the most specific one: a ReadTimeout, not a
    TimeoutException), which the client catches."""
    try:
        yield
    except Exception as exc:
        for cls in type(exc).__mro__:
            if getattr(httpcore, cls.__name__, None) is cls and hasattr(httpx, cls.__name__):
                raise getattr(httpx, cls.__name__)(str(exc)) from exc
        raise


#: The environment's proxy variables in the order they are read for a URL of each scheme (as curl and httpx read
#: them; lower-case names first, as Python's :func:`urllib.request.getproxies` reads them).
_PROXY_VARIABLES = {"http": ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"),
                    "https": ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")}


def environment_proxy(url: httpx.URL) -> tuple[str, httpx.URL] | None:
    """The proxy the environment names for ``url``, and the variable that names it; None for none, or when
    ``NO_PROXY`` (``no_proxy``) names the URL's host (Python's :func:`urllib.request.proxy_bypass_environment`:
    host names and their domains, addresses, ``*`` for every host).

    Raises
    ------
    ValueError
        For a proxy that is not an ``http://`` or ``https://`` URL (a SOCKS proxy), naming the variable.
    """
    import os
    import urllib.request

    for name in _PROXY_VARIABLES.get(url.scheme, ()):
        value = os.environ.get(name, "").strip()
        if not value:
            continue
        if urllib.request.proxy_bypass_environment(url.host, {"no": os.environ.get("no_proxy")
                                                               or os.environ.get("NO_PROXY", "")}):
            return None
        proxy = httpx.URL(value if "://" in value else f"http://{value}")
        if proxy.scheme not in ("http", "https") or not proxy.host:
            raise ValueError(f"the proxy in {name} ({proxy.scheme}://...) is not one crowdqa can use: name an "
                             "http:// or https:// proxy, or none")
        return name, proxy
    return None
