"""``crowdqa ingest``: parse an upload, print its summary, optionally save the corpus."""

from __future__ import annotations

import argparse
import json

from crowdqa.api.commands import COMMANDS, cli_wording
from crowdqa.api.commands._uploads import add_upload_arguments, check_output, read_uploads

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``ingest`` subcommand."""
    p = subparsers.add_parser(
        "ingest",
        help=COMMANDS['ingest'][1],
        description=(
            "Parse a crowd (or expert) label dump into the canonical corpus and print a summary: documents, "
            "tokens, annotators by role, labels and annotators per document. Expert uploads given with --expert "
            "are merged in (their documents must have the same texts)."
        ),
    )
    add_upload_arguments(p, path_help="file, folder or zip to read")
    p.add_argument("--save", metavar="CORPUS.npz", help="write the (merged) corpus to this file")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Parse, merge, summarise, save."""
    from crowdqa.jobs.local import format_summary, summarize  # numpy and the readers: not for ``--help``

    check_output(args.save, option="--save")
    result = read_uploads(args)
    corpus = result.corpus
    summary = summarize(corpus, problems=result.problems, notes=result.notes, dropped=result.dropped)
    if args.save:
        corpus.save(args.save)
        summary["saved"] = args.save
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary, wording=cli_wording))
    return 0
