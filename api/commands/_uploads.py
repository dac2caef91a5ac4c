"""The upload arguments shared by ``ingest``, ``aggregate`` and ``report``.

One definition of the format options (the same names as the API's form fields and
:func:`ingest.read_corpus`'s keywords) and one way to read a crowd dump with its expert
uploads, so the three commands cannot drift apart.
"""

from __future__ import annotations

import argparse

from crowdqa.api.commands import UserError, cli_wording
from crowdqa.ingest import FORMATS, ParseResult, read_merged

__all__ = ["add_upload_arguments", "read_uploads", "upload_options", "check_output", "print_notes",
           "add_table_arguments", "check_sort"]


def add_upload_arguments(p: argparse.ArgumentParser, *, path_help: str, metavar: str = "PATH") -> None:
    """Add the positional dump path, ``--format``, ``--role``, the format options and ``--expert``."""
    p.add_argument("path", metavar=metavar, help=path_help)
    p.add_argument("--format", "-f", required=True, choices=FORMATS, help=f"format of {metavar}")
    p.add_argument("--role", choices=("crowd", "expert"), default="crowd", help=f"role of {metavar}'s annotators")
    p.add_argument("--docs", metavar="DIR", help="folder of <doc_id>.txt texts for span formats without texts")
    p.add_argument("--category", metavar="NAME", help="the PICO / EBM-NLP element, or the one label to keep")
    p.add_argument("--text-column", metavar="NAME", help="column or key holding the document text")
    p.add_argument("--answer-column", metavar="NAME",
                   help="MTurk answer column (default Answer.taskAnswers); categorical: the label column")
    p.add_argument("--id-column", metavar="NAME", help="column or key holding the document (categorical: item) id")
    p.add_argument("--annotator-column", metavar="NAME", help="categorical: the annotator column (name or number)")
    p.add_argument("--gold-column", metavar="NAME", help="categorical: the gold label column (name or number)")
    p.add_argument("--keep-rejected", action="store_true", help="keep rejected MTurk assignments")
    p.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                   help="fail on the first bad row (default) or skip bad rows and count them")
    p.add_argument("--scheme", choices=("auto", "io", "bio"), default="auto", help="label scheme for span formats")
    p.add_argument("--expert", metavar="PATH", action="append", default=[],
                   help="an expert upload of (some of) the same documents (repeatable)")
    p.add_argument("--expert-format", metavar="F", choices=FORMATS, help="format of --expert (default: --format)")


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    """``--sort`` and ``--top`` for the terminal worker table."""
    p.add_argument("--sort", default=None, metavar="KEY",
                   help="order of the worker table: f1, precision, recall, accuracy (worst first), or documents, "
                        "annotator; default f1 for span labels, accuracy for categorical answers")
    p.add_argument("--top", "--max-workers", dest="top", type=int, default=40, metavar="N",
                   help="worker rows in the table (default 40)")


def check_sort(args: argparse.Namespace) -> None:
    """Refuse an unknown --sort key before any work (the table's keys live in crowdqa.quality.report)."""
    from crowdqa.quality.report import TABLE_SORT_KEYS

    if args.sort is not None and args.sort not in TABLE_SORT_KEYS:
        raise UserError(f"--sort must be one of {', '.join(TABLE_SORT_KEYS)}, found {args.sort!r}")


def upload_options(args: argparse.Namespace) -> dict:
    """The format options given on the command line, as :func:`ingest.read_corpus` keywords."""
    return dict(
        docs=args.docs,
        category=args.category,
        text_column=args.text_column,
        answer_column=args.answer_column,
        id_column=args.id_column,
        annotator_column=args.annotator_column,
        gold_column=args.gold_column,
        keep_rejected=args.keep_rejected,
        on_error=args.on_error,
        scheme=args.scheme,
    )


def read_uploads(args: argparse.Namespace) -> ParseResult:
    """Read the dump and every ``--expert`` upload, and merge them into one corpus.

    A file that holds no labels is an error, as it is for an API upload.
    """
    from crowdqa.ingest.errors import IngestError

    options = upload_options(args)
    uploads = [dict(path=args.path, format=args.format, role=args.role, **options)]
    uploads += [dict(path=p, format=args.expert_format or args.format, role="expert", **options) for p in args.expert]
    result = read_merged(uploads)
    if result.corpus.n_obs == 0:
        raise IngestError(f"the file holds no labels (read as {args.format!r})", source=str(args.path))
    return result


def check_output(path: str | None, *, option: str, folder: bool = False) -> None:
    """Refuse, before any work, an output path that cannot be written: a missing parent folder, a folder
    where a file is wanted (or the reverse), or no permission."""
    import os
    from pathlib import Path

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
    """Print on stderr what the readers assumed or left out by rule (the summary's notes)."""
    import sys

    for note in result.notes:
        print(f"crowdqa: note: {cli_wording(note)}", file=sys.stderr)
