"""``crowdqa ingest``: parse an upload, print its summary, optionally save the corpus."""

from __future__ import annotations

import argparse
import json

from ingest import FORMATS, read_merged, summarize

__all__ = ["register", "run", "format_summary"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``ingest`` subcommand."""
    p = subparsers.add_parser(
        "ingest",
        help="parse a label dump and print what it holds",
        description=(
            "Parse a crowd (or expert) label dump into the canonical corpus and print a summary: documents, "
            "tokens, annotators by role, labels and annotators per document. Expert uploads given with --expert "
            "are merged in (their documents must have the same texts)."
        ),
    )
    p.add_argument("path", metavar="PATH", help="file, folder or zip to read")
    p.add_argument("--format", "-f", required=True, choices=FORMATS, help="upload format")
    p.add_argument("--role", choices=("crowd", "expert"), default="crowd", help="role of PATH's annotators")
    p.add_argument("--docs", metavar="DIR", help="folder of <doc_id>.txt texts for span formats without texts")
    p.add_argument("--category", metavar="NAME", help="the PICO / EBM-NLP element, or the one label to keep")
    p.add_argument("--text-column", metavar="NAME", help="column or key holding the document text")
    p.add_argument("--answer-column", metavar="NAME", help="MTurk answer column (default Answer.taskAnswers)")
    p.add_argument("--id-column", metavar="NAME", help="column or key holding the document id")
    p.add_argument("--keep-rejected", action="store_true", help="keep rejected MTurk assignments")
    p.add_argument("--on-error", choices=("fail", "skip"), default="fail",
                   help="fail on the first bad row (default) or skip bad rows and count them")
    p.add_argument("--scheme", choices=("auto", "io", "bio"), default="auto", help="label scheme for span formats")
    p.add_argument("--expert", metavar="PATH", action="append", default=[],
                   help="an expert upload of the same documents (repeatable)")
    p.add_argument("--expert-format", metavar="F", choices=FORMATS, help="format of --expert (default: --format)")
    p.add_argument("--save", metavar="CORPUS.npz", help="write the (merged) corpus to this file")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def _upload(path: str, fmt: str, role: str, args: argparse.Namespace) -> dict:
    return dict(
        path=path,
        format=fmt,
        role=role,
        docs=args.docs,
        category=args.category,
        text_column=args.text_column,
        answer_column=args.answer_column,
        id_column=args.id_column,
        keep_rejected=args.keep_rejected,
        on_error=args.on_error,
        scheme=args.scheme,
    )


def run(args: argparse.Namespace) -> int:
    """Parse, merge, summarise, save."""
    uploads = [_upload(args.path, args.format, args.role, args)]
    uploads += [_upload(path, args.expert_format or args.format, "expert", args) for path in args.expert]
    result = read_merged(uploads)
    corpus = result.corpus
    summary = summarize(corpus, problems=result.problems)
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
    if summary.get("saved"):
        lines.append(f"saved        {summary['saved']}")
    return "\n".join(lines)
