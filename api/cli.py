"""The ``crowdqa`` command line: build the parser, run the chosen subcommand, turn errors into one line.

Each subcommand lives in its own module under ``api/commands/`` (the table is
:data:`crowdqa.api.commands.COMMANDS`). Commands call the same use cases as the API routes; they
hold no logic. Errors a user can fix (bad file, bad option) print one line,
``crowdqa: error: ...``, and exit with status 2; there is never a traceback for bad input.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import sys
from collections.abc import Sequence

from crowdqa.api.commands import COMMANDS, UserError, cli_wording
from crowdqa.ingest.formats import missing_path
from crowdqa.jobs.errors import JobError
from crowdqa.store.errors import StoreError

__all__ = ["main", "build_parser", "OneLineParser", "ReaderMayLeave"]

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, with a "did you mean" for a misspelt option or choice.

    argparse prints the whole usage (17 lines for ``aggregate``) and, for ``--methd ID``, complains that
    ``--method`` is missing instead of naming the typo; the API answers one problem line, and so does this.
    Subparsers made by ``add_subparsers`` are of the same class, so every subcommand behaves alike.
    """

    _seen: Sequence[str] = ()

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 - argparse's signature
        self._seen = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def _unknown_option(self, candidates: Sequence[str]) -> str | None:
        """The first option-like argument of ``candidates`` no action of this parser takes, with the nearest."""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for arg in candidates:
            if arg == "--":
                break
            if not arg.startswith("-") or arg == "-" or self._parse_optional(arg) is None:
                continue
            name = arg.split("=", 1)[0]
            if name in self._option_string_actions or any(o.startswith(name) for o in known):
                continue
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            return f"unrecognized option {name}" + (f" (did you mean {close[0]}?)" if close else "")
        return None

    def _chosen_command(self) -> OneLineParser | None:
        """The subcommand's parser this parser handed the arguments to, if any."""
        command = next((a for a in self._seen if not a.startswith("-")), None)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                return action.choices[command]
        return None

    def error(self, message: str):  # type: ignore[override] - same contract: print and exit 2
        """Print ``prog: error: message (see prog --help)`` on one line and exit with status 2."""
        extra = message.startswith("unrecognized arguments: ")
        chosen = self._chosen_command() if extra else None
        if chosen is not None:  # arguments the subcommand left over: its options are the ones to suggest
            chosen.error(message)
        unknown = self._unknown_option(message.split()[2:] if extra else self._seen)
        if unknown is not None:
            message = unknown
        elif (m := _INVALID_CHOICE.search(message)) is not None:
            choices = [c.strip().strip("'") for c in m[2].split(",")]
            close = difflib.get_close_matches(m[1], choices, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else f"choose from {m[2]}"
            message = message[:m.start()] + f"invalid choice: '{m[1]}' ({hint})"
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see {self.prog} --help)\n")


class ReaderMayLeave:
    """``sys.stdout`` for a command's run: when its reader goes away (``crowdqa review ... | head``), the command
    goes on, printing into nothing, and still writes every file it was asked to write.

    Python's recipe for a closed stdout (the ``signal`` module's notes on SIGPIPE): point the descriptor at
    ``os.devnull`` so that nothing further (nor the flush at exit) raises ``BrokenPipeError``. The recipe then
    exits; a command here finishes its work instead, and :func:`main` returns 141 (128 + SIGPIPE, what a
    Unix tool cut short by ``head`` returns) once it has. Anything else is the wrapped stream's.
    """

    def __init__(self, stream) -> None:
        self._stream = stream
        self.reader_left = False

    def write(self, text: str) -> int:
        if not self.reader_left:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._leave()
        return len(text)

    def flush(self) -> None:
        if not self.reader_left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()

    def _leave(self) -> None:
        self.reader_left = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())  # what is left in the stream's buffer now goes nowhere
        os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Build the parser; the subcommand named in ``argv`` gets its module's full parser, the others a stub.

    A stub carries the command's name and help line, so ``crowdqa --help`` lists every command
    and a typo is still refused, without importing the command modules. Without ``argv`` every
    command's full parser is built.
    """
    parser = OneLineParser(
        prog="crowdqa",
        description="Aggregate crowd annotations and measure every worker and aggregate against the experts.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for name, (module_name, help_line) in COMMANDS.items():
        if argv is not None and name != wanted:
            sub.add_parser(name, help=help_line)
            continue
        importlib.import_module(module_name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv)
    except ValueError as exc:  # a method an installed package declares cannot be registered (registered_methods)
        print(f"crowdqa: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    stdout = sys.stdout
    sys.stdout = out = ReaderMayLeave(stdout)
    try:
        status = int(args.func(args) or 0)
        out.flush()  # here, not at exit, where a closed pipe would be "Exception ignored" and status 120
        return 141 if out.reader_left and status == 0 else status
    except (UserError, StoreError, JobError, FileNotFoundError, IsADirectoryError, NotADirectoryError,
            PermissionError, ValueError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, FileNotFoundError) and exc.filename:
            msg = missing_path(exc.filename)  # in the words every reader uses, not the system's
        elif isinstance(exc, OSError) and exc.filename:
            msg = f"{exc.filename}: {exc.strerror}"
        print(f"crowdqa: error: {cli_wording(msg)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("crowdqa: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
