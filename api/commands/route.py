"""crowdqa route: rank the documents without expert labels for the experts to label next.

Reads the crowd dump and the expert uploads, aggregates them as `crowdqa aggregate` does, and
ranks up to --budget documents that have no expert labels by how much they are expected to
narrow the intervals the user needs (the aggregate's precision and recall, every crowd
worker's; SLiCE's target half-width) and to settle the aggregate's uncertain tokens (see
crowdqa.quality.routing). Writes the list as a CSV (doc_id, text, link, rank, reason, score,
tokens) that a Mechanical Turk batch or an Upwork brief can use as is; --export writes them as
Label Studio or doccano tasks whose export reads back as the expert upload (--id-column doc_id).
"""

from __future__ import annotations

import argparse
import sys

from crowdqa.api.commands import COMMANDS

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from crowdqa.api.commands import UserError
    from crowdqa.api.commands._uploads import check_output, print_notes, read_uploads
    from crowdqa.api.commands.aggregate import method_params
    from crowdqa.jobs.local import check_run
    from crowdqa.jobs.routing import RoutingOptions, parse_budget, route_corpus, write_routing

    # Everything that can be checked without the data, before any file is read.
    try:
        options = RoutingOptions(budget=parse_budget(args.budget), half_width=args.half_width,
                                 worker_weight=args.worker_weight, correction_weight=args.correction_weight,
                                 link_template=args.link_template)
    except ValueError as exc:  # "half_width must be ..." -> "--half-width must be ..."
        name, rest = str(exc).split(" ", 1)
        raise UserError(f"--{name.replace('_', '-')} {rest}") from None
    check_run(use_experts=args.use_experts, reference=args.reference, expert_files=len(args.expert), role=args.role,
              input_format=args.format, method=args.method)
    params = method_params(args)
    check_output(args.output, option="--output")
    if args.export_format and not args.export:
        raise UserError("--export-format needs --export PATH")
    export_format = args.export_format or "label-studio"
    if args.export:
        check_output(args.export, option="--export")
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    parsed = read_uploads(args)
    print_notes(parsed)
    routed, labels = route_corpus(parsed.corpus, method=args.method, params=params, use_experts=args.use_experts,
                                  reference=args.reference, options=options)
    write_routing(routed, parsed.corpus, labels, args.output, format="csv")
    say(f"crowdqa: route: {len(routed.rows)} of {routed.candidates} documents without expert labels; "
        f"wrote the list to {args.output}")
    if args.export:
        write_routing(routed, parsed.corpus, labels, args.export, format=export_format)
        say(f"crowdqa: route: wrote the routed documents as {export_format} to {args.export}")
    for row in routed.rows[:args.top]:
        print(f"{row['rank']:4d}  {row['doc_id']:<24} {row['score']:.4g}  {row['reason']}")
    return 0


def register(subparsers) -> None:
    from crowdqa.api.commands._uploads import add_upload_arguments
    from crowdqa.ingest.formats import ROUTING_EXPORTS
    from crowdqa.jobs.params import default_method, registered_methods

    p = subparsers.add_parser("route", help=COMMANDS["route"][1], description=__doc__.split("\n", 1)[1].strip(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_upload_arguments(p, path_help="the crowd annotations (file, folder or zip)", metavar="CROWD_PATH")
    p.add_argument("--budget", required=True, metavar="N", help="documents to route (a whole number >= 1)")
    p.add_argument("--output", required=True, metavar="NEXT.csv",
                   help="the list: doc_id, text, link, rank, reason, score, tokens (CSV, UTF-8)")
    method = default_method("categorical")  # Dawid-Skene: its posteriors suit span and categorical data alike
    p.add_argument("--method", default=method, choices=list(registered_methods()),
                   help=f"aggregation method whose posteriors are used (default {method}, for span and categorical "
                        "data alike)")
    p.add_argument("--params", help='method parameters as JSON, e.g. \'{"max_iter": 50}\'')
    p.add_argument("--use-experts", action="store_true", help="clamp the expert labels while fitting")
    p.add_argument("--reference", default="union", help="expert reference rule: union, majority or an expert id")
    p.add_argument("--half-width", type=float, default=0.05,
                   help="target half-width of every interval (SLiCE); narrower intervals gain nothing (default 0.05)")
    p.add_argument("--worker-weight", type=float, default=1.0,
                   help="weight of the crowd workers' intervals together, against the aggregate's (default 1)")
    p.add_argument("--correction-weight", type=float, default=1.0,
                   help="weight of the aggregate's expected errors the experts would correct (default 1)")
    p.add_argument("--link-template", metavar="URL",
                   help="adds a link column: the template with {doc_id} replaced, e.g. https://host/docs/{doc_id}")
    p.add_argument("--export", metavar="PATH", help="also write the routed documents as annotation tasks")
    p.add_argument("--export-format", choices=[f for f in ROUTING_EXPORTS if f != "csv"],
                   help="format of --export: label-studio (default; the aggregate as a prediction), doccano (no "
                        "draft), spans-jsonl (the aggregate's spans); read the tool's export back with "
                        "--id-column doc_id")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows of the list printed (default 20)")
    p.add_argument("--quiet", "-q", action="store_true", help="no messages on stderr")
    p.set_defaults(func=_run)
