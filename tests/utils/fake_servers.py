"""Misbehaving "Label Studio" servers on loopback (plain ``http.server``, port 0), for the bounds of a pull or push.

:class:`TricklingServer` answers every request with a byte every ``interval`` seconds (a JSON body that never
ends), over http or https; :class:`HugeServer` answers ``GET /api/projects/<id>`` with a valid project whose JSON
is ``size`` bytes long, streamed in 1 MiB chunks (with a Content-Length, or chunked without one). Both count what
they were asked. :class:`LoopbackProxy` is an HTTP proxy in front of them.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONFIG = ('<View><Text name="text" value="$text"/><Choices name="c" toName="text" choice="single">'
          '<Choice value="a"/><Choice value="b"/></Choices></View>')


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Fake:
    """A server on 127.0.0.1 with a random port; ``requests`` lists ``"METHOD path"`` of what it was asked."""

    def __init__(self, *, tls: tuple[Path, Path] | None = None) -> None:
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
        scheme = "http"
        if tls is not None:  # https, with a certificate and key (self_signed_certificate)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

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

    def __init__(self, *, interval: float = 2.0, limit: float = 600.0, tls: tuple[Path, Path] | None = None) -> None:
        super().__init__(tls=tls)
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


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by itself, and its key, as PEM files in ``folder``: a client that trusts
    the certificate (``SSL_CERT_FILE``) reaches a :class:`TricklingServer` ``tls`` over https."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


class LoopbackProxy:
    """An HTTP proxy on 127.0.0.1 (port 0), as a deployment's ``HTTPS_PROXY`` or ``HTTP_PROXY`` names one: it
    tunnels ``CONNECT host:port`` and forwards an absolute-form request (``GET http://host:port/path``), relaying
    the bytes both ways as they come. ``requests`` lists each request line it was sent; with ``stall`` it reads the
    request and never answers."""

    def __init__(self, *, stall: bool = False) -> None:
        self.requests: list[str] = []
        self.stall = stall
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    @contextmanager
    def running(self) -> Iterator[LoopbackProxy]:
        self._listener.settimeout(0.1)
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.stopping.set()
            thread.join(5)
            self._listener.close()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head and not self.stopping.is_set():
                data = client.recv(65536)
                if not data:
                    return
                head += data
            line, _, rest = head.partition(b"\r\n")
            method, target, version = line.decode("latin-1").split(" ", 2)
            self.requests.append(f"{method} {target}")
            if self.stall:
                self.stopping.wait()
                return
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                forward = rest.partition(b"\r\n\r\n")[2]
            else:  # http://host:port/path: the request goes on in origin form
                where = target.split("://", 1)[1]
                authority, _, path = where.partition("/")
                host, _, port = authority.partition(":")
                upstream = socket.create_connection((host, int(port or 80)))
                forward = f"{method} /{path} {version}\r\n".encode("latin-1") + rest
            with upstream:
                upstream.sendall(forward)
                self._relay(client, upstream)

    def _relay(self, a: socket.socket, b: socket.socket) -> None:
        """Copy bytes both ways until either side closes or the proxy stops."""
        import select

        peers = {a: b, b: a}
        while not self.stopping.is_set():
            ready, _, _ = select.select(list(peers), [], [], 0.1)
            for sock in ready:
                try:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
                except OSError:
                    return
