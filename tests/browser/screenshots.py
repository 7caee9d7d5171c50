"""Write the screenshots of the board viewer in docs/viewer.md, docs/viewer-desktop.png and
docs/viewer-phone.png, from `leaderboard serve --demo` with its default settings:

    python3 tools/uv.py run --frozen --all-groups python -m tests.browser.screenshots

The browser tests take the same two screenshots (into a temporary directory) on every run.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx

from tests.browser.harness import chromium, demo_service, take_screenshots
from tests.served import ROOT


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch, demo_service(Path(scratch), {}) as base_url:
        top = httpx.get(f"{base_url}/v1/leaderboards/trivia/alltopics/alltime", trust_env=False)
        player = top.json()["entries"][5]["playerId"]  # one on the first page: lit in both tables
        with chromium() as (_, browser):
            for path in take_screenshots(browser, base_url, ROOT / "docs", player=player):
                print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
