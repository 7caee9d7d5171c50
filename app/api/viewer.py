"""The board viewer, at ``/``: a static page (``app/web/static``) whose script reads the public API
as any client would, served by the service itself with its assets under ``/viewer``: nothing from
a CDN, no build step.

Every response carries a strict Content-Security-Policy (scripts, styles and requests to this
origin only, no inline script or style, no frames), so a display name cannot become markup that
runs. Nothing is fingerprinted, so each file is ``no-cache``: a browser revalidates it (a 304 for
the assets, by their ETag) and sees a new version the moment it is deployed.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response
from starlette.types import Scope

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
    app.mount(ASSETS, _ViewerAssets(directory=STATIC), name="viewer")

    @app.get("/", include_in_schema=False)
    async def viewer() -> HTMLResponse:
        return HTMLResponse(page, headers=HEADERS)
