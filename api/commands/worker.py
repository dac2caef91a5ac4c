"""``crowdqa worker``: run jobs from the Redis queue at ``CROWDQA_REDIS_URL`` (any number, any host)."""

from __future__ import annotations

import argparse
import os

from crowdqa.api.commands import COMMANDS, UserError

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from crowdqa.jobs.params import registered_methods
    from crowdqa.jobs.worker import run_worker, supervise
    from crowdqa.store.settings import get_settings

    registered_methods()  # an installed package's method that cannot be registered: one line, before any process
    settings = get_settings()
    if not settings.redis_url:
        raise UserError("crowdqa worker needs CROWDQA_REDIS_URL (without it, 'crowdqa serve' runs jobs itself)")
    if args.processes < 1:
        raise UserError(f"--processes must be at least 1, found {args.processes}")
    if not 0 <= args.nice <= 19:
        raise UserError(f"--nice must be 0 to 19, found {args.nice}")
    # Fits are CPU-bound batch work; an API on the same host answers polls first. Every process this one
    # starts (worker processes, rq's work-horses) inherits the niceness.
    os.nice(args.nice)
    if args.processes == 1:
        run_worker(settings, burst=args.burst, name=args.name)
    else:
        supervise(settings, processes=args.processes, burst=args.burst, name=args.name)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("worker", help=COMMANDS["worker"][1],
                              description="Run jobs from the Redis queue at CROWDQA_REDIS_URL (any number, any host).")
    p.add_argument("--burst", action="store_true", help="quit when the queue is empty")
    p.add_argument("--name", default=None, help="worker name (default: random; NAME-0, NAME-1... with --processes)")
    p.add_argument("--processes", type=int, default=1, metavar="N",
                   help="run N worker processes, each forking a work horse per job, and start again any that "
                        "exits (default 1: this process is the worker)")
    p.add_argument("--nice", type=int, default=10, metavar="N",
                   help="run jobs at this CPU niceness, 0-19 (default 10: an API or database on the same host "
                        "is served first while fits run)")
    p.set_defaults(func=_run)
