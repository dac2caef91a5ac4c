"""Misbehaving "Label Studio" servers on loopback (plain ``http.server``, port 0), for the bounds of a pull or push.

:class:`TricklingServer` answers every request with a byte every ``interval`` seconds (a JSON body that never
ends); :class:`HugeServer` answers ``GET /api/projects/<id>`` with a valid project whose JSON is ``size`` bytes
long, streamed in 1 MiB chunks (with a Content-Length, or chunked without one). Both count what they were asked.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONFIG = ('<View><Text name="text" value="$text"/><Choices name="c" toName="text" choice="single">'
          '<Choice value="a"/><Choice value="b"/></Choices></View>')


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Fake:
    """A server on 127.0.0.1 with a random port; ``requests`` lists ``"METHOD path"`` of what it was asked."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.sent = 0
        self.stopping = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                fake.requests.append(f"GET {self.path.split('?')[0]}")
                fake.answer(self)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.requests.append(f"POST {self.path.split('?')[0]}")
                fake.answer(self)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError

    @contextmanager
    def running(self) -> Iterator[_Fake]:
        thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.stopping.set()
            self._server.shutdown()
            self._server.server_close()


class TricklingServer(_Fake):
    """Answers 200 with a JSON body sent one byte every ``interval`` seconds, for at most ``limit`` seconds."""

    def __init__(self, *, interval: float = 2.0, limit: float = 600.0) -> None:
        super().__init__()
        self.interval, self.limit = interval, limit

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("connection", "close")  # no length: the body ends when the connection does
        handler.end_headers()
        ends = time.monotonic() + self.limit
        try:
            handler.wfile.write(b"{")
            handler.wfile.flush()
            while time.monotonic() < ends and not self.stopping.wait(self.interval):
                handler.wfile.write(b" ")
                handler.wfile.flush()
                self.sent += 1
        except OSError:  # the client hung up: what a bounded client does
            pass
        handler.close_connection = True


class HugeServer(_Fake):
    """Answers a project whose JSON is ``size`` bytes (a valid config, then a title of that length), streamed in
    1 MiB chunks, with a Content-Length unless ``chunked``."""

    def __init__(self, *, size: int, chunked: bool = False) -> None:
        super().__init__()
        self.size, self.chunked = size, chunked

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        head = json.dumps({"id": 1, "label_config": CONFIG})[:-1].encode() + b', "title": "'
        tail = b'"}'
        filler = self.size - len(head) - len(tail)
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        if self.chunked:
            handler.send_header("transfer-encoding", "chunked")
        else:
            handler.send_header("content-length", str(self.size))
        handler.end_headers()
        block = b"x" * (1 << 20)
        try:
            self._write(handler, head)
            while filler > 0 and not self.stopping.is_set():
                piece = block[:filler]
                self._write(handler, piece)
                filler -= len(piece)
            self._write(handler, tail)
            if self.chunked:
                handler.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client hung up: what a bounded client does
            pass
        handler.close_connection = True

    def _write(self, handler: BaseHTTPRequestHandler, data: bytes) -> None:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if self.chunked else data)
        self.sent += len(data)
