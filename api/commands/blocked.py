"""crowdqa blocked: the per-project list of blocked workers.

A blocked worker's labels are left out of the fit of the project's later jobs; the worker is still
scored in their reports, and marked as blocked there. Like ``crowdqa keys``, the command works on the
data directory (or database) of the server: it first says which one, on stderr.
"""

from __future__ import annotations

import argparse
import sys

from crowdqa.api.commands import COMMANDS, UserError, server_project, server_session

__all__ = ["register"]


def _list(args: argparse.Namespace) -> int:
    from crowdqa.jobs.blocklist import list_blocked

    with server_session() as session:
        rows, count = list_blocked(session=session, project_id=server_project(session, args.project).id, limit=10**9)
        print(f"{'annotator':<30} {'blocked since':<20} reason")
        for r in rows:
            print(f"{r.annotator:<30} {r.created_at:%Y-%m-%d %H:%M:%S}  {r.reason}")
    if not count:
        print(f"no blocked workers in project {args.project!r}", file=sys.stderr)
    return 0


def _add(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from crowdqa.jobs.blocklist import block_rows, read_block_list

    rows = [{"annotator": a, "reason": args.reason} for a in args.annotator]
    if args.from_file:
        try:
            with open(args.from_file, "rb") as fh:
                rows += read_block_list(fh.read(), source=args.from_file)
        except OSError as exc:
            raise UserError(f"--from-file {args.from_file}: {exc.strerror}") from None
        except ValueError as exc:
            raise UserError(str(exc)) from None
    if not rows:
        raise UserError("give annotator ids, or --from-file BLOCKED.csv (as crowdqa review --block-list writes it)")
    with server_session() as session:
        project = server_project(session, args.project)
        try:
            done = block_rows(session=session, project_id=project.id, rows=rows)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise UserError(f"{first['loc'][-1]}: {first['msg']}") from None
        for row, created in done:
            print(f"{'blocked' if created else 'already blocked (reason updated)'}: {row.annotator}")
    print(f"jobs of project {args.project!r} started from now on fit without them (they are still scored)",
          file=sys.stderr)
    return 0


def _remove(args: argparse.Namespace) -> int:
    from crowdqa.jobs.blocklist import unblock_worker

    with server_session() as session:
        project = server_project(session, args.project)
        try:
            unblock_worker(session=session, project_id=project.id, annotator=args.annotator)
        except LookupError as exc:
            raise UserError(str(exc)) from None
    print(f"unblocked: {args.annotator}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("blocked", help=COMMANDS["blocked"][1], description=__doc__.split("\n", 1)[1].strip())
    sub = p.add_subparsers(dest="blocked_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="the project's blocked workers")
    ls.add_argument("--project", required=True, help="project name")
    ls.set_defaults(func=_list)
    a = sub.add_parser("add", help="block workers (annotator ids as reports name them, e.g. mturk:A1B2C3)")
    a.add_argument("annotator", nargs="*", metavar="ANNOTATOR", help="annotator id, e.g. mturk:A1B2C3")
    a.add_argument("--from-file", metavar="BLOCKED.csv",
                   help="also block every row of this block list (annotator,reason), as crowdqa review --block-list "
                        "writes it")
    a.add_argument("--project", required=True, help="project name")
    a.add_argument("--reason", default="", help="why, for the project's records")
    a.set_defaults(func=_add)
    r = sub.add_parser("remove", help="unblock a worker")
    r.add_argument("annotator", metavar="ANNOTATOR")
    r.add_argument("--project", required=True, help="project name")
    r.set_defaults(func=_remove)
