"""Moderation over HTTP on the embedded backend (DESIGN.md section 14): a hidden player is gone
from every read of every board of the game (top pages, playerCount, the others' exact ranks,
around, group boards, standings, their own rank) and keeps playing unaware; a ban refuses their
submissions and stores nothing; a restore brings everything back, later submissions included;
a void takes one entry off one board; the listing and the audit log, which names the key."""

from __future__ import annotations

from typing import Any

import httpx

from app.domain.clock import from_ms
from app.domain.definitions import DEFAULT_PERIODS
from app.domain.periods import Board, Period
from tests.conftest import ADMIN_KEY, SUBMIT_KEY, Service
from tests.support import assert_counts_agree, now_ms, scores_items, submit, written_items

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
PERIODS = ("alltime", "day", "week")
SCORES = {"ann": 900, "bob": 800, "cat": 700, "dan": 600, "eve": 500}


def board_ids(at_ms: int, variant: str = "classic") -> list[str]:
    return [
        Board("trivia", variant, Period.containing(kind, from_ms(at_ms))).board_id
        for kind in DEFAULT_PERIODS
    ]


async def fill(http: httpx.AsyncClient, scores: dict[str, int], at_ms: int, **extra: Any) -> None:
    for i, (player, score) in enumerate(scores.items()):
        response = await submit(http, player=player, score=score, achieved_ms=at_ms + i, **extra)
        assert response.status_code == 200, response.text


async def moderate(
    http: httpx.AsyncClient, player: str, action: str, reason: str = "aimbot"
) -> httpx.Response:
    return await http.put(
        f"/v1/games/trivia/moderation/players/{player}",
        json={"action": action, "reason": reason},
        headers=ADMIN,
    )


async def restore(http: httpx.AsyncClient, player: str) -> httpx.Response:
    return await http.delete(f"/v1/games/trivia/moderation/players/{player}", headers=ADMIN)


async def top(http: httpx.AsyncClient, period: str, variant: str = "classic") -> dict[str, Any]:
    response = await http.get(f"/v1/leaderboards/trivia/{variant}/{period}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def rank_of(http: httpx.AsyncClient, period: str, player: str) -> httpx.Response:
    return await http.get(f"/v1/leaderboards/trivia/classic/{period}/players/{player}")


async def assert_board(http: httpx.AsyncClient, expected: list[str]) -> None:
    """Every period board shows ``expected`` in order, exactly ranked, and nobody else."""
    for period in PERIODS:
        page = await top(http, period)
        assert [e["playerId"] for e in page["entries"]] == expected, period
        assert [e["rank"] for e in page["entries"]] == list(range(1, len(expected) + 1))
        assert page["playerCount"] == len(expected)
        for place, player in enumerate(expected, start=1):
            found = await rank_of(http, period, player)
            assert found.status_code == 200, found.text
            assert found.json()["rank"] == {
                "kind": "exact",
                "rank": place,
                "topPercent": found.json()["rank"]["topPercent"],
            }


async def test_a_hidden_player_is_gone_from_every_read(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    hidden = await moderate(http, "bob", "hide", "impossible streak")
    assert hidden.status_code == 200, hidden.text
    body = hidden.json()
    assert {k: body[k] for k in ("playerId", "game", "action", "reason")} == {
        "playerId": "bob",
        "game": "trivia",
        "action": "hide",
        "reason": "impossible streak",
    }
    assert body["since"].endswith("Z")
    # The others close the gap exactly: those behind bob move up by exactly one.
    await assert_board(http, ["ann", "cat", "dan", "eve"])
    for period in PERIODS:
        own = await rank_of(http, period, "bob")
        assert own.status_code == 404
        assert own.headers["content-type"].startswith("application/problem+json")
        around = await http.get(
            f"/v1/leaderboards/trivia/classic/{period}/players/cat/around",
            params={"before": 2, "after": 1},
        )
        assert [(e["playerId"], e["rank"]) for e in around.json()["entries"]] == [
            ("ann", 1),
            ("cat", 2),
            ("dan", 3),
        ]
        assert (
            await http.get(f"/v1/leaderboards/trivia/classic/{period}/players/bob/around")
        ).status_code == 404
        group = await http.get(
            f"/v1/leaderboards/trivia/classic/{period}/players",
            params={"ids": "bob,cat,ann", "withRank": "true"},
        )
        assert [
            (e["groupRank"], e["entry"]["playerId"], e["rank"]["rank"])
            for e in group.json()["entries"]
        ] == [(1, "ann", 1), (2, "cat", 2)]
    standings = await http.get("/v1/players/bob/standings")
    assert standings.json()["boards"] == []
    cat = await http.get("/v1/players/cat/standings")
    assert [b["rank"]["rank"] for b in cat.json()["boards"]] == [2, 2, 2]
    await assert_counts_agree(service.runtime, *board_ids(at))


async def test_a_hidden_player_keeps_playing_and_a_restore_brings_all_back(
    service: Service,
) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    assert (await moderate(http, "bob", "hide")).status_code == 200
    # Answered as usual: where the score would land among the players the board shows.
    later = await submit(http, player="bob", score=950, achieved_ms=at + 100)
    assert later.status_code == 200, later.text
    boards = later.json()["boards"]
    assert {(b["best"], b["previousBest"], b["improved"]) for b in boards} == {(950, 800, True)}
    assert {b.get("rankAfter") for b in boards} == {1}
    assert {b.get("rankBefore") for b in boards} == {2}
    newcomer = await submit(http, player="bob", score=10, achieved_ms=at + 200, variant="blitz")
    assert newcomer.status_code == 200, newcomer.text
    await assert_board(http, ["ann", "cat", "dan", "eve"])
    assert (await top(http, "alltime", "blitz"))["entries"] == []
    assert (await top(http, "alltime", "blitz"))["playerCount"] == 0
    await assert_counts_agree(service.runtime, *board_ids(at), *board_ids(at, "blitz"))

    restored = await restore(http, "bob")
    assert restored.status_code == 200, restored.text
    assert restored.json() == {"playerId": "bob", "game": "trivia", "rowsRestored": 6}
    await assert_board(http, ["bob", "ann", "cat", "dan", "eve"])
    assert (await top(http, "alltime"))["entries"][0]["score"] == 950
    blitz = await top(http, "alltime", "blitz")
    assert [(e["playerId"], e["score"]) for e in blitz["entries"]] == [("bob", 10)]
    await assert_counts_agree(service.runtime, *board_ids(at), *board_ids(at, "blitz"))
    items = await scores_items(service.runtime)
    assert not [i for i in items if "hiddenKey" in i or i["leaderboardId"]["S"] == "mod#trivia"]
    again = await restore(http, "bob")
    assert again.status_code == 404
    assert again.headers["content-type"].startswith("application/problem+json")


async def test_a_ban_refuses_submissions_and_stores_nothing(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    banned = await moderate(http, "bob", "ban", "cheat engine")
    assert banned.status_code == 200, banned.text
    assert banned.json()["action"] == "ban"
    before = await written_items(service.runtime)
    for variant in ("classic", "blitz"):
        refused = await submit(http, player="bob", score=999, achieved_ms=at + 9, variant=variant)
        assert refused.status_code == 403, refused.text
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["type"] == "/problems/player-banned"
    batch = await http.post(
        "/v1/scores:batch",
        json={
            "submissions": [
                {
                    "idempotencyKey": "k1",
                    "playerId": "bob",
                    "score": 5,
                    "game": "trivia",
                    "variant": "classic",
                },
                {
                    "idempotencyKey": "k2",
                    "playerId": "fay",
                    "score": 5,
                    "game": "trivia",
                    "variant": "classic",
                },
            ]
        },
        headers={"Authorization": f"Bearer {SUBMIT_KEY}"},
    )
    assert batch.status_code == 200, batch.text
    assert [r["status"] for r in batch.json()["results"]] == [403, 200]
    assert batch.json()["results"][0]["body"]["type"] == "/problems/player-banned"
    after = await written_items(service.runtime)
    bobs = [i for i in after if i["playerId"]["S"] == "bob"]
    assert bobs == [i for i in before if i["playerId"]["S"] == "bob"]
    await assert_board(http, ["ann", "cat", "dan", "eve", "fay"])
    # Another game is not this one's to ban.
    other = await submit(http, player="bob", score=1, game="chess", key=None)
    assert other.status_code == 401
    assert (await restore(http, "bob")).status_code == 200
    back = await submit(http, player="bob", score=999, achieved_ms=at + 10)
    assert back.status_code == 200, back.text
    assert (await top(http, "alltime"))["entries"][0]["playerId"] == "bob"
    await assert_counts_agree(service.runtime, *board_ids(at))


async def test_a_void_takes_one_entry_off_one_board(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    url = "/v1/leaderboards/trivia/classic/alltime/players/bob"
    voided = await http.delete(url, params={"reason": "impossible"}, headers=ADMIN)
    assert voided.status_code == 200, voided.text
    assert voided.json()["voided"]["playerId"] == "bob"
    assert voided.json()["voided"]["score"] == 800
    assert [e["playerId"] for e in (await top(http, "alltime"))["entries"]] == [
        "ann",
        "cat",
        "dan",
        "eve",
    ]
    assert (await top(http, "alltime"))["playerCount"] == 4
    assert (await rank_of(http, "alltime", "cat")).json()["rank"]["rank"] == 2
    assert (await rank_of(http, "day", "bob")).json()["rank"]["rank"] == 2
    assert (await http.delete(url, headers=ADMIN)).status_code == 404
    assert (
        await http.delete(url, headers={"Authorization": f"Bearer {SUBMIT_KEY}"})
    ).status_code == 403
    again = await submit(http, player="bob", score=100, achieved_ms=at + 50)
    assert again.status_code == 200
    assert (await rank_of(http, "alltime", "bob")).json()["rank"]["rank"] == 5
    await assert_counts_agree(service.runtime, *board_ids(at))
    log = (await http.get("/v1/games/trivia/moderation/log", headers=ADMIN)).json()
    assert [
        {k: e.get(k) for k in ("action", "playerId", "leaderboardId", "reason", "by")}
        for e in log["events"]
    ] == [
        {
            "action": "void",
            "playerId": "bob",
            "leaderboardId": "trivia#classic#alltime",
            "reason": "impossible",
            "by": "ops",
        }
    ]


async def test_the_listing_and_the_log(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    assert (await moderate(http, "ann", "hide", "r1")).status_code == 200
    assert (await moderate(http, "bob", "ban", "r2")).status_code == 200
    assert (await moderate(http, "cat", "hide", "r3")).status_code == 200
    assert (await restore(http, "ann")).status_code == 200
    listed = await http.get("/v1/games/trivia/moderation/players", headers=ADMIN)
    assert listed.status_code == 200, listed.text
    players = listed.json()["players"]
    assert [(p["playerId"], p["action"], p["reason"]) for p in players] == [
        ("bob", "ban", "r2"),
        ("cat", "hide", "r3"),
    ]
    assert listed.json()["nextCursor"] is None
    first = await http.get("/v1/games/trivia/moderation/players?limit=1", headers=ADMIN)
    cursor = first.json()["nextCursor"]
    assert [p["playerId"] for p in first.json()["players"]] == ["bob"]
    rest = await http.get(
        "/v1/games/trivia/moderation/players", params={"limit": 1, "cursor": cursor}, headers=ADMIN
    )
    assert [p["playerId"] for p in rest.json()["players"]] == ["cat"]

    events: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = await http.get("/v1/games/trivia/moderation/log", params=params, headers=ADMIN)
        assert page.status_code == 200, page.text
        events += page.json()["events"]
        cursor = page.json()["nextCursor"]
        if cursor is None:
            break
    assert [(e["action"], e["playerId"], e["by"]) for e in events] == [
        ("restore", "ann", "ops"),
        ("hide", "cat", "ops"),
        ("ban", "bob", "ops"),
        ("hide", "ann", "ops"),
    ]
    assert all("leaderboardId" not in e or e["leaderboardId"] is None for e in events)
    ats = [e["at"] for e in events]
    assert ats == sorted(ats, reverse=True)
    bad = await http.get(
        "/v1/games/trivia/moderation/log", params={"cursor": "nope"}, headers=ADMIN
    )
    assert bad.status_code == 400
    wrong = await http.get(
        "/v1/games/trivia/moderation/log",
        params={"cursor": rest.json()["nextCursor"] or first.json()["nextCursor"]},
        headers=ADMIN,
    )
    assert wrong.status_code == 400  # a listing's cursor is not the log's
    other_game = await http.get("/v1/games/chess/moderation/players", headers=ADMIN)
    assert other_game.json()["players"] == []
    metrics = (await http.get("/metrics")).text
    for action in ("hide", "ban", "restore"):
        assert f'leaderboard_moderation_actions_total{{action="{action}"}}' in metrics
    hidden = [
        line
        for line in metrics.splitlines()
        if line.startswith('leaderboard_moderated_rows_total{change="hidden"}')
    ]
    assert hidden
    assert float(hidden[0].split()[-1]) >= 9  # three players, three boards each


async def test_moderation_is_for_admin_keys_and_checks_its_input(service: Service) -> None:
    http = service.http
    url = "/v1/games/trivia/moderation/players/bob"
    body = {"action": "hide", "reason": "x"}
    assert (await http.put(url, json=body)).status_code == 401
    submitter = {"Authorization": f"Bearer {SUBMIT_KEY}"}
    assert (await http.put(url, json=body, headers=submitter)).status_code == 403
    assert (await http.get("/v1/games/trivia/moderation/log", headers=submitter)).status_code == 403
    for bad in (
        {"action": "delete", "reason": "x"},
        {"action": "hide"},
        {"reason": "x"},
        {"action": "hide", "reason": "x" * 501},
        {"action": "hide", "reason": "x", "y": 1},
    ):
        refused = await http.put(url, json=bad, headers=ADMIN)
        assert refused.status_code == 422, (bad, refused.text)
    assert (
        await http.put("/v1/games/trivia/moderation/players/b%23b", json=body, headers=ADMIN)
    ).status_code == 422
    assert (
        await http.put("/v1/games/idem/moderation/players/bob", json=body, headers=ADMIN)
    ).status_code == 422
    # Moderating a player with no entry yet is allowed: their first submissions come in hidden.
    assert (await http.put(url, json=body, headers=ADMIN)).status_code == 200


async def test_a_snapshot_reads_without_moderated_players_re_ranked(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    url = "/v1/leaderboards/trivia/classic/alltime/snapshots"
    taken = await http.post(url, headers=ADMIN)
    assert taken.status_code == 201, taken.text
    taken_at = taken.json()["snapshotTakenAt"]
    assert (await moderate(http, "bob", "hide")).status_code == 200
    assert (await moderate(http, "dan", "ban")).status_code == 200
    read = await http.get(f"{url}/{taken_at}")
    assert read.status_code == 200, read.text
    assert [(e["rank"], e["playerId"]) for e in read.json()["entries"]] == [
        (1, "ann"),
        (2, "cat"),
        (3, "eve"),
    ]
    assert read.json()["playerCount"] == 3
    assert (await restore(http, "bob")).status_code == 200
    back = (await http.get(f"{url}/{taken_at}")).json()
    assert [(e["rank"], e["playerId"]) for e in back["entries"]] == [
        (1, "ann"),
        (2, "bob"),
        (3, "cat"),
        (4, "eve"),
    ]
    assert back["playerCount"] == 4


async def test_a_sharded_board_closes_the_gap_exactly(service: Service) -> None:
    http, at = service.http, now_ms() - 60_000
    defined = await http.put(
        "/v1/games/trivia/variants/hot", json={"shards": 4, "periods": ["alltime"]}, headers=ADMIN
    )
    assert defined.status_code == 200, defined.text
    scores = {f"p{i}": 1000 - 10 * i for i in range(10)}
    await fill(http, scores, at, variant="hot")
    for player in ("p1", "p6"):
        assert (await moderate(http, player, "hide")).status_code == 200
    shown = [p for p in scores if p not in ("p1", "p6")]
    page = await top(http, "alltime", "hot")
    assert [e["playerId"] for e in page["entries"]] == shown
    assert [e["rank"] for e in page["entries"]] == list(range(1, 9))
    assert page["playerCount"] == 8
    for place, player in enumerate(shown, start=1):
        found = await http.get(f"/v1/leaderboards/trivia/hot/alltime/players/{player}")
        assert found.json()["rank"]["kind"] == "exact"
        assert found.json()["rank"]["rank"] == place
    assert (await http.get("/v1/leaderboards/trivia/hot/alltime/players/p6")).status_code == 404
    hot = [b for b in board_ids(at, "hot") if b.endswith("alltime")]
    await assert_counts_agree(service.runtime, *hot)
    for player in ("p1", "p6"):
        assert (await restore(http, player)).status_code == 200
    page = await top(http, "alltime", "hot")
    assert [e["playerId"] for e in page["entries"]] == list(scores)
    assert page["playerCount"] == 10
    await assert_counts_agree(service.runtime, *hot)
