"""Review a crowd's work: approve or reject every worker, list the bonuses and the workers to block.

The use case behind ``crowdqa review`` and ``POST /jobs/{id}/review``, for every upload format. The
rules (:class:`crowdqa.quality.review_rules.ReviewRules`) decide per worker from the quality report;
the command line aggregates the file itself (:func:`review_file`), the service reads the report of a
finished job (:func:`crowdqa.jobs.exports.review_job`). :func:`review_report` decides for every crowd
worker of the report; :func:`review_batch` does the same for a Mechanical Turk batch-results file and
also writes each open assignment's decision into it (the CSV round trip to the requester site).

:class:`ReviewOutcome` holds the summary, the decisions as CSV (any format), the block list and, for a
batch, the reviewed file's bytes and the bonus list. The **block list** is the workers to leave out of
the project's later jobs (:mod:`crowdqa.jobs.blocklist`): by default those whose report verdict is
``block`` (Raykar and Yu's spammer score, :mod:`crowdqa.quality.worker_quality`); ``block_from="rejected"``
takes the workers the rules reject instead, ``"both"`` either. Nothing here reads the store, so ``crowdqa
review`` of a file loads none of it.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from crowdqa.ingest.errors import IngestError
from crowdqa.ingest.formats import FORMATS
from crowdqa.ingest.mturk_review import BatchFile, RowDecision, assignments, read_batch, write_reviewed
from crowdqa.ingest.writers import csv_escape
from crowdqa.quality.review_rules import (
    Decisions,
    ReviewRules,
    Verdict,
    bonus_reason,
    decide,
    feedback,
    interval_name,
    worker_evidence,
)

__all__ = ["ReviewRules", "interval_name",
           "ReviewOutcome", "review_batch", "review_report", "review_file", "format_review", "BONUS_COLUMNS",
           "DECISION_COLUMNS", "BLOCK_FROM", "MTURK_PREFIX"]

#: Annotator ids of Mechanical Turk workers are ``mturk:<WorkerId>`` (:mod:`crowdqa.ingest.mturk_csv`).
MTURK_PREFIX = "mturk:"
#: Columns of the bonus list (the requester site's "Bonus workers" needs the worker and one assignment).
BONUS_COLUMNS = ("WorkerId", "AssignmentId", "BonusAmount", "Reason")

#: Columns of the decisions CSV (:meth:`ReviewOutcome.decisions_csv`), one row per decided worker.
DECISION_COLUMNS = ("annotator", "decision", "reason", "score", "low", "high", "items", "verdict", "spammer_score",
                    "verdict_reason", "block", "bonus", "feedback")
#: Which workers go on the block list: the report's verdict ``block``, the rules' rejections, or either.
BLOCK_FROM = ("verdict", "rejected", "both")

#: Why an assignment was left as it was, by its status.
_LEFT = {"Approved": "already approved", "Rejected": "already rejected",
         "decided in the file": "decided in the file"}


@dataclass(frozen=True)
class ReviewOutcome:
    """A finished review.

    Attributes
    ----------
    summary : dict
        JSON-ready: the rules, assignment and worker counts with reasons, every decided worker
        (score, interval, tokens, verdict, reason, feedback, bonus) and the bonus list.
    batch : BatchFile
    rows : dict of int to RowDecision
        The decision written to each record.
    bonuses : list of dict
        ``WorkerId, AssignmentId, BonusAmount, Reason`` per paid worker.
    """

    summary: dict[str, Any]
    batch: BatchFile | None
    rows: dict[int, RowDecision]
    bonuses: list[dict[str, str]]

    @property
    def media_type(self) -> str:
        """The reviewed batch's media type, with the charset it was uploaded in (its byte-order mark kept)."""
        return f"text/csv; charset={'utf-8' if self.batch is None or self.batch.codec == 'utf-8' else 'utf-16'}"

    def reviewed_csv(self) -> bytes:
        """The batch file with the decisions filled in (every other byte as it came); ValueError without one."""
        if self.batch is None:
            raise ValueError("there is no Mechanical Turk batch file to write back: this review is of another "
                             "format (write the decisions and the block list instead)")
        return write_reviewed(self.batch, self.rows)

    def decisions_csv(self) -> bytes:
        """Every decided worker as UTF-8 CSV (:data:`DECISION_COLUMNS`), every cell made safe for spreadsheets."""
        return _csv(DECISION_COLUMNS, [{
            "annotator": d["annotator"], "decision": d["verdict"], "reason": d["reason"],
            "score": _cell(d["score"]), "low": _cell((d["interval"] or [None, None])[0]),
            "high": _cell((d["interval"] or [None, None])[1]), "items": str(d["tokens"]),
            "verdict": d.get("quality_verdict") or "", "spammer_score": _cell(d.get("spammer_score")),
            "verdict_reason": d.get("quality_reason") or "", "block": "yes" if d.get("block") else "no",
            "bonus": d["bonus"] or "", "feedback": d["feedback"]} for d in self.summary["decisions"]])

    def block_list_csv(self) -> bytes:
        """The block list as UTF-8 CSV (``annotator,reason``): what ``crowdqa blocked add --from-file`` reads."""
        return _csv(("annotator", "reason"), self.summary["block_list"])

    def bonus_csv(self) -> bytes:
        """The bonus list as UTF-8 CSV, every cell made safe for spreadsheets."""
        return _csv(BONUS_COLUMNS, self.bonuses)


def _cell(x: float | None) -> str:
    return "" if x is None else f"{x:.6g}"


def _csv(columns: tuple[str, ...], rows: list[dict[str, str]]) -> bytes:
    """``rows`` as UTF-8 CSV with a header, every cell through :func:`csv_escape` (no spreadsheet formula)."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\r\n")
    out.writerow(columns)
    for row in rows:
        out.writerow([csv_escape(row[c]) for c in columns])
    return buf.getvalue().encode("utf-8")


def _interval(d: Decisions, i: int) -> list[float] | None:
    e = d.evidence
    return None if e.high[i] != e.high[i] else [round(float(e.low[i]), 6), round(float(e.high[i]), 6)]


def _entry(decisions: Decisions, i: int, *, worker: str, open_assignments: int, blocked: frozenset[str],
           quality: dict[str, Any]) -> dict[str, Any]:
    """One worker's line of the summary: the rules' decision, the report's verdict, and whether it is blocked."""
    e = decisions.evidence
    amount = decisions.bonus[i]
    return {
        "worker": worker, "annotator": e.ids[i], "verdict": decisions.verdict[i].value,
        "reason": decisions.reason[i].value, "score": None if e.score[i] != e.score[i] else float(e.score[i]),
        "interval": _interval(decisions, i), "tokens": int(e.tokens[i]),
        "open_assignments": open_assignments, "feedback": feedback(decisions, i),
        "bonus": None if amount is None else str(amount), "blocked": e.ids[i] in blocked,
        "quality_verdict": quality.get("verdict"), "spammer_score": quality.get("spammer_score"),
        "quality_reason": quality.get("reason") or "",
    }


def _mark_blocks(entries: list[dict[str, Any]], block_from: str) -> list[dict[str, str]]:
    """Set each entry's ``block`` by ``block_from`` (:data:`BLOCK_FROM`) and return the block list."""
    if block_from not in BLOCK_FROM:
        raise ValueError(f"block_from must be one of {', '.join(BLOCK_FROM)}, found {block_from!r}")
    out = []
    for d in entries:
        spammer = block_from in ("verdict", "both") and d["quality_verdict"] == "block"
        rejected = block_from in ("rejected", "both") and d["verdict"] == "reject"
        d["block"] = spammer or rejected
        if d["block"]:
            out.append({"annotator": d["annotator"],
                        "reason": d["quality_reason"] if spammer else f"rejected: {d['feedback']}"})
    return out


def _rules_summary(rules: ReviewRules, decisions: Decisions, block_from: str) -> dict[str, Any]:
    return {"reject_below": rules.reject_below, "min_tokens": rules.min_tokens, "metric": decisions.evidence.metric,
            "against": rules.against, "decide_by": rules.decide_by,
            "bonus": None if rules.bonus is None else str(rules.bonus), "bonus_above": rules.bonus_above,
            "level": decisions.evidence.level, "block_from": block_from}


def _worker_counts(entries: list[dict[str, Any]], *, batch: bool) -> dict[str, Any]:
    """Workers approved and rejected (with open assignments, for a batch), by reason."""
    decided = [w for w in entries if w["open_assignments"] or not batch]
    approved = [w for w in decided if w["verdict"] == "approve"]
    rejected = [w for w in decided if w["verdict"] == "reject"]
    return {"approved": len(approved), "rejected": len(rejected),
            "reasons": dict(sorted(Counter(w["reason"] for w in approved + rejected).items()))}


def review_report(report: dict[str, Any], rules: ReviewRules, *, blocked: frozenset[str] = frozenset(),
                  block_from: str = "verdict", source_format: str = "") -> ReviewOutcome:
    """Decide every crowd worker of ``report`` (any upload format): the rules' approve or reject with the reason
    and the bonus, the report's verdict, and the block list (module notes). No file is written back."""
    decisions = decide(worker_evidence(report, metric=rules.metric, against=rules.against), rules)
    quality = [w.get("quality") or {} for w in report.get("workers") or []]
    e = decisions.evidence
    entries = [_entry(decisions, i, worker=e.ids[i], open_assignments=0, blocked=blocked, quality=quality[i])
               for i in sorted(range(len(e.ids)), key=lambda i: e.ids[i]) if e.roles[i] == "crowd"]
    block_list = _mark_blocks(entries, block_from)
    summary = {
        "format": source_format, "rules": _rules_summary(rules, decisions, block_from), "assignments": None,
        "workers": _worker_counts(entries, batch=False), "bonuses": [],
        "bonus_total": str(sum((Decimal(d["bonus"]) for d in entries if d["bonus"]), Decimal("0.00"))),
        "decisions": entries, "block_list": block_list,
    }
    return ReviewOutcome(summary=summary, batch=None, rows={}, bonuses=[])


def review_batch(batch: BatchFile, report: dict[str, Any], rules: ReviewRules, *,
                 blocked: frozenset[str] = frozenset(), block_from: str = "verdict") -> ReviewOutcome:
    """Decide every open assignment of ``batch`` from the workers' scores in ``report``.

    Parameters
    ----------
    batch : BatchFile
    report : dict
        The quality report of an aggregation of (at least) this batch.
    rules : ReviewRules
    blocked : frozenset of str
        Annotator ids on the project's block list; marked as such in the summary.
    block_from : {"verdict", "rejected", "both"}, default="verdict"
        Which workers go on the block list (module notes).

    Returns
    -------
    ReviewOutcome
    """
    decisions = decide(worker_evidence(report, metric=rules.metric, against=rules.against), rules)
    quality = [w.get("quality") or {} for w in report.get("workers") or []]
    rows, malformed = assignments(batch)
    per_worker: dict[int, list[int]] = {}  # decision index -> its open rows
    left: Counter[str] = Counter()
    last_assignment: dict[int, str] = {}
    decided: dict[int, RowDecision] = {}
    for a in rows:
        i = decisions.of(MTURK_PREFIX + a.worker) if a.worker else None
        if i is not None and decisions.evidence.roles[i] != "crowd":
            i = None
        if i is not None and a.assignment_id:
            last_assignment[i] = a.assignment_id
        if not a.open:
            left[_LEFT.get(a.status, f"status {a.status}")] += 1
            continue
        if i is None:
            left["worker not scored"] += 1
            continue
        per_worker.setdefault(i, []).append(a.row)
    texts = {i: feedback(decisions, i) for i in per_worker}
    for i, recs in per_worker.items():
        approve = decisions.verdict[i] is Verdict.approve
        for r in recs:
            decided[r] = RowDecision(approve=approve, feedback=texts[i])
    workers = []
    bonuses = []
    for i in sorted(set(per_worker) | set(last_assignment), key=lambda i: decisions.evidence.ids[i]):
        e = decisions.evidence
        worker = e.ids[i][len(MTURK_PREFIX):]
        workers.append(_entry(decisions, i, worker=worker, open_assignments=len(per_worker.get(i, [])),
                              blocked=blocked, quality=quality[i]))
        amount = decisions.bonus[i]
        if amount is not None and i in last_assignment:
            bonuses.append({"WorkerId": worker, "AssignmentId": last_assignment[i], "BonusAmount": str(amount),
                            "Reason": bonus_reason(decisions, i)})
    block_list = _mark_blocks(workers, block_from)
    counts = _worker_counts(workers, batch=True)
    open_of = {v: sum(w["open_assignments"] for w in workers if w["open_assignments"] and w["verdict"] == v)
               for v in ("approve", "reject")}
    summary = {
        "format": "mturk-csv", "rules": _rules_summary(rules, decisions, block_from),
        "assignments": {
            "approved": open_of["approve"],
            "rejected": open_of["reject"],
            "left": dict(sorted(left.items())),
            "malformed_lines": malformed,
        },
        "workers": counts,
        "bonuses": bonuses,
        "bonus_total": str(sum((Decimal(b["BonusAmount"]) for b in bonuses), Decimal("0.00"))),
        "decisions": workers,
        "block_list": block_list,
    }
    return ReviewOutcome(summary=summary, batch=batch, rows=decided, bonuses=bonuses)


def review_file(path: str | Path, rules: ReviewRules, *, method: str, params: dict[str, Any] | None = None,
                options: dict[str, Any] | None = None, experts: list[dict[str, Any]] | None = None,
                use_experts: bool = False, blocked: frozenset[str] = frozenset(), format: str = "mturk-csv",
                block_from: str = "verdict", verdict_rules: Any = None,
                progress=None) -> tuple[ReviewOutcome, Any]:
    """Read an upload of any format, aggregate it (with expert uploads if given) and review it.

    ``format`` is the upload's (:data:`crowdqa.ingest.formats.READ_FORMATS`): a Mechanical Turk batch
    (``mturk-csv``, the default) is reviewed assignment by assignment and written back
    (:func:`review_batch`), any other format worker by worker (:func:`review_report`). ``options`` are the
    reader's upload options; ``experts`` are :func:`crowdqa.ingest.read_corpus` keyword dicts with ``path``.
    ``blocked`` (a project's block list) is applied as a job of the project applies it: those annotators are
    left out of the fit, still scored and judged, and marked blocked. ``verdict_rules`` are the report's
    (:class:`crowdqa.quality.worker_quality.VerdictRules`). Returns the outcome and the parse result (its notes
    and problems).
    """
    from crowdqa.ingest import read_merged
    from crowdqa.jobs.pipeline import run_pipeline

    path = Path(path)
    batch = read_batch(path.read_bytes(), source=str(path)) if format == "mturk-csv" else None
    if rules.against == "expert" and not experts and not FORMATS[format].experts:
        raise ValueError("against expert needs expert labels: give an expert file")
    if block_from not in BLOCK_FROM:
        raise ValueError(f"block_from must be one of {', '.join(BLOCK_FROM)}, found {block_from!r}")
    if progress is not None:
        progress("reading", None, None)
    parsed = read_merged([dict(path=path, format=format, role="crowd", **(options or {})), *(experts or [])])
    if not np.any(np.isin(parsed.corpus.worker, parsed.corpus.workers_with_role("crowd"))):
        raise IngestError(f"the file holds no crowd labels (read as {format!r})", source=str(path))
    if rules.against == "expert" and parsed.corpus.workers_with_role("expert").size == 0:
        raise ValueError(f"against expert needs expert labels, and {path.name} holds none: give an expert file")
    result = run_pipeline(parsed.corpus, method=method, params=params, use_experts=use_experts, progress=progress,
                          blocked=blocked, verdict_rules=verdict_rules)
    # The report as plain JSON data, as a job stores it and review_job reads it back (the typed model would
    # validate it and dump the same dict again).
    if batch is None:
        return review_report(result.report_data, rules, blocked=blocked, block_from=block_from,
                             source_format=format), parsed
    return review_batch(batch, result.report_data, rules, blocked=blocked, block_from=block_from), parsed


#: How the terminal summary words each reason (crowdqa.quality.review_rules.Reason).
_REASONS = {"below": "below the threshold", "too_few_tokens": "too few tokens to judge",
            "no_score": "without a score", "no_interval": "below but without an interval",
            "interval_reaches": "below but the interval reaches the threshold",
            "at_or_above": "at or above the threshold"}


def format_review(summary: dict[str, Any], *, source: str, max_rows: int = 40) -> str:
    """The summary as terminal text: the rule, how many assignments and workers were approved and rejected
    and why, the bonuses, and the rejected workers."""
    r = summary["rules"]
    name = "F1" if r["metric"] == "f1" else "accuracy"
    how = (f"the {interval_name(r.get('level'))}'s upper bound is below it" if r["decide_by"] == "interval"
           else "the estimate is below it")
    lines = [f"review of {source}: {name} against the {r['against']}; reject below {r['reject_below']:.2f} when "
             f"{how}, with at least {r['min_tokens']} {'tokens' if name == 'F1' else 'items'}"]
    a, w = summary["assignments"], summary["workers"]
    if a is not None:
        left = sum(a["left"].values())
        detail = ", ".join(f"{n} {k}" for k, n in a["left"].items())
        lines.append(f"assignments: {a['approved']} approved, {a['rejected']} rejected, {left} left as they were"
                     + (f" ({detail})" if detail else ""))
    if a is not None and a["malformed_lines"]:
        lines.append(f"  {len(a['malformed_lines'])} lines are not assignment rows (field count unlike the header), "
                     f"left as they were: {', '.join(map(str, a['malformed_lines'][:10]))}")
    unit = "tokens" if name == "F1" else "items"
    reasons = ", ".join(f"{n} {_REASONS[k].replace('tokens', unit)}" for k, n in w["reasons"].items())
    lines.append(f"workers: {w['approved']} approved, {w['rejected']} rejected" + (f" ({reasons})" if reasons else ""))
    blocked = [d["worker"] for d in summary["decisions"] if d["blocked"]]
    if blocked:
        lines.append(f"blocked: {len(blocked)} worker{'s' if len(blocked) > 1 else ''} on the project's block list: "
                     f"{', '.join(blocked[:max_rows])}" + (" ..." if len(blocked) > max_rows else ""))
    if r["bonus"] is not None:
        paid = len(summary["bonuses"]) if a is not None else sum(1 for d in summary["decisions"] if d["bonus"])
        lines.append(f"bonuses: {paid} workers x ${r['bonus']} = ${summary['bonus_total']} "
                     f"({name} at least {r['bonus_above']:.2f})")
    verdicts = Counter(d.get("quality_verdict") for d in summary["decisions"])
    lines.append(f"report verdicts: {verdicts['block']} block, {verdicts['watch']} watch, {verdicts['keep']} keep; "
                 f"block list: {len(summary['block_list'])} workers (from {r['block_from']})")
    for d in [d for d in summary["decisions"] if d.get("block")][:max_rows]:
        lines.append(f"  block {d['worker']}: {d['quality_reason'] if d['quality_verdict'] == 'block' else 'rejected'}")
    rejected = [d for d in summary["decisions"] if d["verdict"] == "reject" and (d["open_assignments"] or a is None)]
    if rejected:
        lines.append("rejected workers:")
        width = max(len(d["worker"]) for d in rejected)
        for d in rejected[:max_rows]:
            ci = f"[{d['interval'][0]:.2f}, {d['interval'][1]:.2f}]" if d["interval"] else ""
            lines.append(f"  {d['worker']:<{width}}  {name} {d['score']:.3f} {ci:<14} {d['tokens']:>7} "
                         f"{'tokens' if name == 'F1' else 'items'}"
                         + (f"  {d['open_assignments']} assignments" if a is not None else "")
                         + ("  (blocked)" if d["blocked"] else ""))
        if len(rejected) > max_rows:
            lines.append(f"  ... {len(rejected) - max_rows} more in the JSON summary")
    return "\n".join(lines)
