"""A kept-alive connection the server closes as a request goes out (the benchmark's lost poll: ``httpx.ReadError``
after a heavy run) must not fail a Label Studio pull, nor ever show a traceback.

crowdqa's command line talks HTTP to no crowdqa server (its commands work on the data directory); the one HTTP
client is the Label Studio one (:class:`crowdqa.ingest.label_studio_api.LabelStudio`, httpx). Measured here:
httpx drops an idle connection the server has already closed (uvicorn's keep-alive timeout), so that case is safe;
a close that races the request (the server reads it and hangs up, with a FIN or a reset) reaches the client, and
only a failed connect is retried by httpx. So a GET lost that way is sent once more; a POST is not (it may have
been done) and fails as one line.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from contextlib import contextmanager

import httpx
import pytest

from crowdqa.api.cli import main
from crowdqa.ingest.label_studio_api import LabelStudio, LabelStudioError
from tests.label_studio.conftest import CHOICE_CONFIG
from tests.label_studio.test_pull_guards import CROWD, PROJECT, TOKEN, FakeLabelStudio, choice_tasks


class ClosingServer:
    """An HTTP/1.1 server on a loopback port answering with ``handler`` (an httpx handler: the fake Label Studio),
    keeping each connection alive after its first answer, then reading the next request on it and closing without
    an answer: with a FIN (``reset=False``) or a reset (``reset=True``). Counts the requests it read."""

    def __init__(self, handler, *, reset: bool = False) -> None:
        self.handler, self.reset, self.requests, self.dropped = handler, reset, [], 0
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket, buf: bytes) -> tuple[httpx.Request | None, bytes]:
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return None, b""
            buf += chunk
        head, rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = [tuple(x.strip() for x in line.split(":", 1)) for line in lines[1:]]
        length = int(dict((k.lower(), v) for k, v in headers).get("content-length", 0))
        while len(rest) < length:
            rest += conn.recv(65536)
        self.requests.append(f"{method} {target.split('?')[0]}")
        return httpx.Request(method, self.url + target, headers=headers, content=rest[:length]), rest[length:]

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            request, buf = self._read_request(conn, b"")
            if request is None:
                return
            response = self.handler(request)
            body = response.content
            conn.sendall(f"HTTP/1.1 {response.status_code} OK\r\ncontent-type: application/json\r\n"
                         f"content-length: {len(body)}\r\nconnection: keep-alive\r\n\r\n".encode() + body)
            request, _ = self._read_request(conn, buf)  # the next request on this connection: no answer
            if request is None:
                return
            self.dropped += 1
            if self.reset:  # linger 0: the close sends a reset instead of a FIN
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    @contextmanager
    def running(self):
        self._thread.start()
        try:
            yield self
        finally:
            self._sock.close()


@pytest.fixture
def fake() -> FakeLabelStudio:
    return FakeLabelStudio(CHOICE_CONFIG, choice_tasks(CROWD))


@pytest.mark.parametrize("reset", [False, True], ids=["fin", "reset"])
def test_a_get_on_a_connection_the_server_closes_is_sent_again(fake, reset):
    """The second GET goes out on the kept-alive connection, which the server closes on reading it: the client
    sends it once more (a new connection) and gets its answer."""
    with ClosingServer(fake, reset=reset).running() as server, LabelStudio(server.url, TOKEN) as client:
        assert client.project(PROJECT)["id"] == PROJECT
        assert client.project(PROJECT)["id"] == PROJECT
        assert server.requests == [f"GET /api/projects/{PROJECT}"] * 3 and server.dropped == 1


def test_a_pull_over_connections_the_server_keeps_closing_succeeds(fake, settings, capsys):
    """Every connection is lost at its second request: a whole pull through the command line (project, members,
    task pages) still reads every task, each lost GET sent once more."""
    with ClosingServer(fake).running() as server:
        code = main(["label-studio", "pull", "--url", server.url, "--token", TOKEN, "--project", str(PROJECT),
                     "--dataset", "ls", "--crowdqa-project", "a"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "4 tasks read (all)" in out and server.dropped >= 2


def test_a_post_on_a_lost_connection_is_one_line_and_not_sent_again(fake):
    """A POST (predictions) is not repeated: it may have been done. The caller gets one LabelStudioError line."""
    with ClosingServer(fake).running() as server, LabelStudio(server.url, TOKEN) as client:
        client.project(PROJECT)
        with pytest.raises(LabelStudioError) as caught:
            client.request("POST", f"/api/projects/{PROJECT}/import/predictions", json=[])
        assert str(caught.value) == (f"cannot reach Label Studio at {server.url}: Server disconnected without "
                                     "sending a response.")
        assert server.requests[-1] == f"POST /api/projects/{PROJECT}/import/predictions"
        assert server.requests.count(server.requests[-1]) == 1


def test_an_idle_connection_uvicorn_closed_is_not_reused(fake):
    """The common case, measured: uvicorn (``timeout_keep_alive=1``) closes the idle connection and the client,
    asking again 1.5 s later, sees the close and opens a new connection; no error, nothing sent twice."""
    uvicorn = pytest.importorskip("uvicorn")
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    requests = []

    async def app_handler(request: Request) -> Response:
        requests.append(request.url.path)
        answer = fake(httpx.Request(request.method, str(request.url), headers=request.headers.raw))
        return Response(answer.content, status_code=answer.status_code, media_type="application/json")

    from starlette.routing import Route

    app = Starlette(routes=[Route("/{path:path}", app_handler, methods=["GET"])])
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, timeout_keep_alive=1, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with LabelStudio(url, TOKEN) as client:
            assert client.project(PROJECT)["id"] == PROJECT
            time.sleep(1.5)
            assert client.project(PROJECT)["id"] == PROJECT
        assert requests == [f"/api/projects/{PROJECT}"] * 2
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
