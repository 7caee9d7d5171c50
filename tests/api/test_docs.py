"""/docs works on a machine without internet: Swagger UI's page and every file it loads come from
the service itself, and the bundled Swagger UI renders the OpenAPI 3.1 document the service has."""

from __future__ import annotations

import gc
import re
import weakref

from app.bootstrap import Runtime
from app.settings import Settings
from tests.conftest import Service, serve


async def test_the_docs_page_loads_nothing_from_elsewhere(service: Service) -> None:
    page = await service.http.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    assert not re.search(r"(https?:)?//[a-z]", html, re.IGNORECASE), "a URL off the service"
    referenced = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)
    referenced += re.findall(r"""url: ?["']([^"']+)["']""", html)  # the document Swagger UI reads
    assert {
        "/docs/assets/swagger-ui-bundle.js",
        "/docs/assets/swagger-ui.css",
        "/openapi.json",
    } <= set(referenced)
    for url in referenced:
        response = await service.http.get(url)
        assert response.status_code == 200, url
        assert response.content, url


async def test_the_bundled_swagger_ui_renders_openapi_3_1(service: Service) -> None:
    document = (await service.http.get("/openapi.json")).json()
    assert document["openapi"].startswith("3.1.")
    bundle = await service.http.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.headers["content-type"].startswith(("text/javascript", "application/javascript"))
    # Swagger UI 4 refuses a 3.1 document ("does not specify a valid version field"); 5 has
    # a 3.1 layer, whose name is in its bundle.
    assert "OpenAPI31" in bundle.text or "isOAS31" in bundle.text
    assert (await service.http.get("/redoc")).status_code == 404  # no ReDoc: it would need a CDN


async def test_an_app_that_has_stopped_is_not_kept_by_the_process(
    settings: Settings, runtime: Runtime
) -> None:
    # FastAPI caches endpoints process-wide (up to 4,096): an endpoint closing over its app kept
    # every app a process had made, with its runtime's client and service model (2 GB in the
    # tests). /docs is the endpoint made per app. (The metrics' size gauges hold the last app's
    # state until another app starts: one, not every one.)
    async with serve(settings) as running:
        assert (await running.http.get("/docs")).status_code == 200
        app = weakref.ref(running.app)
    del running
    gc.collect()
    assert app() is None
