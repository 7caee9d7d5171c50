"""The board viewer's files as the service serves them: the page at ``/`` and its assets from the
package, under a strict Content-Security-Policy, revalidated on each load, nothing from elsewhere,
no inline script or style; and the page is no part of the API's document. (What the page does in a
browser: tests/browser/.)"""

from __future__ import annotations

import re

from app.api.viewer import CONTENT_SECURITY_POLICY, STATIC, WORDS, viewer_words
from tests.conftest import Service


def _referenced(html: str) -> list[str]:
    return re.findall(r"""(?:src|href)=["']([^"']+)["']""", html)


async def test_the_page_is_served_at_the_root_with_a_strict_policy(service: Service) -> None:
    page = await service.http.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.text == (STATIC / "index.html").read_text()
    policy = page.headers["content-security-policy"]
    assert policy == CONTENT_SECURITY_POLICY
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'none'"
    for directive in ("script-src", "style-src", "connect-src", "img-src"):
        assert directives[directive] == "'self'", directive  # no 'unsafe-inline', no other host
    assert directives["frame-ancestors"] == "'none'"
    assert page.headers["cache-control"] == "no-cache"
    assert page.headers["x-content-type-options"] == "nosniff"


async def test_the_page_has_no_inline_script_or_style_and_nothing_from_elsewhere(
    service: Service,
) -> None:
    html = (await service.http.get("/")).text
    assert not re.search(r"(https?:)?//[a-z]", html, re.IGNORECASE), "a URL off the service"
    assert not re.search(r"<script(?![^>]*\bsrc=)", html), "an inline script"
    assert "<style" not in html
    assert not re.search(r"\sstyle=", html)
    assert not re.search(r"\son[a-z]+=", html), "an inline event handler"
    for name in ("viewer.js", "viewer.css"):
        text = (STATIC / name).read_text()
        assert not re.search(r"https?://", text), f"{name} names another origin"
    assert (
        "innerHTML" not in (STATIC / "viewer.js").read_text()
    )  # names and ids are text, never markup


async def test_every_asset_the_page_names_is_served_and_revalidated(service: Service) -> None:
    html = (await service.http.get("/")).text
    referenced = _referenced(html)
    assert {"/viewer/viewer.js", "/viewer/viewer.css", "/viewer/icon.svg", "/docs"} <= set(
        referenced
    )
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    for url in referenced:
        if not url.startswith("/viewer/"):
            continue
        asset = await service.http.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"].startswith(types[url[url.rindex(".") :]]), url
        assert asset.headers["cache-control"] == "no-cache", url
        assert asset.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, url
        again = await service.http.get(url, headers={"If-None-Match": asset.headers["etag"]})
        assert again.status_code == 304, url


async def test_the_words_are_a_file_of_the_page_served_as_the_others_are(
    service: Service,
) -> None:
    """The words the page writes about a board (tests/unit/test_viewer_words.py) are served under
    /viewer with the headers of every file there, revalidated by their ETag, and a query string
    changes nothing, as for the files of app/web/static."""
    words = await service.http.get(WORDS)
    assert words.status_code == 200
    assert words.headers["content-type"] == "application/json"
    assert words.json() == viewer_words()
    script = await service.http.get("/viewer/viewer.js")
    for header in ("cache-control", "content-security-policy", "x-content-type-options"):
        assert words.headers[header] == script.headers[header], header
    assert words.headers["referrer-policy"] == "no-referrer"
    again = await service.http.get(WORDS, headers={"If-None-Match": words.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == words.headers["etag"]
    assert again.headers["cache-control"] == "no-cache"
    other = await service.http.get(WORDS, headers={"If-None-Match": '"not-these-words"'})
    assert other.status_code == 200
    assert (await service.http.get(f"{WORDS}?v=2")).content == words.content


async def test_an_unknown_asset_is_a_404_problem_and_no_directory_is_listed(
    service: Service,
) -> None:
    for path in ("/viewer/missing.js", "/viewer/", "/viewer/../settings.py"):
        response = await service.http.get(path)
        assert response.status_code == 404, path
        assert response.headers["content-type"] == "application/problem+json", path


async def test_the_page_is_not_in_the_api_document(service: Service) -> None:
    document = (await service.http.get("/openapi.json")).json()
    assert "/" not in document["paths"]
    assert not any(path.startswith("/viewer") for path in document["paths"])
    assert "/v1/boards" in document["paths"]
