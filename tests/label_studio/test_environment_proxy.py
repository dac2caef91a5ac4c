"""A Label Studio reached through the proxy the environment names (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
``NO_PROXY``) keeps the exchange's bounds of time, on real loopback servers (tests/utils/fake_servers.py): a
trickling server behind a forwarding proxy or a CONNECT tunnel (TLS through it), and a proxy that never answers.

Oracles: the wall clock (a bound is met when the call returns within it, with the slack of
test_exchange_bounds.py), and the proxy's own list of the requests it was sent (the request went through it, or
did not).
"""

from __future__ import annotations

import pytest

from crowdqa.ingest.label_studio_api import ExchangeLimits, LabelStudio, LabelStudioError
from tests.label_studio.test_exchange_bounds import SLACK, _timed
from tests.label_studio.test_pull_guards import PROJECT, TOKEN
from tests.utils.fake_servers import HugeServer, LoopbackProxy, TricklingServer, self_signed_certificate

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def environment(monkeypatch):
    """No proxy variable but those a test sets."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


@pytest.mark.parametrize("tunnel", [False, True], ids=["HTTP_PROXY-forwarding", "HTTPS_PROXY-tunnel"])
def test_a_trickling_answer_through_the_proxy_ends_at_the_request_timeout(environment, tmp_path, tunnel):
    """An http URL through HTTP_PROXY (the request forwarded), an https one through HTTPS_PROXY (a CONNECT tunnel,
    then TLS to the server through it): every read bounded by the deadline. Was: a proxy from the environment was
    not used at all (httpx reads the environment's proxies only when it makes the transport itself)."""
    tls = self_signed_certificate(tmp_path) if tunnel else None
    if tls is not None:
        environment.setenv("SSL_CERT_FILE", str(tls[0]))
    with TricklingServer(interval=0.5, tls=tls).running() as server, LoopbackProxy().running() as proxy:
        environment.setenv("HTTPS_PROXY" if tunnel else "HTTP_PROXY", proxy.url)
        with LabelStudio(server.url, TOKEN, limits=ExchangeLimits(timeout=2.0, deadline=60.0)) as client:
            took, message = _timed(lambda: client.project(PROJECT))
    sent = f"CONNECT {server.url.removeprefix('https://')}" if tunnel else f"GET {server.url}/api/projects/{PROJECT}"
    assert proxy.requests == [sent]
    assert 2.0 - 0.1 <= took <= 2.0 + SLACK, took
    assert "CROWDQA_LABEL_STUDIO_TIMEOUT" in message and server.sent >= 2


def test_a_proxy_that_never_answers_ends_at_the_exchange_deadline(environment):
    with LoopbackProxy(stall=True).running() as proxy:
        environment.setenv("ALL_PROXY", proxy.url)
        with LabelStudio("https://127.0.0.1:9", TOKEN, limits=ExchangeLimits(timeout=30.0, deadline=1.5)) as client:
            took, message = _timed(lambda: client.project(PROJECT))
    assert proxy.requests == ["CONNECT 127.0.0.1:9"]
    assert took <= 1.5 + SLACK, took
    assert "CROWDQA_LABEL_STUDIO_DEADLINE" in message


def test_no_proxy_reaches_the_server_directly(environment):
    with HugeServer(size=2000).running() as server, LoopbackProxy().running() as proxy:
        environment.setenv("HTTP_PROXY", proxy.url)
        environment.setenv("NO_PROXY", "example.org,127.0.0.1")
        with LabelStudio(server.url, TOKEN) as client:
            assert client.project(PROJECT)["id"] == 1
    assert proxy.requests == [] and server.requests == [f"GET /api/projects/{PROJECT}"]


def test_a_socks_proxy_is_refused_naming_its_variable(environment):
    environment.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(LabelStudioError, match=r"ALL_PROXY .*socks5.* an http:// or https:// proxy"):
        LabelStudio("http://label-studio.test", TOKEN)


def test_an_unreachable_proxy_is_named_in_the_message(environment):
    """The operator's proxy, not Label Studio, is what could not be reached: the message names its variable."""
    with LoopbackProxy().running() as proxy:
        dead = proxy.url  # nothing listens there once the proxy stops
    environment.setenv("HTTPS_PROXY", dead)
    with LabelStudio("https://label-studio.test", TOKEN) as client:
        _, message = _timed(lambda: client.project(PROJECT))
    assert message.startswith("cannot reach Label Studio at https://label-studio.test through the proxy in "
                              "HTTPS_PROXY: "), message
