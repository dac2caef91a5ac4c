"""What the app does at start and stop.

At start: keep credentials out of the access log (:mod:`crowdqa.api.access_log`); create or check the schema; in
embedded mode (no ``CROWDQA_REDIS_URL``) recover jobs a previous process left behind and start the in-process
worker; in every mode start the reconciler that fails abandoned and lost jobs (:mod:`crowdqa.jobs.reconcile`). A
production server (Redis) without ``CROWDQA_LABEL_STUDIO_URLS`` says at start that any API key can make it reach
any URL.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from crowdqa.api.access_log import install_access_log_filter
from crowdqa.jobs.embedded import EmbeddedWorker, recover_jobs
from crowdqa.jobs.label_studio import URLS_SETTING
from crowdqa.jobs.params import load_entry_points
from crowdqa.jobs.reconcile import Reconciler
from crowdqa.jobs.uploads import collect_garbage
from crowdqa.store.artifacts import ArtifactStore
from crowdqa.store.datadir_lock import acquire_data_dir, held_data_dirs, release_data_dir
from crowdqa.store.db import get_engine, open_session
from crowdqa.store.settings import get_settings

__all__ = ["lifespan"]

logger = logging.getLogger(__name__)

@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    settings = get_settings()
    load_entry_points()  # the methods of installed packages (already done by `crowdqa serve`; again adds nothing)
    install_access_log_filter()  # a key sent in a query string is not written to the access log
    app.state.auth_throttle = None  # a new start forgets failed sign-ins (made from the settings on first use)
    took_lock = False
    if settings.embedded:
        # Before the database is touched: a second embedded server on this data would take the
        # first one's running jobs for abandoned ones (re-entrant: `crowdqa serve` took it already).
        took_lock = str(settings.data_dir.resolve()) not in held_data_dirs()
        acquire_data_dir(settings.data_dir)
    get_engine(settings)
    removed = ArtifactStore(settings.data_dir).remove_stale_parts()
    if removed:
        logger.warning("removed %d temporary files left by an interrupted upload or job", removed)
    with open_session(settings) as session:  # files of rows deleted while files were young
        collect_garbage(session=session, settings=settings)
    if not settings.embedded and settings.label_studio_origins is None:
        logger.warning("%s is unset: any API key can make this server send requests to any URL (a Label Studio "
                       "pull or push); set it to the Label Studio servers it may reach, or none", URLS_SETTING)
    worker = None
    if settings.embedded:
        failed, requeued = recover_jobs(settings)
        if failed or requeued:
            logger.warning("recovered jobs of a previous run: %d marked failed, %d queued again", failed, requeued)
        worker = EmbeddedWorker(settings).start()
    app.state.embedded_worker = worker
    reconciler = Reconciler(settings).start()
    try:
        yield
    finally:
        reconciler.stop()
        if worker is not None:
            worker.stop()
        if took_lock:
            release_data_dir(settings.data_dir)
