"""A sharded board end to end, over the embedded backend through the real adapter (docs/boards.md,
docs/scale.md): every row on its player's partition, and every read in the shape of an unsharded
board's and as right: the top page walked by its cursor, playerCount, exact ranks, around, the
group board, standings, rankDelta, a snapshot, for ``best``, ``sum`` and ``asc`` boards; and the
reconciler's report says which shard drifted."""

from __future__ import annotations

from typing import Any

import httpx

from app.bootstrap import LAYOUT
from app.domain.keys import Order, RankKey
from app.domain.shards import board_of_partition, partition_ids, player_partition
from app.domain.storage_keys import coarse_pk
from tests.conftest import ADMIN_KEY, Service
from tests.faults import fail_first, install, throttled
from tests.support import now_ms, scores_items, submit

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
SHARDS = 4
URL = "/v1/leaderboards/trivia/live/alltime"
BOARD_ID = "trivia#live#alltime"


async def define(http: httpx.AsyncClient, variant: str = "live", **fields: Any) -> None:
    put = await http.put(
        f"/v1/games/trivia/variants/{variant}",
        json={"periods": ["alltime"], "shards": SHARDS, **fields},
        headers=ADMIN,
    )
    assert put.status_code == 200, put.text


async def fill(http: httpx.AsyncClient, scores: dict[str, int], t0: int) -> None:
    for i, (player, score) in enumerate(scores.items()):
        sent = await submit(
            http,
            player=player,
            score=score,
            achieved_ms=t0 + i % 3,
            variant="live",
            rankDelta=False,
            displayName=player.upper(),
        )
        assert sent.status_code == 200, sent.text


def board_order(scores: dict[str, int], t0: int, order: Order = Order.DESC) -> list[str]:
    """The players best first, by the rank key the service orders them by."""
    keys = [RankKey(s, t0 + i % 3, p, order) for i, (p, s) in enumerate(scores.items())]
    return [k.player_id for k in sorted(keys, key=lambda k: k.order)]


SCORES = {f"p{i:02d}": (i * 37) % 11 * 100 for i in range(24)}  # ties on score, some on time too


async def test_a_sharded_board_reads_as_one_board(service: Service) -> None:
    http = service.http
    await define(http)
    t0 = now_ms() - 60_000
    await fill(http, SCORES, t0)
    expected = board_order(SCORES, t0)

    # Every row is on its player's partition, and the partitions are more than one.
    rows = [
        item
        for item in await scores_items(service.runtime)
        if "rankKey" in item and item["leaderboardId"]["S"].startswith(BOARD_ID)
    ]
    assert len(rows) == len(SCORES)
    for item in rows:
        player = item["playerId"]["S"]
        assert item["leaderboardId"]["S"] == player_partition(BOARD_ID, player, SHARDS)
    assert len({item["leaderboardId"]["S"] for item in rows}) > 1

    # The top page, walked by its cursor: the whole board in order, ranks following on.
    walked: list[tuple[int, str]] = []
    cursor: str | None = None
    while True:
        page = await http.get(URL, params={"limit": 5} | ({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200, page.text
        body = page.json()
        assert body["leaderboardId"] == BOARD_ID
        assert body["playerCount"] == len(SCORES)
        walked += [(e["rank"], e["playerId"]) for e in body["entries"]]
        cursor = body.get("nextCursor")
        if cursor is None:
            break
    assert walked == list(enumerate(expected, start=1))

    # Each player's own rank, exact, and the players around one in the middle.
    for rank, player in enumerate(expected, start=1):
        own = (await http.get(f"{URL}/players/{player}")).json()
        assert (own["rank"]["rank"], own["entry"]["playerId"]) == (rank, player), own
        assert own["rank"]["kind"] == "exact"
        assert own["entry"]["displayName"] == player.upper()
    middle = expected[10]
    around = await http.get(f"{URL}/players/{middle}/around", params={"before": 3, "after": 2})
    assert around.status_code == 200, around.text
    assert [(e["rank"], e["playerId"]) for e in around.json()["entries"]] == [
        (r, p) for r, p in enumerate(expected, start=1) if 8 <= r <= 13
    ]

    # The group board: those named, in board order, with their board ranks.
    named = [expected[20], expected[3], "nobody", expected[11]]
    group = await http.get(f"{URL}/players", params={"ids": ",".join(named), "withRank": "true"})
    assert group.status_code == 200, group.text
    assert [
        (e["groupRank"], e["entry"]["playerId"], e["rank"]["rank"]) for e in group.json()["entries"]
    ] == [
        (1, expected[3], 4),
        (2, expected[11], 12),
        (3, expected[20], 21),
    ]

    # Standings name the board, not the partition.
    standings = (await http.get(f"/v1/players/{middle}/standings")).json()["boards"]
    assert [(s["leaderboardId"], s["rank"]["rank"]) for s in standings] == [(BOARD_ID, 11)]

    # A snapshot holds the board's top across its shards.
    taken = await http.post(f"{URL}/snapshots?top=10", headers=ADMIN)
    assert taken.status_code == 201, taken.text
    assert taken.json()["playerCount"] == len(SCORES)
    assert [e["playerId"] for e in taken.json()["entries"]] == expected[:10]


async def test_rank_delta_on_a_sharded_board_counts_every_shard(service: Service) -> None:
    http = service.http
    await define(http)
    t0 = now_ms() - 60_000
    await fill(http, SCORES, t0)
    expected = board_order(SCORES, t0)
    climber = expected[-1]
    climb = await submit(http, player=climber, score=1050, achieved_ms=t0 + 5, variant="live")
    assert climb.status_code == 200, climb.text
    board = climb.json()["boards"][0]
    assert board["leaderboardId"] == BOARD_ID
    assert (board["rankBefore"], board["rankAfter"]) == (len(SCORES), 1)
    newcomer = await submit(http, player="zz", score=0, achieved_ms=t0 + 9, variant="live")
    assert newcomer.json()["boards"][0]["rankAfter"] == len(SCORES) + 1
    still = await submit(http, player=expected[5], score=0, achieved_ms=t0, variant="live")
    assert (still.json()["boards"][0]["rankBefore"], still.json()["boards"][0]["rankAfter"]) == (
        7,  # the climber went ahead of everyone
        7,
    )


async def test_sum_and_ascending_sharded_boards_rank_as_unsharded_ones(service: Service) -> None:
    http = service.http
    await define(http, "weekly", operator="sum")
    await define(http, "race", order="asc")
    t0 = now_ms() - 60_000
    for i in range(12):
        for variant, score in (("weekly", 10 * i), ("weekly", 5), ("race", 1000 + 7 * i)):
            sent = await submit(
                http, player=f"r{i:02d}", score=score, achieved_ms=t0 + i, variant=variant
            )
            assert sent.status_code == 200, sent.text
    weekly = (await http.get("/v1/leaderboards/trivia/weekly/alltime")).json()
    assert [(e["playerId"], e["score"]) for e in weekly["entries"]][:3] == [
        ("r11", 115),
        ("r10", 105),
        ("r09", 95),
    ]
    assert weekly["playerCount"] == 12
    race = (await http.get("/v1/leaderboards/trivia/race/alltime", params={"limit": 100})).json()
    assert [e["playerId"] for e in race["entries"]] == [f"r{i:02d}" for i in range(12)]
    own = (await http.get("/v1/leaderboards/trivia/race/alltime/players/r04")).json()
    assert own["rank"]["rank"] == 5


async def test_a_row_of_a_sharded_board_is_only_on_its_partition(service: Service) -> None:
    """A board id is never taken for a partition id, nor the other way round."""
    http = service.http
    await define(http)
    await submit(http, player="solo", score=1, variant="live", rankDelta=False)
    items = [i for i in await scores_items(service.runtime) if i["playerId"]["S"] == "solo"]
    boards = {i["leaderboardId"]["S"] for i in items if "rankKey" in i}
    assert boards == {player_partition(BOARD_ID, "solo", SHARDS)}
    assert {board_of_partition(b) for b in boards} == {BOARD_ID}


async def test_reconcile_over_http_says_which_shard_drifted(service: Service) -> None:
    http = service.http
    await define(http)
    t0 = now_ms() - 60_000
    await fill(http, SCORES, t0)
    drifted = player_partition(BOARD_ID, "p05", SHARDS)
    bucket, _ = LAYOUT.slot_of(SCORES["p05"])
    await service.runtime.client.update_item(  # three players too many in the shard's bucket
        TableName=service.runtime.tables.scores,
        Key={"playerId": {"S": coarse_pk(drifted, 0)}, "leaderboardId": {"S": f"{bucket:04d}"}},
        UpdateExpression="ADD n :d",
        ExpressionAttributeValues={":d": {"N": "3"}},
    )
    checked = await http.post(f"{URL}/reconcile", headers=ADMIN)
    assert checked.status_code == 200, checked.text
    report = checked.json()
    assert (report["boardId"], report["playerCount"]) == (BOARD_ID, len(SCORES))
    assert [d["stored"] - d["counted"] for d in report["differences"]] == [3]
    assert [s["partitionId"] for s in report["shards"]] == partition_ids(BOARD_ID, SHARDS)
    assert {s["partitionId"]: s["differences"] for s in report["shards"] if s["differences"]} == {
        drifted: 1
    }
    assert sum(s["playerCount"] for s in report["shards"]) == len(SCORES)


async def test_a_submission_whose_rank_reads_are_throttled_is_written_without_ranks(
    service: Service, dynamo_endpoint: str
) -> None:
    """On a hot board the score matters more than the ranks around it: when DynamoDB throttles
    the counter reads rankDelta needs (past botocore's own retries), the submission is written
    all the same and says no rank."""
    http = service.http
    await define(http)
    t0 = now_ms() - 60_000
    await fill(http, dict(list(SCORES.items())[:6]), t0)
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("Query", 10_000, lambda _: throttled(), matching=_counter_read))
    sent = await submit(http, player="late", score=950, achieved_ms=t0 + 7, variant="live")
    assert sent.status_code == 200, sent.text
    board = sent.json()["boards"][0]
    assert "rankAfter" not in board or board["rankAfter"] is None
    assert (board["improved"], board["best"]) == (True, 950)
    faults.rules.clear()
    own = (await http.get(f"{URL}/players/late")).json()
    assert own["entry"]["score"] == 950
    metrics = (await http.get("/metrics")).text
    assert 'leaderboard_rank_answers_total{kind="skipped"}' in metrics


def _counter_read(body: dict[str, Any]) -> bool:
    values = body.get("ExpressionAttributeValues", {})
    return any(str(v.get("S", "")).startswith("hist#") for v in values.values())
