"""Scoring an aggregate made elsewhere: the use case behind ``crowdqa report``.

The aggregate is read back onto the crowd corpus' tokens, by the reader of its format (an output of
``crowdqa aggregate``, guessed from the path when not given) or, for any upload format, as one more
upload whose one annotator's labels are taken, aligned by document id. Then the same report a job
builds is made from it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.aggregation.memory import Shape
from crowdqa.aggregation.registry import check_memory
from crowdqa.ingest import read_corpus
from crowdqa.ingest.aggregate_input import labels_from_corpus, read_aggregate
from crowdqa.ingest.formats import AGGREGATE_FORMATS, READ_FORMATS, missing_path
from crowdqa.jobs.local import check_reference
from crowdqa.quality.report import build_report_data, format_report
from crowdqa.quality.worker_quality import VerdictRules

__all__ = ["AGGREGATE_FORMATS", "aggregate_format", "check_reference", "read_aggregate_labels", "score_aggregate",
           "format_report"]



def aggregate_format(path: str | Path, *, categorical: bool) -> str:
    """The format of an aggregate file when none is given (what ``crowdqa aggregate`` writes there).

    A folder is ebm-nlp, ``.conll`` conll, ``.csv`` categorical-csv (spans-csv for span labels),
    ``.npz`` a corpus, anything else spans-jsonl.
    """
    p = Path(path)
    if p.is_dir():
        return "ebm-nlp"
    suffix = p.suffix.lower()
    if suffix == ".csv":
        return "categorical-csv" if categorical else "spans-csv"
    return {".conll": "conll", ".npz": "corpus"}.get(suffix, "spans-jsonl")


def read_aggregate_labels(path: str | Path, corpus: Corpus, *, format: str | None = None,
                          annotator: str | None = None, options: dict[str, Any] | None = None,
                          remarks: list[str] | None = None) -> NDArray:
    """The aggregate at ``path`` as one label per token of ``corpus``.

    Parameters
    ----------
    path : str or Path
        A file, or a folder (ebm-nlp).
    corpus : Corpus
        The crowd corpus the aggregate was computed from.
    format : str, optional
        An aggregate format (:data:`AGGREGATE_FORMATS`) or any upload format; default by
        :func:`aggregate_format`.
    annotator : str, optional
        For an upload format with several annotators: which one is the aggregate.
    options : dict, optional
        Reader options of an upload format (as for the crowd file).
    remarks : list of str, optional
        Gets what the reader of an upload format noted or skipped (:meth:`ParseResult.remarks`), for the
        caller to print: a span over whitespace alone, a row ``on_error="skip"`` left out.

    Returns
    -------
    ndarray of shape (n_tokens,)
    """
    p = Path(path)
    if not p.exists():
        raise ValueError(missing_path(path, option="--aggregate"))
    fmt = format or aggregate_format(p, categorical=not corpus.has_outside)
    if p.is_dir() and fmt != "ebm-nlp" and fmt not in READ_FORMATS:
        raise ValueError(f"--aggregate {path} is a folder: give --aggregate-format ebm-nlp (or a file)")
    if fmt in AGGREGATE_FORMATS:
        return read_aggregate(p, corpus, format=fmt, remarks=remarks)
    parsed = read_corpus(p, format=fmt, **(options or {}))
    if remarks is not None:
        remarks.extend(parsed.remarks())
    try:
        return labels_from_corpus(parsed.corpus, corpus, annotator=annotator)
    except ValueError as exc:  # name the aggregate's file, as its reader's own errors do
        raise ValueError(f"{path}: {exc}") from None


def score_aggregate(corpus: Corpus, labels: NDArray, *, method: str, experts_used_in_fit: bool, reference: str,
                    seed: int = 0, n_boot: int = 1000, verdict_rules: VerdictRules | None = None) -> dict[str, Any]:
    """The quality report of ``labels`` on ``corpus``, with the seconds it took, as plain JSON data in
    :class:`~crowdqa.quality.report_model.QualityReport`'s shape (the command line needs no pydantic)."""
    check_reference(reference, corpus)
    check_memory(None, Shape.of_corpus(corpus))  # the report's pair confusions grow with the square of the classes
    t0 = time.perf_counter()
    report = build_report_data(corpus, labels, method=method, experts_used_in_fit=experts_used_in_fit,
                               reference=reference, seed=seed, n_boot=n_boot, verdict_rules=verdict_rules)
    report["report_seconds"] = round(time.perf_counter() - t0, 3)
    return report
