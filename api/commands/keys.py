"""``crowdqa keys create --project NAME``: create an API key (printed alone on the last line)."""

from __future__ import annotations

import argparse

from api.cli import COMMANDS

__all__ = ["register"]


def _create(args: argparse.Namespace) -> int:
    from sqlmodel import Session

    from api.cli import UserError
    from store import crud
    from store.db import get_engine
    from store.settings import get_settings

    name = args.project.strip()
    if not name or len(name) > 200:
        raise UserError("--project must be a name of 1 to 200 characters")
    settings = get_settings()
    with Session(get_engine(settings)) as session:
        project = crud.get_or_create_project(session=session, name=name)
        project_id = project.id
        key = crud.create_api_key(session=session, project_id=project_id)
    print(f"created an API key for project {name!r} (id {project_id}); it is shown once:")
    print(key)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("keys", help=COMMANDS['keys'][1], description=__doc__)
    sub = p.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="create a key for a project (created if new)")
    c.add_argument("--project", required=True, help="project name")
    c.set_defaults(func=_create)
