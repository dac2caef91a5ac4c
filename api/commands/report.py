"""``crowdqa report``: score an aggregate and every worker against the experts."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from crowdqa.api.commands import COMMANDS, UserError
from crowdqa.api.commands._uploads import (
    add_table_arguments,
    add_upload_arguments,
    check_output,
    check_sort,
    print_notes,
    read_uploads,
    upload_options,
)
from crowdqa.ingest import read_corpus
from crowdqa.ingest.aggregate_input import labels_from_corpus, read_aggregate
from crowdqa.ingest.formats import AGGREGATE_FORMATS, READ_FORMATS
from crowdqa.quality.references import RULES
from crowdqa.quality.report import build_report, format_report

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``report`` subcommand."""
    p = subparsers.add_parser(
        "report",
        help=COMMANDS['report'][1],
        description=(
            "Read a crowd dump (and expert uploads), read an aggregate of it, and print precision, recall and F1 "
            "of the aggregate and of every worker against the experts (token and span level, with 95% intervals), "
            "agreement between annotators, and optionally write the full report as JSON."
        ),
    )
    add_upload_arguments(p, path_help="the crowd dump the aggregate was computed from", metavar="CROWD_PATH")
    p.add_argument("--aggregate", metavar="AGG_PATH", required=True, help="the aggregate to score")
    p.add_argument("--aggregate-format", choices=sorted(set(AGGREGATE_FORMATS) | set(READ_FORMATS)), default=None,
                   help="format of AGG_PATH: an output of crowdqa aggregate, or any upload format, read as an upload "
                        "and aligned by document id; default by AGG_PATH: a folder is ebm-nlp, .conll conll, .csv "
                        "categorical-csv (spans-csv for span labels), .npz corpus, else spans-jsonl")
    p.add_argument("--aggregate-annotator", metavar="NAME",
                   help="the annotator of AGG_PATH to score when it has several (e.g. pico:HMMCrowd)")
    p.add_argument("--method", default=None, help="name of the aggregation method (default: AGG_PATH's name)")
    p.add_argument("--experts-used-in-fit", action="store_true",
                   help="say that the aggregate was fitted with the expert labels")
    p.add_argument("--reference", default="union",
                   help=f"expert reference: {' or '.join(RULES)} (default union), or one expert's annotator id")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--json", metavar="OUT.json", help="write the full report as JSON to this file")
    add_table_arguments(p)
    p.set_defaults(func=run)




def aggregate_format(path: str, *, categorical: bool) -> str:
    """The format of an aggregate file when --aggregate-format is not given (what crowdqa aggregate writes)."""
    p = Path(path)
    if p.is_dir():
        return "ebm-nlp"
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return "categorical-csv" if categorical else "spans-csv"
    return {".conll": "conll", ".npz": "corpus"}.get(suffix, "spans-jsonl")


def run(args: argparse.Namespace) -> int:
    """Read corpus and aggregate, build the report, print the table, write JSON."""
    check_output(args.json, option="--json")
    check_sort(args)
    if not Path(args.aggregate).exists():
        raise UserError(f"--aggregate {args.aggregate}: no such file or folder")
    if args.reference not in RULES and not args.expert and args.role != "expert":
        raise UserError(f"--reference {args.reference!r} names an expert, but no --expert file is given")
    parsed = read_uploads(args)
    corpus = parsed.corpus
    print_notes(parsed)
    if args.reference not in RULES and args.reference not in corpus.worker_ids:
        raise UserError(f"--reference must be {' or '.join(RULES)} or an expert's id, found {args.reference!r}")
    fmt = args.aggregate_format or aggregate_format(args.aggregate, categorical=not corpus.has_outside)
    if Path(args.aggregate).is_dir() and fmt != "ebm-nlp" and fmt not in READ_FORMATS:
        raise UserError(f"--aggregate {args.aggregate} is a folder: give --aggregate-format ebm-nlp (or a file)")
    if fmt in AGGREGATE_FORMATS:
        labels = read_aggregate(args.aggregate, corpus, format=fmt)
    else:
        # Any upload format: read it as one more upload (same options) and take one annotator's labels.
        other = read_corpus(args.aggregate, format=fmt, **upload_options(args)).corpus
        labels = labels_from_corpus(other, corpus, annotator=args.aggregate_annotator)
    t0 = time.perf_counter()
    method = args.method or args.aggregate_annotator or Path(args.aggregate).stem
    report = build_report(
        corpus, labels, method=method, experts_used_in_fit=args.experts_used_in_fit,
        reference=args.reference, seed=args.seed, n_boot=args.n_boot,
    )
    report["report_seconds"] = round(time.perf_counter() - t0, 3)
    print(format_report(report, max_workers=args.top, sort=args.sort))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0
