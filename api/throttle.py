"""Throttling of failed authentication per client address: a token bucket for each address.

Each address has a bucket of ``CROWDQA_AUTH_FAILURE_BURST`` tokens that refills at
``CROWDQA_AUTH_FAILURES_PER_MINUTE``; every 401 of the API and every refused dashboard sign-in
takes one. While an address's bucket is empty, its requests that carry a credential (any API
request, a sign-in) answer 429 with ``Retry-After`` before the credential is checked, so guesses
learn nothing and cost nothing. Successful requests take no token: a client with a valid key is
never slowed by this.

The address is the one uvicorn gives the request: behind a TLS proxy, the client's own address
when the proxy is trusted (``crowdqa serve --forwarded-allow-ips``), else the proxy's. Buckets
live in each API process (several ``--workers`` each allow the burst) and at most
``max_clients`` addresses are remembered (the longest-quiet one is forgotten first).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.types import Scope

__all__ = ["FailureThrottle", "client_address", "throttle_of"]


class FailureThrottle:
    """Token buckets of failed authentications, one per client address.

    Parameters
    ----------
    burst : int
        Failures an address may have in a row before it is throttled (the bucket's size).
    per_minute : float
        Tokens given back per minute (the long-run rate of failures allowed).
    max_clients : int, default=10000
        Addresses remembered at most; a full bucket is forgotten anyway.
    clock : callable, default=time.monotonic
    """

    def __init__(self, *, burst: int, per_minute: float, max_clients: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.burst, self.per_minute, self.max_clients, self.clock = burst, per_minute, max_clients, clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # address -> (tokens, at)
        self._lock = threading.Lock()

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) * self.per_minute / 60.0)

    def retry_after(self, client: str) -> int:
        """Seconds until ``client`` may try again (0: now)."""
        with self._lock:
            tokens = self._tokens(client, self.clock())
        return 0 if tokens >= 1.0 else max(1, math.ceil((1.0 - tokens) * 60.0 / self.per_minute))

    def failed(self, client: str) -> None:
        """Take a token from ``client``'s bucket."""
        with self._lock:
            now = self.clock()
            self._buckets[client] = (max(0.0, self._tokens(client, now) - 1.0), now)
            self._buckets.move_to_end(client)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)


def client_address(scope: Scope) -> str:
    """The request's client address as uvicorn sets it (the forwarded one behind a trusted proxy)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def throttle_of(app: Starlette) -> FailureThrottle:
    """The app's throttle, made from the settings on first use (the lifespan makes a new one per start)."""
    throttle = getattr(app.state, "auth_throttle", None)
    if throttle is None:
        from crowdqa.store.settings import get_settings

        settings = get_settings()
        throttle = FailureThrottle(burst=settings.auth_failure_burst, per_minute=settings.auth_failures_per_minute)
        app.state.auth_throttle = throttle
    return throttle
