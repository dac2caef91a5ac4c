"""crowdqa review: approve or reject every worker by rules on its score, and list the workers to block.

Reads a crowd upload of any format (--format, default mturk-csv), aggregates it (with expert files if
given), scores every worker against the aggregate (or the experts) with 95% intervals, and decides.
A Mechanical Turk batch-results CSV is written back with Approve ("x") or Reject (the reason) and
RequesterFeedback filled for every assignment still waiting for a decision, ready to upload on the
requester site (Manage > Results > Upload CSV; every other byte of the file is kept); any other
format gets --output as a decisions CSV (one row per worker). --block-list writes the workers to block
(by default those whose report verdict is block: answers that do not depend on the truth, Raykar and
Yu's spammer score; --block-from rejected or both), as `crowdqa blocked add --from-file` reads it;
--apply-block-list puts them on --project's block list, so the project's later jobs fit without them.
A worker is rejected only when it has
at least --min-tokens compared tokens and the whole 95% interval of its score is below
--reject-below (--decide-by estimate: the estimate alone); everyone else is approved. --dry-run
prints the summary (how many approved and rejected, and why) and writes nothing. --project NAME applies
that project's block list (kept by the server, as `crowdqa blocked`) as the project's jobs do: the
blocked workers are left out of the fit, still scored and judged by the same rules, and marked.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from crowdqa.api.commands import COMMANDS, UserError, cli_wording, server_project, server_session

__all__ = ["register"]

#: The rules' choices as ``--help`` lists them, written here so that ``crowdqa review --help`` loads none of
#: the review (numpy, the store); the rules check them again (:class:`crowdqa.jobs.review.ReviewRules`), and a
#: test pins these to theirs.
METRICS = ("auto", "f1", "accuracy")
AGAINST = ("aggregate", "expert")
DECIDE_BY = ("interval", "estimate")
BLOCK_FROM = ("verdict", "rejected", "both")


def _number(flag: str, text: str | None, kind: type, what: str):
    """``text`` as a number, or a one-line error naming the flag (argparse's own would add a usage block)."""
    if text is None:
        return None
    try:
        return kind(text)
    except ValueError:
        raise UserError(f"{flag} must be {what}, found {text!r}") from None


def _rules(args: argparse.Namespace):
    from crowdqa.jobs.review import ReviewRules

    try:
        return ReviewRules(
            reject_below=_number("--reject-below", args.reject_below, float, "a number in [0, 1]"),
            min_tokens=_number("--min-tokens", args.min_tokens, int, "an integer >= 0"), metric=args.metric,
            against=args.against, decide_by=args.decide_by, bonus=args.bonus,
            bonus_above=_number("--bonus-above", args.bonus_above, float, "a number in [0, 1]"))
    except ValueError as exc:
        flags = re.sub(r"\b(reject_below|min_tokens|bonus_above|bonus|decide_by)\b",
                       lambda m: "--" + m[1].replace("_", "-"), str(exc))
        raise UserError(flags) from None


def _block_list(project: str) -> frozenset[str]:
    """``--project``: the project's block list, read where ``crowdqa blocked`` reads it (which it says first)."""
    from crowdqa.store.crud import blocked_annotators

    with server_session() as session:
        return blocked_annotators(session=session, project_id=server_project(session, project).id)


def _apply_block_list(project: str, rows: list[dict[str, str]], say) -> None:
    """Put the review's block list on the project's (the server's, as `crowdqa blocked add`)."""
    from crowdqa.jobs.blocklist import block_rows

    with server_session() as session:
        done = block_rows(session=session, project_id=server_project(session, project).id, rows=rows)
    new = sum(1 for _, created in done if created)
    say(f"crowdqa: blocked {new} workers in project {project!r} ({len(done) - new} were blocked already); its jobs "
        "started from now on fit without them")


def _run(args: argparse.Namespace) -> int:
    from crowdqa.api.commands._uploads import check_output, verdict_rules
    from crowdqa.api.commands.aggregate import Progress, method_params
    from crowdqa.ingest.formats import FORMATS, UPLOAD_OPTIONS
    from crowdqa.jobs.review import format_review, review_file

    # Everything that can be checked without the data, before any file is read.
    rules = _rules(args)
    params = method_params(args)
    if not args.dry_run and not (args.output or args.block_list or args.apply_block_list):
        raise UserError("--output PATH is needed (or --block-list PATH, or --dry-run for the summary alone)")
    if args.apply_block_list and not args.project:
        raise UserError("--apply-block-list needs --project NAME (the project whose later jobs leave them out)")
    if args.bonus_output and rules.bonus is None:
        raise UserError("--bonus-output needs --bonus and --bonus-above")
    if rules.against == "expert" and not args.expert and not FORMATS[args.format].experts:
        raise UserError("--against expert needs --expert PATH")
    if args.use_experts and not args.expert:
        raise UserError("--use-experts needs --expert PATH")
    if args.bonus_output and args.format != "mturk-csv":
        raise UserError("--bonus-output is a Mechanical Turk bonus list (WorkerId, AssignmentId): it needs "
                        "--format mturk-csv; the decisions CSV (--output) has every worker's bonus")
    for option, path in (("--output", args.output), ("--bonus-output", args.bonus_output),
                         ("--block-list", args.block_list), ("--summary", args.summary)):
        check_output(None if args.dry_run and option != "--summary" else path, option=option)
    options = {o.name: getattr(args, o.name) for o in UPLOAD_OPTIONS if getattr(args, o.name) not in (None, False)}
    expert_format = args.expert_format or args.format
    experts = [dict(path=p, format=expert_format, role="expert",
                    **{k: v for k, v in options.items() if k not in ("on_error",)}) for p in args.expert]
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    blocked = _block_list(args.project) if args.project else frozenset()
    outcome, parsed = review_file(args.path, rules, method=args.method, params=params, options=options,
                                  experts=experts, use_experts=args.use_experts, blocked=blocked,
                                  format=args.format, block_from=args.block_from, verdict_rules=verdict_rules(args),
                                  progress=Progress(args.method, quiet=args.quiet))
    for note in parsed.remarks():
        say(f"crowdqa: note: {cli_wording(note)}")
    if parsed.problems:
        say(f"crowdqa: skipped {len(parsed.problems)} bad rows (--on-error skip); their assignments are left as "
            "they were unless the worker was scored on other rows")
    print(format_review(outcome.summary, source=args.path, max_rows=args.top))
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as fh:
            json.dump(outcome.summary, fh, indent=2)
            fh.write("\n")
        say(f"crowdqa: wrote the summary to {args.summary}")
    if args.dry_run:
        say("crowdqa: dry run: nothing written")
        return 0
    if args.output and outcome.batch is not None:
        with open(args.output, "wb") as fh:
            fh.write(outcome.reviewed_csv())
        say(f"crowdqa: wrote the reviewed batch to {args.output}; upload it on the requester site "
            "(Manage > Results > Upload CSV)")
    elif args.output:
        with open(args.output, "wb") as fh:
            fh.write(outcome.decisions_csv())
        say(f"crowdqa: wrote {len(outcome.summary['decisions'])} workers' decisions to {args.output}")
    if args.block_list:
        with open(args.block_list, "wb") as fh:
            fh.write(outcome.block_list_csv())
        say(f"crowdqa: wrote {len(outcome.summary['block_list'])} workers to block to {args.block_list} "
            f"(`crowdqa blocked add --project NAME --from-file {args.block_list}` puts them on a project's list)")
    if args.apply_block_list:
        _apply_block_list(args.project, outcome.summary["block_list"], say)
    if args.bonus_output:
        with open(args.bonus_output, "wb") as fh:
            fh.write(outcome.bonus_csv())
        say(f"crowdqa: wrote {len(outcome.bonuses)} bonuses to {args.bonus_output}")
    return 0


def register(subparsers) -> None:
    from crowdqa.api.commands._uploads import add_option_arguments, min_items_value
    from crowdqa.ingest.formats import READ_FORMATS, UPLOAD_OPTIONS
    from crowdqa.jobs.params import registered_methods

    p = subparsers.add_parser("review", help=COMMANDS["review"][1], description=__doc__.split("\n", 1)[1].strip(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", metavar="PATH", help="the crowd upload: a Mechanical Turk batch-results CSV, or any "
                                                "upload format with --format")
    p.add_argument("--format", "-f", choices=READ_FORMATS, default="mturk-csv",
                   help="format of PATH (default mturk-csv, written back with the decisions)")
    p.add_argument("--method", required=True, metavar="M",
                   help=f"aggregation method: {', '.join(registered_methods())}")
    p.add_argument("--params", help='method parameters as JSON, e.g. \'{"max_iter": 50}\'')
    p.add_argument("--reject-below", required=True, metavar="SCORE",
                   help="reject workers whose score (F1, or accuracy for categorical answers) is below this")
    p.add_argument("--min-tokens", default="50", metavar="N",
                   help="judge only workers with at least N compared tokens (items); default 50")
    p.add_argument("--decide-by", choices=DECIDE_BY, default="interval",
                   help="interval (default): reject only when the 95%% interval's upper bound is below "
                        "--reject-below (and pay a bonus only when its lower bound reaches --bonus-above); "
                        "estimate: compare the estimate")
    p.add_argument("--metric", choices=METRICS, default="auto",
                   help="auto (default): F1 for span labels, accuracy for categorical answers")
    p.add_argument("--against", choices=AGAINST, default="aggregate",
                   help="score workers against the aggregate (default) or the experts (needs --expert)")
    p.add_argument("--bonus", metavar="DOLLARS", help="pay this bonus (e.g. 0.50) to workers above --bonus-above")
    p.add_argument("--bonus-above", metavar="SCORE", help="the bonus threshold")
    p.add_argument("--output", metavar="OUT.csv", help="where to write the reviewed batch (mturk-csv), or the "
                                                       "decisions CSV (any other format)")
    p.add_argument("--block-list", metavar="BLOCKED.csv",
                   help="write the workers to block here (annotator,reason), for `crowdqa blocked add --from-file`")
    p.add_argument("--block-from", choices=BLOCK_FROM, default="verdict",
                   help="who goes on the block list: the report's verdict block (default: answers that do not "
                        "depend on the truth), the workers the rules reject, or both")
    p.add_argument("--apply-block-list", action="store_true",
                   help="put the block list on --project's block list (its later jobs fit without them)")
    p.add_argument("--min-items", type=min_items_value, default=None, metavar="N",
                   help="the report's verdicts judge only workers with at least N compared items (default 20)")
    p.add_argument("--bonus-output", metavar="BONUSES.csv",
                   help="write the bonus list here (WorkerId, AssignmentId, BonusAmount, Reason)")
    p.add_argument("--summary", metavar="SUMMARY.json", help="write the summary as JSON here")
    p.add_argument("--dry-run", action="store_true", help="print the summary only; write no CSV")
    p.add_argument("--expert", metavar="PATH", action="append", default=[],
                   help="an expert upload of (some of) the same documents (repeatable)")
    p.add_argument("--expert-format", metavar="F", choices=READ_FORMATS, help="format of --expert (default: --format)")
    p.add_argument("--use-experts", action="store_true", help="clamp the expert labels while fitting")
    p.add_argument("--project", metavar="NAME",
                   help="apply this project's block list (the server's, as `crowdqa blocked`): its workers are left "
                        "out of the fit, still scored and judged, and marked blocked")
    add_option_arguments(p, [o.name for o in UPLOAD_OPTIONS])
    p.add_argument("--top", type=int, default=40, metavar="N", help="rejected workers listed (default 40)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(func=_run)
