"""Liveness and readiness, for load balancers and orchestrators."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import StoresDep
from app.api.schemas import Health, problem_responses

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
