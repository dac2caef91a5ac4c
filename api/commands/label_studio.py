"""crowdqa label-studio: pull a Label Studio project's annotations into a dataset, push a job's aggregate back.

``pull`` reads every task and annotation of the project through Label Studio's REST API (a second pull of the
same dataset only what changed since) and stores them as uploads of a dataset, as uploading the project's JSON
export would. ``job`` runs a job on the dataset here (``--push`` then pushes it). ``push`` writes a finished job's
aggregate on the tasks as predictions, scored by confidence, replacing every earlier crowdqa prediction; when the
job's model reads the text, the tasks nobody annotated yet get its drafts too.
Like ``crowdqa keys``, the command works on the data directory (or database) of the server. The token may come
from LABEL_STUDIO_TOKEN instead of --token (a command line is visible to other users of the machine); it is
kept sealed with the dataset, so ``push`` needs none.
"""

from __future__ import annotations

import argparse
import os
import sys

from crowdqa.api.commands import COMMANDS, UserError, server_session

__all__ = ["register"]


def _token(args: argparse.Namespace, required: bool) -> str | None:
    token = args.token or os.environ.get("LABEL_STUDIO_TOKEN") or None
    if token is None and required:
        raise UserError("give the Label Studio token: --token TOKEN or LABEL_STUDIO_TOKEN (a personal access "
                        "token from Account & Settings, or a legacy token)")
    return token


def _pull(args: argparse.Namespace) -> int:
    from crowdqa.jobs.label_studio import connect, pull
    from crowdqa.store.settings import get_settings

    url = args.url or os.environ.get("LABEL_STUDIO_URL")
    if not url:
        raise UserError("give the Label Studio server: --url URL or LABEL_STUDIO_URL")
    token = _token(args, required=True)
    settings = get_settings()
    # allowed=None: the operator's own command, not bound by CROWDQA_LABEL_STUDIO_URLS (see connect)
    with connect(url, token, allowed=None, settings=settings) as client, server_session(create=True) as session:
        done = pull(session=session, settings=settings, client=client, ls_project=args.project,
                    project_name=args.crowdqa_project, dataset_name=args.dataset, experts=args.expert,
                    ground_truth=True if args.ground_truth else None, keep_token=token, full=args.full)
        ds = done.dataset
        if not done.changed:
            print(f"dataset {ds.id} ({ds.name!r}): nothing changed in project {args.project} since "
                  f"{done.link.cursor}")
            return 0
        print(f"dataset {ds.id} ({ds.name!r}, project {args.crowdqa_project!r}): {done.fetched} tasks read "
              f"({'all' if done.created or args.full else 'changed since the last pull'}), {done.removed} removed "
              f"(deleted in Label Studio), {done.tasks} held, {done.kind}")
        for u in done.uploads:
            s = u.summary
            print(f"  upload {u.id}: {u.role}, {u.format}, {s.get('documents')} documents, "
                  f"{sum((s.get('annotators') or {}).values())} annotators")
        for note in done.notes:
            print(f"crowdqa: note: {note}", file=sys.stderr)
        if not done.uploads:
            print(f"  no annotation left in project {args.project}: the dataset keeps no pulled upload")
            return 0
    print(f"next: crowdqa label-studio job --dataset {ds.id} --method auto --push (or start a job in the API or "
          "dashboard, then crowdqa label-studio push --job ID)", file=sys.stderr)
    return 0


def _job(args: argparse.Namespace) -> int:
    import json

    from crowdqa.jobs.queue import get_queue
    from crowdqa.jobs.service import run_job_here
    from crowdqa.store.models import Dataset, JobCreate, JobStatus
    from crowdqa.store.settings import get_settings

    try:
        params = json.loads(args.params) if args.params else {}
    except json.JSONDecodeError as exc:
        raise UserError(f"--params must be a JSON object: {exc}") from None
    if not isinstance(params, dict):
        raise UserError(f"--params must be a JSON object, found {type(params).__name__}")
    settings = get_settings()
    with server_session() as session:
        dataset = session.get(Dataset, args.dataset)
        if dataset is None:
            raise UserError(f"no dataset {args.dataset!r} in this data directory (crowdqa label-studio pull prints "
                            "its id)")
        job_in = JobCreate(method=args.method, params=params, use_experts=args.use_experts)
        job = run_job_here(session=session, settings=settings, queue=get_queue(settings), dataset=dataset,
                           job_in=job_in)
        if job.status != JobStatus.finished:
            raise UserError(f"job {job.id} ({job.method}) {job.status}: {job.error or 'no reason recorded'}")
        print(f"job {job.id} ({job.method}{', with the experts clamped' if job.use_experts else ''}) finished on "
              f"dataset {dataset.id} ({dataset.name!r})")
        if not args.push:
            print(f"next: crowdqa label-studio push --job {job.id}", file=sys.stderr)
            return 0
        args.job = job.id
    return _push(args)


def _push(args: argparse.Namespace) -> int:
    from crowdqa.jobs.label_studio import VIEW_TITLE, push
    from crowdqa.store import crud
    from crowdqa.store.settings import get_settings

    with server_session() as session:
        job = crud.load_job(session=session, job_id=args.job)
        if job is None:
            raise UserError(f"no job {args.job!r} in this data directory")
        try:
            done = push(session=session, settings=get_settings(), job=job, allowed=None,
                        token=_token(args, required=False), view=args.view, keep_earlier=args.keep_earlier,
                        pre_annotate=args.pre_annotate)
        except (LookupError, ValueError) as exc:
            raise UserError(str(exc)) from None
    predictions = "prediction" if done.predictions == 1 else "predictions"
    replacing = "the job's earlier push" if args.keep_earlier else "every earlier crowdqa prediction"
    print(f"{done.predictions} {predictions} written to project {done.ls_project} of {done.url} as "
          f"model version {done.model_version!r} (replacing {replacing})")
    if done.replaced:
        print(f"earlier crowdqa predictions removed: {', '.join(done.replaced)}")
    if done.skipped:
        tasks, were = ("task", "was") if done.skipped == 1 else ("tasks", "were")
        print(f"{done.skipped} {tasks} of the job deleted in Label Studio since {were} skipped")
    if done.pre_annotated:
        drafts = "draft" if done.pre_annotated == 1 else "drafts"
        print(f"{done.pre_annotated} {drafts} of the job's model written on tasks nobody annotated (same model "
              "version, no score)")
    for note in done.notes:
        print(f"crowdqa: note: {note}", file=sys.stderr)
    if done.view is not None:
        print(f"view {done.view} ({VIEW_TITLE!r}): the project's tasks by prediction score, lowest (most disputed) "
              "first")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("label-studio", help=COMMANDS["label-studio"][1],
                              description=__doc__.split("\n", 1)[1].strip())
    sub = p.add_subparsers(dest="label_studio_command", metavar="ACTION", required=True)
    pl = sub.add_parser("pull", help="read a project's tasks and annotations into a dataset")
    pl.add_argument("--url", default=None, help="the Label Studio server (default LABEL_STUDIO_URL)")
    pl.add_argument("--token", default=None, help="personal access token or legacy token (default "
                    "LABEL_STUDIO_TOKEN)")
    pl.add_argument("--project", type=int, required=True, metavar="ID", help="the Label Studio project id")
    pl.add_argument("--dataset", default=None, metavar="NAME",
                    help="the dataset to pull into (default 'label-studio ID: <title>'); made on the first pull")
    pl.add_argument("--expert", action="append", default=[], metavar="ANNOTATOR",
                    help="an expert's e-mail or Label Studio user id (repeat); the others are crowd")
    pl.add_argument("--ground-truth", action="store_true",
                    help="annotations Label Studio flags as ground truth are experts'")
    pl.add_argument("--full", action="store_true",
                    help="read every task again, not only those changed since the last pull")
    pl.add_argument("--crowdqa-project", default="default", metavar="NAME",
                    help="the crowdqa project holding the dataset (default 'default')")
    pl.set_defaults(func=_pull)
    jb = sub.add_parser("job", help="run a job on a pulled dataset here, and push its aggregate (--push)",
                        description="Run a job on a dataset (a pull's, or any) in this process, as the server's "
                                    "embedded worker would (with Redis, queue it for the workers and wait), then "
                                    "with --push write its aggregate on the Label Studio tasks.")
    jb.add_argument("--dataset", required=True, metavar="ID", help="the dataset (crowdqa label-studio pull prints it)")
    jb.add_argument("--method", default="auto", help="the aggregation method (default auto)")
    jb.add_argument("--params", default=None, metavar="JSON", help="the method's parameters as a JSON object")
    jb.add_argument("--use-experts", action=argparse.BooleanOptionalAction, default=None,
                    help="clamp the experts' tokens in the fit (scored by cross-fitting); not given: no, except that "
                         "method auto clamps them when its rule expects that to score better on unseen items")
    jb.add_argument("--push", action="store_true", help="then push the aggregate to Label Studio as predictions")
    jb.add_argument("--token", default=None, help="with --push: a token (default: the one kept at the last pull)")
    jb.add_argument("--view", action="store_true", help="with --push: the project's disputed-first tab (made once)")
    jb.add_argument("--keep-earlier", action="store_true",
                    help="with --push: keep other crowdqa jobs' predictions on the tasks")
    jb.add_argument("--pre-annotate", action=argparse.BooleanOptionalAction, default=None,
                    help="with --push: draft the tasks nobody annotated with the job's model (default: when its "
                         "method reads the text)")
    jb.set_defaults(func=_job)
    pu = sub.add_parser("push", help="write a finished job's aggregate on the tasks as predictions")
    pu.add_argument("--job", required=True, metavar="ID", help="a finished job of a pulled dataset")
    pu.add_argument("--token", default=None, help="a token (default: the one kept at the last pull)")
    pu.add_argument("--view", action="store_true",
                    help="also give the project a data manager tab listing the tasks by prediction score, most "
                         "disputed first (made on the first such push, found again after)")
    pu.add_argument("--keep-earlier", action="store_true",
                    help="keep other crowdqa jobs' predictions on the tasks (by default a push replaces every "
                         "earlier crowdqa prediction, so a task holds one)")
    pu.add_argument("--pre-annotate", action=argparse.BooleanOptionalAction, default=None,
                    help="also label the project's tasks that nobody annotated yet with the job's model, as drafts "
                         "in the same model version (default: when the job's method reads the text; "
                         "--pre-annotate refuses a job that cannot, --no-pre-annotate "
                         "writes the aggregate alone)")
    pu.set_defaults(func=_push)
