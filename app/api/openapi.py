"""The OpenAPI document as generators read it: tags by audience, the request bodies and the problem
document as named components, every error typed as that problem under
``application/problem+json``, and parameters without FastAPI's made-up titles."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.api.deps import ReadLimitDep
from app.api.schemas import BoardDefinitionIn, Problem, ScoreBatch, ScoreSubmission
from app.api.schemas.moderation import ModerationIn
from app.api.schemas.webhooks import WebhookIn
from app.errors import PROBLEM_JSON, problem_types

TAGS = [
    {
        "name": "submissions",
        "description": "Game servers, with a key of scope `submit:<game>`: a round's results.",
    },
    {
        "name": "reads",
        "description": "Anyone, rate limited per client address (and pages of the allowed "
        "origins): boards, ranks, the players around, standings, snapshots, definitions.",
    },
    {
        "name": "admin",
        "description": "Keys of scope `admin`: defining variants, seeding, reconciling, "
        "snapshots now, erasing a player.",
    },
    {
        "name": "moderation",
        "description": "Keys of scope `admin`: hiding, banning and restoring a player in a game, "
        "voiding an entry, the game's moderated players and its audit log.",
    },
    {
        "name": "webhooks",
        "description": "Keys of scope `admin`: a game's webhook (its URL and signing secret) "
        "and its events' deliveries.",
    },
    {"name": "service", "description": "The operators' checks: liveness, readiness, metrics."},
]

COMPONENTS: tuple[type[BaseModel], ...] = (
    Problem,
    ScoreSubmission,
    ScoreBatch,
    BoardDefinitionIn,
    ModerationIn,
    WebhookIn,
)
"""Models named in the document though no route declares them: the problem, and the bodies the
routes read themselves (to bound and check them before parsing)."""

_REF = "#/components/schemas/{model}"


def component_ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": _REF.format(model=model.__name__)}


def _problem_schema() -> dict[str, Any]:
    schema = Problem.model_json_schema(by_alias=True, ref_template=_REF)
    listed = ", ".join(
        f"`/problems/{slug}` ({status})" for slug, (status, _) in problem_types().items()
    )
    schema["properties"]["type"]["description"] = (
        "what went wrong, as a URI reference that resolves to a page saying what it means and "
        f"what to do: {listed}; or `about:blank` where the status says it all"
    )
    return schema


def build_document(app: FastAPI) -> dict[str, Any]:
    document = get_openapi(
        title=app.title,
        version=app.version,
        summary=app.summary,
        routes=app.routes,
        tags=TAGS,
        license_info=app.license_info,
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for model in COMPONENTS:
        schema = model.model_json_schema(by_alias=True, ref_template=_REF)
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    schemas["Problem"] = _problem_schema()
    document["servers"] = [{"url": "/", "description": "the service this document came from"}]
    for operations in document["paths"].values():
        for operation in operations.values():
            # Public where no key is asked for: said, not left for a reader to guess.
            operation.setdefault("security", [])
            # Every route refuses a query parameter it does not know (StrictQueryRoute).
            operation["responses"].setdefault("422", {"description": "Unprocessable Content"})
            for parameter in operation.get("parameters", []):
                parameter["schema"].pop("title", None)
            for status, response in operation["responses"].items():
                if status.isdigit() and int(status) >= 400:
                    response["content"] = {PROBLEM_JSON: {"schema": component_ref(Problem)}}
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    for schema in schemas.values():
        for field in schema.get("properties", {}).values():
            field.pop("title", None)  # pydantic's, from the alias: ``Playerid``
    return document


def install_openapi(app: FastAPI) -> None:
    """The document, built once, at ``app.openapi_url``: served by a route of the service's own in
    place of FastAPI's, so that it is rate limited like every public read (and refuses an unknown
    or repeated query parameter like every route)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    url = app.openapi_url
    if url is None:
        return
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != url]

    @app.get(url, include_in_schema=False)
    async def openapi_document(request: Request, limit: ReadLimitDep) -> JSONResponse:
        # The app from the request, not from this closure: FastAPI keeps endpoints in a
        # process-wide cache, which would keep every app made in the process (and its runtime).
        served: FastAPI = request.app
        return JSONResponse(served.openapi(), headers=limit)
