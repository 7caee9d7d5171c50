"""Joins as a use case over the placements fake (decision 0039): first come first placed,
exactly once however they race, a lost answer told apart from a repeat, 10,000 players into
cohorts of 50 with none over and all full."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from app.domain.cohorts import Placement
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board, Period, PeriodKind
from app.errors import Contended, EntrantsFull, NotFound, TransactionCancelled
from app.services.cohorts import JoinAsk, PlacePolicy
from app.services.cohorts._join import join
from app.services.ports.entrants import LeagueWrite
from tests.fakes_cohorts import MemoryEntrants

BOARD = Board("trivia", "cup", Period(PeriodKind.WEEK, "2026-W49"))
POLICY = PlacePolicy(attempts=64, backoff_base_s=0.0, backoff_cap_s=0.0)


def ask(player: str, **fields: int | bool) -> JoinAsk:
    return JoinAsk(BOARD, BoardDefinition(**fields), player)  # type: ignore[arg-type]


async def test_ten_thousand_racing_joins_make_two_hundred_full_cohorts_of_fifty() -> None:
    entrants = MemoryEntrants()
    outcomes = []
    for wave in range(0, 10_000, 25):  # 25 in flight: a game server's burst
        outcomes += await asyncio.gather(
            *(
                join(entrants, POLICY, ask(f"p{i:05d}", cohort_size=50))
                for i in range(wave, wave + 25)
            )
        )
    assert all(o.first for o in outcomes)
    cohorts = Counter(o.placement.cohort_id for o in outcomes)
    assert len(cohorts) == 200
    assert set(cohorts.values()) == {50}
    seats = sorted(o.placement.seat for o in outcomes)
    assert seats == list(range(10_000))
    assert entrants.placed[(BOARD.board_id, None)] == 10_000


async def test_a_race_for_the_last_places_places_exactly_as_many() -> None:
    entrants = MemoryEntrants()
    for i in range(10):
        await join(entrants, POLICY, ask(f"early{i}", cohort_size=7, max_entrants=20))
    racing = await asyncio.gather(
        *(
            join(entrants, POLICY, ask(f"late{i}", cohort_size=7, max_entrants=20))
            for i in range(50)
        ),
        return_exceptions=True,
    )
    placed = [r for r in racing if not isinstance(r, BaseException)]
    assert len(placed) == 10
    assert all(isinstance(r, EntrantsFull) for r in racing if isinstance(r, BaseException))
    assert entrants.placed[(BOARD.board_id, None)] == 20


async def test_a_repeat_is_the_same_place_and_not_first() -> None:
    entrants = MemoryEntrants()
    first = await join(entrants, POLICY, ask("ann", cohort_size=5))
    again = await join(entrants, POLICY, ask("ann", cohort_size=5))
    assert first.first
    assert not again.first
    assert again.placement.seat == first.placement.seat
    assert entrants.placed[(BOARD.board_id, None)] == 1


class _LostAnswer(MemoryEntrants):
    """Applies the first placement, then answers as a resend that met its own write would."""

    async def place(
        self,
        placement: Placement,
        *,
        max_entrants: int | None,
        expires_at: int | None,
        league: LeagueWrite | None = None,
    ) -> None:
        await super().place(placement, max_entrants=max_entrants, expires_at=expires_at)
        if self.calls["place"] == 1:
            raise TransactionCancelled("the resend found its own write", kind="condition")


async def test_a_placement_whose_answer_was_lost_is_still_the_first() -> None:
    entrants = _LostAnswer()
    outcome = await join(entrants, POLICY, ask("ann", cohort_size=5))
    assert outcome.first
    assert entrants.placed[(BOARD.board_id, None)] == 1  # no seat burnt


async def test_a_variant_that_places_nobody_is_not_found() -> None:
    with pytest.raises(NotFound, match="takes no joins"):
        await join(MemoryEntrants(), POLICY, ask("ann"))


class _AlwaysRaced(MemoryEntrants):
    async def place(
        self,
        placement: Placement,
        *,
        max_entrants: int | None,
        expires_at: int | None,
        league: LeagueWrite | None = None,
    ) -> None:
        # Another placement got there first.
        self.placed[(placement.board_id, None)] = placement.seat + 1
        raise TransactionCancelled("raced", kind="condition")


async def test_a_placement_raced_on_every_try_is_a_503_and_places_nobody() -> None:
    entrants = _AlwaysRaced()
    with pytest.raises(Contended):
        await join(entrants, PlacePolicy(3, 0.0, 0.0), ask("ann", cohort_size=5))
    assert entrants.placements == {}
