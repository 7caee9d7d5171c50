"""An entry's ``metadata``: sent with a submission, at most 256 bytes of compact JSON, shown with
the entry by every read of the board (top page, around, group, the player's own entry) while that
round's result is the entry; the player's own entry also gives back the ``context``. A submission
that leaves the entry where it is keeps both, and writes no index entry: its row's update touches
nothing RankIndex holds."""

from __future__ import annotations

import json
from typing import Any

from app.store.tables import RANK_INDEX_PROJECTED
from tests.conftest import Service
from tests.faults import install
from tests.support import now_ms, scores_items, submit

BOARD = "/v1/leaderboards/trivia/classic/alltime"
CAR = {"car": "mk2", "replay": "r-2931"}


async def _reads(service: Service, player: str) -> dict[str, Any]:
    """The player's entry as each read shows it."""
    http = service.http
    top = (await http.get(BOARD)).json()
    own = (await http.get(f"{BOARD}/players/{player}")).json()
    around = (await http.get(f"{BOARD}/players/{player}/around")).json()
    group = (await http.get(f"{BOARD}/players", params={"ids": player})).json()
    return {
        "top": next(e for e in top["entries"] if e["playerId"] == player),
        "own": own["entry"],
        "around": next(e for e in around["entries"] if e["playerId"] == player),
        "group": group["entries"][0]["entry"],
    }


async def test_metadata_is_shown_by_every_read_and_context_by_the_players_own(
    service: Service,
) -> None:
    t0 = now_ms() - 60_000
    sent = await submit(
        service.http,
        player="ada",
        score=500,
        achieved_ms=t0,
        metadata=CAR,
        context={"round": 7},
    )
    assert sent.status_code == 200, sent.text
    await submit(service.http, player="bo", score=400, achieved_ms=t0)
    reads = await _reads(service, "ada")
    assert {name: entry["metadata"] for name, entry in reads.items()} == dict.fromkeys(reads, CAR)
    assert reads["own"]["context"] == {"round": 7}
    assert "context" not in reads["top"]  # the index never carries the context
    others = await _reads(service, "bo")
    assert {entry["metadata"] for entry in others.values()} == {None}
    assert others["own"]["context"] is None


async def test_a_round_that_moves_nothing_keeps_the_entrys_metadata_and_writes_no_index_entry(
    service: Service, dynamo_endpoint: str
) -> None:
    t0 = now_ms() - 60_000
    await submit(
        service.http, player="ada", score=500, achieved_ms=t0, metadata=CAR, context={"round": 1}
    )
    faults = install(service.runtime.client, dynamo_endpoint)
    sent: list[dict[str, Any]] = []
    faults.rules.append(
        lambda operation, body: sent.append(body) if operation == "TransactWriteItems" else None
    )
    worse = await submit(
        service.http,
        player="ada",
        score=100,
        achieved_ms=t0 + 1_000,
        metadata={"car": "old"},
        context={"round": 2},
    )
    assert [b["improved"] for b in worse.json()["boards"]] == [False, False, False]
    reads = await _reads(service, "ada")
    assert {entry["metadata"]["car"] for entry in reads.values()} == {"mk2"}
    assert reads["own"]["context"] == {"round": 1}
    # One transaction: the idempotency record's put and, per board, an update of the row's
    # version, lastPlayedAt and expiresAt, none of which RankIndex holds: no index entry written.
    (transaction,) = sent
    actions = transaction["TransactItems"]
    assert [a["Put"]["Item"].get("rankKey") for a in actions if "Put" in a] == [None]
    rows = [a["Update"] for a in actions if "Update" in a]
    assert len(rows) == 3
    projected = {*RANK_INDEX_PROJECTED, "rankKey", "leaderboardId"}
    for update in rows:
        names = update.get("ExpressionAttributeNames", {})
        assigned = update["UpdateExpression"].removeprefix("SET ").split(", ")
        written = {names.get(name, name) for name in (a.split(" = ")[0] for a in assigned)}
        assert written == {"version", "lastPlayedAt", "expiresAt"} - (
            set() if names else {"expiresAt"}
        )
        assert not written & projected
    stored = [i for i in await scores_items(service.runtime) if "rankKey" in i]
    assert len(stored) == 3
    assert all(i["version"]["N"] == "2" and "lastPlayedAt" in i for i in stored)


async def test_an_improvement_replaces_the_metadata_with_its_own_or_none(service: Service) -> None:
    t0 = now_ms() - 60_000
    await submit(service.http, player="ada", score=500, achieved_ms=t0, metadata=CAR)
    await submit(
        service.http, player="ada", score=600, achieved_ms=t0 + 1_000, metadata={"car": "mk3"}
    )
    assert {e["metadata"]["car"] for e in (await _reads(service, "ada")).values()} == {"mk3"}
    await submit(service.http, player="ada", score=700, achieved_ms=t0 + 2_000)
    # The metadata described the round it came with: a new entry without any shows none.
    assert {e["metadata"] is None for e in (await _reads(service, "ada")).values()} == {True}


async def test_metadata_over_256_bytes_or_not_an_object_is_a_422_and_writes_nothing(
    service: Service,
) -> None:
    padding = '{"padding":""}'
    largest = {"padding": "x" * (256 - len(padding))}
    assert len(json.dumps(largest, separators=(",", ":"))) == 256
    over = {"padding": "x" * (257 - len(padding))}
    refused = await submit(service.http, player="ada", score=500, metadata=over)
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["errors"] == [
        {"field": "metadata", "message": "must be at most 256 bytes as compact JSON"}
    ]
    assert "257 bytes" in problem["detail"]
    for not_an_object in (["mk2"], "mk2", 7):
        wrong = await submit(service.http, player="ada", score=500, metadata=not_an_object)
        assert wrong.status_code == 422, wrong.text
    assert [i for i in await scores_items(service.runtime) if "rankKey" in i] == []
    taken = await submit(service.http, player="ada", score=500, metadata=largest)
    assert taken.status_code == 200, taken.text
    assert (await _reads(service, "ada"))["top"]["metadata"] == largest
