"""The board viewer, at ``/``: a static page (``app/web/static``) whose script reads the public API
as any client would, served with its assets under ``/viewer`` (no CDN, no build step), each under
a strict Content-Security-Policy (this origin only, no inline script or style, no frames) and
``no-cache`` (a browser revalidates by ETag and sees a deploy at once).

One file is made here: ``words.json``, the words for how a board ranks and what its scores are,
from the enums that define them (``Order``, ``Operator``, ``ScoreFormat``), so the page holds none
of its own. It is a file of the page, not part of the API.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Scope

from app.domain.definitions import Operator, ScoreFormat
from app.domain.keys import Order

STATIC = Path(__file__).resolve().parent.parent / "web" / "static"
ASSETS = "/viewer"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


WORDS = f"{ASSETS}/words.json"
"""Where the page reads its words (``viewer_words``)."""


def viewer_words() -> dict[str, dict[str, str]]:
    """The words the page writes about a board, each by the value the API gives: ``order`` and
    ``operator`` (the line under the board's heading: "Lower is better · best score kept"),
    ``scoreName`` by operator (the score column's heading: "Total"), and ``scoreFormat`` (what the
    scores are: "A time, to the millisecond"). The domain's enums hold them; this only gathers
    them."""
    return {
        "order": {order.value: order.words for order in Order},
        "operator": {operator.value: operator.words for operator in Operator},
        "scoreName": {operator.value: operator.score_name for operator in Operator},
        "scoreFormat": {score_format.value: score_format.words for score_format in ScoreFormat},
    }


class _ViewerAssets(StaticFiles):
    """StaticFiles (ETag, Last-Modified, 304s, no directory listings) with the page's headers."""

    def file_response(
        self,
        full_path: str | os.PathLike[str],
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        response.headers.update(HEADERS)
        return response


def install_viewer(app: FastAPI) -> None:
    """``/`` and ``/viewer/*``. Left out of the OpenAPI document: a page, not part of the API."""
    # Read once: the page is a few kilobytes, and reading it per request would block the loop.
    page = (STATIC / "index.html").read_bytes()
    words = json.dumps(viewer_words(), ensure_ascii=False, separators=(",", ":")).encode()
    # Strong, and the same from every task of one version: the words change only with the code.
    words_etag = f'"{hashlib.sha256(words).hexdigest()[:32]}"'

    async def viewer_words_file(request: Request) -> Response:
        """``words.json`` as StaticFiles serves a file: no-cache, revalidated by its ETag (a 304
        with no body), the page's headers; a query string changes nothing."""
        headers = HEADERS | {"ETag": words_etag}
        if _names(request.headers.get("if-none-match", ""), words_etag):
            return Response(status_code=304, headers=headers)
        return Response(words, media_type="application/json", headers=headers)

    # Before the mount, which would otherwise take the path and answer 404 for a file it lacks.
    # A plain route, as the mount's files are: not the API's (StrictQueryRoute), nor in its document.
    app.add_route(WORDS, viewer_words_file, methods=["GET"], include_in_schema=False)
    app.mount(ASSETS, _ViewerAssets(directory=STATIC), name="viewer")

    @app.get("/", include_in_schema=False)
    async def viewer() -> HTMLResponse:
        return HTMLResponse(page, headers=HEADERS)


def _names(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (a weak tag as its strong one, as a GET
    compares them; ``*`` names any)."""
    tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
    return etag in tags or "*" in tags
