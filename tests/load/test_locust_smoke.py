"""Smoke test of locustfile.py: the service on its embedded backend in a subprocess, locust in a
process of its own (gevent monkey-patches whatever imports it, so never this one), then locust's
CSV statistics. Loopback only; about 25 s.

What it shows: the locustfile submits and makes every kind of read against the real service, names
requests by route, records a refused request as a failure with the problem's reason, and raises
nothing of its own. What it does not: anything about performance (docs/load-testing.md).
"""

from __future__ import annotations

import csv
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "load-smoke-test-key"

SCORES = "/v1/scores"
TOP = "/v1/leaderboards/[game]/[variant]/[period]"
RANK = f"{TOP}/players/[playerId]"
AROUND = f"{RANK}/around"
STANDINGS = "/v1/players/[playerId]/standings"
NOT_ON_BOARD = " (404 not on board)"

# Every name the locustfile may use; anything else (a raw path, say) fails the test.
KNOWN_NAMES = {
    f"POST {SCORES}",
    f"POST {SCORES} (retry)",
    f"GET {TOP}",
    f"GET {TOP} (next page)",
    f"GET {RANK}",
    f"GET {RANK}{NOT_ON_BOARD}",
    f"GET {AROUND}",
    f"GET {AROUND}{NOT_ON_BOARD}",
    f"GET {STANDINGS}",
}

# Small enough for the embedded backend (one DynamoDB call at a time, 10-50 ms each): one game
# server posting 10 results, 5 at a time, every 5 s, and three readers, over a pool of 40 players
# so that most readers find themselves on the board.
SMALL_RUN = {
    "LEADERBOARD_LOAD_PLAYERS": "40",
    "LEADERBOARD_LOAD_ROUND_PLAYERS": "10",
    "LEADERBOARD_LOAD_ROUND_SECONDS": "5",
    "LEADERBOARD_LOAD_BURST_CONCURRENCY": "5",
}

READY_TIMEOUT_S = 60.0  # the service and its moto child start in about 4 s on an idle machine
LOCUST_TIMEOUT_S = 90.0  # for a 15 s run


def _clean_environment() -> dict[str, str]:
    """This process's environment without the service's settings or locust's options, so neither
    the service nor locust picks up a configuration meant for something else."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("LEADERBOARD_", "LOCUST_"))
    }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _ready(process: subprocess.Popen[bytes], base_url: str, log: Path) -> bool:
    """True once /healthz and then /readyz answer 200; False if the service exited first."""
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
                    pytest.fail(
                        f"{path} did not answer 200 within {READY_TIMEOUT_S:g} s:\n{_tail(log)}"
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


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`leaderboard serve` on a free loopback port, its own embedded DynamoDB, a dev key."""
    directory = tmp_path_factory.mktemp("service")
    environment = _clean_environment() | {"LEADERBOARD_DEV_API_KEY": KEY}
    for attempt in range(1, 4):
        # The probe frees its port before the service binds it, and other suites on this machine
        # take ports too: if another process got there first, try another port.
        port = _free_port()
        base_url = f"http://127.0.0.1:{port}"
        log = directory / f"service-{attempt}.log"
        command = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1"]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*command, "--port", str(port)],
                cwd=ROOT,
                env=environment,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            if _ready(process, base_url, log):
                yield base_url
                return
        finally:
            _stop(process)
        if "address already in use" not in log.read_text(errors="replace").lower():
            pytest.fail(
                f"the service exited ({process.returncode}) before it was ready:\n{_tail(log)}"
            )
    pytest.fail("the service found no free port in 3 tries")


def _run_locust(
    base_url: str,
    csv_prefix: Path,
    *,
    seconds: int,
    users: int,
    extra_env: dict[str, str],
    user_classes: tuple[str, ...] = (),
) -> str:
    """A headless run; its console output. The exit code is kept 0 on failures: the CSVs judge."""
    command = [
        sys.executable, "-m", "locust", "-f", str(ROOT / "locustfile.py"), "--headless",
        "-u", str(users), "-r", str(users), "-t", f"{seconds}s", "--host", base_url,
        "--only-summary", "--csv", str(csv_prefix), "--exit-code-on-error", "0", *user_classes,
    ]  # fmt: skip
    completed = subprocess.run(
        command,
        cwd=ROOT,
        env=_clean_environment() | extra_env,
        capture_output=True,
        text=True,
        timeout=LOCUST_TIMEOUT_S,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    return output


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _requests(csv_prefix: Path) -> dict[str, tuple[int, int]]:
    """(requests, failures) by "METHOD name", without the aggregate row."""
    return {
        f"{row['Type']} {row['Name']}": (int(row["Request Count"]), int(row["Failure Count"]))
        for row in _rows(Path(f"{csv_prefix}_stats.csv"))
        if row["Name"] != "Aggregated"
    }


def _failures(csv_prefix: Path) -> list[dict[str, str]]:
    return _rows(Path(f"{csv_prefix}_failures.csv"))


def _assert_locustfile_raised_nothing(csv_prefix: Path, output: str) -> None:
    # A bug in the locustfile is an exception (its own CSV) or a logged traceback, not a failure.
    exceptions = _rows(Path(f"{csv_prefix}_exceptions.csv"))
    assert exceptions == [], exceptions
    assert "Traceback" not in output, output


# A failure's reason: the status and the problem's title (and detail), or why there was no answer.
REASON = re.compile(r"""CatchResponseError\((['"])(\d{3} \S.*|no response.*)\1\)""")


def test_a_small_run_submits_and_reads_without_failures(service: str, tmp_path: Path) -> None:
    prefix = tmp_path / "run"
    output = _run_locust(
        service, prefix, seconds=15, users=4, extra_env=SMALL_RUN | {"LEADERBOARD_API_KEY": KEY}
    )

    _assert_locustfile_raised_nothing(prefix, output)
    requests = _requests(prefix)
    assert set(requests) <= KNOWN_NAMES, f"names that are not route templates: {requests}"
    for name in (
        f"POST {SCORES}",
        f"GET {TOP}",
        f"GET {RANK}",
        f"GET {AROUND}",
        f"GET {STANDINGS}",
    ):
        assert requests.get(name, (0, 0))[0] > 0, f"no {name} in {requests}\n{output}"

    failures = _failures(prefix)
    # Every row that counts failures has its reasons in the failures CSV, and each reads as one.
    with_failures = {name for name, (_, count) in requests.items() if count}
    assert with_failures == {f"{row['Method']} {row['Name']}" for row in failures}
    for row in failures:
        assert REASON.fullmatch(row["Error"]), row
    # None is expected: one game server posts distinct players per round, so nothing contends; the
    # readers stay far below the read limit; a 404 for a player not yet on a board is a success.
    assert failures == [], "\n".join(
        f"{r['Occurrences']} x {r['Name']}: {r['Error']}" for r in failures
    )


def test_a_refused_submission_is_a_failure_with_the_problems_reason(
    service: str, tmp_path: Path
) -> None:
    prefix = tmp_path / "refused"
    output = _run_locust(
        service,
        prefix,
        seconds=3,
        users=1,
        extra_env=SMALL_RUN | {"LEADERBOARD_API_KEY": "not-a-key-this-service-knows"},
        user_classes=("GameServer",),
    )

    _assert_locustfile_raised_nothing(prefix, output)
    requests = _requests(prefix)
    # A 401 is not retried (resending cannot help), and every submission of the round failed.
    assert set(requests) == {f"POST {SCORES}"}, requests
    sent, failed = requests[f"POST {SCORES}"]
    assert sent >= int(SMALL_RUN["LEADERBOARD_LOAD_ROUND_PLAYERS"])
    assert failed == sent
    failures = _failures(prefix)
    assert [row["Name"] for row in failures] == [SCORES], failures
    # The status, then the problem document's title and detail: "401 Unauthorized: <why>".
    assert re.fullmatch(r"CatchResponseError\('401 [^:]+: \S.*'\)", failures[0]["Error"]), failures
