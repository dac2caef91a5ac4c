"""Paying and blocking: review a finished job's workers (any upload format; a Mechanical Turk batch is written
back), the workers to block, and the project's block list."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Response, status
from pydantic import BaseModel, ConfigDict, Field

from crowdqa.api.deps import CurrentProjectDep, Limit, Offset, OwnedJobDep, SessionDep, SettingsDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.api.openapi import download_response
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.jobs import blocklist, exports, review
from crowdqa.store.models import BlockedWorkerCreate, BlockedWorkerPublic, BlockedWorkersPublic

__all__ = ["router", "ReviewRequest", "ReviewSummary"]

router = APIRouter(tags=["review"], route_class=StrictJSONRoute)

#: The rules' choices (crowdqa.quality.review_rules.METRICS, AGAINST, DECIDE_BY; a test pins them), written once
#: for the request and the rules as applied.
Metric = Literal["auto", "f1", "accuracy"]
Against = Literal["aggregate", "expert"]
DecideBy = Literal["interval", "estimate"]
BlockFrom = Literal["verdict", "rejected", "both"]


class ReviewRequest(BaseModel):
    """Body of ``POST /jobs/{id}/review`` and its ``/batch`` and ``/bonuses`` files: the rules and which upload."""

    model_config = ConfigDict(extra="forbid")
    reject_below: float = Field(ge=0, le=1, description="Reject workers whose score is below this.")
    min_tokens: int = Field(default=50, ge=0, description="Judge only workers with this many compared tokens "
                                                          "(items for categorical answers).")
    metric: Metric = Field(
        default="auto", description="auto: F1 for span labels, accuracy for categorical answers.")
    against: Against = Field(default="aggregate", description="What workers are scored "
                                                    "against: the job's aggregate, or the experts.")
    decide_by: DecideBy = Field(
        default="interval", description="interval: reject only when the report's interval's upper bound is below "
                                        "reject_below (bonus only when its lower bound reaches bonus_above); "
                                        "estimate: compare the estimate.")
    bonus: Decimal | None = Field(default=None, gt=0, max_digits=9, decimal_places=2,
                                  description="Dollars paid to each worker at or above bonus_above.")
    bonus_above: float | None = Field(default=None, ge=0, le=1, description="The bonus threshold.")
    upload_id: str | None = Field(default=None, max_length=64, description="The mturk-csv crowd upload to review "
                                  "assignment by assignment (default: the dataset's only one; a dataset without "
                                  "one is reviewed worker by worker).")
    block_from: BlockFrom = Field(default="verdict", description="Who goes on the block list: the report's verdict "
                                  "block (answers that do not depend on the truth), the workers the rules reject, or "
                                  "both.")

    def rules(self) -> review.ReviewRules:
        """The rules (ValueError naming one that does not hold with the others)."""
        return review.ReviewRules(reject_below=self.reject_below, min_tokens=self.min_tokens, metric=self.metric,
                           against=self.against, decide_by=self.decide_by, bonus=self.bonus,
                           bonus_above=self.bonus_above)


class AppliedRules(BaseModel):
    """The rules as the review applied them (metric resolved)."""

    reject_below: float
    min_tokens: int
    metric: Literal["f1", "accuracy"]
    against: Against
    decide_by: DecideBy
    bonus: str | None
    bonus_above: float | None
    level: float | None = Field(description="Confidence level of the report's intervals the rules read "
                                            "(its bootstrap.level); null when the report does not say.")
    block_from: BlockFrom = "verdict"


class AssignmentCounts(BaseModel):
    approved: int = Field(description="Open assignments approved (an x in Approve).")
    rejected: int = Field(description="Open assignments rejected (the reason in Reject).")
    left: dict[str, int] = Field(description="Assignments left as they were, by why: already approved, already "
                                             "rejected, decided in the file, worker not scored.")
    malformed_lines: list[int] = Field(description="Lines that are not assignment rows (a field count unlike the "
                                                   "header's), left as they were.")


class WorkerCounts(BaseModel):
    approved: int
    rejected: int
    reasons: dict[str, int] = Field(description="Workers by reason: below, too_few_tokens, no_score, no_interval, "
                                                "interval_reaches, at_or_above.")


class WorkerDecision(BaseModel):
    worker: str = Field(description="The WorkerId.")
    annotator: str = Field(description="The annotator id in the report (mturk:<WorkerId>).")
    verdict: Literal["approve", "reject"]
    reason: str
    score: float | None
    interval: list[float] | None = Field(description="Interval of the score, at rules.level.")
    tokens: int = Field(description="Compared tokens (items).")
    open_assignments: int
    feedback: str = Field(description="The text written to Reject (or RequesterFeedback when approved).")
    bonus: str | None
    blocked: bool = Field(description="On the project's block list.")
    quality_verdict: Literal["block", "watch", "keep"] | None = Field(
        default=None, description="The report's verdict on the worker (quality.verdict).")
    spammer_score: float | None = Field(default=None, description="The report's spammer score (Raykar & Yu).")
    quality_reason: str = Field(default="", description="Why the report gave its verdict.")
    block: bool = Field(default=False, description="On this review's block list.")


class BlockListEntry(BaseModel):
    annotator: str
    reason: str


class Bonus(BaseModel):
    WorkerId: str  # noqa: N815 - the requester site's column names
    AssignmentId: str  # noqa: N815
    BonusAmount: str  # noqa: N815
    Reason: str  # noqa: N815


class ReviewSummary(BaseModel):
    """What a review decides: counts, every worker's decision and the bonus list."""

    format: str = Field(default="mturk-csv", description="The crowd upload's format (its formats, joined).")
    rules: AppliedRules
    assignments: AssignmentCounts | None = Field(description="A Mechanical Turk batch's assignments; null for "
                                                             "another format (decided worker by worker).")
    workers: WorkerCounts
    bonuses: list[Bonus] = Field(description="A batch's bonus list (a worker's last assignment); empty for another "
                                             "format, whose decisions carry each bonus.")
    bonus_total: str
    decisions: list[WorkerDecision]
    block_list: list[BlockListEntry] = Field(default_factory=list, description="The workers to block, with why: "
                                             "POST /jobs/{id}/review/block puts them on the project's list.")


def _review(job, body: ReviewRequest, session, settings) -> review.ReviewOutcome:
    try:
        rules = body.rules()
    except ValueError as exc:
        raise ProblemError(422, str(exc)) from None
    try:
        return exports.review_job(session=session, settings=settings, job=job, rules=rules, upload_id=body.upload_id,
                                  block_from=body.block_from)
    except LookupError as exc:
        raise ProblemError(404, str(exc)) from None


def _batch_review(job, body: ReviewRequest, session, settings) -> review.ReviewOutcome:
    """The review of the job's Mechanical Turk batch; 409 for a dataset without one (it is reviewed worker by
    worker, with nothing to write back and no assignment to pay)."""
    outcome = _review(job, body, session, settings)
    if outcome.batch is None:
        raise ProblemError(409, f"the dataset of job {job.id} has no mturk-csv crowd upload to write back: get the "
                                "decisions (/review/decisions) and the block list (/review/block-list)")
    return outcome


def _counted(outcome: review.ReviewOutcome, filename: str) -> dict[str, str]:
    a = outcome.summary["assignments"]
    return {"X-Review-Approved": str(a["approved"]), "X-Review-Rejected": str(a["rejected"]),
            "Content-Disposition": f'attachment; filename="{filename}"'}


@router.post("/jobs/{job_id}/review", responses=problem_responses(404, 409))
def review_job(job: OwnedJobDep, body: ReviewRequest, session: SessionDep, settings: SettingsDep) -> ReviewSummary:
    """What the rules decide for the job's workers: every worker's verdict on its score in the job's report, the
    report's verdict and the block list; for a Mechanical Turk batch also the assignment counts and the bonus list.
    Nothing is written; the files are ``/review/batch``, ``/review/bonuses``, ``/review/decisions`` and
    ``/review/block-list`` with the same body, and ``/review/block`` applies the block list."""
    return ReviewSummary.model_validate(_review(job, body, session, settings).summary)


@router.post("/jobs/{job_id}/review/batch", response_class=Response, responses={
    **problem_responses(404, 409),
    200: download_response("The reviewed batch-results CSV, encoded as uploaded (X-Review-Approved and "
                           "X-Review-Rejected count the decisions).", "text/csv")})
def review_batch(job: OwnedJobDep, body: ReviewRequest, session: SessionDep, settings: SettingsDep) -> Response:
    """The job's Mechanical Turk batch with Approve, Reject and RequesterFeedback filled by the rules and every
    other byte as uploaded: the file to upload on the requester site."""
    outcome = _batch_review(job, body, session, settings)
    return Response(outcome.reviewed_csv(), media_type=outcome.media_type,
                    headers=_counted(outcome, f"{job.id}-reviewed.csv"))


@router.post("/jobs/{job_id}/review/decisions", response_class=Response, responses={
    **problem_responses(404, 409),
    200: download_response("Every worker's decision: annotator, decision, reason, score, low, high, items, verdict, "
                           "spammer_score, verdict_reason, block, bonus, feedback.", "text/csv; charset=utf-8")})
def review_decisions(job: OwnedJobDep, body: ReviewRequest, session: SessionDep, settings: SettingsDep) -> Response:
    """The review's decisions as CSV, one row per crowd worker, for any upload format."""
    outcome = _review(job, body, session, settings)
    return Response(outcome.decisions_csv(), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{job.id}-decisions.csv"'})


@router.post("/jobs/{job_id}/review/block-list", response_class=Response, responses={
    **problem_responses(404, 409),
    200: download_response("The workers to block: annotator, reason.", "text/csv; charset=utf-8")})
def review_block_list(job: OwnedJobDep, body: ReviewRequest, session: SessionDep, settings: SettingsDep) -> Response:
    """The review's block list as CSV (what ``crowdqa blocked add --from-file`` reads)."""
    outcome = _review(job, body, session, settings)
    return Response(outcome.block_list_csv(), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{job.id}-block-list.csv"'})


@router.post("/jobs/{job_id}/review/block", responses=problem_responses(404, 409))
def review_block(job: OwnedJobDep, body: ReviewRequest, session: SessionDep, settings: SettingsDep
                 ) -> BlockedWorkersPublic:
    """Put the review's block list on the project's block list: its jobs started from now on fit without them
    (they are still scored). Returns the rows written."""
    outcome = _review(job, body, session, settings)
    done = blocklist.block_rows(session=session, project_id=job.project_id, rows=outcome.summary["block_list"])
    return BlockedWorkersPublic(data=[BlockedWorkerPublic.model_validate(r) for r, _ in done], count=len(done))


@router.post("/jobs/{job_id}/review/bonuses", response_class=Response, responses={
    **problem_responses(404, 409),
    200: download_response("The bonus list: WorkerId, AssignmentId, BonusAmount, Reason.", "text/csv; charset=utf-8")})
def review_bonuses(job: OwnedJobDep, body: ReviewRequest, session: SessionDep, settings: SettingsDep) -> Response:
    """The bonuses the rules grant, one row per worker at or above ``bonus_above`` (empty without ``bonus``); a
    Mechanical Turk bonus list, so 409 for a dataset without a batch (its decisions CSV has every bonus)."""
    outcome = _batch_review(job, body, session, settings)
    return Response(outcome.bonus_csv(), media_type="text/csv; charset=utf-8",
                    headers=_counted(outcome, f"{job.id}-bonuses.csv"))


@router.get("/blocked-workers", responses=problem_responses())
def list_blocked(session: SessionDep, project: CurrentProjectDep, offset: Offset = 0,
                 limit: Limit = 100) -> BlockedWorkersPublic:
    """The project's block list: annotators left out of the fit of its later jobs (still scored in their reports)."""
    rows, count = blocklist.list_blocked(session=session, project_id=project.id, offset=offset, limit=limit)
    return BlockedWorkersPublic(data=[BlockedWorkerPublic.model_validate(r) for r in rows], count=count)


@router.post("/blocked-workers", status_code=status.HTTP_201_CREATED, responses={
    **problem_responses(), 200: {"model": BlockedWorkerPublic, "description": "Already blocked; reason updated."}})
def block_worker(body: BlockedWorkerCreate, session: SessionDep, project: CurrentProjectDep,
                 response: Response) -> BlockedWorkerPublic:
    """Block an annotator (e.g. mturk:A1B2C3): later jobs of the project fit without its labels and mark it in
    their reports; 201 when new, 200 when it was blocked already (its reason is updated)."""
    [(row, created)] = blocklist.block_workers(session=session, project_id=project.id, annotators=[body.annotator],
                                               reason=body.reason)
    if not created:
        response.status_code = status.HTTP_200_OK
    return BlockedWorkerPublic.model_validate(row)


@router.delete("/blocked-workers/{annotator:path}", status_code=status.HTTP_204_NO_CONTENT,
               responses=problem_responses(404))
def unblock_worker(annotator: Annotated[str, Path(max_length=300)], session: SessionDep,
                   project: CurrentProjectDep) -> Response:
    """Unblock an annotator: jobs started from now on fit with its labels again."""
    try:
        blocklist.unblock_worker(session=session, project_id=project.id, annotator=annotator)
    except LookupError as exc:
        raise ProblemError(404, str(exc)) from None
    return Response(status_code=status.HTTP_204_NO_CONTENT)
