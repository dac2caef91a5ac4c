"""The command line's use cases on files: read uploads from disk, aggregate them synchronously, write the
aggregate and its report.

``crowdqa aggregate`` runs the pipeline a queued job runs (:func:`crowdqa.jobs.pipeline.run_pipeline`) on
files instead of a stored dataset, so the command line and the service give identical results. Everything
that can be refused without the data is refused before any file is read (:func:`check_run`), the rest
(the reference expert, the output format of categorical answers) right after reading.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from crowdqa.aggregation import make_aggregator
from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest import ParseResult, read_merged
from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.formats import FORMATS
from crowdqa.ingest.limits import DocumentLimits
from crowdqa.ingest.summary import format_summary, summarize
from crowdqa.ingest.writers import LabelScores, write_labels
from crowdqa.jobs.params import check_data_kind
from crowdqa.jobs.pipeline import ModelStart, PipelineResult, PriorFit, ProgressFn, run_pipeline
from crowdqa.quality.references import RULES
from crowdqa.quality.report import TABLE_SORT_KEYS, dump_report, format_report
from crowdqa.quality.worker_quality import VerdictRules

if TYPE_CHECKING:
    from crowdqa.quality.report_model import QualityReport

__all__ = ["ParseResult", "read_files", "summarize", "format_summary", "check_run", "check_method_data",
           "check_reference", "max_iter", "is_categorical", "sizes", "default_output_format", "output_format",
           "aggregate", "write_aggregate", "calibration_line", "write_report", "format_report", "RULES",
           "TABLE_SORT_KEYS", "VerdictRules"]


def read_files(uploads: list[dict[str, Any]]) -> ParseResult:
    """Read upload files (``path``, ``format``, ``role`` and format options each) and merge them into one corpus.

    A first file that holds no labels is an error, as it is for an API upload.
    """
    limits = DocumentLimits.from_environ()  # the service's variables: one bound for a file wherever it is read
    result = read_merged([{"limits": limits, **u} for u in uploads])
    if result.corpus.n_obs == 0:
        first = uploads[0]
        raise IngestError(f"the file holds no labels (read as {first['format']!r})", source=str(first["path"]))
    return result


def check_run(*, use_experts: bool, reference: str, expert_files: int, role: str, input_format: str,
              method: str | None = None) -> None:
    """Refuse, before any file is read, what needs expert labels when none can be read: ``use_experts`` (it
    clamps the experts' labels) with no ``--expert`` file and an ``input_format`` whose files hold no expert labels
    (a categorical file's gold column, EBM-NLP's gold folders, a span table's roles do), or an expert as the
    reference (unless the dump itself is experts'); a ``method`` that learns from the experts' labels only, without
    ``use_experts``, or a sequence model on a categorical format (the method's registry entry,
    :func:`crowdqa.aggregation.registry.check_data_kind`)."""
    if method is not None:  # the method's data-kind rules that the options already decide
        check_data_kind(method, use_experts=use_experts, categorical=True if input_format == "categorical" else None)
    if use_experts and not expert_files and not FORMATS[input_format].experts:
        raise ValueError(f"--use-experts needs --expert PATH (a {input_format} file holds no expert labels)")
    if reference not in RULES and not expert_files and role != "expert":
        raise ValueError(f"--reference {reference!r} names an expert, but no --expert file is given")


def check_method_data(method: str, corpus: Corpus) -> None:
    """ValueError unless ``method``'s registry entry allows ``corpus`` (its classes; token sequences or categorical
    answers): the data-kind rules :func:`check_run` could not decide before the file was read."""
    check_data_kind(method, n_classes=corpus.n_classes, categorical=is_categorical(corpus))


def check_reference(reference: str, corpus: Corpus) -> None:
    """ValueError unless ``reference`` is a rule or an expert of ``corpus`` (read: the expert ids are known). A crowd
    annotator's id is refused too: the report would grade the aggregate and the experts against that worker."""
    experts = [corpus.worker_ids[w] for w in corpus.workers_with_role("expert")]
    if reference not in RULES and reference not in experts:
        role = " (a crowd annotator)" if reference in corpus.worker_ids else ""
        raise ValueError(f"--reference must be {' or '.join(RULES)} or an expert's id {experts[:5]}, "
                         f"found {reference!r}{role}")


def max_iter(method: str, params: dict[str, Any]) -> int | None:
    """The EM iteration cap of ``method`` with ``params`` (None for a method without EM)."""
    return getattr(make_aggregator(method, dict(params)), "max_iter", None)


def is_categorical(corpus: Corpus) -> bool:
    """True for categorical answers: one-token items and no outside class."""
    return not corpus.has_outside and bool(corpus.n_docs) and bool((corpus.doc_lengths == 1).all())


def sizes(corpus: Corpus) -> str:
    """What was read, in the user's units: items for categorical answers (as the report counts them), else
    documents and tokens."""
    if is_categorical(corpus):
        return f"{corpus.n_docs} items"
    return f"{corpus.n_docs} documents, {corpus.n_tokens} tokens"


def default_output_format(input_format: str, *, output: str | None = None, categorical: bool = False,
                          tags: bool = False) -> str:
    """The output format when none is given.

    Categorical answers (one-token items without an outside class) are written as ``item,label``
    CSV, whatever their input format; tag labels (the ``tags`` scheme) as a token table when the
    output name ends in ``.csv`` or ``.jsonl`` (or they were read from one), else as CoNLL; otherwise
    an output name ending in ``.jsonl`` or ``.conll`` says which, else CoNLL in -> CoNLL out,
    EBM-NLP -> EBM-NLP, any other span format -> spans-jsonl.
    """
    if categorical or input_format == "categorical":
        return "categorical-csv"
    if tags:
        name = str(output or "").lower()
        if name.endswith((".csv", ".tsv")):
            return "tokens-csv"
        if name.endswith(".jsonl"):
            return "tokens-jsonl"
        return input_format if input_format in ("tokens-csv", "tokens-jsonl") and not name.endswith(".conll") \
            else "conll"
    by_suffix = {".jsonl": "spans-jsonl", ".conll": "conll"}
    if output is not None:
        for suffix, fmt in by_suffix.items():
            if str(output).lower().endswith(suffix):
                return fmt
    return {"conll": "conll", "conll-folders": "conll", "ebm-nlp": "ebm-nlp"}.get(input_format, "spans-jsonl")


def output_format(corpus: Corpus, *, input_format: str, output: str, given: str | None) -> str:
    """The format the aggregate of ``corpus`` is written in: ``given``, or the default; ValueError when it does
    not fit the labels (categorical answers are written as categorical-csv, span labels never are), or when
    the default would contradict ``output``'s suffix (categorical answers named .jsonl or .conll, span labels
    named .csv)."""
    categorical = is_categorical(corpus)
    tags = corpus.scheme == "tags"
    fmt = given or default_output_format(input_format, output=output, categorical=categorical, tags=tags)
    if tags and fmt not in ("conll", "tokens-csv", "tokens-jsonl"):
        raise ValueError(f"--output-format {fmt}: these are tag labels (scheme tags, no spans); they are written "
                         "as conll, tokens-csv or tokens-jsonl")
    if categorical and given is None and str(output).lower().endswith((".jsonl", ".conll")):
        raise ValueError(f"--output {output}: these are categorical answers, written as categorical-csv "
                         "(item,label): name the output .csv")
    if not categorical and not tags and given is None and str(output).lower().endswith(".csv"):
        raise ValueError(f"--output {output}: these are span labels, and .csv names categorical-csv (answers): "
                         "name the output .jsonl (spans-jsonl) or .conll (conll), or a folder (ebm-nlp), or choose "
                         "with --output-format spans-jsonl, conll or ebm-nlp")
    if categorical and fmt != "categorical-csv":
        raise ValueError(f"--output-format {fmt}: these are categorical answers (one label per item); "
                         "they are written as categorical-csv")
    if fmt == "categorical-csv" and not categorical:
        raise ValueError("--output-format categorical-csv is for categorical answers (one label per item); these "
                         "are span labels: use spans-jsonl, conll or ebm-nlp")
    return fmt


def aggregate(corpus: Corpus, *, method: str, params: dict[str, Any], use_experts: bool, reference: str,
              progress: ProgressFn | None = None, start: ModelStart | None = None,
              unmatched_expert_documents: int = 0, prior: PriorFit | None = None,
              verdict_rules: VerdictRules | None = None) -> PipelineResult:
    """Aggregate ``corpus`` and report against its experts, as a queued job does (from an earlier batch's
    model when ``start`` is given; reusing ``--method auto``'s fit of the method as ``prior``);
    ``unmatched_expert_documents`` is the reader's count of expert documents left out
    (:attr:`ParseResult.unmatched_expert_documents`)."""
    check_reference(reference, corpus)
    return run_pipeline(corpus, method=method, params=params, use_experts=use_experts, reference=reference,
                        progress=progress, start=start, unmatched_expert_documents=unmatched_expert_documents,
                        prior=prior, verdict_rules=verdict_rules)


def write_aggregate(result: PipelineResult, corpus: Corpus, *, output: str, format: str) -> None:
    """Write the aggregate's labels to ``output`` (a folder for ebm-nlp), with their calibrated scores."""
    c = result.confidence
    scores = None if c is None else LabelScores(token=c.token, span=c.span, proba=c.proba)
    write_labels(result.labels, corpus, output, format=format, scores=scores)


def calibration_line(report: dict[str, Any]) -> str | None:
    """One line on the scores' calibration (the report's ``calibration`` block), or None without one."""
    cal = report.get("calibration")
    if not cal:
        return None
    where = (f"fitted on {cal['expert_documents']} expert documents" if cal["source"] == "experts"
             else "the method's label-free default")
    line = f"scores at temperature {cal['temperature']:g} ({where})"
    parts = []
    for key, name in (("without_experts", "at the default"), ("with_experts", "fitted, cross-fitted")):
        block = cal.get(key)
        if block and block.get("ece") is not None:
            lo, hi = block["ece_interval"]
            interval = f" [{lo:.3f}, {hi:.3f}]" if lo is not None else ""
            parts.append(f"{name} {block['ece']:.3f}{interval}")
    if parts:
        line += f"; {cal['items']} ECE against the experts: " + ", ".join(parts)
    return line


def write_report(report: QualityReport | dict, fh: IO[str]) -> None:
    """Write the report (or its ``model_dump(mode="json")``) as JSON, one worker per line."""
    dump_report(report, fh)
    fh.write("\n")
