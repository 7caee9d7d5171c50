"""How the `leaderboard` command reads to an operator, with no backend: `-v` anywhere on the line,
`--json` on every command that reports, progress off a terminal that is never silent for long, a
timeout that names its setting, and no cursor secret asked of commands that hand out no cursor."""

from __future__ import annotations

import asyncio
import io

import pytest
from botocore.exceptions import ReadTimeoutError

from app.cli.parser import build_parser
from app.cli.progress import ProgressReport
from app.configuration import CommandSettings
from app.errors import Unavailable
from app.settings import Settings
from app.store.client import translate

REPORTING = [
    ["create-tables"],
    ["keys", "create", "--name", "quiz", "--scope", "admin"],
    ["keys", "list"],
    ["keys", "revoke", "quiz"],
    ["boards", "define", "trivia", "classic"],
    ["boards", "list", "trivia"],
    ["boards", "show", "trivia", "classic"],
    ["seed", "trivia#classic#alltime", "rows.csv"],
    ["reconcile", "trivia#classic#alltime"],
    ["reconcile", "--live"],
    ["snapshot", "trivia#classic#alltime"],
    ["snapshot", "--closed-periods"],
    ["erase", "ann"],
    ["moderate", "hide", "trivia", "ann", "--reason", "aimbot"],
    ["moderate", "ban", "trivia", "ann", "--reason", "aimbot"],
    ["moderate", "restore", "trivia", "ann"],
    ["moderate", "list", "trivia"],
    ["moderate", "log", "trivia"],
    ["void", "trivia#classic#alltime", "ann"],
    ["webhooks", "set", "trivia", "--url", "https://hooks.example.com/x"],
    ["webhooks", "set", "trivia", "--url", "https://x.example/", "--secret-env", "HOOK_SECRET"],
    ["webhooks", "show", "trivia"],
    ["webhooks", "remove", "trivia"],
    ["webhooks", "deliveries", "trivia", "--limit", "5"],
]


@pytest.mark.parametrize("command", REPORTING, ids=" ".join)
def test_v_goes_anywhere_on_the_line_and_every_reporting_command_takes_json(
    command: list[str],
) -> None:
    parser = build_parser()
    assert parser.parse_args(command).verbose is False
    assert parser.parse_args(command).json is False
    for at in range(len(command) + 1):
        line = [*command[:at], "-v", *command[at:]]
        if at and command[at - 1] in (
            "--name",
            "--scope",
            "--reason",
            "--url",
            "--secret-env",
            "--limit",
        ):
            continue  # between an option and its value
        assert parser.parse_args(line).verbose is True, line
    assert parser.parse_args([*command, "--json"]).json is True
    chosen = parser.parse_args([*command, "--endpoint", "http://127.0.0.1:9", "--serve", "8000"])
    assert (chosen.endpoint, chosen.serve) == ("http://127.0.0.1:9", "8000")


def test_serve_takes_v_too() -> None:
    assert build_parser().parse_args(["-v", "serve"]).verbose is True
    assert build_parser().parse_args(["serve", "-v"]).verbose is True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_long_stage_prints_its_counts_every_few_seconds() -> None:
    out, clock = io.StringIO(), Clock()
    progress = ProgressReport(out, live=False, every_s=5, clock=clock)
    progress("recounting", 0, 3000)
    assert out.getvalue() == "recounting the board (about 3000 entries) ...\n"
    clock.now += 4
    progress("recounting", 1000, 3000)
    progress.tick()
    assert out.getvalue().count("\n") == 1  # not yet: under 5 s since the last line
    clock.now += 2
    progress("recounting", 1200, 3000)
    assert out.getvalue().splitlines()[-1] == (
        "recounting the board (about 3000 entries): 1200/3000 so far (6 s)"
    )
    # One long call, and nothing reported meanwhile: the ticks still say where it stands.
    clock.now += 5
    progress.tick()
    assert out.getvalue().splitlines()[-1].endswith("1200/3000 so far (11 s)")
    progress("reading counters", 0, None)
    clock.now += 5
    progress.tick()
    assert out.getvalue().splitlines()[-2:] == [
        "reading the counters ...",
        "reading the counters: 0 so far (5 s)",
    ]
    progress.finish()
    assert out.getvalue().splitlines()[-1] == "done in 16.0 s"


async def test_ticking_prints_while_one_call_keeps_the_work_from_reporting() -> None:
    out = io.StringIO()
    progress = ProgressReport(out, live=False, every_s=0.5)
    async with progress.ticking():
        progress("writing rows", 7, 16)
        await asyncio.sleep(1.6)  # the work waits on one slow call
    lines = out.getvalue().splitlines()
    assert lines[0] == "writing 16 rows ..."
    assert any(line.startswith("writing 16 rows: 7/16 so far") for line in lines[1:]), lines
    before = out.getvalue()
    await asyncio.sleep(1.2)
    assert out.getvalue() == before  # the ticks stop with the block


def test_a_ranking_change_says_why_it_holds_and_a_quick_act_says_nothing() -> None:
    out = io.StringIO()
    progress = ProgressReport(out, live=False)
    progress.finish()
    assert out.getvalue() == ""  # a definition that held nothing: its JSON alone
    progress("holding boards", 0, 11)
    assert out.getvalue() == (
        "holding the variant's boards 11 s while submissions under the old order, operator or "
        "shards finish ...\n"
    )


def test_on_a_terminal_the_line_is_redrawn_in_place() -> None:
    out = io.StringIO()
    progress = ProgressReport(out, live=True)
    progress("writing rows", 0, 4)
    progress("writing rows", 4, 4)
    assert "\rwriting 4 rows: [" in out.getvalue()
    assert "so far" not in out.getvalue()


def test_a_read_timeout_names_what_was_being_done_and_the_setting_that_changes_it() -> None:
    error = translate(
        ReadTimeoutError(endpoint_url="http://127.0.0.1:1"),
        "reading the counters",
        read_timeout=5.0,
    )
    assert isinstance(error, Unavailable)
    assert "during reading the counters" in error.detail
    assert "read timeout (5 s, LEADERBOARD_DYNAMODB_READ_TIMEOUT_SECONDS)" in error.detail


def test_production_needs_a_cursor_secret_only_where_cursors_are_handed_out() -> None:
    with pytest.raises(ValueError, match="CURSOR_SECRET"):
        Settings.model_validate({"environment": "production", "cursor_secret": None})
    operator = CommandSettings.model_validate({"environment": "production", "cursor_secret": None})
    assert operator.environment == "production"
    # Still refused there: a dev key with AWS.
    with pytest.raises(ValueError, match="DEV_API_KEY"):
        CommandSettings.model_validate(
            {"environment": "production", "cursor_secret": None, "dev_api_key": "x"}
        )
