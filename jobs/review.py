"""Review a Mechanical Turk batch: approve or reject every open assignment, and list the bonuses.

The use case behind ``crowdqa review`` and ``POST /jobs/{id}/review``. Both entry points (CLI and API) come here with a
batch-results file and the rules (:class:`crowdqa.quality.review_rules.ReviewRules`); the command
line aggregates the batch itself (:func:`review_file`), the service reads the report of a finished
job and the batch file stored with its dataset (:func:`crowdqa.jobs.exports.review_job`). :func:`review_batch`
does the rest for both: the rules decide per worker, every open assignment of the worker gets that decision
and its reason, and :class:`ReviewOutcome` holds the reviewed file's bytes, the summary and the
bonus list. Nothing here reads the store, so ``crowdqa review`` of a file loads none of it.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from crowdqa.ingest.errors import IngestError
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
           "ReviewOutcome", "review_batch", "review_file", "format_review", "BONUS_COLUMNS",
           "MTURK_PREFIX"]

#: Annotator ids of Mechanical Turk workers are ``mturk:<WorkerId>`` (:mod:`crowdqa.ingest.mturk_csv`).
MTURK_PREFIX = "mturk:"
#: Columns of the bonus list (the requester site's "Bonus workers" needs the worker and one assignment).
BONUS_COLUMNS = ("WorkerId", "AssignmentId", "BonusAmount", "Reason")

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
    batch: BatchFile
    rows: dict[int, RowDecision]
    bonuses: list[dict[str, str]]

    @property
    def media_type(self) -> str:
        """The reviewed batch's media type, with the charset it was uploaded in (its byte-order mark kept)."""
        return f"text/csv; charset={'utf-8' if self.batch.codec == 'utf-8' else 'utf-16'}"

    def reviewed_csv(self) -> bytes:
        """The batch file with the decisions filled in (every other byte as it came)."""
        return write_reviewed(self.batch, self.rows)

    def bonus_csv(self) -> bytes:
        """The bonus list as UTF-8 CSV, every cell made safe for spreadsheets."""
        buf = io.StringIO()
        out = csv.writer(buf, lineterminator="\r\n")
        out.writerow(BONUS_COLUMNS)
        for b in self.bonuses:
            out.writerow([csv_escape(b[c]) for c in BONUS_COLUMNS])
        return buf.getvalue().encode("utf-8")


def _interval(d: Decisions, i: int) -> list[float] | None:
    e = d.evidence
    return None if e.high[i] != e.high[i] else [round(float(e.low[i]), 6), round(float(e.high[i]), 6)]


def review_batch(batch: BatchFile, report: dict[str, Any], rules: ReviewRules, *,
                 blocked: frozenset[str] = frozenset()) -> ReviewOutcome:
    """Decide every open assignment of ``batch`` from the workers' scores in ``report``.

    Parameters
    ----------
    batch : BatchFile
    report : dict
        The quality report of an aggregation of (at least) this batch.
    rules : ReviewRules
    blocked : frozenset of str
        Annotator ids on the project's block list; marked as such in the summary.

    Returns
    -------
    ReviewOutcome
    """
    decisions = decide(worker_evidence(report, metric=rules.metric, against=rules.against), rules)
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
        amount = decisions.bonus[i]
        entry = {
            "worker": worker, "annotator": e.ids[i], "verdict": decisions.verdict[i].value,
            "reason": decisions.reason[i].value, "score": None if e.score[i] != e.score[i] else float(e.score[i]),
            "interval": _interval(decisions, i), "tokens": int(e.tokens[i]),
            "open_assignments": len(per_worker.get(i, [])), "feedback": feedback(decisions, i),
            "bonus": None if amount is None else str(amount), "blocked": e.ids[i] in blocked,
        }
        workers.append(entry)
        if amount is not None and i in last_assignment:
            bonuses.append({"WorkerId": worker, "AssignmentId": last_assignment[i], "BonusAmount": str(amount),
                            "Reason": bonus_reason(decisions, i)})
    approved = [w for w in workers if w["open_assignments"] and w["verdict"] == "approve"]
    rejected = [w for w in workers if w["open_assignments"] and w["verdict"] == "reject"]
    summary = {
        "rules": {"reject_below": rules.reject_below, "min_tokens": rules.min_tokens,
                  "metric": decisions.evidence.metric, "against": rules.against, "decide_by": rules.decide_by,
                  "bonus": None if rules.bonus is None else str(rules.bonus), "bonus_above": rules.bonus_above,
                  "level": decisions.evidence.level},
        "assignments": {
            "approved": sum(w["open_assignments"] for w in approved),
            "rejected": sum(w["open_assignments"] for w in rejected),
            "left": dict(sorted(left.items())),
            "malformed_lines": malformed,
        },
        "workers": {
            "approved": len(approved), "rejected": len(rejected),
            "reasons": dict(sorted(Counter(w["reason"] for w in approved + rejected).items())),
        },
        "bonuses": bonuses,
        "bonus_total": str(sum((Decimal(b["BonusAmount"]) for b in bonuses), Decimal("0.00"))),
        "decisions": workers,
    }
    return ReviewOutcome(summary=summary, batch=batch, rows=decided, bonuses=bonuses)


def review_file(path: str | Path, rules: ReviewRules, *, method: str, params: dict[str, Any] | None = None,
                options: dict[str, Any] | None = None, experts: list[dict[str, Any]] | None = None,
                use_experts: bool = False, blocked: frozenset[str] = frozenset(),
                progress=None) -> tuple[ReviewOutcome, Any]:
    """Read a batch-results file, aggregate it (with expert uploads if given) and review it.

    ``options`` are the mturk-csv reader's (``text_column``, ``answer_column``, ``id_column``,
    ``category``, ``scheme``, ``on_error``); ``experts`` are :func:`crowdqa.ingest.read_corpus` keyword
    dicts with ``path``. ``blocked`` (a project's block list) is applied as a job of the project applies
    it: those annotators are left out of the fit, still scored and judged, and marked blocked.
    Returns the outcome and the parse result (its notes and problems).
    """
    from crowdqa.ingest import read_merged
    from crowdqa.jobs.pipeline import run_pipeline

    path = Path(path)
    batch = read_batch(path.read_bytes(), source=str(path))
    if rules.against == "expert" and not experts:
        raise ValueError("against expert needs expert labels: give an expert file")
    if progress is not None:
        progress("reading", None, None)
    parsed = read_merged([dict(path=path, format="mturk-csv", role="crowd", **(options or {})),
                          *(experts or [])])
    if parsed.corpus.n_obs == 0:
        raise IngestError("the file holds no labels (read as 'mturk-csv')", source=str(path))
    result = run_pipeline(parsed.corpus, method=method, params=params, use_experts=use_experts, progress=progress,
                          blocked=blocked)
    # The report as plain JSON data, as a job stores it and review_job reads it back (the typed model would
    # validate it and dump the same dict again).
    return review_batch(batch, result.report_data, rules, blocked=blocked), parsed


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
    left = sum(a["left"].values())
    detail = ", ".join(f"{n} {k}" for k, n in a["left"].items())
    lines.append(f"assignments: {a['approved']} approved, {a['rejected']} rejected, {left} left as they were"
                 + (f" ({detail})" if detail else ""))
    if a["malformed_lines"]:
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
        lines.append(f"bonuses: {len(summary['bonuses'])} workers x ${r['bonus']} = ${summary['bonus_total']} "
                     f"({name} at least {r['bonus_above']:.2f})")
    rejected = [d for d in summary["decisions"] if d["verdict"] == "reject" and d["open_assignments"]]
    if rejected:
        lines.append("rejected workers:")
        width = max(len(d["worker"]) for d in rejected)
        for d in rejected[:max_rows]:
            ci = f"[{d['interval'][0]:.2f}, {d['interval'][1]:.2f}]" if d["interval"] else ""
            lines.append(f"  {d['worker']:<{width}}  {name} {d['score']:.3f} {ci:<14} {d['tokens']:>7} "
                         f"{'tokens' if name == 'F1' else 'items'}  {d['open_assignments']} assignments"
                         + ("  (blocked)" if d["blocked"] else ""))
        if len(rejected) > max_rows:
            lines.append(f"  ... {len(rejected) - max_rows} more in the JSON summary")
    return "\n".join(lines)
