"""What the browser tests and the screenshot script share: `leaderboard serve --demo` in a
subprocess on a free loopback port, Debian's Chromium under Playwright (never a browser Playwright
downloads), and the two screenshots.

Chromium is Debian's package at ``/usr/bin/chromium`` (``apt-get install -y chromium``; ``.ci/run``
installs it). Without it the tests fail, saying so, rather than skip: CI has it, and a skipped
browser suite would let the page break unseen.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, Playwright, ViewportSize, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
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


class ServiceExited(RuntimeError):
    """The service stopped before it was ready; the message ends with its log's tail."""


def clean_environment() -> dict[str, str]:
    """This process's environment without the service's settings, so the service started here
    picks up no configuration meant for another one."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _wait_ready(process: subprocess.Popen[bytes], base_url: str, log: Path) -> bool:
    """True once /healthz and then /readyz (the demo boards full) answer 200; False if the
    service exited first."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    # trust_env=False: a proxy from the environment must not sit between us and loopback.
    with httpx.Client(base_url=base_url, timeout=2.0, trust_env=False) as http:
        for path in ("/healthz", "/readyz"):
            while True:
                if process.poll() is not None:
                    return False
                try:
                    if http.get(path).status_code == 200:
                        break
                except httpx.TransportError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise ServiceExited(
                        f"{path} was not 200 within {READY_TIMEOUT_S:g} s:\n{_tail(log)}"
                    )
                time.sleep(0.2)
    return True


def _stop(process: subprocess.Popen[bytes]) -> None:
    # The service stops its moto child on SIGTERM; after a kill the kernel signals the child.
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


@contextmanager
def demo_service(directory: Path, settings: Mapping[str, str]) -> Iterator[str]:
    """`leaderboard serve --demo` on 127.0.0.1 with these ``LEADERBOARD_*`` settings; its URL
    once ready."""
    environment = clean_environment() | {
        # Not the user's own: a `leaderboard serve` they run meanwhile keeps its record.
        "LEADERBOARD_STATE_FILE": str(directory / "embedded.json"),
        **settings,
    }
    for attempt in range(1, 4):
        # The probe frees its port before the service binds it, and other suites on this machine
        # take ports too: if another process got there first, try another port.
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}"
        log = directory / f"service-{attempt}.log"
        command = [sys.executable, "-m", "app.cli", "serve", "--demo", "--host", "127.0.0.1"]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*command, "--port", str(port)],
                cwd=ROOT,
                env=environment,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            if _wait_ready(process, base_url, log):
                yield base_url
                return
        finally:
            _stop(process)
        if "address already in use" not in log.read_text(errors="replace").lower():
            raise ServiceExited(f"the service exited ({process.returncode}):\n{_tail(log)}")
    raise ServiceExited("the service found no free port in 3 tries")


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
