"""The upload arguments shared by ``ingest``, ``aggregate`` and ``report``.

One definition of the format options (the same names as the API's form fields and
:func:`ingest.read_corpus`'s keywords) and one way to read a crowd dump with its expert
uploads, so the three commands cannot drift apart.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from crowdqa.api.commands import UserError, cli_wording
from crowdqa.ingest.formats import READ_FORMATS, ROLES, UPLOAD_OPTIONS, check_upload, option

if TYPE_CHECKING:  # the readers load only when a command reads (``--help`` stays light)
    from crowdqa.jobs.local import ParseResult

__all__ = ["add_upload_arguments", "add_option_arguments", "read_uploads", "upload_options", "check_output",
           "print_notes", "add_table_arguments", "check_sort", "table_rest", "verdict_rules", "min_items_value"]


def add_upload_arguments(p: argparse.ArgumentParser, *, path_help: str, metavar: str = "PATH") -> None:
    """Add the positional dump path, ``--format``, ``--role``, the format options and ``--expert``."""
    p.add_argument("path", metavar=metavar, help=path_help)
    p.add_argument("--format", "-f", required=True, choices=READ_FORMATS, help=f"format of {metavar}")
    p.add_argument("--role", choices=ROLES, default=ROLES[0], help=f"role of {metavar}'s annotators")
    add_option_arguments(p, [o.name for o in UPLOAD_OPTIONS])
    p.add_argument("--expert", metavar="PATH", action="append", default=[],
                   help="an expert upload of (some of) the same documents (repeatable)")
    p.add_argument("--expert-format", metavar="F", choices=READ_FORMATS, help="format of --expert (default: --format)")


def add_option_arguments(p: argparse.ArgumentParser, names: list[str]) -> None:
    """Add the flags of the upload options ``names`` (``--text-column`` for ``text_column``), as the table
    :data:`crowdqa.ingest.formats.UPLOAD_OPTIONS` describes them; a value is checked as the API's form and the
    dashboard check it (:func:`crowdqa.ingest.formats.check_upload`), with the same message."""
    for name in names:
        o = option(name)
        flag, default = "--" + o.name.replace("_", "-"), f" (default {o.default})" if o.default else ""
        if o.type is bool:
            p.add_argument(flag, action="store_true", help=o.help)
        else:
            p.add_argument(flag, type=_checked(o.name), choices=o.choices or None, default=o.default,
                           metavar=None if o.choices else o.metavar, help=o.help + default)


def _checked(name: str):
    """argparse's ``type`` of option ``name``: the value, or the upload check's message (argparse names the flag)."""

    def check(value: str) -> str:
        try:
            check_upload({name: value})
        except ValueError as exc:  # an IngestError
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value

    check.__name__ = name  # argparse names a type in its message when the type's call fails otherwise
    return check


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    """``--sort`` and ``--top`` for the terminal worker table."""
    p.add_argument("--sort", default=None, metavar="KEY",
                   help="order of the worker table: f1, precision, recall, span_f1, accuracy, documents, annotator, "
                        "f1_low, f1_high, accuracy_low, accuracy_high, spammer_score, spammer_score_low, "
                        "spammer_score_high, bias, verdict; scores worst first (_low and _high by the interval's "
                        "bound, spammer scores lowest first, bias highest first, verdict block, watch, keep), "
                        "documents most first; default f1 for span labels, accuracy for categorical answers")
    p.add_argument("--min-items", type=min_items_value, default=None, metavar="N",
                   help="judge workers (their verdict) only on at least N compared items, tokens for span labels "
                        "(default 20), and show only those in the table (default: all)")
    p.add_argument("--top", "--max-workers", dest="top", type=int, default=40, metavar="N",
                   help="worker rows in the table (default 40)")


def min_items_value(text: str) -> int:
    """``--min-items``: an integer >= 1 (argparse names the flag in its message)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, found {value}")
    return value


def verdict_rules(args: argparse.Namespace):
    """The verdict rules of ``--min-items`` (the others at their defaults), or None for the defaults."""
    if args.min_items is None:
        return None
    from crowdqa.jobs.local import VerdictRules

    return VerdictRules(min_items=args.min_items)


def table_rest(option: str, path: str | None) -> str:
    """Where the worker rows beyond ``--top`` are (the end of the table's "... N more workers" line): in the report
    file ``option`` writes, if one is written; else how to get them."""
    return f" in the JSON report {path}" if path else f": {option} FILE writes them all, --top N shows N"


def check_sort(args: argparse.Namespace) -> None:
    """Refuse an unknown --sort key before any work (the table's keys live in crowdqa.quality.report)."""
    from crowdqa.jobs.local import TABLE_SORT_KEYS

    if args.sort is not None and args.sort not in TABLE_SORT_KEYS:
        raise UserError(f"--sort must be one of {', '.join(TABLE_SORT_KEYS)}, found {args.sort!r}")


def upload_options(args: argparse.Namespace) -> dict:
    """The format options given on the command line, as :func:`ingest.read_corpus` keywords."""
    return {o.name: getattr(args, o.name) for o in UPLOAD_OPTIONS}


def read_uploads(args: argparse.Namespace) -> ParseResult:
    """Read the dump and every ``--expert`` upload, and merge them into one corpus.

    A file that holds no labels is an error, as it is for an API upload.
    """
    from crowdqa.jobs.local import read_files

    options = upload_options(args)
    uploads = [dict(path=args.path, format=args.format, role=args.role, **options)]
    uploads += [dict(path=p, format=args.expert_format or args.format, role="expert", **options) for p in args.expert]
    return read_files(uploads)


def check_output(path: str | None, *, option: str, folder: bool = False) -> None:
    """Refuse, before any work, an output path that cannot be written: a missing parent folder, a folder
    where a file is wanted (or the reverse), or no permission."""
    if path is None:
        return
    p = Path(path)
    if folder:
        if p.exists() and not p.is_dir():
            raise UserError(f"{option} {path}: is a file; this format writes a folder")
    elif p.is_dir():
        raise UserError(f"{option} {path}: is a folder; give a file name")
    parent = p.resolve().parent
    if not parent.is_dir():
        raise UserError(f"{option} {path}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise UserError(f"{option} {path}: permission denied")


def print_notes(result: ParseResult) -> None:
    """Print on stderr what the readers assumed or left out (the summary's notes, skips and rows dropped by rule)."""
    for note in result.remarks():
        print(f"crowdqa: note: {cli_wording(note)}", file=sys.stderr)
