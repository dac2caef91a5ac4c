"""``crowdqa serve``: run the API (embedded queue and SQLite unless configured otherwise)."""

from __future__ import annotations

import argparse

from crowdqa.api.commands import COMMANDS, UserError

__all__ = ["register"]


def _listen(host: str, port: int):
    """A socket bound to ``host:port`` (as uvicorn makes it); one line naming the address if it cannot.

    The socket is made with the protocol ``getaddrinfo`` names (IPPROTO_TCP), not the default 0: asyncio turns
    Nagle's algorithm off (TCP_NODELAY) only on connections whose socket says IPPROTO_TCP, and uvicorn writes a
    response's head and body separately, so on a kept-alive connection the body waited for the client's delayed
    ACK (40 ms on Linux) on every request: a poll took 52 ms on an idle server instead of 10.
    """
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        # Bound, not yet listening: uvicorn listens once the app has started, so nobody connects earlier.
        sock.bind(address)
    except OSError as exc:
        sock.close()
        hint = "; is a server already running there? choose another --port" if exc.errno == 98 else ""
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    sock.set_inheritable(True)
    return sock


def _tell_first_key(key: str, data_dir) -> None:
    """Write the first key to a 0600 file; show it on a terminal only, never into a log."""
    import sys

    from crowdqa.store.private import FIRST_KEY_NAME, write_private_file

    path = write_private_file(data_dir / FIRST_KEY_NAME, key + "\n").resolve()
    print(f"crowdqa: first start: created project 'default' with an admin API key, written to {path} "
          "(readable by this user only; delete it once the key is kept elsewhere)", flush=True)
    if sys.stdout.isatty():
        print(f"crowdqa: the key (shown once): {key}", flush=True)


def _proxy_options(args: argparse.Namespace) -> dict:
    """uvicorn's forwarded-header options: the client's address and scheme are taken from ``X-Forwarded-For`` and
    ``-Proto`` only when the peer is one of ``--forwarded-allow-ips`` (or ``$FORWARDED_ALLOW_IPS``), and from no
    peer by default. uvicorn's own default trusts 127.0.0.1, so any local process (or a proxy that passes a
    client's header through) could name any address: the failed-key throttle, keyed on that address, would never
    stop it."""
    import os

    trusted = args.forwarded_allow_ips if args.forwarded_allow_ips is not None else os.environ.get(
        "FORWARDED_ALLOW_IPS", "")
    trusted = ",".join(a.strip() for a in trusted.split(",") if a.strip())
    if not args.proxy_headers or not trusted:
        return {"proxy_headers": False, "forwarded_allow_ips": None}
    return {"proxy_headers": True, "forwarded_allow_ips": trusted}


def _run(args: argparse.Namespace) -> int:
    import uvicorn

    from crowdqa.jobs import keys
    from crowdqa.jobs.params import registered_methods
    from crowdqa.jobs.queue import check_embedded_queue
    from crowdqa.store.db import open_session
    from crowdqa.store.settings import describe, get_settings

    settings = get_settings()
    registered_methods()  # an installed package's method that cannot be registered: one line now, not at app start
    if args.workers > 1 and settings.embedded:
        raise UserError("--workers > 1 needs CROWDQA_REDIS_URL (the embedded queue lives in one process)")
    if settings.embedded:
        # First of all, before the database is touched: one embedded server per data directory.
        from crowdqa.store.datadir_lock import acquire_data_dir

        acquire_data_dir(settings.data_dir, port=args.port)
        check_embedded_queue(settings)
    sock = _listen(args.host, args.port)
    with open_session(settings) as session:
        key = keys.ensure_first_key(session=session)
    print(f"crowdqa: {describe(settings)}", flush=True)
    if key:
        _tell_first_key(key, settings.data_dir)
    print(f"crowdqa: serving on http://{args.host}:{args.port}/api/v1 (OpenAPI at /docs)", flush=True)
    proxy = _proxy_options(args)
    config = uvicorn.Config("crowdqa.api.main:app", host=args.host, port=args.port, log_level=args.log_level,
                            workers=args.workers, **proxy)
    if args.workers > 1:
        sock.close()  # uvicorn's supervisor binds its own shared socket for its processes
        uvicorn.run("crowdqa.api.main:app", host=args.host, port=args.port, log_level=args.log_level,
                    workers=args.workers, **proxy)
        return 0
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help=COMMANDS["serve"][1],
                              description="Run the API: embedded (SQLite and an in-process queue) unless "
                              "CROWDQA_REDIS_URL and CROWDQA_DATABASE_URL say otherwise.")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=1,
                   help="API processes (default 1; more than 1 needs CROWDQA_REDIS_URL)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument("--proxy-headers", action=argparse.BooleanOptionalAction, default=True,
                   help="behind a TLS proxy: take the client's address and the scheme (https: Secure cookies) from "
                        "X-Forwarded-For/-Proto when the proxy is one of --forwarded-allow-ips (default on, and "
                        "without --forwarded-allow-ips no proxy is trusted)")
    p.add_argument("--forwarded-allow-ips", default=None, metavar="IPS",
                   help="comma-separated addresses or networks of the proxies whose forwarded headers are trusted "
                        "(your TLS proxy's, e.g. 127.0.0.1 when it runs on this host), or '*' (default "
                        "$FORWARDED_ALLOW_IPS, else none: forwarded headers are ignored)")
    p.set_defaults(func=_run)
