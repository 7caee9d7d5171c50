"""What the browser tests and the screenshot script share: `leaderboard serve --demo` in a
subprocess on a free loopback port (``tests.served``), Debian's Chromium under Playwright (never a browser Playwright
downloads), and the two screenshots.

Chromium is Debian's package at ``/usr/bin/chromium`` (``apt-get install -y chromium``; ``.ci/run``
installs it). Without it the tests fail, saying so, rather than skip: CI has it, and a skipped
browser suite would let the page break unseen.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, Playwright, ViewportSize, sync_playwright

from tests.served import clean_environment, serve

KEY = "browser-test-key"
SETTINGS = {
    "LEADERBOARD_DEV_API_KEY": KEY,
    "LEADERBOARD_RANK_COUNT_CAP": "1",
    "LEADERBOARD_BOARD_LIST_CACHE_SECONDS": "0",
    # The test and the page poll from one address: no 429 unless a test injects one.
    "LEADERBOARD_READ_RATE_PER_SECOND": "10000",
    "LEADERBOARD_READ_BURST": "10000",
}


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_MISSING = (
    f"Chromium is not at {CHROMIUM}: install Debian's package (apt-get install -y chromium), as "
    ".ci/run does; the browser tests never download a browser"
)
# No first-run work, no update checks, no sync, no phoning home: the browser talks to the
# service on loopback and to nothing else. Playwright adds --headless and a fresh temporary
# profile (--user-data-dir) of its own to every launch, removed when the browser closes.
CHROMIUM_ARGS = [
    "--no-sandbox",  # root in a container: Chromium's sandbox needs user namespaces it lacks
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
]

DESKTOP = ViewportSize(width=1280, height=900)
PHONE = ViewportSize(width=390, height=844)  # a common phone's CSS pixels

READY_TIMEOUT_S = 60.0  # the service, its moto child, the ten demo boards: 15-25 s on 2 busy cores


@contextmanager
def demo_service(directory: Path, settings: Mapping[str, str]) -> Iterator[str]:
    """`leaderboard serve --demo` on 127.0.0.1 with these ``LEADERBOARD_*`` settings; its URL
    once ready (the demo boards full)."""
    environment = clean_environment() | {
        # Not the user's own: a `leaderboard serve` they run meanwhile keeps its record.
        "LEADERBOARD_STATE_FILE": str(directory / "embedded.json"),
        **settings,
    }
    with serve(directory, environment, "--demo", ready_timeout_s=READY_TIMEOUT_S) as base_url:
        yield base_url


@contextmanager
def chromium() -> Iterator[tuple[Playwright, Browser]]:
    """Debian's Chromium, headless, under Playwright's sync API."""
    if not CHROMIUM.exists():
        raise FileNotFoundError(CHROMIUM_MISSING)
    with tempfile.TemporaryDirectory(prefix="no-playwright-browsers-") as empty:
        # An empty browsers directory: Playwright can find no browser of its own, so the one
        # it runs is the executable named below; and it is told never to fetch one.
        saved = {
            k: os.environ.get(k)
            for k in ("PLAYWRIGHT_BROWSERS_PATH", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD")
        }
        os.environ["PLAYWRIGHT_BROWSERS_PATH"] = empty
        os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
                )
                try:
                    yield playwright, browser
                finally:
                    browser.close()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def wait_for_rows(page: Page) -> None:
    page.wait_for_selector("#top tbody tr", timeout=15_000)


def take_screenshots(
    browser: Browser, base_url: str, directory: Path, *, player: str
) -> list[Path]:
    """The page at desktop and phone width, the player open: ``viewer-desktop.png`` and
    ``viewer-phone.png`` in ``directory``."""
    written = []
    for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
        context = browser.new_context(viewport=viewport, device_scale_factor=1, locale="en-GB")
        try:
            page = context.new_page()
            page.goto(f"{base_url}/#game=trivia&variant=alltopics&period=alltime&player={player}")
            wait_for_rows(page)
            page.wait_for_selector("#around tbody tr", timeout=15_000)
            path = directory / f"viewer-{name}.png"
            # The desktop page whole (the board down to its pages); the phone's first screen.
            page.screenshot(path=str(path), full_page=name == "desktop")
            written.append(path)
        finally:
            context.close()
    return written
