"""crowdqa aggregate: aggregate one crowd dump (plus optional experts) synchronously.

Reads the files, runs the same pipeline as a queued job of the service, writes the aggregate
and, with --report, the quality report as JSON. Options and output paths are checked before
any file is read. Progress goes to stderr: a progress bar per stage on a terminal, one line per
stage and EM iteration otherwise, nothing with --quiet.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from crowdqa.api.commands import COMMANDS, UserError
from crowdqa.ingest.formats import ROLES, WRITE_FORMATS

__all__ = ["register", "method_params", "Progress"]


class Progress:
    """Progress on stderr, stage by stage (reading, fitting, cross-fitting, scoring, writing).

    On a terminal each stage is a tqdm bar (the fitting bar counts EM iterations up to ``max_iter``,
    with the log-likelihood beside it) that is left showing the stage's time; elsewhere (a file, a
    pipe) one line per stage and per EM iteration, with the stage's seconds so far (as the closing line's fit
    seconds count them); nothing with ``quiet``. ``stages`` collects the seconds of every finished stage.
    """

    def __init__(self, method: str, *, quiet: bool = False, max_iter: int | None = None, stream=None) -> None:
        self.method, self.quiet, self.max_iter = method, quiet, max_iter
        self.stream = stream or sys.stderr
        self.tty = not quiet and self.stream.isatty()
        self.t0 = time.perf_counter()
        self.stage: str | None = None
        self.started = self.t0
        self.bar = None
        self.stages: dict[str, float] = {}

    def __call__(self, stage: str, iteration: int | None, log_likelihood: float | None) -> None:
        if stage != self.stage:
            self.end()
            self.stage, self.started = stage, time.perf_counter()
            if self.tty:
                from tqdm import tqdm

                em = stage == "fitting" and isinstance(self.max_iter, int)  # "auto": unknown until fit
                self.bar = tqdm(desc=f"crowdqa: {self.method}: {stage}", total=self.max_iter if em else None,
                                unit=" it", file=self.stream, leave=True,
                                bar_format=None if em else "{desc} {elapsed}")
            elif not self.quiet:
                self.stream.write(f"crowdqa: {self.method}: {stage}...\n")
                self.stream.flush()
        if iteration is None:
            return
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(f"log-likelihood {log_likelihood:.6g}", refresh=False)
        elif not self.quiet:
            self.stream.write(f"crowdqa: {self.method}: iteration {iteration:4d}  log-likelihood {log_likelihood:.6g}  "
                              f"({time.perf_counter() - self.started:.1f} s)\n")  # the fit's seconds so far
            self.stream.flush()

    def end(self) -> None:
        """Close the current stage and record its seconds."""
        if self.stage is None:
            return
        self.stages[self.stage.replace("-", "_")] = round(time.perf_counter() - self.started, 6)
        if self.bar is not None:
            if self.bar.total is not None and self.bar.n < self.bar.total:
                self.bar.total = self.bar.n  # converged before max_iter: show the fit as complete
            self.bar.close()
            self.bar = None
        self.stage = None


def method_params(args: argparse.Namespace) -> dict:
    """``--params`` as a dict, checked against ``--method``'s parameters (before any file is read)."""
    from crowdqa.jobs.params import validate_params

    params = {}
    if args.method == "auto":
        if args.params:
            raise UserError("--params are one method's parameters; --method auto compares the methods with their "
                            "defaults (crowdqa compare --params-for METHOD=JSON sets them)")
        return params
    if args.params:
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as exc:
            raise UserError(f"--params must be a JSON object: {exc}") from None
        if not isinstance(params, dict):
            raise UserError(f"--params must be a JSON object, found {type(params).__name__}")
    return validate_params(args.method, params)


def _run(args: argparse.Namespace) -> int:
    from crowdqa.api.commands._uploads import (
        check_output,
        check_sort,
        print_notes,
        read_uploads,
        table_rest,
        verdict_rules,
    )
    from crowdqa.jobs import local

    # Everything that can be checked without the data, before any file is read.
    auto = args.method == "auto"
    local.check_run(use_experts=bool(args.use_experts), reference=args.reference, expert_files=len(args.expert),
                    role=args.role, input_format=args.format, method=None if auto else args.method)
    params = method_params(args)
    check_sort(args)
    folder_out = (args.output_format or local.default_output_format(args.format, output=args.output)) == "ebm-nlp"
    check_output(args.output, option="--output", folder=folder_out)
    check_output(args.report, option="--report")
    check_output(args.save_model, option="--save-model")
    start = _model_start(args)
    predict_format = _check_predict(args)

    quiet = args.quiet
    say = (lambda msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr))
    progress = Progress(args.method, quiet=quiet, max_iter=None if auto else local.max_iter(args.method, params))
    progress("reading", None, None)
    parsed = read_uploads(args)
    corpus, problems = parsed.corpus, parsed.problems
    progress.end()
    print_notes(parsed)
    # What needs the data, before fitting: the method's data-kind rules (classes, sequences), the output format
    # (categorical answers are written as such).
    if not auto:  # auto compares the methods whose rules the data meets
        local.check_method_data(args.method, corpus)
    out_format = local.output_format(corpus, input_format=args.format, output=args.output, given=args.output_format)
    check_output(args.output, option="--output", folder=out_format == "ebm-nlp")
    # The sizes only: the parse summary (crowdqa ingest) also walks every label for its coverage statistics.
    roles = {r: corpus.worker_roles.count(r) for r in ROLES}
    say(f"crowdqa: read {local.sizes(corpus)}, annotators {roles}"
        + (f"; skipped {len(problems)} bad rows" if problems else ""))
    method, comparison, why, prior, use_experts = args.method, None, None, None, bool(args.use_experts)
    if auto:
        from crowdqa.jobs.compare import choose_method

        local.check_reference(args.reference, corpus)
        progress("comparing", None, None)
        choice = choose_method(corpus, use_experts=args.use_experts, reference=args.reference)
        method, comparison, why, use_experts = choice.method, choice.comparison, choice.why, choice.use_experts
        prior = choice.fit  # the comparison's fit of the method (auto takes no --params): not made again
        progress.end()
        say(f"crowdqa: --method auto: {method}{' with the experts clamped' if choice.use_experts else ''}: {why}")
        progress.method = method
    result = local.aggregate(corpus, method=method, params=params, use_experts=use_experts,
                             reference=args.reference, progress=progress, start=start,
                             unmatched_expert_documents=parsed.unmatched_expert_documents, prior=prior,
                             verdict_rules=verdict_rules(args))
    progress("writing", None, None)
    local.write_aggregate(result, corpus, output=args.output, format=out_format)
    progress.end()
    # The report as plain JSON data: the typed model (pydantic) is for the service, not this process.
    report = result.report_data
    if auto:
        report["method_choice"], report["comparison"] = f"--method auto: {why}", comparison
    fit = report["fit"]
    fit["stages"].update(progress.stages)  # the report's fit block keeps every stage's seconds
    stop = "fixed schedule" if fit["converged"] is None else f"converged={fit['converged']}"
    say(f"crowdqa: {method}: {fit['iterations']} iterations, {stop}, "
        f"{fit['seconds']:.2f} s; wrote {out_format} to {args.output}")
    if fit.get("convergence_note"):
        say(f"crowdqa: warning: {fit['convergence_note']}")
    if (calibrated := local.calibration_line(report)) is not None:
        say(f"crowdqa: {calibrated}")
    if args.save_model:
        from crowdqa.jobs.batches import save_model_file

        save_model_file(result.model, args.save_model)
        say(f"crowdqa: wrote the fitted model to {args.save_model}")
    if args.predict:
        _pre_annotate(args, result.model, method=method, params=params, out_format=predict_format, say=say)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as fh:
            local.write_report(report, fh)
        say(f"crowdqa: wrote the report to {args.report}")
    print(local.format_report(report, max_workers=args.top, sort=args.sort, rest=table_rest("--report", args.report),
                              min_items=args.min_items or 0))
    if comparison is not None:
        from crowdqa.jobs.compare import format_comparison

        print("\nMethods compared (--method auto):\n" + format_comparison(comparison))
    return 0


def _check_predict(args: argparse.Namespace) -> str | None:
    """``--predict`` and ``--predictions`` together, a method that can, and the predictions' format (None without)."""
    if bool(args.predict) != bool(args.predictions):
        raise UserError("--predict DOCS and --predictions OUT go together: the documents to label and where to "
                        "write their labels")
    if not args.predict:
        return None
    from crowdqa.api.commands._uploads import check_output
    from crowdqa.jobs import local
    from crowdqa.jobs.preannotate import check_pre_annotation

    if args.method == "auto":
        raise UserError("--predict needs one method; --method auto chooses it from the data")
    try:
        check_pre_annotation(args.method)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    fmt = args.output_format or local.default_output_format(args.format, output=args.predictions)
    check_output(args.predictions, option="--predictions", folder=fmt == "ebm-nlp")
    return fmt


def _pre_annotate(args: argparse.Namespace, model, *, method: str, params: dict, out_format: str, say) -> None:
    """Label ``--predict``'s documents with the fitted (or ``--from-model``) model; write them to ``--predictions``."""
    from crowdqa.api.commands._uploads import upload_options
    from crowdqa.jobs.preannotate import label_documents

    corpus = label_documents(model, method=method, params=params, path=args.predict, format=args.format,
                             options=upload_options(args), output=args.predictions, output_format=out_format)
    say(f"crowdqa: labelled {corpus.n_docs} documents ({corpus.n_tokens} tokens) of {args.predict}; wrote "
        f"{out_format} to {args.predictions}")


def _model_start(args: argparse.Namespace):
    """``--from-model`` (and ``--frozen``) as the pipeline's start; checks ``--save-model``'s method too."""
    if args.frozen and not args.from_model:
        raise UserError("--frozen needs --from-model PATH (the model of an earlier batch)")
    if args.method == "auto" and (args.save_model or args.from_model):
        raise UserError("--save-model and --from-model need one method; --method auto chooses it from the data: "
                        "run crowdqa compare first, then aggregate with the method it recommends")
    if args.save_model or args.from_model:
        from crowdqa.jobs.batches import batch_methods, load_model_file

        if args.method not in batch_methods():
            raise UserError(f"--method {args.method} keeps no model a new batch can start from; "
                            f"--save-model and --from-model take {', '.join(batch_methods())}")
        if args.from_model:
            return load_model_file(args.from_model, method=args.method, frozen=args.frozen)
    return None


def register(subparsers) -> None:
    from crowdqa.api.commands._uploads import add_table_arguments, add_upload_arguments
    from crowdqa.jobs.params import default_method, describe_bounds, registered_methods

    p = subparsers.add_parser("aggregate", help=COMMANDS["aggregate"][1],
                              description=__doc__.split("\n", 1)[1].strip(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_upload_arguments(p, path_help="the crowd annotations (file, folder or zip)", metavar="CROWD_PATH")
    p.add_argument("--method", required=True, choices=[*registered_methods(), "auto"],
                   help="aggregation method; auto: compare the methods that apply on the experts (crowdqa compare "
                        "--expert-variants: each on the crowd alone and with the experts clamped; only clamped "
                        "under --use-experts, only crowd-only under --no-use-experts) and use the recommended one; "
                        f"without experts, {default_method('typed-bio')} for BIO labels with several types, "
                        f"{default_method('spans')} for one span type, {default_method('categorical')} for "
                        f"categorical answers, {default_method('tags')} for tag labels")
    p.add_argument("--params", help='method parameters as JSON, e.g. \'{"max_iter": 50}\'; upper bounds: '
                   + describe_bounds())
    p.add_argument("--use-experts", action=argparse.BooleanOptionalAction, default=None,
                   help="clamp the expert labels while fitting; the aggregate is then scored against the experts by "
                        "4-fold cross-fitting over the expert documents. Not given: no, except that --method auto "
                        "clamps them when its rule expects that to score better on unseen items (the report's "
                        "experts_used_in_fit says which)")
    p.add_argument("--reference", default="union", help="expert reference rule: union, majority or an expert id")
    p.add_argument("--output", required=True, help="where to write the aggregate (a folder for ebm-nlp)")
    p.add_argument("--output-format", choices=WRITE_FORMATS,
                   help="default: categorical-csv for categorical answers (whatever the input format; --output "
                        "named .jsonl or .conll is refused), else by --output's suffix (.jsonl, .conll; .csv is "
                        "refused for span labels), else conll for CoNLL input, ebm-nlp for EBM-NLP, "
                        "else spans-jsonl")
    p.add_argument("--report", metavar="REPORT.json", help="write the quality report here")
    p.add_argument("--save-model", metavar="MODEL.npz",
                   help="keep the fitted model (annotators by id) so a later batch can start from it")
    p.add_argument("--from-model", metavar="MODEL.npz",
                   help="a new batch: start EM from an earlier batch's model (--save-model, or GET /jobs/{id}/model), "
                        "annotators seen before keeping their history, new ones starting from the crowd average")
    p.add_argument("--frozen", action="store_true",
                   help="with --from-model: predict with the earlier model's parameters, no EM")
    p.add_argument("--predict", metavar="DOCS",
                   help="pre-annotation: label the documents of DOCS (read as --format; any labels there are not "
                        "read) with the fitted model (or --from-model's); needs a method whose model reads the "
                        "text")
    p.add_argument("--predictions", metavar="OUT",
                   help="where --predict writes its labels (format as --output-format, else by the suffix)")
    p.add_argument("--quiet", "-q", action="store_true",
                   help="no progress on stderr (on a terminal it is a progress bar per stage; elsewhere one line "
                        "per stage and per EM iteration)")
    add_table_arguments(p)
    p.set_defaults(func=_run)
