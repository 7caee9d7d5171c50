"""The list settings in the form the CLI takes (``alltime,day``) and as JSON; every wrong setting
named in one error, a value that is not JSON among them; and a ``LEADERBOARD_`` variable that is
no setting warned of at start-up with the setting it most resembles, never with its value."""

from __future__ import annotations

import os

import pytest
import structlog

from app.configuration import ConfigurationError, load_settings, unknown_settings
from app.domain.periods import PeriodKind
from app.main import warn_of_unknown_settings

DIGEST = "0" * 64
SECRET_MARKER = "s3cr3t-marker-4c1d"


@pytest.fixture(autouse=True)
def _no_leaderboard_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.upper().startswith("LEADERBOARD_"):
            monkeypatch.delenv(name)


def _refusal(monkeypatch: pytest.MonkeyPatch, **variables: str) -> str:
    for name, value in variables.items():
        monkeypatch.setenv(f"LEADERBOARD_{name}", value)
    with pytest.raises(ConfigurationError) as refused:
        load_settings()
    return str(refused.value)


@pytest.mark.parametrize("given", ["alltime,day", " alltime , day ", '["alltime", "day"]'])
def test_periods_take_the_clis_form_and_json(given: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEADERBOARD_PERIODS", given)
    assert load_settings().periods == [PeriodKind.ALLTIME, PeriodKind.DAY]


def test_a_single_period_needs_no_comma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEADERBOARD_PERIODS", "month")
    assert load_settings().periods == [PeriodKind.MONTH]


@pytest.mark.parametrize(
    ("given", "origins"),
    [
        (
            "https://game.example,http://localhost:3000",
            ["https://game.example", "http://localhost:3000"],
        ),
        (
            '["https://game.example", "http://localhost:3000"]',
            ["https://game.example", "http://localhost:3000"],
        ),
        ("*", ["*"]),
        ('["*"]', ["*"]),
    ],
)
def test_origins_take_commas_and_json(
    given: str, origins: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEADERBOARD_CORS_ORIGINS", given)
    assert load_settings().browser_origins == origins


def test_api_keys_are_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "LEADERBOARD_API_KEYS", f'[{{"name": "ops", "sha256": "{DIGEST}", "scopes": ["admin"]}}]'
    )
    (key,) = load_settings().api_keys
    assert (key.name, key.scopes) == ("ops", ["admin"])


def test_api_keys_in_another_form_say_what_is_wanted_without_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    message = _refusal(monkeypatch, API_KEYS=f"ops,{SECRET_MARKER},admin")
    assert message.startswith("LEADERBOARD_API_KEYS: not valid JSON")
    assert '{"name", "sha256", "scopes"}' in message
    assert SECRET_MARKER not in message


def test_an_unknown_period_is_named_by_its_place(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _refusal(monkeypatch, PERIODS="alltime,year")
    assert "LEADERBOARD_PERIODS (1)" in message


def test_no_periods_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "LEADERBOARD_PERIODS" in _refusal(monkeypatch, PERIODS=" , ")


def test_values_that_are_not_json_hide_no_other_error(monkeypatch: pytest.MonkeyPatch) -> None:
    message = _refusal(
        monkeypatch,
        API_KEYS="[not json",
        PERIODS='["alltime", day]',
        CORS_ORIGINS="https://game.example/page",
        RETENTION_DAYS="many",
    )
    named = sorted(part.split(":")[0].split(" ")[0] for part in message.split("; "))
    assert named == [
        "LEADERBOARD_API_KEYS",
        "LEADERBOARD_CORS_ORIGINS",
        "LEADERBOARD_PERIODS",
        "LEADERBOARD_RETENTION_DAYS",
    ], message
    assert "LEADERBOARD_API_KEYS: not valid JSON" in message
    assert "LEADERBOARD_PERIODS: not valid JSON" in message


def test_a_misspelled_setting_is_found_with_the_one_it_resembles() -> None:
    environ = {
        "LEADERBOARD_PERIOD": "alltime,day",
        "LEADERBOARD_TRANSACT_MAX_ATEMPTS": "30",
        "LEADERBOARD_NOTHING_LIKE_ANY": "1",
        "LEADERBOARD_PERIODS": "alltime",  # a setting
        "leaderboard_region": "eu-west-1",  # a setting: names are not case-sensitive
        "LEADERBOARD_API_KEY": "k",  # the clients' examples' and the load test's
        "LEADERBOARD_LOAD_PLAYERS": "10",  # the load test's
        "LEADERBOARD_TEST_DYNAMODB_ENDPOINT": "http://x",  # the test suite's
        "PATH": "/bin",
    }
    assert unknown_settings(environ) == [
        ("LEADERBOARD_NOTHING_LIKE_ANY", None),
        ("LEADERBOARD_PERIOD", "LEADERBOARD_PERIODS"),
        ("LEADERBOARD_TRANSACT_MAX_ATEMPTS", "LEADERBOARD_TRANSACT_MAX_ATTEMPTS"),
    ]


def test_start_up_warns_of_each_unknown_setting_without_its_value() -> None:
    with structlog.testing.capture_logs() as logs:
        warn_of_unknown_settings(
            {"LEADERBOARD_CURSOR_SECERT": SECRET_MARKER, "LEADERBOARD_REGION": "eu-west-1"}
        )
    assert logs == [
        {
            "event": "unknown_setting",
            "log_level": "warning",
            "variable": "LEADERBOARD_CURSOR_SECERT",
            "suggestion": "LEADERBOARD_CURSOR_SECRET",
        }
    ]
    assert SECRET_MARKER not in str(logs)
