"""Claims of rewards on closed boards (``app.services.seasons``), over the in-memory fakes: the
first claim is the request's own (201) and every later one answers the same claim (200), a resend
after a lost answer is still the first, a period not closed or a player not on the board is
refused, the rank is exact even where a rank read is a range, and erasure removes the claims."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from app.bootstrap import build_leaderboard, build_policies
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board, Period, PeriodKind
from app.domain.seed_file import parse_seed_text
from app.errors import NotFound, PeriodOpen
from app.services.leaderboard import Leaderboard
from app.services.seasons import ClaimAsk, ClaimPolicy, Claims
from app.settings import Settings
from tests.fakes import MemoryStores

END = datetime(2026, 12, 6, tzinfo=UTC)
DAY = Board("trivia", "classic", Period.containing(PeriodKind.DAY, END - timedelta(hours=1)))
LATENESS = timedelta(hours=1)
AFTER_CLOSE = END + LATENESS + timedelta(seconds=1)
SCORES = {f"p{i:02d}": 1_000 + 3 * (i % 7) for i in range(30)}
"""Many players on few values: a capped COUNT in their slot is a range."""


def _leaderboard(fakes: MemoryStores) -> Leaderboard:
    settings = Settings(max_lateness_seconds=int(LATENESS.total_seconds()))
    policies = build_policies(settings)
    policies = replace(policies, seed=replace(policies.seed, grace_s=0, settle_delay_s=0))
    return build_leaderboard(settings, fakes.stores, policies)


async def _seeded(
    definition: BoardDefinition, board: Board = DAY
) -> tuple[Leaderboard, MemoryStores]:
    fakes = MemoryStores()
    leaderboard = _leaderboard(fakes)
    at = iso_ms(to_ms(END - timedelta(hours=2)))
    text = "playerId,score,achievedAt\n" + "".join(f"{p},{s},{at}\n" for p, s in SCORES.items())
    seed = parse_seed_text(text, board=board, now=END, definition=definition)
    await leaderboard.operations.seed(board, seed)
    return leaderboard, fakes


def _true_ranks() -> dict[str, int]:
    order = sorted(SCORES, key=lambda p: (-SCORES[p], p))
    return {player: i for i, player in enumerate(order, start=1)}


def _ask(player: str, token: str, *, now: datetime = AFTER_CLOSE) -> ClaimAsk:
    return ClaimAsk(DAY, BoardDefinition(), player, now, token)


async def test_the_first_claim_is_the_requests_own_and_every_later_one_the_same() -> None:
    leaderboard, fakes = await _seeded(BoardDefinition())
    first = await leaderboard.claims.claim(_ask("p06", "request-1"))
    assert first.first
    assert (first.claim.rank, first.claim.player_count) == (_true_ranks()["p06"], len(SCORES))
    assert first.claim.claimed_at == iso_ms(to_ms(AFTER_CLOSE))
    later = await leaderboard.claims.claim(_ask("p06", "request-2", now=AFTER_CLOSE + LATENESS))
    assert not later.first
    assert later.claim == first.claim
    # The same request again (a retry with its Idempotency-Key) answers as the first did.
    again = await leaderboard.claims.claim(_ask("p06", "request-1"))
    assert again.first
    assert again.claim == first.claim
    assert len(fakes.table.claims) == 1


async def test_a_resend_after_a_lost_answer_is_still_the_first() -> None:
    leaderboard, fakes = await _seeded(BoardDefinition())
    fakes.table.claim_ledger.lose_next = 1
    outcome = await leaderboard.claims.claim(_ask("p01", "request-1"))
    assert outcome.first


async def test_a_claim_before_the_close_is_refused_and_records_nothing() -> None:
    leaderboard, fakes = await _seeded(BoardDefinition())
    for now in (END - timedelta(minutes=1), END + LATENESS - timedelta(seconds=1)):
        with pytest.raises(PeriodOpen) as refused:
            await leaderboard.claims.claim(_ask("p01", "request-1", now=now))
        assert 1 <= refused.value.retry_after <= 2 * 3600
    alltime = Board("trivia", "classic", Period(PeriodKind.ALLTIME))
    with pytest.raises(PeriodOpen):
        await leaderboard.claims.claim(
            ClaimAsk(alltime, BoardDefinition(), "p01", AFTER_CLOSE, "request-1")
        )
    assert fakes.table.claims == {}


async def test_a_player_not_on_the_board_or_a_board_past_retention_is_not_found() -> None:
    leaderboard, fakes = await _seeded(BoardDefinition(retention_days=1))
    with pytest.raises(NotFound):
        await leaderboard.claims.claim(_ask("nobody", "request-1"))
    past = AFTER_CLOSE + timedelta(days=2)
    with pytest.raises(NotFound):
        await leaderboard.claims.claim(
            ClaimAsk(DAY, BoardDefinition(retention_days=1), "p01", past, "request-1")
        )
    assert fakes.table.claims == {}


@pytest.mark.parametrize("shards", [1, 4])
async def test_the_rank_is_exact_where_a_rank_read_is_a_range(shards: int) -> None:
    definition = BoardDefinition(shards=shards)
    leaderboard, fakes = await _seeded(definition)
    # A COUNT capped at 1: every rank read past the top of its slot is a range.
    policy = ClaimPolicy(leaderboard.operations._policies.layout, 1, LATENESS)
    claims = Claims(fakes.stores, fakes.stores.claims, policy)
    truth = _true_ranks()
    for player in SCORES:
        outcome = await claims.claim(ClaimAsk(DAY, definition, player, AFTER_CLOSE, "r"))
        assert (outcome.claim.rank, outcome.claim.player_count) == (truth[player], len(SCORES))


async def test_erasure_removes_the_players_claims() -> None:
    leaderboard, fakes = await _seeded(BoardDefinition())
    await leaderboard.claims.claim(_ask("p01", "request-1"))
    await leaderboard.claims.claim(_ask("p02", "request-2"))
    report = await leaderboard.operations.erase("p01", now=AFTER_CLOSE)
    assert (report.boards, report.claims) == (1, 1)
    assert list(fakes.table.claims) == [("p02", DAY.board_id)]
    again = await leaderboard.operations.erase("p01", now=AFTER_CLOSE)
    assert again.claims == 0
