"""Route documents to the experts: the use case behind ``crowdqa route``, the API's job action and the dashboard.

Every entry point calls these functions: the command line with files it has just aggregated
(:func:`route_corpus`), the API and the dashboard with a finished job's stored aggregate
(:func:`route_job`). The ranking itself is :func:`crowdqa.quality.routing.route_documents`;
here the options are checked, the rows built and the exports written.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from crowdqa.aggregation.corpus import Corpus
from crowdqa.ingest.formats import ROUTING_EXPORTS
from crowdqa.jobs.finished import check_aggregated
from crowdqa.store.models import Job
from crowdqa.store.settings import Settings

__all__ = ["RoutingOptions", "RoutingResult", "parse_budget", "route_arrays", "route_corpus",
           "route_job", "write_routing", "routing_bytes"]


_WHOLE = re.compile(r"[+]?\d+")


def parse_budget(text: str) -> int:
    """A budget typed by a user (``"20"``) as an int ``>= 1``; ValueError naming what was found otherwise."""
    from crowdqa.quality.routing import check_budget

    if not _WHOLE.fullmatch(text.strip()):
        raise ValueError(f"budget must be a whole number of documents >= 1, found {text!r}")
    return check_budget(int(text))


@dataclass(frozen=True)
class RoutingOptions:
    """The knobs of a routing list (see :func:`crowdqa.quality.routing.route_documents`)."""

    budget: int
    half_width: float = 0.05
    worker_weight: float = 1.0
    correction_weight: float = 1.0
    link_template: str | None = None

    def __post_init__(self) -> None:
        from crowdqa.quality.routing import check_budget

        check_budget(self.budget)
        if not 0.0 < self.half_width <= 0.5:
            raise ValueError(f"half_width must be in (0, 0.5], found {self.half_width}")
        for name in ("worker_weight", "correction_weight"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, found {value}")
        if self.link_template is not None and "{doc_id}" not in self.link_template:
            raise ValueError(f"link_template must contain {{doc_id}}, found {self.link_template!r}")


@dataclass(frozen=True)
class RoutingResult:
    """A routing list: rows best first, and what it was computed from.

    Attributes
    ----------
    rows : list of dict
        ``rank, doc_id, index, text, link, tokens, score, reason, parts, expected_errors`` per document.
    candidates : int
        Documents without expert labels that could be routed.
    widths : dict of str to float
        The aggregate's current interval widths.
    options : RoutingOptions
    order : ndarray of shape (n_rows,)
        Document indices of the rows.
    """

    rows: list[dict[str, Any]]
    candidates: int
    widths: dict[str, float]
    options: RoutingOptions
    order: NDArray[np.int64] = field(repr=False)

    def summary(self) -> dict[str, Any]:
        """The list as plain JSON (the API's body)."""
        return {"budget": self.options.budget, "half_width": self.options.half_width,
                "worker_weight": self.options.worker_weight, "correction_weight": self.options.correction_weight,
                "candidates": self.candidates, "widths": self.widths, "count": len(self.rows), "data": self.rows}


def route_arrays(corpus: Corpus, labels: NDArray, proba: NDArray, *, options: RoutingOptions,
                 reference: str = "union") -> RoutingResult:
    """Rank ``corpus``'s documents without expert labels from an aggregate's labels and posteriors."""
    from crowdqa.quality.routing import PARTS, route_documents

    plan = route_documents(corpus, labels, proba, budget=options.budget, half_width=options.half_width,
                           reference=reference, worker_weight=options.worker_weight,
                           correction_weight=options.correction_weight)
    rows = []
    for rank, (d, gain, parts, reason, errors) in enumerate(
            zip(plan.order.tolist(), plan.gain.tolist(), plan.parts.tolist(), plan.reason,
                plan.expected_errors.tolist(), strict=True), start=1):
        doc_id = corpus.doc_ids[d]
        rows.append({
            "rank": rank, "doc_id": doc_id, "index": d, "text": corpus.texts[d],
            "link": None if options.link_template is None else options.link_template.replace("{doc_id}", doc_id),
            "tokens": int(corpus.doc_lengths[d]), "score": gain, "reason": reason,
            "parts": dict(zip(PARTS, parts, strict=True)), "expected_errors": errors,
        })
    return RoutingResult(rows=rows, candidates=plan.candidates, widths=plan.widths, options=options,
                         order=plan.order)


def route_corpus(corpus: Corpus, *, method: str, params: dict[str, Any] | None = None, use_experts: bool = False,
                 reference: str = "union", options: RoutingOptions) -> tuple[RoutingResult, NDArray[np.int64]]:
    """Aggregate ``corpus`` (the job pipeline, as ``crowdqa aggregate`` does) and route; also return the labels."""
    from crowdqa.jobs.pipeline import run_pipeline

    result = run_pipeline(corpus, method=method, params=params, use_experts=use_experts, reference=reference)
    # The calibrated marginals: expected errors in the units the scores are calibrated in (not the fit's
    # overconfident posteriors, which put a sequence model's every token at .999).
    proba = result.proba if result.confidence is None else result.confidence.proba
    return route_arrays(corpus, result.labels, proba, options=options, reference=reference), result.labels


def route_job(*, settings: Settings, job: Job, options: RoutingOptions) -> tuple[RoutingResult, Corpus, NDArray]:
    """Route from a finished job's stored aggregate; JobNotFinishedError for a job that is not finished."""
    from crowdqa.jobs.results import load_job_result

    check_aggregated(job)
    stored = load_job_result(settings=settings, job=job)
    routed = route_arrays(stored.corpus, stored.labels, stored.scores.proba, options=options, reference=job.reference)
    return routed, stored.corpus, stored.labels


def write_routing(routed: RoutingResult, corpus: Corpus, labels: NDArray, path: str | Path, *, format: str) -> None:
    """Write the list as the task CSV (``csv``) or as annotation tasks (label-studio, doccano, spans-jsonl)."""
    from crowdqa.ingest.routing_export import write_routing_csv, write_routing_tasks

    if format not in ROUTING_EXPORTS:
        raise ValueError(f"format must be one of {', '.join(ROUTING_EXPORTS)}, found {format!r}")
    if format == "csv":
        write_routing_csv(routed.rows, path, link=routed.options.link_template is not None)
    else:
        write_routing_tasks(routed.rows, corpus, labels, path, format=format)


def routing_bytes(routed: RoutingResult, corpus: Corpus, labels: NDArray, *, format: str) -> bytes:
    """:func:`write_routing` into memory, for downloads."""
    with tempfile.TemporaryDirectory(prefix="crowdqa-route-") as tmp:
        target = Path(tmp) / "out"
        write_routing(routed, corpus, labels, target, format=format)
        return target.read_bytes()
