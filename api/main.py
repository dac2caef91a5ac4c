"""The crowdqa API: FastAPI app under ``/api/v1`` (OpenAPI at ``/docs``); this module only wires it."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from crowdqa.api import dashboard
from crowdqa.api.errors import install_error_handlers
from crowdqa.api.lifespan import lifespan
from crowdqa.api.openapi import install_openapi, operation_id
from crowdqa.api.request_gate import RequestGate
from crowdqa.api.routes import (
    batches,
    datasets,
    health,
    jobs,
    keys,
    label_studio,
    meta,
    predictions,
    review,
    routing,
)

API_PREFIX = "/api/v1"

app = FastAPI(
    title="crowdqa",
    summary="Aggregate crowd annotations and measure every worker and aggregate against the experts.",
    version="0.1.0",
    lifespan=lifespan,
    docs_url=None,  # served by crowdqa.api.routes.meta from the package's own Swagger UI assets
    redoc_url=None,
    generate_unique_id_function=operation_id,
)
install_error_handlers(app)
app.add_middleware(RequestGate)  # the key and the body's size, before the body is read

api_router = APIRouter(prefix=API_PREFIX)
api_router.include_router(health.router)
api_router.include_router(datasets.router)
api_router.include_router(jobs.router)
api_router.include_router(routing.router)
api_router.include_router(batches.router)
api_router.include_router(predictions.router)
api_router.include_router(keys.router)
api_router.include_router(review.router)
api_router.include_router(label_studio.router)
app.include_router(api_router)
install_openapi(app)
app.include_router(meta.index_router)
meta.install_docs(app)
dashboard.install(app)  # the web dashboard under /ui; browsers asking for / are sent there
