"""Smoke test of locustfile.py: the service on its embedded backend in a subprocess, locust in a
process of its own (gevent monkey-patches whatever imports it, so never this one), then locust's
CSV statistics. Loopback only; about 40 s.

What it shows: the locustfile submits and makes every kind of read against the real service, names
requests by route, records a refused request as a failure with the problem's reason, and raises
nothing of its own. What it does not: anything about performance (docs/load-testing.md).
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.served import ROOT, ServiceExited, clean_environment, serve

KEY = "load-smoke-test-key"

SCORES = "/v1/scores"
BATCH = "/v1/scores:batch"
TOP = "/v1/leaderboards/[game]/[variant]/[period]"
RANK = f"{TOP}/players/[playerId]"
AROUND = f"{RANK}/around"
STANDINGS = "/v1/players/[playerId]/standings"
NOT_ON_BOARD = " (404 not on board)"

# Every name the locustfile may use; anything else (a raw path, say) fails the test.
KNOWN_NAMES = {
    f"POST {SCORES}",
    f"POST {SCORES} (retry)",
    f"POST {BATCH}",
    f"POST {BATCH} (retry)",
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


SERVED = {
    "LEADERBOARD_DEV_API_KEY": KEY,
    # Locust's users keep their connections as a load balancer does, idle between rounds (every
    # 5 s, the keep-alive's default) and through a Retry-After: the service's keep-alive must
    # outlast that, as the setting asks of a load balancer's idle timeout (docs/configuration.md),
    # or a request now and then meets a connection the server closed under it.
    "LEADERBOARD_KEEP_ALIVE_SECONDS": "75",
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`leaderboard serve` on a free loopback port, its own embedded DynamoDB, a dev key."""
    directory = tmp_path_factory.mktemp("service")
    environment = clean_environment("LOCUST_") | SERVED
    try:
        with serve(directory, environment, ready_timeout_s=READY_TIMEOUT_S) as base_url:
            yield base_url
    except ServiceExited as exc:
        pytest.fail(str(exc))


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
        "--only-summary", "--csv", str(csv_prefix), "--json-file", str(csv_prefix),
        "--exit-code-on-error", "0", *user_classes,
    ]  # fmt: skip
    completed = subprocess.run(
        command,
        cwd=ROOT,
        env=clean_environment("LOCUST_") | extra_env,
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


def _final_requests(csv_prefix: Path) -> dict[str, int]:
    """Requests by "METHOD name" as of the end of the run (the CSVs are written every second, so
    their last lines may miss the run's last second; the JSON file is written once, at the end)."""
    entries = json.loads(Path(f"{csv_prefix}.json").read_text())
    return {f"{entry['method']} {entry['name']}": entry["num_requests"] for entry in entries}


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


def test_a_round_posted_in_batches_lands_whole(service: str, tmp_path: Path) -> None:
    """With LEADERBOARD_LOAD_BATCH_SIZE, a game server posts its round through the batch
    endpoint, in batches of that many, named by the route: every item lands."""
    prefix = tmp_path / "batches"
    output = _run_locust(
        service,
        prefix,
        seconds=10,  # a round's batches answered on a busy machine's embedded backend
        users=1,
        extra_env=SMALL_RUN | {"LEADERBOARD_API_KEY": KEY, "LEADERBOARD_LOAD_BATCH_SIZE": "4"},
        user_classes=("GameServer",),
    )
    _assert_locustfile_raised_nothing(prefix, output)
    requests = _final_requests(prefix)
    assert set(requests) <= KNOWN_NAMES, requests
    assert f"POST {SCORES}" not in requests
    assert requests.get(f"POST {BATCH}", 0) >= 3, requests  # a round's 10 in batches of 4, 4, 2
    assert _failures(prefix) == []


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


# More than the embedded backend serves (one call at a time): three game servers posting 40
# results at once every 5 s, and three readers.
OVERLOAD_RUN = SMALL_RUN | {
    "LEADERBOARD_LOAD_PLAYERS": "200",
    "LEADERBOARD_LOAD_ROUND_PLAYERS": "40",
    "LEADERBOARD_LOAD_BURST_CONCURRENCY": "40",
}
SHED = " (shed)"
OUTCOME = re.compile(r"outcome: shed \(503 overloaded, refused at once\): (\d+) ")


def test_overload_is_refused_at_once_by_name_and_nothing_waits_for_the_deadline(
    tmp_path: Path,
) -> None:
    """Past what the backend serves, the service refuses the excess at once (503 overloaded), the
    locustfile names those answers apart and waits as told, and no request waits until the
    deadline cuts it off (a queue the backend cannot serve: once, 43% of requests at 8 users)."""
    environment = clean_environment("LOCUST_") | SERVED
    with serve(tmp_path, environment, ready_timeout_s=READY_TIMEOUT_S) as base_url:
        prefix = tmp_path / "overload"
        output = _run_locust(
            base_url,
            prefix,
            seconds=15,
            users=6,
            extra_env=OVERLOAD_RUN | {"LEADERBOARD_API_KEY": KEY},
        )
    _assert_locustfile_raised_nothing(prefix, output)
    requests = _requests(prefix)
    shed = {name: counts for name, counts in requests.items() if name.endswith(SHED)}
    assert set(requests) <= KNOWN_NAMES | {name + SHED for name in KNOWN_NAMES}, requests
    assert shed.get(f"POST {SCORES}{SHED}", (0, 0))[0] > 0, f"nothing shed: {requests}"
    assert all(sent == failed for sent, failed in shed.values())  # a refusal is no answer
    # Every other request was answered: nothing reached the deadline, nothing else failed.
    failures = _failures(prefix)
    assert [r for r in failures if not r["Name"].endswith(SHED)] == [], failures
    assert all("Overloaded" in r["Error"] for r in failures), failures
    # The run's own summary counts the shed answers apart, as the final statistics do.
    counted = OUTCOME.search(output)
    assert counted is not None, output
    final = _final_requests(prefix)
    assert int(counted.group(1)) == sum(n for name, n in final.items() if name.endswith(SHED)), (
        counted,
        final,
    )
