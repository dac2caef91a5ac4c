"""``crowdqa sample-size``: how many documents a gold standard needs (SLiCE)."""

from __future__ import annotations

import argparse
import json

from crowdqa.api.commands import COMMANDS


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``sample-size`` subcommand."""
    p = subparsers.add_parser(
        "sample-size",
        help=COMMANDS['sample-size'][1],
        description=(
            "Plan a gold standard with SLiCE (Canales et al., JMIR Med Inform 2021): the documents, "
            "positives and negatives needed so that the precision and recall intervals have the given half-width."
        ),
    )
    p.add_argument("--precision", type=float, required=True, help="expected precision, in (0, 1)")
    p.add_argument("--recall", type=float, required=True, help="expected recall, in (0, 1)")
    p.add_argument("--frequency", type=float, required=True, help="frequency of the event, in (0, 1)")
    p.add_argument(
        "--external", action="store_true",
        help="the frequency was measured externally (in the population), not on the system's output",
    )
    p.add_argument("--half-width", type=float, required=True, help="interval half-width, e.g. 0.05")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level (default 0.95)")
    p.add_argument("--sites", type=int, default=None, help="split the sample over this many sites")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compute the plan and print it as a table or JSON."""
    # Imported here, not at the top: it loads scipy.special, and `crowdqa sample-size --help` needs none of it.
    from crowdqa.jobs.planning import plan_gold_standard

    # A bad value raises ValueError, which the CLI prints as one line (exit status 2).
    plan = plan_gold_standard(
        precision=args.precision, recall=args.recall, frequency=args.frequency,
        half_width=args.half_width, confidence=args.confidence, external=args.external, sites=args.sites,
    )
    if args.json:
        print(json.dumps(plan.as_dict()))
        return 0
    print(f"documents  {plan.documents}")
    print(f"positives  {plan.positives}   (tp {plan.tp}, fp {plan.fp})")
    print(f"negatives  {plan.negatives}   (tn {plan.tn}, fn {plan.fn})")
    print(f"instances for the precision interval {plan.n_precision}, for the recall interval {plan.n_recall}")
    if plan.per_site:
        s = plan.per_site
        print(f"per site ({s['sites']} sites): documents {s['documents']}, positives {s['positives']}, "
              f"negatives {s['negatives']}")
    return 0
