"""`crowdqa serve` as a deployment runs it: the first key on a terminal and in a 0600 file, behind a TLS proxy."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.utils.services import free_port, wait_for_port

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.skipif(not (BIN / "crowdqa").exists(), reason="crowdqa is not installed in this environment")


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROWDQA_") and k != "FORWARDED_ALLOW_IPS"}
    env.update(CROWDQA_DATA_DIR=str(data_dir), CROWDQA_AUTH_FAILURE_BURST="2", PYTHONUNBUFFERED="1")
    return env


def _read_until(fd: int, marker: str, *, timeout: float = 60.0) -> str:
    out, deadline = b"", time.monotonic() + timeout
    while marker.encode() not in out and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            try:
                out += os.read(fd, 4096)
            except OSError:  # the server exited: the pty is closed
                break
    return out.decode(errors="replace")


def _stop(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _signin_cookie_secure(base: str, headers: dict[str, str]) -> bool:
    cookie = httpx.get(f"{base}/ui/signin", headers=headers).headers["set-cookie"].lower()
    return "; secure" in cookie


def test_first_key_on_a_terminal_and_forwarded_headers_from_a_trusted_proxy(tmp_path):
    """Issue 35 item 6: the first key went to stdout (a service log); no forwarded-headers option for TLS."""
    port, data = free_port(), tmp_path / "data"
    leader, follower = pty.openpty()
    server = subprocess.Popen([str(BIN / "crowdqa"), "serve", "--port", str(port), "--log-level", "warning",
                               "--forwarded-allow-ips", "127.0.0.1"],
                              env=_env(data), cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    try:
        said = _read_until(leader, "serving on")
        wait_for_port(port, timeout=60)
        key = (data / "first-key.txt").read_text().strip()
        assert os.stat(data / "first-key.txt").st_mode & 0o777 == 0o600
        assert re.search(rf"the key \(shown once\): {re.escape(key)}\s", said), said
        assert str((data / "first-key.txt").resolve()) in said
        base = f"http://127.0.0.1:{port}"
        # The proxy on 127.0.0.1 (trusted by --forwarded-allow-ips) says the browser used https.
        assert _signin_cookie_secure(base, {"X-Forwarded-Proto": "https"})
        assert not _signin_cookie_secure(base, {})
        # Throttled by the client's forwarded address, not the proxy's: another client is not held back.
        bad = {"Authorization": f"Bearer {key}x", "X-Forwarded-For": "203.0.113.5"}
        codes = [httpx.get(f"{base}/api/v1/datasets", headers=bad).status_code for _ in range(3)]
        assert codes == [401, 401, 429]
        good = {"Authorization": f"Bearer {key}", "X-Forwarded-For": "203.0.113.6"}
        assert httpx.get(f"{base}/api/v1/datasets", headers=good).status_code == 200
    finally:
        _stop(server)
        os.close(leader)


@pytest.mark.parametrize("trusted", [None, "10.9.9.9"], ids=["no-proxy-by-default", "another-proxy"])
def test_forwarded_headers_of_an_untrusted_peer_are_ignored_and_keys_stay_out_of_the_access_log(tmp_path, trusted):
    """Issue 47 item 5: uvicorn's default trusted 127.0.0.1, so a local client naming 25 addresses in
    X-Forwarded-For never met the failed-key throttle's 429; and a key in a query string reached the access log.
    By default no peer is trusted; with a proxy named, another peer is not."""
    port, data = free_port(), tmp_path / "data"
    server = subprocess.Popen([str(BIN / "crowdqa"), "serve", "--port", str(port), "--log-level", "info",
                               *(["--forwarded-allow-ips", trusted] if trusted else [])],
                              env=_env(data), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for_port(port, timeout=60)
        base = f"http://127.0.0.1:{port}"
        assert not _signin_cookie_secure(base, {"X-Forwarded-Proto": "https"})
        key = (data / "first-key.txt").read_text().strip()
        codes = [httpx.get(f"{base}/api/v1/datasets", headers={"Authorization": f"Bearer {key}x",
                                                               "X-Forwarded-For": f"203.0.113.{i}"}).status_code
                 for i in range(3)]
        assert codes == [401, 401, 429]  # every request is the peer's own address
        assert httpx.get(f"{base}/api/v1/datasets?api_key={key}&limit=5").status_code in (401, 429)
    finally:
        _stop(server)
        log = server.stdout.read()
    assert "first start" in log and "Traceback" not in log, log
    assert "/api/v1/datasets?api_key=***&limit=5" in log, log
    assert key not in log and key.split("_")[2] not in log


def test_connections_to_the_served_socket_send_without_nagle_delay():
    """The socket `crowdqa serve` binds is IPPROTO_TCP, so asyncio (which uvicorn serves it with) turns Nagle's
    algorithm off on every accepted connection: uvicorn writes a response's head and body separately, and with
    Nagle on, the body of every response on a kept-alive connection waited for the client's delayed ACK (40 ms)."""
    import asyncio
    import socket

    from crowdqa.api.commands.serve import _listen

    async def accepted_nodelay() -> int:
        sock = _listen("127.0.0.1", 0)
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport) -> None:
                seen.set_result(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=sock)
        try:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            value = await asyncio.wait_for(seen, 10)
            writer.close()
            return value
        finally:
            server.close()

    assert asyncio.run(accepted_nodelay()) != 0
