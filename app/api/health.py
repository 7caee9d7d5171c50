"""Liveness, readiness and metrics, for load balancers, orchestrators and scrapers."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.deps import StateDep, limit_reads
from app.api.routing import StrictQueryRoute
from app.api.schemas import Health, problem_responses
from app.errors import Unavailable
from app.telemetry import REGISTRY

router = APIRouter(route_class=StrictQueryRoute, tags=["service"])


@router.get("/healthz", response_model=Health, summary="Liveness", operation_id="getHealth")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    operation_id="getReadiness",
    response_model=Health,
    responses=problem_responses(503),
    summary="Readiness: start-up work is done and the tables answer",
)
async def readyz(state: StateDep) -> Health:
    # The tables first: while they do not answer, the start-up work that reads them waits too,
    # and the tables are the cause to report.
    try:
        await state.leaderboard.ping()
    except Unavailable as exc:
        # The cause (credentials, the endpoint, a table, a permission) is the operator's to
        # read in the log, once; the response, which anyone may read, does not name it.
        state.readiness.failed(exc.detail)
        raise Unavailable(
            "not ready: the tables do not answer; the service's log says why",
            retry_after=exc.retry_after,
        ) from None
    state.readiness.answered()
    waiting = state.startup.not_ready_because()
    if waiting is not None:
        raise Unavailable(waiting, retry_after=1)
    return Health(status="ready")


@router.get(
    "/metrics",
    operation_id="getMetrics",
    response_class=Response,
    # Rate limited as the public reads are: a scraper asks every few seconds, an attacker more.
    dependencies=[Depends(limit_reads)],
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}, **problem_responses(429)},
    summary="Prometheus metrics: requests, latency, DynamoDB calls and units, retries, ranks",
)
async def metrics() -> Response:
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
