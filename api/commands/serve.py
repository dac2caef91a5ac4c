"""``crowdqa serve``: run the API (embedded queue and SQLite unless configured otherwise)."""

from __future__ import annotations

import argparse

from crowdqa.api.commands import COMMANDS, UserError

__all__ = ["register"]


def _listen(host: str, port: int):
    """A socket bound to ``host:port`` (as uvicorn makes it); one line naming the address if it cannot."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
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


def _run(args: argparse.Namespace) -> int:
    import uvicorn

    from crowdqa.jobs import keys
    from crowdqa.store.db import open_session
    from crowdqa.store.settings import describe, get_settings

    settings = get_settings()
    if args.workers > 1 and settings.embedded:
        raise UserError("--workers > 1 needs CROWDQA_REDIS_URL (the embedded queue lives in one process)")
    if settings.embedded:
        # First of all, before the database is touched: one embedded server per data directory.
        from crowdqa.store.datadir_lock import acquire_data_dir

        acquire_data_dir(settings.data_dir, port=args.port)
    sock = _listen(args.host, args.port)
    with open_session(settings) as session:
        key = keys.ensure_first_key(session=session)
    print(f"crowdqa: {describe(settings)}", flush=True)
    if key:
        print("crowdqa: first start: created project 'default' with this API key (shown once):", flush=True)
        print(key, flush=True)
    print(f"crowdqa: serving on http://{args.host}:{args.port}/api/v1 (OpenAPI at /docs)", flush=True)
    config = uvicorn.Config("crowdqa.api.main:app", host=args.host, port=args.port, log_level=args.log_level,
                            workers=args.workers)
    if args.workers > 1:
        sock.close()  # uvicorn's supervisor binds its own shared socket for its processes
        uvicorn.run("crowdqa.api.main:app", host=args.host, port=args.port, log_level=args.log_level,
                    workers=args.workers)
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
    p.set_defaults(func=_run)
