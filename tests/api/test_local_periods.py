"""Periods in the players' time and seasons, over HTTP (DESIGN.md section 15, docs/boards.md):
a variant's time zone and seasons in its definition, scores fanned out to the local day and the
season holding them, every board read's ``period``, and the definitions refused."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx

from app.domain.clock import iso_ms, to_ms
from tests.conftest import ADMIN_KEY, Service
from tests.support import now_ms, submit

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
GAME = "trivia"


async def define(http: httpx.AsyncClient, variant: str, **fields: Any) -> httpx.Response:
    return await http.put(f"/v1/games/{GAME}/variants/{variant}", json=fields, headers=ADMIN)


def at(moment: datetime) -> str:
    return iso_ms(to_ms(moment))


def local_midnight(zone: ZoneInfo, day: datetime) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)


async def test_a_variant_s_day_is_its_local_day_and_every_read_says_its_span(
    service: Service,
) -> None:
    http = service.http
    zone = ZoneInfo("Pacific/Kiritimati")  # UTC+14: most of the UTC day is the next day there
    defined = await define(http, "kiri", timeZone="Pacific/Kiritimati")
    assert defined.status_code == 200, defined.text
    assert defined.json()["timeZone"] == "Pacific/Kiritimati"
    moment = datetime.now(UTC) - timedelta(seconds=1)
    local = moment.astimezone(zone)
    posted = await submit(http, player="ada", score=7, achieved_ms=to_ms(moment), variant="kiri")
    assert posted.status_code == 200, posted.text
    periods = {b["period"] for b in posted.json()["boards"]}
    assert f"day:{local.date().isoformat()}" in periods
    starts = local_midnight(zone, local)
    ends = local_midnight(zone, local + timedelta(days=1))
    expected = {
        "id": f"day:{local.date().isoformat()}",
        "startsAt": at(starts),
        "endsAt": at(ends),
        "nextResetAt": at(ends),
    }
    board = f"/v1/leaderboards/{GAME}/kiri/day"
    for path in (
        board,
        f"{board}/players/ada",
        f"{board}/players/ada/around",
        f"{board}/snapshots",
    ):
        read = await http.get(path)
        assert read.status_code == 200, (path, read.text)
        assert read.json()["period"] == expected, path
    group = await http.get(f"{board}/players", params={"ids": "ada"})
    assert group.json()["period"] == expected
    assert (await http.get(board)).json()["entries"][0]["playerId"] == "ada"
    # A past day: its own span, and the next reset is still the current day's end.
    yesterday = local - timedelta(days=1)
    past = await http.get(f"/v1/leaderboards/{GAME}/kiri/day:{yesterday.date().isoformat()}")
    assert past.json()["period"] == {
        "id": f"day:{yesterday.date().isoformat()}",
        "startsAt": at(local_midnight(zone, yesterday)),
        "endsAt": at(starts),
        "nextResetAt": at(ends),
    }
    alltime = await http.get(f"/v1/leaderboards/{GAME}/kiri/alltime")
    assert alltime.json()["period"] == {
        "id": "alltime",
        "startsAt": None,
        "endsAt": None,
        "nextResetAt": None,
    }


async def test_a_score_goes_to_the_season_holding_it_and_seasons_are_read_by_id(
    service: Service,
) -> None:
    http = service.http
    now = datetime.now(UTC)
    running = {
        "id": "s2",
        "startsAt": at(now - timedelta(days=1)),
        "endsAt": at(now + timedelta(days=1)),
    }
    coming = {
        "id": "s3",
        "startsAt": at(now + timedelta(days=2)),
        "endsAt": at(now + timedelta(days=9)),
    }
    defined = await define(http, "ranked", seasons=[coming, running])
    assert defined.status_code == 200, defined.text
    body = defined.json()
    assert body["periods"] == ["alltime", "day", "week", "season"]
    assert [s["id"] for s in body["seasons"]] == ["s2", "s3"]
    posted = await submit(
        http, player="ada", score=5, achieved_ms=now_ms() - 1000, variant="ranked"
    )
    assert posted.status_code == 200, posted.text
    assert "season:s2" in {b["period"] for b in posted.json()["boards"]}
    current = await http.get(f"/v1/leaderboards/{GAME}/ranked/season")
    assert current.status_code == 200, current.text
    assert current.json()["period"] == {
        "id": "season:s2",
        "startsAt": running["startsAt"],
        "endsAt": running["endsAt"],
        "nextResetAt": running["endsAt"],
    }
    assert [e["playerId"] for e in current.json()["entries"]] == ["ada"]
    by_id = await http.get(f"/v1/leaderboards/{GAME}/ranked/season:s2/players/ada")
    assert by_id.status_code == 200
    assert by_id.json()["rank"]["rank"] == 1
    later = await http.get(f"/v1/leaderboards/{GAME}/ranked/season:s3")
    assert later.status_code == 200
    assert later.json()["entries"] == []
    assert later.json()["period"]["startsAt"] == coming["startsAt"]
    unknown = await http.get(f"/v1/leaderboards/{GAME}/ranked/season:s9")
    assert unknown.status_code == 404
    assert "no season 's9'" in unknown.json()["detail"]


async def test_a_score_outside_every_season_goes_to_none(service: Service) -> None:
    http = service.http
    now = datetime.now(UTC)
    later = {
        "id": "next",
        "startsAt": at(now + timedelta(days=1)),
        "endsAt": at(now + timedelta(days=2)),
    }
    assert (
        await define(http, "gap", periods=["alltime", "season"], seasons=[later])
    ).status_code == 200
    posted = await submit(http, player="ada", score=5, achieved_ms=now_ms() - 1000, variant="gap")
    assert posted.status_code == 200, posted.text
    assert [b["period"] for b in posted.json()["boards"]] == ["alltime"]
    none_running = await http.get(f"/v1/leaderboards/{GAME}/gap/season")
    assert none_running.status_code == 404
    assert "no season is running" in none_running.json()["detail"]
    assert none_running.headers["content-type"] == "application/problem+json"


async def test_bad_zones_and_seasons_are_422_and_change_nothing(service: Service) -> None:
    http = service.http
    now = datetime.now(UTC)
    one = {"id": "a", "startsAt": at(now), "endsAt": at(now + timedelta(days=3))}
    overlapping = {
        "id": "b",
        "startsAt": at(now + timedelta(days=2)),
        "endsAt": at(now + timedelta(days=4)),
    }
    cases: list[tuple[dict[str, Any], str]] = [
        ({"timeZone": "Mars/Olympus"}, "unknown time zone"),
        ({"seasons": [one, overlapping]}, "overlap"),
        (
            {
                "seasons": [
                    one,
                    {
                        **overlapping,
                        "id": "a",
                        "startsAt": at(now + timedelta(days=5)),
                        "endsAt": at(now + timedelta(days=6)),
                    },
                ]
            },
            "once",
        ),
        ({"seasons": [{**one, "endsAt": one["startsAt"]}]}, "end after it starts"),
        ({"seasons": [{**one, "startsAt": "2027-01-01T00:00:00"}]}, "timezone"),
        ({"seasons": [{**one, "id": "no spaces"}]}, "characters"),
        ({"periods": ["alltime", "season"]}, "needs seasons"),
        ({"periods": ["alltime"], "seasons": [one]}, "name season in periods"),
    ]
    for fields, words in cases:
        refused = await define(http, "strict", **fields)
        assert refused.status_code == 422, (fields, refused.text)
        assert words in refused.text, (words, refused.text)
    shown = await http.get(f"/v1/games/{GAME}/variants/strict")
    assert shown.json()["defined"] is False


async def test_an_ended_season_and_a_zone_under_entries_cannot_change(service: Service) -> None:
    http = service.http
    now = datetime.now(UTC)
    short = {
        "id": "blitz",
        "startsAt": at(now - timedelta(hours=1)),
        "endsAt": at(now + timedelta(seconds=1.5)),
    }
    assert (await define(http, "blitz", seasons=[short])).status_code == 200
    posted = await submit(http, player="ada", score=5, achieved_ms=now_ms() - 1000, variant="blitz")
    assert posted.status_code == 200, posted.text
    moved_zone = await define(http, "blitz", seasons=[short], timeZone="Europe/Paris")
    assert moved_zone.status_code == 409, moved_zone.text
    assert "timeZone" in moved_zone.json()["detail"]
    await asyncio.sleep(2)
    changed = {**short, "endsAt": at(now + timedelta(days=1))}
    refused = await define(http, "blitz", seasons=[changed])
    assert refused.status_code == 409, refused.text
    assert "has ended" in refused.json()["detail"]
    dropped = await define(http, "blitz", periods=["alltime"])
    assert dropped.status_code == 409, dropped.text
    kept = await define(
        http,
        "blitz",
        seasons=[
            short,
            {
                "id": "next",
                "startsAt": at(now + timedelta(days=1)),
                "endsAt": at(now + timedelta(days=2)),
            },
        ],
    )
    assert kept.status_code == 200, kept.text
    shown = (await http.get(f"/v1/games/{GAME}/variants/blitz")).json()
    assert [s["id"] for s in shown["seasons"]] == ["blitz", "next"]
    assert shown["timeZone"] == "UTC"
