"""The API's documentation page, Swagger UI at ``/docs``, served whole by the service.

FastAPI's own page loads Swagger UI from a CDN, so it is blank on a machine without internet;
this one serves the files of a packaged Swagger UI (``swagger-ui-bundle-v2``, 5.x, which renders
OpenAPI 3.1) under ``/docs/assets`` (docs/decisions/0004-swagger-ui-served-by-the-service.md).
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

DOCS = "/docs"
ASSETS = "/docs/assets"


def install_docs(app: FastAPI) -> None:
    """``/docs`` and its assets; the app must be made with ``docs_url=None``."""
    app.mount(ASSETS, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.get(DOCS, include_in_schema=False)
    async def docs(request: Request) -> HTMLResponse:
        # The app from the request, not from this closure: FastAPI keeps endpoints in a
        # process-wide cache, which would keep every app made in the process (and its runtime).
        served: FastAPI = request.app
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return get_swagger_ui_html(
            openapi_url=root + str(served.openapi_url),
            title=f"{served.title}: the HTTP API",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon-32x32.png",
            oauth2_redirect_url=None,
        )
