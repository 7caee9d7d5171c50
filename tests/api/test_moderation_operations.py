"""Moderation and the operators' work (decision 0036): erasure of a moderated player removes the
record, the listing item and their hidden rows with everything else; the reconciler hides a
visible row of a moderated player it meets (and runs a moderation's due later pass); a seed
leaves a moderated player's rows out and never shows a hidden row."""

from __future__ import annotations

from typing import Any

from app.domain.moderation import Action, Logged, Moderation, ModerationEvent
from tests.api.test_moderation import (
    ADMIN,
    SCORES,
    board_ids,
    fill,
    moderate,
    restore,
    top,
)
from tests.conftest import Service
from tests.support import assert_counts_agree, now_ms, scores_items, seed_csv, submit

BOARD = "/v1/leaderboards/trivia/classic/alltime"


def _record(player: str, *, due_ms: int | None = None) -> Moderation:
    return Moderation(player, "trivia", Action.HIDE, "aimbot", now_ms(), "ops", due_ms)


def _event(player: str) -> ModerationEvent:
    return ModerationEvent("trivia", now_ms(), "e1", Logged.HIDE, player, "aimbot", "ops")


async def _bobs_items(service: Service) -> list[dict[str, Any]]:
    return [
        i
        for i in await scores_items(service.runtime)
        if i["playerId"]["S"] == "bob" or i["leaderboardId"]["S"] == "bob"
    ]


async def test_erasing_a_moderated_player_removes_the_moderation_too(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    assert (await moderate(http, "bob", "hide")).status_code == 200
    hidden_later = await submit(http, player="bob", score=5, achieved_ms=at + 9, variant="blitz")
    assert hidden_later.status_code == 200
    erased = await http.delete("/v1/players/bob", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"]["boards"] == 6
    assert await _bobs_items(service) == []
    listed = await http.get("/v1/games/trivia/moderation/players", headers=ADMIN)
    assert listed.json()["players"] == []
    assert (await restore(http, "bob")).status_code == 404
    await assert_counts_agree(service.runtime, *board_ids(at), *board_ids(at, "blitz"))
    again = await http.delete("/v1/players/bob", headers=ADMIN)
    assert again.json()["removed"] == {"boards": 0, "snapshots": 0, "idempotencyRecords": 0}


async def test_the_reconciler_hides_a_moderated_player_s_visible_row(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    # A record with no sweep behind it: as where a submission that read no record before the
    # moderation wrote a new row after its sweep.
    await service.runtime.stores.moderation.put_moderation(_record("bob"), _event("bob"))
    dry = await http.post(f"{BOARD}/reconcile", headers=ADMIN)
    assert dry.status_code == 200, dry.text
    assert dry.json()["moderatedRows"] == 1
    assert "bob" in [e["playerId"] for e in (await top(http, "alltime"))["entries"]]
    applied = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert applied.json()["moderatedRows"] == 1
    assert applied.json()["differences"] == []
    assert applied.json()["playerCount"] == 4
    assert [e["playerId"] for e in (await top(http, "alltime"))["entries"]] == [
        "ann",
        "cat",
        "dan",
        "eve",
    ]
    # This board only: the day board still shows bob, until its own reconcile or a later pass.
    assert "bob" in [e["playerId"] for e in (await top(http, "day"))["entries"]]
    await assert_counts_agree(service.runtime, *board_ids(at))


async def test_the_reconciler_runs_a_due_later_pass_over_the_whole_game(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    await submit(http, player="bob", score=3, achieved_ms=at + 9, variant="blitz")
    store = service.runtime.stores.moderation
    await store.put_moderation(_record("bob", due_ms=now_ms() - 1), _event("bob"))
    applied = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert applied.status_code == 200, applied.text
    assert applied.json()["moderatedRows"] == 6  # every board of the game (two variants)
    for period in ("alltime", "day", "week"):
        assert "bob" not in [e["playerId"] for e in (await top(http, period))["entries"]]
    assert (await top(http, "alltime", "blitz"))["playerCount"] == 0
    found = await store.moderation_of("bob", "trivia")
    assert found is not None
    assert found.sweep_again_ms is None  # done: the next reconcile runs it no more
    again = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert again.json()["moderatedRows"] == 0
    await assert_counts_agree(service.runtime, *board_ids(at), *board_ids(at, "blitz"))


async def test_a_seed_leaves_moderated_players_out(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, {"bob": 100, "cat": 90}, at)
    assert (await moderate(http, "bob", "hide")).status_code == 200
    assert (await moderate(http, "fay", "ban")).status_code == 200
    report = await seed_csv(
        http, BOARD, [("bob", 999, at), ("fay", 998, at), ("gus", 50, at), ("cat", 95, at)]
    )
    assert report["rowsModerated"] == 2
    assert report["rowsWritten"] == 2
    page = await top(http, "alltime")
    assert [(e["playerId"], e["score"]) for e in page["entries"]] == [("cat", 95), ("gus", 50)]
    assert (await restore(http, "bob")).status_code == 200
    page = await top(http, "alltime")
    assert [(e["playerId"], e["score"]) for e in page["entries"]] == [
        ("bob", 100),
        ("cat", 95),
        ("gus", 50),
    ]
    await assert_counts_agree(service.runtime, *board_ids(at))
