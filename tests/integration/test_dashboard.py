"""The observe profile's dashboard against a real Prometheus: `promtool check config` on the scrape
configuration compose mounts, the Grafana dashboard as `tools/grafana_dashboard.py` writes it and
pointed at the data source compose provisions, and every one of its panels' queries run through
Prometheus's HTTP API while it scrapes `leaderboard serve` under a short load: each returns a
series.

Prometheus is Debian's package (``apt-get install -y prometheus``, which ``.ci/run`` does when it
is missing). Without it these tests fail, saying so, rather than skip: Grafana is on no registry
our machines reach, so this is the only check its queries get.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from app.local.embedded import free_port, stop_process
from tests.served import ROOT, ServiceExited, clean_environment, serve
from tools import grafana_dashboard

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
MISSING = (
    "Prometheus is not installed: install Debian's package (apt-get install -y prometheus), as "
    ".ci/run does"
)
KEY = "dashboard-test-key"
SCRAPE_S = 1
RATE_WINDOW = "30s"
"""What the test puts for Grafana's ``$__rate_interval``: many scrapes, all of this run's."""


def test_the_scrape_configuration_is_valid_for_promtool() -> None:
    assert PROMTOOL is not None, MISSING
    checked = subprocess.run(
        [PROMTOOL, "check", "config", str(ROOT / "docker/prometheus/prometheus.yml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_dashboard_is_the_generated_one_on_the_provisioned_data_source() -> None:
    committed = (ROOT / "docker/grafana/dashboards/leaderboard.json").read_text()
    assert committed == grafana_dashboard.render(), (
        "run python -m tools.grafana_dashboard --write docker/grafana/dashboards/leaderboard.json"
    )
    provisioned = (ROOT / "docker/grafana/provisioning/datasources/prometheus.yml").read_text()
    uids = set(re.findall(r"^\s+uid: (\S+)$", provisioned, re.MULTILINE))
    assert uids == {grafana_dashboard.DATASOURCE["uid"]}
    board = json.loads(committed)
    assert board["panels"], "a dashboard with no panel"
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] in uids
        assert panel["targets"], panel["title"]
        assert all(target["datasource"]["uid"] in uids for target in panel["targets"])
    assert len({p["title"] for p in board["panels"]}) == len(board["panels"])


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("service")
    environment = clean_environment() | {"LEADERBOARD_DEV_API_KEY": KEY}
    try:
        with serve(directory, environment, ready_timeout_s=60.0) as base_url:
            yield base_url
    except ServiceExited as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def prometheus(service: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Prometheus scraping ``service`` every second, on a free loopback port; its URL."""
    assert PROMETHEUS is not None, MISSING
    directory = tmp_path_factory.mktemp("prometheus")
    # compose's configuration, scraping this service every second.
    config = (ROOT / "docker/prometheus/prometheus.yml").read_text()
    for old, new in (
        ("scrape_interval: 5s", f"scrape_interval: {SCRAPE_S}s"),
        ("evaluation_interval: 5s", f"evaluation_interval: {SCRAPE_S}s"),
        ('targets: ["leaderboard:8000"]', f'targets: ["{service.removeprefix("http://")}"]'),
    ):
        assert old in config, f"docker/prometheus/prometheus.yml no longer says {old}"
        config = config.replace(old, new)
    (directory / "prometheus.yml").write_text(config)
    port = free_port()
    log = directory / "prometheus.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        with httpx.Client(base_url=url, timeout=2.0, trust_env=False) as http:
            while True:
                try:
                    if http.get("/-/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.poll() is None, log.read_text(errors="replace")[-2000:]
                assert time.monotonic() < deadline, "Prometheus was not ready within 30 s"
                time.sleep(0.2)
        yield url
    finally:
        stop_process(process, grace_s=10)


def _load(service: str) -> None:
    """A little of everything a game server and players do, and a request nobody serves."""
    headers = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=service, timeout=10.0, trust_env=False) as http:
        for i in range(12):
            body = {"playerId": f"p{i % 6}", "score": 100 + i, "game": "trivia", "variant": "dash"}
            key = {"Idempotency-Key": f"dashboard-{i}"}
            assert http.post("/v1/scores", json=body, headers=headers | key).status_code == 200
            http.post("/v1/scores", json=body, headers=headers | key)  # a replay
            board = "/v1/leaderboards/trivia/dash/alltime"
            assert http.get(board).status_code == 200
            assert http.get(f"{board}/players/p{i % 6}").status_code == 200
            assert http.get(f"{board}/players/p{i % 6}/around").status_code == 200
            assert http.get("/no/such/route").status_code == 404
            time.sleep(0.25)


def _query(prometheus: str, expr: str) -> list[dict[str, Any]]:
    with httpx.Client(base_url=prometheus, timeout=10.0, trust_env=False) as http:
        answer = http.get("/api/v1/query", params={"query": expr}).json()
    assert answer["status"] == "success", (expr, answer)
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


def test_every_panel_of_the_dashboard_returns_a_series(service: str, prometheus: str) -> None:
    _load(service)
    # Enough scrapes after the load for a rate over them: the last samples show it.
    deadline = time.monotonic() + 60
    while True:
        scraped = _query(prometheus, 'count_over_time(up{job="leaderboard"}[1m])')
        if scraped and float(scraped[0]["value"][1]) >= 5:
            break
        assert time.monotonic() < deadline, f"Prometheus scraped too little: {scraped}"
        time.sleep(SCRAPE_S)
    assert _query(prometheus, 'up{job="leaderboard"}')[0]["value"][1] == "1"
    board = json.loads((ROOT / "docker/grafana/dashboards/leaderboard.json").read_text())
    empty = []
    for panel in board["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", RATE_WINDOW)
            if not _query(prometheus, expr):
                empty.append(f"{panel['title']}: {expr}")
    assert not empty, "panels whose query returned no series:\n" + "\n".join(empty)
    # And the load shows where it should: submissions written and replayed, exact ranks.
    outcomes = {
        r["metric"]["outcome"]: float(r["value"][1])
        for r in _query(prometheus, "leaderboard_submissions_total")
    }
    assert outcomes["written"] >= 12
    assert outcomes["replayed"] >= 12
    exact = _query(prometheus, 'leaderboard_rank_answers_total{kind="exact"}')
    assert float(exact[0]["value"][1]) >= 12
