"""The report as a terminal table: the aggregate's scores, the worker table (worst first) and agreement.

:func:`format_report` prints a plain report (:func:`crowdqa.quality.report.build_report_data`) or a typed one;
:data:`TABLE_SORT_KEYS` are the orders of its worker rows.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from crowdqa.quality.report_schema import ACCURACY_KINDS
from crowdqa.quality.score_blocks import headline_level, span_levels

if TYPE_CHECKING:  # the typed model (pydantic) is only dumped here, never imported
    from crowdqa.quality.report_model import QualityReport

__all__ = ["format_report", "TABLE_SORT_KEYS"]


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _fmt_ci(ci: list | None) -> str:
    return "" if not ci else f"[{ci[0]:.2f},{ci[1]:.2f}]"


def _row(name: str, b: dict | None, width: int) -> str:
    if b is None:
        return f"{name:<{width}}  (no overlap)"
    return (f"{name:<{width}}  P {_fmt(b['precision'])} {_fmt_ci(b['precision_ci']):<13} "
            f"R {_fmt(b['recall'])} {_fmt_ci(b['recall_ci']):<13} F1 {_fmt(b['f1'])} {_fmt_ci(b['f1_ci']):<13} "
            f"tp {b['tp']:>7} fp {b['fp']:>7} fn {b['fn']:>7}")


def _span_worker_rows(workers: list[dict], shown: list[int], width: int) -> list[str]:
    """Worker rows for span labels: token P/R/F1 against the experts, strict span F1 against the experts, and
    token P/R/F1 against the aggregate."""
    lines = [f"  {'annotator':<{width}}  {'role':<6} {'docs':>5} {'tokens':>7}  "
             f"{'P(exp)':>6} {'R(exp)':>6} {'F1(exp)':>7} {'F1 95% CI':<13} {'docs(exp)':>9} {'spanF1(exp)':>11}  "
             f"{'P(agg)':>6} {'R(agg)':>6} {'F1(agg)':>7}  {_QUALITY_HEADER}"]
    for i in shown:
        w = workers[i]
        e, a, s = w["vs_expert"] or {}, w["vs_aggregate"] or {}, w.get("span_vs_expert") or {}
        lines.append(
            f"  {w['annotator']:<{width}}  {w['role']:<6} {w['documents']:>5} {w['tokens']:>7}  "
            f"{_fmt(e.get('precision')):>6} {_fmt(e.get('recall')):>6} {_fmt(e.get('f1')):>7} "
            f"{_fmt_ci(e.get('f1_ci')):<13} {e.get('documents', 0):>9} {_fmt(s.get('f1')):>11}  "
            f"{_fmt(a.get('precision')):>6} {_fmt(a.get('recall')):>6} {_fmt(a.get('f1')):>7}  {_quality_cells(w)}"
        )
    return lines


#: The quality columns of both worker tables: the spammer score (Raykar & Yu) with its interval, what it is
#: measured against, the most overused label and the verdict.
_QUALITY_HEADER = f"{'spam':>5} {'95% CI':<13} {'vs':<4} {'bias':>5}  verdict"


def _quality_cells(w: dict) -> str:
    q = w.get("quality") or {}
    against = {"experts": "exp", "aggregate": "agg"}.get(q.get("against"), "")
    bias = q.get("bias")
    return (f"{_fmt(q.get('spammer_score'), 2):>5} {_fmt_ci(q.get('spammer_score_ci')):<13} {against:<4} "
            f"{'-' if bias is None else f'{bias:+.2f}':>5}  {q.get('verdict') or '-'}")


def _categorical_worker_rows(workers: list[dict], shown: list[int], width: int) -> list[str]:
    """Worker rows for categorical answers: accuracy against the experts and against the aggregate."""
    lines = [f"  {'annotator':<{width}}  {'role':<6} {'items':>6}  {'Acc(exp)':>8} {'95% CI':<13} "
             f"{'items(exp)':>10}  {'Acc(agg)':>8}  {_QUALITY_HEADER}"]
    for i in shown:
        w = workers[i]
        e = (w["vs_expert"] or {}).get("accuracy") or {}
        a = (w["vs_aggregate"] or {}).get("accuracy") or {}
        lines.append(f"  {w['annotator']:<{width}}  {w['role']:<6} {w['tokens']:>6}  {_fmt(e.get('value')):>8} "
                     f"{_fmt_ci(e.get('ci')):<13} {e.get('compared', 0):>10}  {_fmt(a.get('value')):>8}  "
                     f"{_quality_cells(w)}")
    return lines


#: Sort keys of the terminal worker table: score keys order worst first (workers without a score last);
#: ``span_f1`` is a worker's strict span F1 against the experts (``span_vs_expert``). ``_low`` and ``_high``
#: sort by a score's interval bound (``accuracy_high``: the workers surely worst first); ``spammer_score`` is
#: the worker's quality block's (lowest first), ``bias`` its most overused label's excess (highest first),
#: ``verdict`` block, then watch, then keep (then by the spammer score's upper bound).
TABLE_SORT_KEYS = ("f1", "precision", "recall", "span_f1", "accuracy", "documents", "annotator", "f1_low",
                   "f1_high", "accuracy_low", "accuracy_high", "spammer_score", "spammer_score_low",
                   "spammer_score_high", "bias", "verdict")
#: The keys a categorical report's table cannot be sorted by: it has no P/R/F1.
_SPAN_ONLY_KEYS = ("f1", "f1_low", "f1_high", "precision", "recall", "span_f1")
#: Keys read from a worker's ``quality`` block, not from its score against a reference.
_QUALITY_KEYS = ("spammer_score", "spammer_score_low", "spammer_score_high", "bias", "verdict")


def _id_key(annotator: str) -> tuple:
    """Natural order of annotator ids: digit runs by value (``"2"`` before ``"10"``), the rest as text."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", annotator))


def _table_order(workers: list[dict], sort: str | None, categorical: bool) -> tuple[list[int], str]:
    """Row order of the worker table by ``sort`` (default: F1, or accuracy for categorical answers), and what
    the scores are against: ``"experts"``, or ``"the aggregate"`` when no worker has a score against the
    experts (their ids match no crowd document, or there are none), so the table is still worst first.
    Ties, and ``sort="annotator"``, go by the annotator id in natural order (``1, 2, 10``)."""
    sort = sort or ("accuracy" if categorical else "f1")
    if sort not in TABLE_SORT_KEYS or (categorical and sort in _SPAN_ONLY_KEYS):
        allowed = [k for k in TABLE_SORT_KEYS if not (categorical and k in _SPAN_ONLY_KEYS)]
        raise ValueError(f"sort must be one of {', '.join(allowed)}" + (" for categorical answers" if categorical
                                                                       else "") + f", found {sort!r}")
    ids = [_id_key(w["annotator"]) for w in workers]
    if sort == "annotator":
        return sorted(range(len(workers)), key=lambda i: ids[i]), ""
    if sort == "documents":
        return sorted(range(len(workers)), key=lambda i: (-workers[i]["documents"], ids[i])), ""
    if sort in _QUALITY_KEYS:
        scores = [_quality_key(workers[i].get("quality") or {}, sort) for i in range(len(workers))]
        order = sorted(range(len(workers)), key=lambda i: (scores[i] is None, scores[i] or 0.0, ids[i]))
        return order, ""
    name, _, bound = sort.partition("_") if sort.endswith(("_low", "_high")) else (sort, "", "")

    def score(i: int, against: str) -> float | None:
        if name == "span_f1":
            return (workers[i].get("span_vs_expert") or {}).get("f1") if against == "vs_expert" else None
        block = workers[i][against] or {}
        if name == "accuracy":
            block = block.get("accuracy") or {}
            value, ci = block.get("value"), block.get("ci")
        else:
            value, ci = block.get(name), block.get(f"{name}_ci")
        if bound:
            return None if not ci else ci[0 if bound == "low" else 1]
        return value

    against = "vs_expert"
    if all(score(i, against) is None for i in range(len(workers))) and name != "span_f1":
        against = "vs_aggregate"
    scores = [score(i, against) for i in range(len(workers))]
    order = sorted(range(len(workers)), key=lambda i: (scores[i] is None, scores[i] or 0.0, ids[i]))
    return order, "experts" if against == "vs_expert" else "the aggregate"


def _quality_key(q: dict, sort: str) -> float | None:
    """The value a worker's quality block sorts by (smaller first; None last)."""
    if sort == "verdict":
        if q.get("verdict") is None:
            return None
        high = (q.get("spammer_score_ci") or [None, None])[1]
        return ("block", "watch", "keep").index(q["verdict"]) + (0.5 if high is None else min(high, 0.999))
    if sort == "bias":
        return None if q.get("bias") is None else -q["bias"]
    if sort == "spammer_score":
        return q.get("spammer_score")
    ci = q.get("spammer_score_ci")
    return None if not ci else ci[0 if sort.endswith("_low") else 1]


def _items(w: dict, categorical: bool) -> int:
    """The items (tokens) a worker's scores rest on: its quality block's, else its labels."""
    q = w.get("quality") or {}
    return int(q["items"]) if q else int(w.get("tokens") or 0)


def format_report(report: QualityReport | dict, *, max_workers: int = 40, sort: str | None = None,
                  rest: str | None = None, min_items: int = 0) -> str:
    """The report as a readable terminal table.

    Parameters
    ----------
    report : QualityReport or dict
        From :func:`~crowdqa.quality.report.build_report` (or its JSON).
    max_workers : int, default=40
        Worker rows shown.
    sort : str, optional
        Order of the worker rows, one of :data:`TABLE_SORT_KEYS`: a score puts the worst first (against the
        experts; workers without one last). Default ``"f1"``, or ``"accuracy"`` for categorical answers.
    rest : str, optional
        Where the workers beyond ``max_workers`` are, ending the line ``... N more workers``: ``" in the JSON
        report r.json"`` when a file holds them, or how to get them. Default: they are said to be not shown.
    min_items : int, default=0
        Show only workers whose scores rest on at least this many items (tokens); the table says how many
        it leaves out.

    Returns
    -------
    str
    """
    if not isinstance(report, dict):  # the typed model
        report = report.model_dump()
    categorical = report.get("kind") in ACCURACY_KINDS  # one-token items (tags: tokens): say items, score accuracy
    return "\n".join([*_header_lines(report, categorical), "", *_aggregate_lines(report, categorical), "",
                      *_worker_lines(report.get("workers", []), categorical, max_workers=max_workers, sort=sort,
                                    rest=rest, min_items=min_items), "",
                      *_agreement_lines(report.get("agreement", {}))])


def _header_lines(report: dict, categorical: bool) -> list[str]:
    """The method, the reference, the fit and what the report is about."""
    lines = [f"method {report['method']}   reference: expert {report['reference']}   "
             f"experts used in fit: {'yes' if report['experts_used_in_fit'] else 'no'}"]
    if report["experts_used_in_fit"]:
        lines.append("the aggregate holds the experts' labels on their items: the scores against them below come "
                     "from cross-fitting (a score of the aggregate itself against them is not held out)")
    fit = report.get("fit") or {}
    if fit:
        conv = fit.get("converged")
        stop = "fixed schedule" if conv is None else f"converged {conv}"
        lines.append(f"fit: {fit.get('iterations', '-')} iterations, {stop}, "
                     f"{_fmt(fit.get('seconds'), 1)} s")
        if fit.get("convergence_note"):
            lines.append(f"warning: {fit['convergence_note']}")
    counts = report.get("counts", {})
    if counts:
        if report.get("kind") == "tags":
            lines.append(f"{counts['documents']} documents, {counts['tokens']} tokens (each token an item), "
                         f"{counts['crowd_workers']} crowd workers, {counts['experts']} experts on "
                         f"{counts['expert_documents']} documents")
        elif categorical:
            lines.append(f"{counts['documents']} items, {counts['crowd_workers']} crowd workers, "
                         f"{counts['experts']} experts on {counts['expert_documents']} items")
        else:
            lines.append(f"{counts['documents']} documents, {counts['tokens']} tokens, {counts['crowd_workers']} "
                         f"crowd workers, {counts['experts']} experts on {counts['expert_documents']} documents")
        if counts.get("expert_documents_without_crowd"):
            lines.append(f"note: {counts['expert_documents_without_crowd']} expert "
                         f"{'items' if categorical else 'documents'} matched no crowd "
                         f"{'item' if categorical else 'document'} and are left out")
    return lines


def _aggregate_lines(report: dict, categorical: bool) -> list[str]:
    """The aggregate against the experts: its accuracy, or every span level with the headline first."""
    agg = report.get("aggregate_vs_expert")
    if categorical:
        lines = ["Aggregate vs experts (95% Clopper-Pearson intervals)"]
    else:
        lines = ["Aggregate vs experts (95% intervals: Clopper-Pearson for P and R, document bootstrap for F1)"]
    if agg is None:
        lines.append("  no expert labels overlap the aggregate")
    elif categorical:
        a = agg["accuracy"]
        lines.append(f"  accuracy {_fmt(a['value'])} {_fmt_ci(a['ci'])}  ({a['correct']} of {a['compared']} items)   "
                     f"macro F1 over the labels {_fmt(agg.get('macro_f1'))}")
        if agg.get("macro"):  # tags: per-tag scores, macro F1 with a sentence bootstrap interval
            lines.append(f"  macro F1 {_fmt(agg['macro']['f1'])} {_fmt_ci(agg['macro']['f1_ci'])} over "
                         f"{agg['macro']['tags']} tags (document bootstrap); per tag F1: " + ", ".join(
                             f"{name} {_fmt(b['f1'] if b else None)}" for name, b in agg["per_tag"].items()))
    else:
        levels = {"token": agg.get("token"), **span_levels(agg)}
        head = headline_level(report)
        for key in sorted(levels, key=lambda k: k != head):  # the headline first, then the report's order
            mark = ""
            if key == head:
                mark = "   <- headline" + (" (conlleval)" if key == "span_location_and_type" else "")
            lines.append("  " + _row(key, levels[key], 22) + mark)
        per_type = agg.get("span_per_type") or {}
        if len(per_type) > 1:
            lines.append("  per type (location and type): " + ", ".join(
                f"{name} F1 {_fmt(b['f1'])} (tp {b['tp']} fp {b['fp']} fn {b['fn']})" for name, b in per_type.items()))
    return lines


def _worker_lines(workers: list[dict], categorical: bool, *, max_workers: int, sort: str | None,
                  rest: str | None, min_items: int = 0) -> list[str]:
    """The worker table: the first ``max_workers`` rows in the order of ``sort`` of the workers with at least
    ``min_items`` items."""
    order, against = _table_order(workers, sort, categorical)
    few = [i for i in order if _items(workers[i], categorical) < min_items]
    order = [i for i in order if _items(workers[i], categorical) >= min_items]
    shown = order[:max_workers]
    width = max([len(workers[i]["annotator"]) for i in shown] + [9])
    by = sort or ("accuracy" if categorical else "f1")
    by += f" against {against}, worst first" if against else ""
    lines = [f"Workers ({len(workers)}, by {by}; vs experts on shared documents, vs the aggregate on all their "
             "documents)"]
    rows = _categorical_worker_rows if categorical else _span_worker_rows
    lines += rows(workers, shown, width)
    if len(order) > max_workers:
        lines.append(f"  ... {len(order) - max_workers} more workers{' not shown' if rest is None else rest}")
    if few:
        lines.append(f"  {len(few)} workers with fewer than {min_items} {'items' if categorical else 'tokens'} "
                     "not shown (--min-items)")
    verdicts = [(w.get("quality") or {}).get("verdict") for w in workers]
    if any(verdicts):
        lines.append(f"  verdicts: {verdicts.count('block')} block, {verdicts.count('watch')} watch, "
                     f"{verdicts.count('keep')} keep (spam: Raykar & Yu's spammer score, 0 = answers independent "
                     "of the truth, 1 = perfect; vs: measured against the experts or the aggregate)")
    return lines


def _agreement_lines(agreement: dict) -> list[str]:
    """Krippendorff's alpha, the expert pairs and the crowd pairs' kappas in two numbers."""
    lines = [f"Agreement: Krippendorff's alpha (nominal, all annotators) {_fmt(agreement.get('krippendorff_alpha'))}"]
    for p in agreement.get("expert_kappa", []):
        lines.append(f"  {p['a']} vs {p['b']}: kappa {_fmt(p['kappa'])}, F1 {_fmt(p.get('f1'))} "
                     f"on {p['tokens']} tokens")
    summary = agreement.get("crowd_kappa_summary")
    if summary and summary["pairs"]:
        lines.append(f"  crowd worker pairs sharing >= {summary['min_documents']} documents: {summary['pairs']}, "
                     f"Cohen's kappa median {_fmt(summary['median'])}, mean {_fmt(summary['mean'])}")
    return lines
