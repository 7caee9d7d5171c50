"""``leaderboard serve`` with no endpoint: moto as a child process, stopped on every kind of exit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.local.embedded import free_port


def _children(pid: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                children.append(int(entry))
    return children


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


def _wait_until(check: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}
    env["LEADERBOARD_DEV_API_KEY"] = "dev-key-for-this-test"
    # Not the user's own: a `leaderboard serve` they run meanwhile keeps its record.
    env["LEADERBOARD_STATE_FILE"] = str(tmp_path / "embedded.json")
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        assert _wait_until(ready), "the service did not become ready"
        yield process, base
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _moto_child(pid: int) -> int:
    children = _children(pid)
    assert len(children) == 1, children
    return children[0]


def test_serves_scores_on_the_embedded_backend_and_stops_it_on_ctrl_c(
    served: tuple[subprocess.Popen[bytes], str],
) -> None:
    process, base = served
    moto = _moto_child(process.pid)
    response = httpx.post(
        f"{base}/v1/scores",
        json={"playerId": "p1", "score": 5, "game": "g", "variant": "v"},
        headers={"Authorization": "Bearer dev-key-for-this-test", "Idempotency-Key": "k"},
    )
    assert response.status_code == 200, response.text
    board = httpx.get(f"{base}/v1/leaderboards/g/v/alltime").json()
    assert [e["playerId"] for e in board["entries"]] == ["p1"]
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0
    assert _wait_until(lambda: not _alive(moto), 10), "moto outlived the service"


def test_a_killed_service_takes_its_backend_with_it(
    served: tuple[subprocess.Popen[bytes], str],
) -> None:
    process, _ = served
    moto = _moto_child(process.pid)
    process.kill()
    process.wait()
    assert _wait_until(lambda: not _alive(moto), 10), "moto was orphaned"


def test_dev_key_is_refused_with_a_real_endpoint() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}
    env |= {
        "LEADERBOARD_DEV_API_KEY": "x",
        "LEADERBOARD_DYNAMODB_ENDPOINT": "http://127.0.0.1:9",
    }
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "LEADERBOARD_DEV_API_KEY is accepted only with the embedded backend" in result.stderr
