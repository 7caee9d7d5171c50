"""Seed files read and checked whole before anything is written: CSV and JSON lines alike, a
player's best row kept by the board rule, the format from the suffix, and every bad row reported
with its line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.bootstrap import Runtime
from app.cli.operations import parse_seed_file
from app.domain.clock import iso_ms
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import InvalidInput
from app.settings import Settings
from tests.integration.test_seeding import BOARD, HEADER, csv_text, parse
from tests.support import now_ms, scores_items, utc_start


def test_csv_and_json_lines_read_the_same_rows() -> None:
    t = now_ms() - 60_000
    csv_file = parse(f'{HEADER}\na,10,{iso_ms(t)},"Smith, Ann",GB\n\nb,20,{iso_ms(t)},,\n')
    json_file = parse(
        f'{{"playerId": "a", "score": 10, "achievedAt": "{iso_ms(t)}", "displayName": "Smith, Ann", "country": "GB"}}\n'
        "\n"
        f'{{"playerId": "b", "score": 20, "achievedAt": "{iso_ms(t)}"}}\n'
    )
    assert [(r.player_id, r.score, r.display_name, r.country) for r in csv_file.rows] == [
        ("a", 10, "Smith, Ann", "GB"),
        ("b", 20, None, None),
    ]
    assert [(r.line, r.score) for r in csv_file.rows] == [(2, 10), (4, 20)]
    assert [(r.player_id, r.score, r.display_name) for r in json_file.rows] == [
        (r.player_id, r.score, r.display_name) for r in csv_file.rows
    ]
    assert [r.line for r in json_file.rows] == [1, 3]


def test_a_player_on_several_rows_keeps_the_best_by_the_board_rule() -> None:
    t = now_ms() - 60_000
    seed = parse(
        csv_text(
            [("a", 10, t), ("a", 30, t), ("a", 30, t - 5000), ("a", 30, t - 5000), ("b", 1, t)]
        )
    )
    best = {r.player_id: r for r in seed.rows}
    assert (best["a"].score, best["a"].achieved_at_ms, best["a"].line) == (30, t - 5000, 4)
    assert seed.rows_read == 5
    assert seed.duplicate_lines == [2, 3, 5]


def test_the_format_comes_from_the_suffix_of_a_file(tmp_path: Any) -> None:
    t = now_ms() - 60_000
    path = tmp_path / "scores.jsonl"
    path.write_text(f'{{"playerId": "a", "score": 5, "achievedAt": "{iso_ms(t)}"}}\n')
    seed = parse_seed_file(path, board=BOARD, now=datetime.now(UTC), definition=BoardDefinition())
    assert [(r.player_id, r.score) for r in seed.rows] == [("a", 5)]


async def test_bad_rows_are_all_reported_with_their_lines_and_nothing_is_written(
    runtime: Runtime, settings: Settings
) -> None:
    day = Board.from_id(f"trivia#classic#day#{(datetime.now(UTC) - timedelta(days=1)).date()}")
    inside = utc_start(day) + timedelta(hours=12)
    good = inside.isoformat().replace("+00:00", "Z")
    text = "\n".join(
        [
            HEADER,
            f"ok1,10,{good},Fine,GB",  # 2
            f"bad#id,10,{good},,",  # 3: # in an id
            f"ok2,-1,{good},,",  # 4: negative score
            f"ok3,1000000000000,{good},,",  # 5: at the ceiling
            f"ok4,12.5,{good},,",  # 6: not an integer
            "ok5,10,2026-01-01T00:00:00,,",  # 7: naive time
            f"ok6,10,{good},,gb",  # 8: lower-case country
            f"ok7,10,{good},{'x' * 65},",  # 9: name too long
            f"ok8,10,{(inside + timedelta(days=1)).isoformat()},,",  # 10: outside the day
            f"ok9,10,{(datetime.now(UTC) + timedelta(hours=1)).isoformat()},,",  # 11: future
            f"ok10,10,{good}",  # 12: too few values
            f"ok11,10,{good},Fine,GB",  # 13
        ]
    )
    with pytest.raises(InvalidInput) as refused:
        parse(text, board=day)
    lines = sorted({e["line"] for e in refused.value.errors})
    assert lines == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    fields = {e["line"]: e.get("field") for e in refused.value.errors}
    assert fields[3] == "playerId"
    assert fields[8] == "country"
    assert fields[10] == "achievedAt"
    assert "10 bad line(s)" in refused.value.detail
    assert "nothing was written" in refused.value.detail
    assert await scores_items(runtime) == []

    with pytest.raises(InvalidInput) as bad_json:
        parse(
            f'{{"playerId": "a", "score": 1, "achievedAt": "{good}"}}\n'
            "not json\n"
            f'{{"playerId": "b", "score": true, "achievedAt": "{good}", "extra": 1}}\n'
            "[1, 2]\n",
            board=day,
        )
    assert sorted({e["line"] for e in bad_json.value.errors}) == [2, 3, 4]
    assert {e.get("field") for e in bad_json.value.errors if e["line"] == 3} == {"score", "extra"}

    with pytest.raises(InvalidInput) as bad_header:
        parse("player,score,achievedAt\na,1,2026-01-01T00:00:00Z\n")
    assert bad_header.value.errors[0]["line"] == 1
    assert "playerId" in bad_header.value.errors[0]["message"]
    with pytest.raises(InvalidInput):
        parse(HEADER + "\n")  # no rows
    assert await scores_items(runtime) == []
