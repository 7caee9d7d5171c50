"""The API's documentation page, Swagger UI at ``/docs``, served whole by the service.

FastAPI's own page loads Swagger UI from a CDN, so it is blank on a machine without internet;
this one serves the files of a packaged Swagger UI (``swagger-ui-bundle-v2``, 5.x, which renders
OpenAPI 3.1) under ``/docs/assets`` (docs/decisions/0004-swagger-ui-served-by-the-service.md).
The page is rate limited like the public reads, and sent with a Content-Security-Policy that lets
it run and nothing else, and that no other site may frame.
"""

from __future__ import annotations

import base64
import hashlib
import re

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

from app.api.deps import ReadLimitDep

DOCS = "/docs"
ASSETS = "/docs/assets"

_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)


def content_security_policy(page: bytes) -> str:
    """The page's policy: Swagger UI's files and requests from this origin only, its one inline
    script (the one that starts it, which names the document's URL) by its hash, no frames
    around it. Images may be ``data:`` URLs: Swagger UI's stylesheet draws its icons so. (Swagger
    UI renders, and tries a request, under it in Chromium with no violation reported.)"""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(page)
    )
    return (
        f"default-src 'none'; script-src 'self' {hashes}; style-src 'self'; "
        "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


def install_docs(app: FastAPI) -> None:
    """``/docs`` and its assets; the app must be made with ``docs_url=None``."""
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get(DOCS, include_in_schema=False)
    async def docs(request: Request, limit: ReadLimitDep) -> HTMLResponse:
        # The app from the request, not from this closure: FastAPI keeps endpoints in a
        # process-wide cache, which would keep every app made in the process (and its runtime).
        served: FastAPI = request.app
        root = str(request.scope.get("root_path", "")).rstrip("/")
        page = get_swagger_ui_html(
            openapi_url=root + str(served.openapi_url),
            title=f"{served.title}: the HTTP API",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon-32x32.png",
            oauth2_redirect_url=None,
        )
        page.headers.update(
            {
                **limit,
                "Content-Security-Policy": content_security_policy(bytes(page.body)),
                "X-Frame-Options": "DENY",
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            }
        )
        return page
