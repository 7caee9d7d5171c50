"""Rows asked for at once are read in one strongly consistent BatchGetItem, through the real
adapter on the embedded backend: each asker gets their own row (or ``None``), a row written just
before it is asked is in the answer, and a batch DynamoDB throttles past the retries is every
asker's error."""

from __future__ import annotations

import asyncio

import pytest
from botocore.retries.standard import ExponentialBackoff

from app.bootstrap import Runtime
from app.domain.keys import RankKey
from app.domain.models import Entry, Standing, StandingWrite
from app.errors import Throttled
from tests.faults import fail_first, install, throttled
from tests.support import put_row

BOARD = "trivia#classic#alltime"


async def _rows(runtime: Runtime, players: list[str]) -> None:
    for i, player in enumerate(players):
        key = RankKey(100 + i, 1_800_000_000_000, player)
        await put_row(
            runtime, StandingWrite(BOARD, Standing(BOARD, Entry(key, player, None), 1), None)
        )


async def test_rows_asked_at_once_are_one_batch_each_with_its_own_row(
    runtime: Runtime, dynamo_endpoint: str
) -> None:
    players = [f"p{i:03d}" for i in range(150)]
    await _rows(runtime, players)
    faults = install(runtime.client, dynamo_endpoint)
    standings = runtime.stores.standings
    asked = [*players, "nobody", players[0]]  # one unknown, one asked twice
    found = await asyncio.gather(*(standings.read_standing(BOARD, p) for p in asked))
    assert [None if s is None else s.entry.key.player_id for s in found] == [*players, None, "p000"]
    assert [s.entry.key.score for s in found[:150] if s is not None] == list(range(100, 250))
    # 151 distinct rows: a batch of 100, sent as soon as it was full, and one of the rest.
    assert faults.seen["BatchGetItem"] == 2
    assert faults.seen["GetItem"] == 0


async def test_a_row_written_just_before_it_is_asked_is_read_as_written(runtime: Runtime) -> None:
    await _rows(runtime, ["ann"])
    moved = RankKey(999, 1_800_000_000_001, "ann")
    await put_row(runtime, StandingWrite(BOARD, Standing(BOARD, Entry(moved, "ann", None), 2), 1))
    found = await runtime.stores.standings.read_standing(BOARD, "ann")
    assert found is not None
    assert found.entry.key == moved


async def test_a_batch_throttled_past_the_retries_is_every_asker_s_error(
    runtime: Runtime, dynamo_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda _self, _context: 0.0)
    await _rows(runtime, ["ann", "bob"])
    faults = install(runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("BatchGetItem", 1000, lambda _: throttled()))
    standings = runtime.stores.standings
    found = await asyncio.gather(
        standings.read_standing(BOARD, "ann"),
        standings.read_standing(BOARD, "bob"),
        return_exceptions=True,
    )
    assert all(isinstance(f, Throttled) for f in found), found  # a 503 for each
    faults.rules.clear()
    again = await standings.read_standing(BOARD, "bob")
    assert again is not None
