"""A configuration the service cannot start with is refused with the variable and the reason, and
never with a value: each secret is set to a marker, and every way the settings are loaded (every
`leaderboard` command, `uvicorn app.main:app`, `create_app()`) is searched for it."""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
import uuid

import pytest
import structlog

from app import cli
from app.configuration import ConfigurationError, get_settings
from app.local.embedded import free_port
from app.logging import configure_logging
from app.main import create_app
from app.settings import Settings

CURSOR_MARKER = f"cur{uuid.uuid4().hex[:12]}"  # short: production refuses it
DEV_KEY_MARKER = f"devkey-{uuid.uuid4().hex}"
LONG_CURSOR_MARKER = f"cursor-{uuid.uuid4().hex}"

SCENARIOS: dict[str, dict[str, str]] = {
    "production with a short cursor secret and a dev key": {
        "LEADERBOARD_ENVIRONMENT": "production",
        "LEADERBOARD_CURSOR_SECRET": CURSOR_MARKER,
        "LEADERBOARD_DEV_API_KEY": DEV_KEY_MARKER,
    },
    "the dev key with an endpoint": {
        "LEADERBOARD_DYNAMODB_ENDPOINT": "http://127.0.0.1:9",
        "LEADERBOARD_DEV_API_KEY": DEV_KEY_MARKER,
        "LEADERBOARD_CURSOR_SECRET": LONG_CURSOR_MARKER,
    },
    "a bad number beside both secrets": {
        "LEADERBOARD_RETENTION_DAYS": "many",
        "LEADERBOARD_DEV_API_KEY": DEV_KEY_MARKER,
        "LEADERBOARD_CURSOR_SECRET": LONG_CURSOR_MARKER,
    },
    "keys that are not JSON beside both secrets": {
        "LEADERBOARD_API_KEYS": "[not json",
        "LEADERBOARD_DEV_API_KEY": DEV_KEY_MARKER,
        "LEADERBOARD_CURSOR_SECRET": LONG_CURSOR_MARKER,
    },
}
REASONS = {
    "production with a short cursor secret and a dev key": [
        "LEADERBOARD_CURSOR_SECRET of 32+",
        "LEADERBOARD_DEV_API_KEY is accepted only",
    ],
    "the dev key with an endpoint": ["LEADERBOARD_DEV_API_KEY is accepted only"],
    "a bad number beside both secrets": ["LEADERBOARD_RETENTION_DAYS"],
    "keys that are not JSON beside both secrets": ["LEADERBOARD_API_KEYS: not valid JSON"],
}
COMMANDS = [
    ["serve", "--port", "0"],
    ["create-tables"],
    ["keys", "list"],
    ["keys", "create", "--name", "x", "--scope", "admin"],
    ["keys", "revoke", "x"],
    ["seed", "trivia#classic#alltime", "rows.csv"],
    ["reconcile", "trivia#classic#alltime"],
    ["snapshot", "--closed-periods"],
    ["erase", "ann"],
]


def _environment(values: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}
    return env | values


def _assert_no_secret(text: str) -> None:
    for marker in (CURSOR_MARKER, DEV_KEY_MARKER, LONG_CURSOR_MARKER):
        # Not the whole secret, and not its tail either (pydantic's echo truncated the middle).
        assert marker[-8:] not in text, text


CURSOR_REASON = "LEADERBOARD_CURSOR_SECRET of 32+"
"""Only what serves pages needs a cursor secret: the operator commands hand out no cursor."""


def _assert_refused_in_words(scenario: str, where: str, out: str, err: str) -> None:
    _assert_no_secret(out + err)
    assert "configuration error" in err, (where, err)
    serves = "serve" in where.split() or "uvicorn" in where.split()
    if not serves:
        assert CURSOR_REASON not in err, (where, err)
    for reason in (r for r in REASONS[scenario] if serves or r != CURSOR_REASON):
        assert reason in err, (where, err)
    assert "errors.pydantic.dev" not in err  # no help links either
    assert "Traceback" not in err, where


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_command_prints_a_secret_of_a_refused_configuration(
    scenario: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _environment(SCENARIOS[scenario])
    # The entry points as installed, each its own process: `serve`, an operator command (every
    # one loads its settings on the same path, in `main`, before its command) and uvicorn's.
    ways = [[sys.executable, "-m", "app.cli", *command] for command in (COMMANDS[0], COMMANDS[2])]
    ways.append(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:app",
            "--port",
            str(free_port()),
            "--lifespan",
            "on",
        ]
    )
    processes = [
        subprocess.Popen(way, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for way in ways
    ]
    for way, process in zip(ways, processes, strict=True):
        out, err = process.communicate(timeout=120)
        where = " ".join(way[2:])
        assert process.returncode != 0, where
        if way[2] == "app.cli":
            assert process.returncode == 2, where
        _assert_refused_in_words(scenario, where, out, err)
    # Every command, in this process (a process each took 2 s of imports).
    for name in os.environ:
        if name.startswith("LEADERBOARD_"):
            monkeypatch.delenv(name)
    for name, value in SCENARIOS[scenario].items():
        monkeypatch.setenv(name, value)
    # The command's logging, but never cached (the loggers of the tests after it keep theirs),
    # and the tests' own put back after: the command's writes to this test's captured stderr.
    monkeypatch.setattr(
        cli, "configure_logging", lambda **kw: configure_logging(**(kw | {"cache": False}))
    )
    tests_logging = structlog.get_config()
    try:
        for command in COMMANDS:
            get_settings.cache_clear()
            assert cli.main(command) == 2, command
            captured = capsys.readouterr()
            _assert_refused_in_words(scenario, " ".join(command), captured.out, captured.err)
    finally:
        get_settings.cache_clear()
        structlog.configure(**tests_logging)


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_create_app_refuses_without_the_secrets(
    scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(f"LEADERBOARD_{name.upper()}", raising=False)
    for name, value in SCENARIOS[scenario].items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError) as refused:
        create_app()
    error = refused.value
    assert error.__context__ is None  # pydantic's error, which holds the input, is not attached
    assert error.__cause__ is None
    _assert_no_secret("".join(traceback.format_exception(error)) + repr(error))
