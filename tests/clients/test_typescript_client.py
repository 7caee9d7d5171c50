"""The TypeScript client: installed from its lock, its generated types current with the committed
OpenAPI document, its own tests passing, packed into an installable tarball, and its example game
server posting a round and reading the top of a running service."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.served import clean_environment, serve

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "typescript"
KEY = "ts-client-test-key"
NPM, NODE = shutil.which("npm"), shutil.which("node")


def _npm(*args: str) -> str:
    assert NPM is not None
    ran = subprocess.run(
        [NPM, *args],
        cwd=CLIENT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, f"npm {' '.join(args)}:\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    return ran.stdout


@pytest.fixture(scope="module")
def built() -> Path:
    if NPM is None or NODE is None:
        pytest.skip("no npm on this machine: the TypeScript client needs Node 20 or later")
    _npm("ci", "--no-audit", "--no-fund", "--loglevel=error")
    # The committed types are what the document generates now (a contract change regenerates).
    _npm(
        "exec",
        "--",
        "openapi-typescript",
        "../../docs/openapi.json",
        "--default-non-nullable",
        "false",
        "--output",
        "src/schema.d.ts",
        "--check",
    )
    _npm("test")  # builds, then the retry tests against a fake fetch
    return CLIENT / "dist"


def test_the_package_packs_into_an_installable_tarball(built: Path, tmp_path: Path) -> None:
    _npm("pack", "--pack-destination", str(tmp_path))
    (tarball,) = tmp_path.glob("*.tgz")
    with tarfile.open(tarball) as packed:
        names = set(packed.getnames())
    assert {"package/dist/src/index.js", "package/dist/src/index.d.ts"} <= names
    assert "package/package.json" in names
    assert not any("/test/" in name or "node_modules" in name for name in names)


def test_the_example_game_server_posts_a_round_and_reads_the_top(
    built: Path, tmp_path: Path
) -> None:
    environment = clean_environment() | {"LEADERBOARD_DEV_API_KEY": KEY}
    with serve(tmp_path, environment, ready_timeout_s=90) as base_url:
        lines = _game_server(built, base_url)
        assert lines[:3] == [
            "posted ada: best 8750 on trivia#ts#alltime",
            "posted grace: best 9120 on trivia#ts#alltime",
            "posted alan: best 7300 on trivia#ts#alltime",
        ]
        assert lines[3:6] == ["1. Grace 9120 (fox)", "2. Ada 8750 (owl)", "3. Alan 7300 (cat)"]
        assert lines[6] == "ada is rank 2"
        # Run again: the same players, new submissions, the same board.
        assert _game_server(built, base_url)[3:6] == lines[3:6]


def _game_server(built: Path, base_url: str) -> list[str]:
    """The example game server's output against the service at ``base_url``."""
    assert NODE is not None
    settings = {
        "LEADERBOARD_URL": base_url,
        "LEADERBOARD_API_KEY": KEY,
        "LEADERBOARD_VARIANT": "ts",
    }
    ran = subprocess.run(
        [NODE, str(built / "examples" / "game-server.js")],
        env=clean_environment() | settings,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    return ran.stdout.splitlines()
