"""Label Studio: pull a project's annotations into a dataset, push a job's aggregate back as predictions.

The token a pull is given is kept sealed with the dataset (for later pulls and pushes) and never shown again:
no response carries it, and the request model holds it as a secret (``**********`` in any repr or log).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from crowdqa.api.deps import CurrentProjectDep, OwnedJobDep, SessionDep, SettingsDep
from crowdqa.api.errors import ProblemError, problem_responses
from crowdqa.api.strict_json import StrictJSONRoute
from crowdqa.jobs.label_studio import connect, pull, push

router = APIRouter(tags=["label-studio"], route_class=StrictJSONRoute)


class LabelStudioPull(BaseModel):
    """Body of ``POST /label-studio/pulls``."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=8, max_length=500, description="The Label Studio server, http(s)://host:port "
                     "(one of CROWDQA_LABEL_STUDIO_URLS when the operator sets it).")
    token: SecretStr = Field(min_length=1, max_length=4000, description="A personal access token (refresh "
                             "token) or a legacy token; kept sealed with the dataset, never shown again.")
    project: int = Field(ge=1, description="The Label Studio project id.")
    dataset: str | None = Field(default=None, min_length=1, max_length=200,
                                description="The dataset to pull into (made on the first pull); default "
                                            "'label-studio <id>: <title>'.")
    experts: list[str] = Field(default_factory=list, max_length=1000,
                               description="Experts' e-mails or Label Studio user ids (default: the last pull's).")
    ground_truth: bool | None = Field(default=None, description="Annotations flagged ground truth are experts'.")
    full: bool = Field(default=False, description="Read every task, not only those changed since the last pull.")


class LabelStudioPulled(BaseModel):
    """What a pull did."""

    dataset_id: str
    dataset: str
    kind: str = Field(description="spans or choices")
    fetched: int = Field(description="Tasks read from Label Studio by this pull.")
    removed: int = Field(description="Tasks the last pull held that were deleted in Label Studio since, dropped "
                                     "from the dataset.")
    tasks: int = Field(description="Tasks the dataset holds.")
    changed: bool
    uploads: list[str] = Field(description="The uploads this pull made (they replace the last pull's).")
    notes: list[str] = Field(default_factory=list, description="What the pull noticed: experts named who annotated "
                                                               "none of the tasks.")


class LabelStudioPushed(BaseModel):
    """What a push wrote."""

    model_version: str
    predictions: int
    url: str
    project: int
    view: int | None = Field(default=None, description="The project's crowdqa data manager view, with ?view=true "
                                                       "(made on the first such push, found again after).")
    replaced: list[str] = Field(default_factory=list, description="Earlier crowdqa model versions (other jobs') "
                                                                  "whose predictions this push removed.")
    skipped: int = Field(default=0, description="Tasks of the job deleted in Label Studio since: no prediction.")
    pre_annotated: int = Field(default=0, description="Tasks nobody annotated yet, labelled by the job's model "
                                                      "(drafts in the same model version, without a score).")
    notes: list[str] = Field(default_factory=list, description="What the push noticed: tasks nobody annotated that "
                                                               "got no draft, and why (a job whose model reads no "
                                                               "text, a task without text).")


@router.post("/label-studio/pulls", responses=problem_responses(409, 422))
def pull_project(body: LabelStudioPull, session: SessionDep, settings: SettingsDep,
                 project: CurrentProjectDep) -> LabelStudioPulled:
    """Pull a Label Studio project's tasks and annotations into a dataset of the caller's project (a second
    pull reads only the tasks changed since the last). A pull is an upload, refused as one is: 422 names what
    is wrong with the server (one outside ``CROWDQA_LABEL_STUDIO_URLS`` is refused before any connection), the
    token, the labeling config or the labels (experts matching no crowd task);
    409 when the dataset holds other uploads or another project's, or labels of another kind; 413 and 429 past
    the size limit and the project's limits (a pull counts as an upload request)."""
    token = body.token.get_secret_value()
    with connect(body.url, token, allowed=settings.label_studio_origins, settings=settings) as client:
        done = pull(session=session, settings=settings, client=client, ls_project=body.project,
                    project_name=project.name, dataset_name=body.dataset, experts=body.experts,
                    ground_truth=body.ground_truth, keep_token=token, full=body.full)
    return LabelStudioPulled(dataset_id=done.dataset.id, dataset=done.dataset.name, kind=done.kind,
                             fetched=done.fetched, removed=done.removed, tasks=done.tasks,
                             changed=done.changed,
                             uploads=[u.id for u in done.uploads], notes=done.notes)


@router.post("/jobs/{job_id}/label-studio", responses=problem_responses(404, 409, 422))
def push_job(job: OwnedJobDep, session: SessionDep, settings: SettingsDep,
             view: Annotated[bool, Query(description="Also give the project a data manager tab listing the tasks by "
                                                     "prediction score, most disputed first (made once).")] = False,
             keep_earlier: Annotated[bool, Query(description="Keep other crowdqa jobs' predictions beside this "
                                                             "job's (by default a push replaces them).")] = False,
             pre_annotate: Annotated[bool | None, Query(
                 description="Also label the project's tasks nobody annotated yet with the job's model (drafts in "
                             "the same model version, so Label Studio's editor opens them pre-filled). Unset: when "
                             "the job's method reads the text, else a note says how many tasks got none; true: 422 "
                             "for a job whose model cannot; false: the aggregate alone.")] = None,
             ) -> LabelStudioPushed:
    """Write the finished job's aggregate on the Label Studio tasks of its dataset as predictions (model version
    ``crowdqa-<method>-job-<id>``, scored by confidence), with the token kept at the last pull. A push replaces
    every earlier crowdqa prediction on the project's tasks (``keep_earlier``: only this job's own); tasks deleted
    in Label Studio since the job's snapshot are skipped. 422 when the pull's server is no longer in
    ``CROWDQA_LABEL_STUDIO_URLS`` or Label Studio refuses the push; 429 past the project's pulls and pushes at once
    (``CROWDQA_LABEL_STUDIO_CONCURRENCY``). The tasks nobody annotated get drafts of the job's model when its
    method reads the text (``pre_annotate``; ``notes`` say why not, and 422 with ``pre_annotate=true``)."""
    try:
        done = push(session=session, settings=settings, job=job, allowed=settings.label_studio_origins, view=view,
                    keep_earlier=keep_earlier, pre_annotate=pre_annotate)
    except LookupError as exc:
        raise ProblemError(409, str(exc)) from None
    return LabelStudioPushed(model_version=done.model_version, predictions=done.predictions, url=done.url,
                             project=done.ls_project, view=done.view, skipped=done.skipped, replaced=done.replaced,
                             pre_annotated=done.pre_annotated, notes=done.notes)
