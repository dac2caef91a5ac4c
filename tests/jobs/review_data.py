"""A Mechanical Turk span batch with known workers, for the review tests (API and command line).

Twelve sentences, each labelled by five workers: three careful ones mark the participants span
(one of them misses it on two sentences), one marks the whole sentence, and a spammer marks a
verb that is never in a span. Their F1 against any sensible aggregate is known in advance: the
careful workers near 1, the spammer 0 on every document.
"""

from __future__ import annotations

import codecs
import json

SUBJECTS = ["Forty adults", "Twelve children", "Sixty nurses", "Nine patients", "Eighty smokers", "Ten mothers",
            "Thirty runners", "Five surgeons", "Seven farmers", "Fifty pupils", "Six pilots", "Twenty cooks"]
HEADER = ("HITId", "HITTypeId", "AssignmentId", "WorkerId", "AssignmentStatus", "RequesterFeedback", "Input.id",
          "Input.text", "Answer.taskAnswers", "Approve", "Reject")
WORKERS = ("AGOOD1", "AGOOD2", "AMISS3", "AWHOLE4", "ASPAM5")


def _answer(spans: list[tuple[int, int]]) -> str:
    return json.dumps([{"crowd-entity-annotation": {"entities": [
        {"startOffset": s, "endOffset": e, "label": "participants"} for s, e in spans]}}])


def batch_rows(*, spammer_status: str = "Submitted") -> list[tuple[str, ...]]:
    """One row per (sentence, worker); the spammer's first assignment has ``spammer_status``."""
    rows = []
    for i, subject in enumerate(SUBJECTS):
        text = f"{subject} with mild asthma were randomised to inhaled steroids or placebo for twelve weeks."
        truth = (0, len(subject))
        verb = text.index("randomised")
        for worker in WORKERS:
            spans = {"AGOOD1": [truth], "AGOOD2": [truth], "AMISS3": [] if i < 2 else [truth],
                     "AWHOLE4": [(0, len(text))], "ASPAM5": [(verb, verb + len("randomised"))]}[worker]
            status = spammer_status if worker == "ASPAM5" and i == 0 else "Submitted"
            rows.append((f"HIT{i:02d}", "T1", f"AS{i:02d}{worker}", worker, status, "", f"doc{i:02d}", text,
                         _answer(spans), "", ""))
    return rows


def batch_bytes(rows: list[tuple[str, ...]] | None = None) -> bytes:
    """The batch as the requester site writes it: UTF-8 with a byte-order mark, every field quoted, CRLF."""
    lines = [",".join('"' + v.replace('"', '""') + '"' for v in r) for r in [HEADER, *(rows or batch_rows())]]
    return codecs.BOM_UTF8 + ("\r\n".join(lines) + "\r\n").encode("utf-8")
