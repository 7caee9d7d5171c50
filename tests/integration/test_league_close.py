"""A league's close (decision 0040) on the real adapter and the embedded backend: each cohort's
moves are decided from its shown players and put once, whatever the closers racing and
DynamoDB's lost answers (botocore's resend meets the first put's item) and conflicts; the
event lists exactly them; a hidden player takes no promotion place; the next period places
each player in the tier the moves give, and a player of a period not closed yet waits; erasure
takes the player's league record and their id out of the moves."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from app.bootstrap import Runtime
from app.domain.cohorts import Tier
from app.domain.definitions import BoardDefinition
from app.domain.moderation import Action
from app.domain.periods import Board, PeriodKind
from app.errors import LeagueClosing, Unavailable
from app.services.cohorts import PlaceAsk, PlacePolicy, place
from app.services.operations._moderation import ModerateAsk
from app.services.registry import register_board
from tests.faults import Faithful, InFlightItems, fail_first, install, on_item, throttled
from tests.integration.test_snapshots import NOW, SETTLE, board, put_player
from tests.support import operations, scores_items

LEAGUE = BoardDefinition(
    periods=(PeriodKind.DAY,),
    retention_days=30,
    cohort_size=3,
    tiers=(Tier("bronze", promote=1), Tier("silver", promote=1, demote=1), Tier("gold", demote=1)),
)
DAY = board("day:2026-11-27")
NEXT = board("day:2026-11-28")
POLICY = PlacePolicy(attempts=20, backoff_base_s=0.0, backoff_cap_s=0.0, settle=SETTLE)


async def _defined(runtime: Runtime) -> None:
    await runtime.stores.definitions.put_definition("trivia", "classic", LEAGUE)


async def _placed(runtime: Runtime, target: Board, scores: dict[str, int]) -> dict[str, str]:
    """Each player placed on ``target`` in turn, with their row on it and on their cohort: their
    cohorts."""
    cohorts = {}
    for player, score in scores.items():
        ask = PlaceAsk(target, LEAGUE, player, uuid.uuid4().hex, now=NOW)
        placement = await place(runtime.stores.entrants, POLICY, ask)
        assert placement.cohort_id is not None
        cohorts[player] = placement.cohort_id
        await put_player(runtime, target.in_cohort(placement.cohort_id), player, score)
        await put_player(runtime, target, player, score)
    await register_board(registry=runtime.stores.registry, board=target, definition=LEAGUE)
    return cohorts


async def _moves(runtime: Runtime) -> dict[str, tuple[set[str], set[str]]]:
    items = await scores_items(runtime)
    return {
        i["leaderboardId"]["S"]: (
            set(i.get("up", {}).get("SS", [])),
            set(i.get("down", {}).get("SS", [])),
        )
        for i in items
        if i["playerId"]["S"] == f"league#{DAY.board_id}"
    }


async def _league_events(runtime: Runtime) -> list[dict[str, Any]]:
    items = await scores_items(runtime)
    bodies = [json.loads(i["body"]["S"]) for i in items if i["playerId"]["S"] == "outbox#trivia"]
    return [body["league"] for body in bodies]


async def test_racing_closers_under_lost_answers_put_each_cohort_s_moves_once(
    runtime: Runtime,
) -> None:
    await _defined(runtime)
    cohorts = await _placed(
        runtime, DAY, {"a": 60, "b": 50, "c": 40, "cheat": 99, "e": 80, "f": 70, "g": 10}
    )
    assert cohorts == dict.fromkeys("abc", "bronze-1") | {
        "cheat": "bronze-2",
        "e": "bronze-2",
        "f": "bronze-2",
        "g": "bronze-3",
    }
    ops = operations(runtime, settle=SETTLE)
    hidden = ModerateAsk("cheat", "trivia", Action.HIDE, "aimbot", "mia", NOW)
    await ops.moderate(hidden)
    faults = install(runtime.client, "http://unused", in_flight=InFlightItems())
    faults.lose["PutItem"] = 3  # applied, answer lost: botocore resends into its own item
    faults.rules.append(
        fail_first("PutItem", 2, lambda _: throttled(), matching=on_item("league#"))
    )
    closes = await asyncio.gather(*(ops.close_periods(NOW) for _ in range(3)))
    assert sum(c.closed for c in closes) == 1, closes
    assert sum(c.failed for c in closes) == 0, closes
    # The hidden player takes no place: bronze-2's best shown player goes up.
    assert await _moves(runtime) == {
        "bronze-1": ({"a"}, set()),
        "bronze-2": ({"e"}, set()),
        "bronze-3": ({"g"}, set()),
    }
    (league,) = await _league_events(runtime)
    assert {(m["playerId"], m["cohortId"], m["from"], m["to"]) for m in league["moves"]} == {
        ("a", "bronze-1", "bronze", "silver"),
        ("e", "bronze-2", "bronze", "silver"),
        ("g", "bronze-3", "bronze", "silver"),
    }
    assert (league["cohorts"], league["promoted"], league["demoted"]) == (3, 3, 0)

    # The next day seats each in the tier the moves give.
    next_day = await _placed(runtime, NEXT, {"a": 1, "b": 1, "e": 1, "new": 1})
    assert next_day == {"a": "silver-1", "b": "bronze-1", "e": "silver-1", "new": "bronze-1"}


async def test_under_the_faithful_run_s_faults_placements_and_moves_stay_exact(
    runtime: Runtime, faithful_run: Faithful
) -> None:
    with faithful_run.quietly():
        await _defined(runtime)
    players = [f"p{i}" for i in range(9)]

    async def placed(player: str) -> str:
        ask = PlaceAsk(DAY, LEAGUE, player, uuid.uuid4().hex, now=NOW)
        for _ in range(10):  # a 503 the game server would retry
            try:
                found = await place(runtime.stores.entrants, POLICY, ask)
            except Unavailable:
                await asyncio.sleep(0.05)
                continue
            assert found.cohort_id is not None
            return found.cohort_id
        raise AssertionError("the placement never got an answer")

    cohorts = dict(zip(players, await asyncio.gather(*map(placed, players)), strict=True))
    assert Counter(cohorts.values()) == {"bronze-1": 3, "bronze-2": 3, "bronze-3": 3}
    with faithful_run.quietly():
        for number, player in enumerate(players):
            await put_player(runtime, DAY.in_cohort(cohorts[player]), player, 100 - number)
        await register_board(registry=runtime.stores.registry, board=DAY, definition=LEAGUE)
    ops = operations(runtime, settle=SETTLE)
    closes = await asyncio.gather(*(ops.close_periods(NOW) for _ in range(3)))
    assert sum(faithful_run.injected.values()) > 0, "no fault struck: the test proves nothing"
    with faithful_run.quietly():
        if sum(c.closed for c in closes) == 0:  # every closer failed: the next run closes it
            assert sum(c.failed for c in closes) > 0
            assert (await ops.close_periods(NOW)).closed == 1
        else:
            assert sum(c.closed for c in closes) == 1, closes
        best = {
            cohort: min(p for p in players if cohorts[p] == cohort) for cohort in cohorts.values()
        }
        # The best of each cohort is its first-scored: p0, p3, p6 score highest in theirs.
        assert await _moves(runtime) == {
            cohort: ({player}, set()) for cohort, player in best.items()
        }
        (league,) = await _league_events(runtime)
        assert {m["playerId"] for m in league["moves"]} == set(best.values())


async def test_a_player_of_a_period_not_closed_yet_waits_and_a_lost_close_keeps_their_tier(
    runtime: Runtime,
) -> None:
    await _defined(runtime)
    await _placed(runtime, DAY, {"a": 60, "b": 50})
    ask = PlaceAsk(NEXT, LEAGUE, "a", uuid.uuid4().hex, now=NOW)
    with pytest.raises(LeagueClosing, match="close") as waiting:
        await place(runtime.stores.entrants, POLICY, ask)
    assert waiting.value.retry_after >= 1
    # A board past its retention never closes: its players keep their tier, and are placed.
    much_later = NOW + timedelta(days=90)
    late = board("day:2027-02-28", now=much_later)
    kept = PlaceAsk(late, LEAGUE, "a", uuid.uuid4().hex, now=much_later)
    assert (await place(runtime.stores.entrants, POLICY, kept)).cohort_id == "bronze-1"


async def test_erasure_takes_the_league_record_and_the_player_out_of_the_moves(
    runtime: Runtime,
) -> None:
    await _defined(runtime)
    await _placed(runtime, DAY, {"a": 60, "b": 50, "c": 40})
    ops = operations(runtime, settle=SETTLE)
    assert (await ops.close_periods(NOW)).closed == 1
    assert await _moves(runtime) == {"bronze-1": ({"a"}, set())}
    await ops.erase("a", now=NOW)
    assert await _moves(runtime) == {"bronze-1": (set(), set())}
    left = [i for i in await scores_items(runtime) if i["playerId"]["S"] == "a"]
    assert left == []
    assert await runtime.stores.entrants.read_league("b", "trivia", "classic") is not None


async def test_a_player_erased_while_the_close_decides_is_left_out_of_its_moves(
    runtime: Runtime,
) -> None:
    await _defined(runtime)
    await _placed(runtime, DAY, {"a": 60, "b": 50, "c": 40})
    # An erasure under way: it deletes the placement first, and its rows after; a close that
    # read the cohort before them decides "a" goes up, and must leave them out.
    await runtime.stores.entrants.erase_placement("a", DAY.board_id)
    assert (await operations(runtime, settle=SETTLE).close_periods(NOW)).closed == 1
    assert await _moves(runtime) == {"bronze-1": (set(), set())}
    (league,) = await _league_events(runtime)
    assert (league["moves"], league["promoted"]) == ([], 0)
