"""A board whose counters are part-written answers no rank it cannot know: a seed stopped at each
of its stages, and a repair under way, leave ranks and the player count unknown (503,
``counts-incomplete``), never an exact rank counted from rows whose counters are not there yet;
``reconcile --apply`` once the dead seeder's lease has lapsed makes every rank exact and true."""

from __future__ import annotations

import time
from typing import Any

import pytest

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.storage_keys import coarse_pk
from app.services.work import Stage
from app.settings import Settings
from tests.conftest import Service
from tests.integration.test_reconcile import add_to_counter
from tests.integration.test_seeding import (
    BOARD,
    board_rows,
    csv_text,
    lease_item,
    parse,
    policy,
    seeding,
    spread,
)
from tests.support import now_ms, reconciled, submit

PAGE = "/v1/leaderboards/trivia/classic/alltime"
LAYOUT = BucketLayout()


class Killed(Exception):
    """The seeder dies here."""


async def _truth(runtime: Runtime) -> list[str]:
    """The players on the board, best first, from the rows themselves."""
    rows = await board_rows(runtime, BOARD.board_id)
    return sorted(rows, key=lambda p: rows[p]["rankKey"]["S"])


async def _no_rank_is_wrong(service: Service, runtime: Runtime) -> set[str]:
    """Every player's rank and the page: each unknown (503 ``counts-incomplete``) or true. The
    kinds of answer seen."""
    order = await _truth(runtime)
    seen: set[str] = set()
    page = await service.http.get(PAGE, params={"limit": 100})
    if page.status_code == 503:
        assert page.json()["type"].endswith("/counts-incomplete"), page.text
        assert int(page.headers["Retry-After"]) >= 1
        seen.add("page unknown")
    else:
        assert page.status_code == 200, page.text
        assert page.json()["playerCount"] == len(order)
    for place, player in enumerate(order, start=1):
        answer = await service.http.get(f"{PAGE}/players/{player}")
        if answer.status_code == 503:
            assert answer.json()["type"].endswith("/counts-incomplete"), answer.text
            seen.add("unknown")
            continue
        assert answer.status_code == 200, answer.text
        rank = answer.json()["rank"]
        if rank["kind"] == "exact":
            assert rank["rank"] == place, (player, rank, place)
        else:
            low, high = rank["rankRange"]
            assert low <= place <= high, (player, rank, place)
        seen.add(rank["kind"])
    return seen


async def _reconciled(runtime: Runtime, settings: Settings, *, lapsed: bool) -> Any:
    """``reconcile --apply``; ``lapsed``: as it runs once a dead seeder's lease has expired (the
    lease's item still there, its expiry past)."""
    if lapsed:
        lease = await lease_item(runtime, BOARD.board_id)
        assert lease is not None  # the dead seeder's
        past = {"N": str(int(time.time()) - 1)}
        await runtime.client.put_item(
            TableName=runtime.tables.scores, Item={**lease, "expiresAt": past}
        )
    return await reconciled(runtime, BOARD, settings.retention)


@pytest.mark.parametrize(
    ("stop_at", "after"),
    [
        ("waiting", 0),  # the board marked and registered, no row yet
        ("writing rows", 8),  # some rows, no counter
        ("recounting", 0),  # every row, no counter
        ("writing counters", 3),  # some counters
    ],
)
async def test_a_seed_stopped_at_each_stage_leaves_no_wrong_exact_rank(
    service: Service,
    runtime: Runtime,
    settings: Settings,
    stop_at: Stage,
    after: int,
) -> None:
    # A live board first: two players ranked exactly before the seed.
    for player, score in (("live-a", 4_000), ("live-b", 10)):
        response = await submit(service.http, player=player, score=score)
        assert response.status_code == 200, response.text
    seed = parse(csv_text(spread(24, now_ms() - 60_000)))

    def progress(stage: Stage, done: int, total: int | None) -> None:
        if stage == stop_at and done >= after:
            raise Killed

    with pytest.raises(Killed):
        await seeding(runtime, policy(settings, grace_s=0.1)).seed(BOARD, seed, progress=progress)

    assert "unknown" in await _no_rank_is_wrong(service, runtime)
    report = await _reconciled(runtime, settings, lapsed=True)
    assert report.skipped == report.unwritten == []
    assert await _no_rank_is_wrong(service, runtime) == {"exact"}


async def test_a_finished_seed_leaves_its_board_counted(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    seed = parse(csv_text(spread(12, now_ms() - 60_000)))
    report = await seeding(runtime, policy(settings)).seed(BOARD, seed)
    assert (report.counter_conflicts, report.counters_unwritten) == (0, 0)
    assert await _no_rank_is_wrong(service, runtime) == {"exact"}


async def test_a_submission_to_a_board_being_counted_lands_and_says_no_rank(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    await runtime.stores.counters.mark_incomplete(BOARD.board_id, by="test", expires_at=None)
    response = await submit(service.http, player="ada", score=50)
    assert response.status_code == 200, response.text
    (board,) = [b for b in response.json()["boards"] if b["leaderboardId"] == BOARD.board_id]
    assert "rankAfter" not in board or board["rankAfter"] is None
    rank = await service.http.get(f"{PAGE}/players/ada")
    assert rank.status_code == 503
    assert rank.json()["type"].endswith("/counts-incomplete")
    # The reconciler, finding the counters right, clears the mark.
    report = await _reconciled(runtime, settings, lapsed=False)
    assert report.differences == []
    assert await _no_rank_is_wrong(service, runtime) == {"exact"}


async def test_a_repair_marks_the_board_until_every_counter_is_written(
    service: Service, runtime: Runtime, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for player, score in (("a", 30), ("b", 20), ("c", 10)):
        response = await submit(service.http, player=player, score=score)
        assert response.status_code == 200, response.text
    bucket, _ = LAYOUT.slot_of(20)
    await add_to_counter(runtime, coarse_pk(BOARD.board_id, 0), bucket, 5)  # drift
    seen: list[set[str]] = []
    counters = runtime.stores.counters
    set_counter = counters.set_counter

    async def observed(*args: Any, **kwargs: Any) -> None:
        seen.append(await _no_rank_is_wrong(service, runtime))  # mid-repair
        await set_counter(*args, **kwargs)

    monkeypatch.setattr(counters, "set_counter", observed)
    report = await _reconciled(runtime, settings, lapsed=False)
    assert len(report.repaired) == 1
    assert seen == [{"unknown", "page unknown"}]
    assert await _no_rank_is_wrong(service, runtime) == {"exact"}
