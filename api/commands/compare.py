"""crowdqa compare: fit several aggregation methods on one crowd dump and compare them on the experts.

Every method is fitted on the crowd labels (the experts only grade, unless --use-experts: then they are clamped
and each method is scored by 4-fold cross-fitting, as the report does) and scored against the experts on the
expert documents: conlleval-like typed span F1 for BIO labels with several entity types (token F1 beside it),
token F1 for one type, accuracy for categorical answers (macro F1 beside it), each with a 95% bootstrap interval
over documents and the paired interval of its difference to the best (the same resamples for every method).

The recommendation is what --method auto fits (with the same --use-experts): the candidate with the highest
expected score on the items the experts did not label, its measured difference to the candidate best across the
project's data sets shrunk toward the prior (empirical Bayes); the table says how many points each one is expected
behind it. --expert-variants compares every method both on the crowd alone and with the experts clamped (METHOD
and METHOD+experts; to use a METHOD+experts recommendation, aggregate with --use-experts); ties go to the cheaper
method (in the fixed order of cost: {cost_order}).
"""

from __future__ import annotations

import argparse
import json
import sys

from crowdqa.api.commands import COMMANDS, UserError

__all__ = ["register", "params_for"]


def _description() -> str:
    """The module docstring with the registry's order of cost written in."""
    from crowdqa.jobs.params import methods_by_cost, registered_methods

    registered_methods()  # the methods of installed packages too, for --methods and the order below
    return __doc__.split("\n", 1)[1].strip().format(cost_order=", ".join(methods_by_cost()))


def params_for(items: list[str]) -> dict[str, dict]:
    """``--params-for METHOD=JSON`` options as ``{method: params}`` (checked later against the methods)."""
    from crowdqa.jobs.params import EXAMPLE_METHOD

    out: dict[str, dict] = {}
    for item in items:
        method, sep, text = item.partition("=")
        if not sep or not method.strip():
            raise UserError(f"--params-for must be METHOD=JSON, e.g. {EXAMPLE_METHOD}='{{\"max_iter\": 50}}', "
                            f"found {item!r}")
        try:
            params = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"--params-for {method.strip()}: not JSON: {exc}") from None
        if not isinstance(params, dict):
            raise UserError(f"--params-for {method.strip()}: must be a JSON object, found {type(params).__name__}")
        if method.strip() in out:
            raise UserError(f"--params-for {method.strip()} is given twice")
        out[method.strip()] = params
    return out


def _run(args: argparse.Namespace) -> int:
    from crowdqa.api.commands._uploads import check_output, print_notes, read_uploads
    from crowdqa.jobs import local
    from crowdqa.jobs.compare import check_methods, format_comparison, parse_methods, run_comparison

    # Everything that can be checked without the data, before any file is read.
    if not args.expert and args.role != "expert":
        from crowdqa.ingest.formats import FORMATS

        if not FORMATS[args.format].experts:
            raise UserError("compare scores the methods against the experts: give --expert PATH")
    if args.expert_variants and args.use_experts:
        raise UserError("--expert-variants compares each method with and without the experts; --use-experts clamps "
                        "them in every fit: give one of the two")
    local.check_run(use_experts=args.use_experts, reference=args.reference, expert_files=len(args.expert),
                    role=args.role, input_format=args.format, method=None)
    methods = parse_methods(args.methods)
    params = check_methods(methods, params_for(args.params_for), use_experts=args.use_experts or args.expert_variants)
    check_output(args.output, option="--output")
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr))
    say("crowdqa: compare: reading...")
    parsed = read_uploads(args)
    corpus = parsed.corpus
    print_notes(parsed)
    local.check_reference(args.reference, corpus)
    say(f"crowdqa: read {local.sizes(corpus)}")

    def progress(method: str | None, index: int, total: int) -> None:
        say(f"crowdqa: compare: fitting {method} ({index + 1}/{total})..." if method
            else "crowdqa: compare: scoring...")

    result = run_comparison(corpus, methods=methods, params_for=params, use_experts=args.use_experts,
                            expert_variants=args.expert_variants, reference=args.reference, progress=progress,
                            n_boot=args.n_boot)
    with open(args.output, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
        fh.write("\n")
    say(f"crowdqa: wrote the comparison to {args.output} ({result['seconds']:.1f} s, of which fits "
        f"{result['fit_seconds']:.1f} s)")
    print(format_comparison(result))
    return 0


def register(subparsers) -> None:
    from crowdqa.api.commands._uploads import add_upload_arguments
    from crowdqa.jobs.params import EXAMPLE_METHOD

    p = subparsers.add_parser("compare", help=COMMANDS["compare"][1], description=_description(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_upload_arguments(p, path_help="the crowd annotations (file, folder or zip)", metavar="CROWD_PATH")
    p.add_argument("--methods", default="all",
                   help="comma-separated method ids, or all (default): every method that applies to the labels")
    p.add_argument("--params-for", metavar="METHOD=JSON", action="append", default=[],
                   help=f'one method\'s parameters, e.g. {EXAMPLE_METHOD}=\'{{"max_iter": 50}}\' (repeatable)')
    p.add_argument("--use-experts", action="store_true",
                   help="clamp the expert labels in every fit; each method is then scored by 4-fold cross-fitting "
                        "(and fitted once more on every expert label: its seconds, iterations and convergence)")
    p.add_argument("--expert-variants", action="store_true",
                   help="compare every method on the crowd alone and with the experts clamped (METHOD and "
                        "METHOD+experts); the clamped ones are scored by 4-fold cross-fitting")
    p.add_argument("--reference", default="union", help="expert reference rule: union, majority or an expert id")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--output", required=True, metavar="RESULTS.json", help="where to write the comparison")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(func=_run)
