"""``crowdqa aggregate``: aggregate one crowd dump (plus optional experts) synchronously.

Reads the files with ``ingest.read_corpus``, runs the same pipeline as a queued job
(``jobs.pipeline.run_pipeline``), writes the aggregate with ``ingest.writers.write_labels``
and, with ``--report``, the quality report as JSON. A progress line per EM iteration goes
to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

__all__ = ["register", "default_output_format"]

OUTPUT_FORMATS = ("spans-jsonl", "conll", "ebm-nlp", "categorical-csv")


def default_output_format(input_format: str) -> str:
    """CoNLL in -> CoNLL out; EBM-NLP -> EBM-NLP; categorical -> CSV; any span format -> spans-jsonl."""
    return {"conll": "conll", "ebm-nlp": "ebm-nlp", "categorical": "categorical-csv"}.get(input_format, "spans-jsonl")


class _ProgressLine:
    """One stderr line per EM iteration (rewritten in place on a terminal)."""

    def __init__(self, method: str, stream=None) -> None:
        self.method, self.stream = method, stream or sys.stderr
        self.tty = self.stream.isatty()
        self.t0 = time.perf_counter()
        self.open = False

    def __call__(self, stage: str, iteration: int | None, log_likelihood: float | None) -> None:
        if iteration is None:
            if self.open:
                self.stream.write("\n")
                self.open = False
            if stage in ("fitting", "reporting"):
                self.stream.write(f"crowdqa: {self.method}: {stage}...\n")
            self.stream.flush()
            return
        line = (f"crowdqa: {self.method}: iteration {iteration:4d}  log-likelihood {log_likelihood:.6g}  "
                f"({time.perf_counter() - self.t0:.1f} s)")
        self.stream.write(("\r" + line) if self.tty else line + "\n")
        self.open = self.tty
        self.stream.flush()


def _options(args: argparse.Namespace) -> dict:
    given = {"docs": args.docs, "category": args.category, "text_column": args.text_column,
             "answer_column": args.answer_column, "id_column": args.id_column, "on_error": args.on_error,
             "scheme": args.scheme}
    out = {k: v for k, v in given.items() if v is not None}
    if args.keep_rejected:
        out["keep_rejected"] = True
    return out


def _run(args: argparse.Namespace) -> int:
    from api.cli import UserError
    from ingest import read_corpus, summarize
    from ingest.merge import merge_corpora
    from ingest.writers import write_labels
    from jobs.pipeline import run_pipeline
    from jobs.service import jsonable

    if args.use_experts and not args.expert:
        raise UserError("--use-experts needs --expert PATH")
    params = {}
    if args.params:
        try:
            params = json.loads(args.params)
        except json.JSONDecodeError as exc:
            raise UserError(f"--params must be a JSON object: {exc}") from None
        if not isinstance(params, dict):
            raise UserError(f"--params must be a JSON object, found {type(params).__name__}")
    options = _options(args)
    crowd = read_corpus(args.crowd_path, format=args.format, role="crowd", **options)
    parts = [crowd.corpus]
    problems = list(crowd.problems)
    if args.expert:
        expert = read_corpus(args.expert, format=args.expert_format or args.format, role="expert", **options)
        parts.append(expert.corpus)
        problems += expert.problems
    corpus = merge_corpora(parts)
    s = summarize(corpus)
    print(f"crowdqa: read {s['documents']} documents, {s['tokens']} tokens, annotators {s['annotators']}"
          + (f"; skipped {len(problems)} bad rows" if problems else ""), file=sys.stderr)
    result = run_pipeline(corpus, method=args.method, params=params, use_experts=args.use_experts,
                          reference=args.reference, progress=_ProgressLine(args.method))
    out_format = args.output_format or default_output_format(args.format)
    write_labels(result.labels, corpus, args.output, format=out_format)
    fit = result.fit
    print(f"crowdqa: {args.method}: {fit['iterations']} iterations, converged={fit['converged']}, "
          f"{fit['seconds']:.2f} s; wrote {out_format} to {args.output}", file=sys.stderr)
    if args.report:
        with open(args.report, "w", encoding="utf-8") as fh:
            json.dump(jsonable(result.report), fh, indent=2, ensure_ascii=False)
            fh.write("\n")
        print(f"crowdqa: wrote the report to {args.report}", file=sys.stderr)
    try:
        from quality.report import format_report

        print(format_report(result.report))
    except ImportError:  # pragma: no cover - the report module ships with crowdqa
        pass
    return 0


def register(subparsers) -> None:
    from ingest import FORMATS

    p = subparsers.add_parser("aggregate", help="aggregate a crowd dump and report against experts",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("crowd_path", metavar="CROWD_PATH", help="the crowd annotations (file, folder or zip)")
    p.add_argument("--format", required=True, choices=FORMATS, help="format of CROWD_PATH")
    p.add_argument("--docs", help="folder of <doc_id>.txt texts (span formats without texts)")
    p.add_argument("--category", help="element / label to keep (PICO: Participants, ...)")
    p.add_argument("--text-column", help="column holding the document text")
    p.add_argument("--answer-column", help="MTurk answer column")
    p.add_argument("--id-column", help="column holding the document id")
    p.add_argument("--keep-rejected", action="store_true", help="MTurk: keep rejected assignments")
    p.add_argument("--on-error", choices=["fail", "skip"], help="fail at the first bad row (default) or skip them")
    p.add_argument("--scheme", choices=["auto", "io", "bio"], help="label scheme (default auto)")
    p.add_argument("--expert", metavar="PATH", help="expert annotations of (some of) the same documents")
    p.add_argument("--expert-format", choices=FORMATS, help="format of --expert (default: --format)")
    p.add_argument("--method", required=True, choices=["mv", "ds", "hmm-crowd"], help="aggregation method")
    p.add_argument("--params", help='method parameters as JSON, e.g. \'{"max_iter": 50}\'')
    p.add_argument("--use-experts", action="store_true",
                   help="clamp the expert labels while fitting (those tokens are then left out of the report)")
    p.add_argument("--reference", default="union", help="expert reference rule: union, majority or an expert id")
    p.add_argument("--output", required=True, help="where to write the aggregate (a folder for ebm-nlp)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS,
                   help="default: conll for CoNLL input, ebm-nlp for EBM-NLP, categorical-csv for categorical, "
                        "else spans-jsonl")
    p.add_argument("--report", metavar="REPORT.json", help="write the quality report here")
    p.set_defaults(func=_run)
