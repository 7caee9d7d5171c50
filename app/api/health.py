"""Liveness, readiness and metrics, for load balancers, orchestrators and scrapers."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.deps import StoresDep
from app.api.schemas import Health, problem_responses
from app.telemetry import REGISTRY

router = APIRouter()


@router.get("/healthz", response_model=Health, summary="Liveness")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    responses=problem_responses(503),
    summary="Readiness: the tables answer",
)
async def readyz(stores: StoresDep) -> Health:
    await stores.tables.ping()
    return Health(status="ready")


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}},
    summary="Prometheus metrics: requests, latency, DynamoDB calls and units, retries, ranks",
)
async def metrics() -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
