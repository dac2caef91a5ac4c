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
import re
import sys
from collections.abc import Sequence

__all__ = ["main", "build_parser", "UserError", "cli_wording"]

#: Subcommand -> (module, one-line help), in the order ``crowdqa --help`` lists them. Only the module
#: of the command being run is imported (``crowdqa --help`` imports none), so start-up never pays for
#: numpy, scipy or the service when it does not use them.
COMMANDS: dict[str, tuple[str, str]] = {
    "ingest": ("crowdqa.api.commands.ingest", "parse a label dump and print what it holds"),
    "aggregate": ("crowdqa.api.commands.aggregate", "aggregate a crowd dump and report against experts"),
    "report": ("crowdqa.api.commands.report", "score an aggregate and every worker against the experts"),
    "sample-size": ("crowdqa.api.commands.sample_size",
                    "documents, positives and negatives to annotate for a gold standard (SLiCE)"),
    "serve": ("crowdqa.api.commands.serve", "run the API (embedded: SQLite and an in-process queue)"),
    "worker": ("crowdqa.api.commands.worker", "run queued jobs from CROWDQA_REDIS_URL"),
    "keys": ("crowdqa.api.commands.keys", "create, list and revoke API keys"),
}


class UserError(Exception):
    """An error the user can fix; printed as one line without a traceback."""


#: Format options, as messages of the shared readers name them (``docs=DIR``, ``text_column``).
_OPTIONS = ("docs", "category", "text_column", "answer_column", "id_column", "annotator_column", "gold_column",
            "keep_rejected", "on_error", "scheme")
_OPTION_VALUE = re.compile(r"\b(" + "|".join(_OPTIONS) + r")=([A-Z]+)\b")
_OPTION_WORD = re.compile(r"(?<![-\w'\"])(" + "|".join(o for o in _OPTIONS if "_" in o) + r")\b(?!['\"])")


def cli_wording(text: str) -> str:
    """A reader's message in command-line words: docs=DIR becomes --docs DIR, text_column --text-column."""
    text = _OPTION_VALUE.sub(lambda m: f"--{m[1].replace('_', '-')} {m[2]}", text)
    return _OPTION_WORD.sub(lambda m: f"--{m[1].replace('_', '-')}", text)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Build the parser; the subcommand named in ``argv`` gets its module's full parser, the others a stub.

    A stub carries the command's name and help line, so ``crowdqa --help`` lists every command
    and a typo is still refused, without importing the command modules. Without ``argv`` every
    command's full parser is built.
    """
    parser = argparse.ArgumentParser(
        prog="crowdqa",
        description="Aggregate crowd annotations and measure every worker and aggregate against the experts.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for name, (module_name, help_line) in COMMANDS.items():
        if argv is not None and name != wanted:
            sub.add_parser(name, help=help_line)
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # command not built yet
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    from crowdqa.ingest.errors import IngestError
    from crowdqa.jobs.errors import JobError
    from crowdqa.store.errors import StoreError

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UserError, IngestError, StoreError, JobError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
            PermissionError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and exc.filename:
            msg = f"{exc.filename}: {exc.strerror}"
        print(f"crowdqa: error: {cli_wording(msg)}", file=sys.stderr)
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
    # Run the imported module's main, so that commands raising crowdqa.api.cli.UserError are caught
    # (under ``python -m crowdqa.api.cli`` this file is ``__main__``, a different module object).
    from crowdqa.api.cli import main as _main

    sys.exit(_main())
