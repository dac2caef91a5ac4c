"""crowdqa keys: create, list and revoke API keys.

A key works on the server whose data directory (or database) holds it: each command first
says, on stderr, which data directory and database it uses.
"""

from __future__ import annotations

import argparse
import sys

from crowdqa.api.commands import COMMANDS, UserError, server_session

__all__ = ["register"]


def _create(args: argparse.Namespace) -> int:
    from crowdqa.jobs import keys

    name = args.project.strip()
    if not name or len(name) > 200:
        raise UserError("--project must be a name of 1 to 200 characters")
    if args.expires_in is not None and not 0 < args.expires_in <= keys.MAX_EXPIRES_IN_DAYS:
        raise UserError(f"--expires-in must be more than 0 and at most {keys.MAX_EXPIRES_IN_DAYS} days")
    with server_session(create=True) as session:
        made = keys.create_key(session=session, project_name=name, admin=args.admin, expires_in_days=args.expires_in)
    scope = "an admin key" if made.admin else "an API key"
    scope += " (the project's first key is an admin key)" if made.admin and not args.admin else ""
    until = f", valid until {made.expires_at:%Y-%m-%d %H:%M:%S} UTC" if made.expires_at else ""
    print(f"created {scope} for project {name!r} (id {made.project_id}){until}; it is shown once:")
    print(made.key)
    return 0


def _list(args: argparse.Namespace) -> int:
    from crowdqa.jobs import keys

    with server_session() as session:
        rows = keys.list_keys(session=session, project_name=args.project)
    print(f"{'key prefix':<14} {'project':<24} {'scope':<6} {'created':<19}  expires")
    for key in rows:
        expires = f"{key.expires_at:%Y-%m-%d %H:%M:%S}" if key.expires_at else "never"
        print(f"{key.prefix:<14} {key.project:<24} {'admin' if key.admin else 'key':<6} "
              f"{key.created_at:%Y-%m-%d %H:%M:%S}  {expires}")
    if not rows:
        print("no keys" + (f" for project {args.project!r}" if args.project else ""), file=sys.stderr)
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from crowdqa.jobs import keys

    prefix = keys.key_prefix(args.prefix)
    with server_session() as session:
        if not keys.revoke_key(session=session, prefix=prefix):
            raise UserError(f"no key with prefix {prefix!r} (see `crowdqa keys list`)")
    print(f"revoked the key {prefix}; requests with it now answer 401")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("keys", help=COMMANDS["keys"][1],
                              description="Create, list and revoke the API keys of this data directory's projects.")
    sub = p.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    c = sub.add_parser("create", help="create a key for a project (created if new); the key is the last line",
                       description="Create an API key for a project (the project is created if new). The key is "
                                   "printed once, alone on the last line.")
    c.add_argument("--project", required=True, help="project name")
    c.add_argument("--admin", action="store_true",
                   help="an admin key: it may also create and revoke the project's keys (a project's first key "
                        "is one anyway)")
    c.add_argument("--expires-in", type=float, default=None, metavar="DAYS",
                   help="the key stops working after DAYS days (default: never)")
    c.set_defaults(func=_create)
    ls = sub.add_parser("list", help="list the keys (prefix, project, scope, creation, expiry); never secrets",
                        description="List the keys by prefix (the part after cqa_), project, scope (admin or "
                                    "ordinary), creation time and expiry (UTC).")
    ls.add_argument("--project", default=None, help="only this project's keys")
    ls.set_defaults(func=_list)
    r = sub.add_parser("revoke", help="revoke a key by its prefix (or the whole key)",
                       description="Revoke a key: requests with it answer 401 from now on.")
    r.add_argument("prefix", metavar="PREFIX", help="the key's prefix, as `crowdqa keys list` shows it, or the key")
    r.set_defaults(func=_revoke)
