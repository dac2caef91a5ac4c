"""``crowdqa ingest``: parse an upload, print its summary, optionally save the corpus."""

from __future__ import annotations

import argparse
import json

from crowdqa.api.commands import COMMANDS, cli_wording
from crowdqa.api.commands._uploads import add_upload_arguments, check_output, read_uploads
from crowdqa.ingest import summarize

__all__ = ["register", "run", "format_summary"]


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
    check_output(args.save, option="--save")
    result = read_uploads(args)
    corpus = result.corpus
    summary = summarize(corpus, problems=result.problems, notes=result.notes, dropped=result.dropped)
    if args.save:
        corpus.save(args.save)
        summary["saved"] = args.save
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


def format_summary(summary: dict) -> str:
    """The summary as a few readable lines."""
    cov = summary["coverage"]
    ann = summary["annotators"]

    def trio(s: dict) -> str:
        return f"min {s['min']}, median {s['median']:g}, max {s['max']}"

    lines = [
        f"documents    {summary['documents']}",
        f"tokens       {summary['tokens']}",
        f"annotations  {summary['annotations']}",
        f"annotators   {ann['crowd']} crowd, {ann['expert']} expert",
        "labels       " + ", ".join(f"{k} ({v})" for k, v in summary["label_counts"].items()),
        f"annotators per document: {trio(cov['annotators_per_document'])}",
        f"  crowd:  {trio(cov['crowd'])}",
        f"  expert: {trio(cov['expert'])}; documents with an expert: {cov['documents_with_expert']}",
    ]
    if summary.get("skipped"):
        lines.append(f"skipped rows: {summary['skipped']}")
        lines.extend(f"  {p}" for p in summary["problems"])
        if summary["skipped"] > len(summary["problems"]):
            lines.append(f"  ... and {summary['skipped'] - len(summary['problems'])} more")
    for reason, n in (summary.get("dropped") or {}).items():
        lines.append(f"left out    {n} {reason} rows")
    if summary.get("notes"):
        lines.extend(f"note: {cli_wording(n)}" for n in summary["notes"])
    if summary.get("saved"):
        lines.append(f"saved        {summary['saved']}")
    return "\n".join(lines)
