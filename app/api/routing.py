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
    """The route checks the query itself, before FastAPI solves any of its dependencies, so it is
    the first refusal a request meets; and a request with no query costs one test of its query
    string, where an app-wide dependency would be solved on every request of every route
    (decision 0023).

    Every router of the service is made with ``route_class=StrictQueryRoute``, and so is the
    app's own (``app.router.route_class``). ``tests/api/test_bad_input.py`` sends every operation
    of the OpenAPI document, the viewer page and ``/docs`` an unknown parameter; a route left out
    of the schema would need adding there.

    The names known are the route's own and its router's dependencies' (``self.dependant``).
    FastAPI adds the dependencies given to ``include_router`` or to ``FastAPI(...)`` to an
    included route's handler only: the service gives none, and one that read a query parameter
    would see that parameter refused here until it is added to ``known``."""

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
