"""``crowdqa report``: score an aggregate and every worker against the experts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crowdqa.api.commands import COMMANDS, UserError, cli_wording
from crowdqa.api.commands._uploads import (
    add_table_arguments,
    add_upload_arguments,
    check_output,
    check_sort,
    print_notes,
    read_uploads,
    table_rest,
    upload_options,
    verdict_rules,
)
from crowdqa.ingest.formats import AGGREGATE_FORMATS, READ_FORMATS, missing_path

__all__ = ["register", "run"]

#: Every format an aggregate may come in: the aggregate formats, then any upload format (read as one more
#: upload and aligned by document id).
READABLE_FORMATS = tuple(sorted(set(AGGREGATE_FORMATS) | set(READ_FORMATS)))


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
    p.add_argument("--aggregate-format", choices=READABLE_FORMATS, default=None,
                   help="format of AGG_PATH: an output of crowdqa aggregate, or any upload format, read as an upload "
                        "and aligned by document id; default by AGG_PATH: a folder is ebm-nlp, .conll conll, .csv "
                        "categorical-csv (spans-csv for span labels), .npz corpus, else spans-jsonl")
    p.add_argument("--aggregate-annotator", metavar="NAME",
                   help="the annotator of AGG_PATH to score when it has several (e.g. pico:HMMCrowd)")
    p.add_argument("--method", default=None, help="name of the aggregation method (default: AGG_PATH's name)")
    p.add_argument("--experts-used-in-fit", action="store_true",
                   help="say that the aggregate was fitted with the expert labels")
    p.add_argument("--reference", default="union",
                   help="expert reference: union or majority (default union), or one expert's annotator id")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--json", metavar="OUT.json", help="write the full report as JSON to this file")
    add_table_arguments(p)
    p.set_defaults(func=run)



def run(args: argparse.Namespace) -> int:
    """Read corpus and aggregate, build the report, print the table, write JSON."""
    from crowdqa.jobs.local import check_run, write_report  # numpy and the readers: not for ``--help``
    from crowdqa.jobs.scoring import format_report, read_aggregate_labels, score_aggregate

    check_output(args.json, option="--json")
    check_sort(args)
    if not Path(args.aggregate).exists():
        raise UserError(missing_path(args.aggregate, option="--aggregate"))
    check_run(use_experts=False, reference=args.reference, expert_files=len(args.expert), role=args.role,
              input_format=args.format)
    parsed = read_uploads(args)
    print_notes(parsed)
    remarks: list[str] = []
    labels = read_aggregate_labels(args.aggregate, parsed.corpus, format=args.aggregate_format,
                                   annotator=args.aggregate_annotator, options=upload_options(args), remarks=remarks)
    for remark in remarks:
        print(f"crowdqa: note: {cli_wording(remark)}", file=sys.stderr)
    report = score_aggregate(parsed.corpus, labels,
                             method=args.method or args.aggregate_annotator or Path(args.aggregate).stem,
                             experts_used_in_fit=args.experts_used_in_fit, reference=args.reference,
                             seed=args.seed, n_boot=args.n_boot, verdict_rules=verdict_rules(args))
    report["counts"]["expert_documents_without_crowd"] = parsed.unmatched_expert_documents
    print(format_report(report, max_workers=args.top, sort=args.sort, rest=table_rest("--json", args.json),
                        min_items=args.min_items or 0))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            write_report(report, fh)
    return 0
