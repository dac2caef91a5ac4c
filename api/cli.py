"""The ``crowdqa`` command line.

Each subcommand lives in its own module under ``api/commands/`` and exposes
``register(subparsers)``, which adds its parser and sets ``func(args) -> int``.
Commands call the same service functions as the API routes; they hold no logic.
Errors a user can fix (bad file, bad option) print one line, ``crowdqa: error: ...``,
and exit with status 2; there is never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main", "build_parser", "UserError"]

#: Subcommand modules, in the order ``crowdqa --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "api.commands.ingest",
    "api.commands.aggregate",
    "api.commands.report",
    "api.commands.sample_size",
    "api.commands.serve",
    "api.commands.worker",
    "api.commands.keys",
)


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""


def build_parser() -> argparse.ArgumentParser:
    """Build the parser with every subcommand module that is installed."""
    parser = argparse.ArgumentParser(
        prog="crowdqa",
        description="Aggregate crowd annotations and measure every worker and aggregate against the experts.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # command not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    from ingest.errors import IngestError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, IngestError, FileNotFoundError, IsADirectoryError, PermissionError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, FileNotFoundError | IsADirectoryError | PermissionError) and exc.filename:
            msg = f"{exc.filename}: {exc.strerror}"
        print(f"crowdqa: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("crowdqa: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``crowdqa ingest ... | head``): stop quietly, as Unix tools do.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # pragma: no cover
    # Run the imported module's main, so that commands raising api.cli.UserError are caught
    # (under ``python -m api.cli`` this file is ``__main__``, a different module object).
    from api.cli import main as _main

    sys.exit(_main())
