"""``crowdqa serve``: run the API (embedded queue and SQLite unless configured otherwise)."""

from __future__ import annotations

import argparse

from api.cli import COMMANDS

__all__ = ["register", "ensure_first_key"]


def ensure_first_key(settings) -> str | None:
    """On first start (no key at all), create project ``default`` and a key for it; return the key."""
    from sqlmodel import Session, select

    from store import crud
    from store.db import get_engine
    from store.models import ApiKey

    with Session(get_engine(settings)) as session:
        if session.exec(select(ApiKey)).first() is not None:
            return None
        project = crud.get_or_create_project(session=session, name="default")
        return crud.create_api_key(session=session, project_id=project.id)


def _run(args: argparse.Namespace) -> int:
    import uvicorn

    from store.settings import get_settings

    settings = get_settings()
    if args.workers > 1 and settings.embedded:
        from api.cli import UserError

        raise UserError("--workers > 1 needs CROWDQA_REDIS_URL (the embedded queue lives in one process)")
    key = ensure_first_key(settings)
    mode = "embedded queue (in-process worker)" if settings.embedded else f"queue at {settings.redis_url}"
    print(f"crowdqa: data in {settings.data_dir.resolve()}; {mode}", flush=True)
    if key:
        print("crowdqa: first start: created project 'default' with this API key (shown once):", flush=True)
        print(key, flush=True)
    print(f"crowdqa: serving on http://{args.host}:{args.port}/api/v1 (OpenAPI at /docs)", flush=True)
    uvicorn.run("api.main:app", host=args.host, port=args.port, log_level=args.log_level, workers=args.workers)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help=COMMANDS['serve'][1],
                              description=__doc__)
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=1,
                   help="API processes (default 1; more than 1 needs CROWDQA_REDIS_URL)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.set_defaults(func=_run)
