"""The service's route class: an API route refuses a query parameter it does not declare, so that
a typo (``?limt=5``) is a 422, like an unknown body field, not a silent fall back to a default;
and one named twice (``?limit=5&limit=50``), of which FastAPI would silently take the last.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from app.errors import InvalidInput

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class StrictQueryRoute(APIRoute):
    """The route checks the query itself, before FastAPI solves any dependency: the first refusal
    a request meets, and one test of the query string for a request without one (decision 0023).
    Every router of the service, and the app's own, is made with it; ``tests/api/
    test_bad_input.py`` sends every documented operation, the viewer and ``/docs`` an unknown
    parameter. The names known are the route's own and its router's dependencies'
    (``self.dependant``): a dependency given to ``include_router`` or ``FastAPI(...)`` that read
    a query parameter would see it refused here until added to ``known``."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        known = frozenset(query_names(self.dependant))

        async def checked(request: Request) -> Response:
            if request.scope.get("query_string"):
                refuse_unknown(request.query_params.keys(), known)
                refuse_repeated(request.query_params.multi_items())
            return await handler(request)

        return checked


def query_names(dependant: Dependant) -> set[str]:
    """The query parameters a route declares, its dependencies' included."""
    names = {param.alias for param in dependant.query_params}
    for inner in dependant.dependencies:
        names |= query_names(inner)
    return names


def refuse_unknown(given: Iterable[str], known: frozenset[str]) -> None:
    unknown = sorted(set(given) - known)
    if unknown:
        raise InvalidInput(
            f"unknown query parameters: {', '.join(unknown)}",
            errors=[{"field": name, "message": "unknown"} for name in unknown],
        )


def refuse_repeated(given: Iterable[tuple[str, str]]) -> None:
    """No route of the service takes a list in its query: a name given twice is a mistake (or a
    probe for which of the two wins), never a list."""
    counts = Counter(name for name, _ in given)
    repeated = sorted(name for name, count in counts.items() if count > 1)
    if repeated:
        raise InvalidInput(
            f"query parameters named more than once: {', '.join(repeated)}; name each once",
            errors=[{"field": name, "message": "named more than once"} for name in repeated],
        )
