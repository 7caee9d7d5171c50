"""A crowded slot built by the submissions that fill it, before anyone reads it (decision 0035),
over the in-memory fakes (``tests/fakes.py``) with the service as ``app.bootstrap`` assembles it:
what a submission tells the task's tie builds, and what that costs: no call of its own; a counter
read every ``cap / 16`` submissions one task lands in a slot with no grain."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from app.bootstrap import build_leaderboard, build_policies
from app.domain.buckets import BucketLayout
from app.domain.clock import to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import Order, RankKey
from app.domain.periods import Board, Period, PeriodKind
from app.domain.ranks import ExactRank
from app.domain.shards import player_partition
from app.domain.submission import Submission
from app.domain.ties import tie_group
from app.services.leaderboard import Leaderboard
from app.services.policies import RankingPolicy
from app.services.ranking import slot_builds
from app.services.ranking.slot_builds import SlotBuilds, SlotToBuild
from app.settings import Settings
from tests.fakes import MemoryStores

GAME, VARIANT = "trivia", "classic"
BOARD = Board(GAME, VARIANT, Period(PeriodKind.ALLTIME))
ALLTIME = BoardDefinition(periods=(PeriodKind.ALLTIME,))
CAP = 40
"""A task reads a slot's counter at every 2 submissions it lands there."""
NOW = datetime.now(UTC)


@dataclass
class Service:
    leaderboard: Leaderboard
    fakes: MemoryStores

    @property
    def builds(self) -> SlotBuilds:
        return self.leaderboard.ranking.builds

    async def submit(
        self, player: str, score: int, *, at_ms: int | None = None, rank_delta: bool = False
    ) -> None:
        """One round's result, then the builds it started run to their end (the fakes never
        make a call wait, so a background build would otherwise run only at the next ``await``
        that does)."""
        await self.leaderboard.submissions.submit(
            Submission(player, score, GAME, VARIANT, at_ms, rank_delta=rank_delta),
            client="game-server",
            idempotency_key=f"{player}-{score}-{at_ms}",
            fields={"playerId": player, "score": score, "at": at_ms},
            now_ms=to_ms(NOW),
        )
        await self.builds.settled()

    async def exact_ranks(self, players: list[str]) -> list[int | None]:
        found = []
        for player in players:
            rank = (await self.leaderboard.reads.rank(BOARD, ALLTIME, player, now=NOW)).rank
            found.append(rank.rank if isinstance(rank, ExactRank) else None)
        return found


async def _service(
    definition: BoardDefinition = ALLTIME, *, fakes: MemoryStores | None = None, **settings: Any
) -> Service:
    """A task of the service over ``fakes`` (new ones by default: another task's, to share them),
    with the variant defined as ``definition``."""
    values: dict[str, Any] = {"rank_count_cap": CAP, **settings}
    configured = Settings(**values)
    fakes = fakes or MemoryStores()
    policies = build_policies(configured)
    policies = replace(policies, ranking=replace(policies.ranking, pass_gap_s=0))
    leaderboard = build_leaderboard(configured, fakes.stores, policies)
    await leaderboard.rules.define(GAME, VARIANT, definition, now=NOW, hold=False)
    return Service(leaderboard, fakes)


def _round(n: int) -> list[tuple[str, int]]:
    """``(player, achieved ms)`` of ``n`` players, each on a millisecond of their own."""
    base = to_ms(NOW) - 3_000_000
    return [(f"p{i:03d}", base + 7_919 * i) for i in range(n)]


async def test_a_crowded_round_is_exact_at_its_first_read() -> None:
    service = await _service()
    players = _round(60)
    for player, at in players:
        await service.submit(player, 500, at_ms=at)
    assert service.fakes.table.grains, "the submissions had the crowded slot built"
    calls_before = service.fakes.table.calls["board_keys"]
    assert await service.exact_ranks([p for p, _ in players]) == list(range(1, 61))
    assert service.fakes.table.calls["board_keys"] == calls_before  # no read asked for a build


async def test_an_ordinary_submission_makes_the_calls_it_made_without_live_builds() -> None:
    """Players on scores of their own: the same calls, one for one, as with no live builds at
    all; and no counter read, since no slot saw ``cap / CHECKS_PER_CAP`` of them land."""
    calls = []
    for live in (True, False):
        service = await _service(tie_builds_on_read=live)
        service.fakes.table.calls.clear()
        for i in range(30):
            await service.submit(f"p{i:02d}", 1_000 + 37 * i)
        calls.append(dict(service.fakes.table.calls))
    assert calls[0] == calls[1]
    assert "ranks.fine_counts" not in calls[0]


async def test_a_slot_s_counter_is_read_every_few_landed_there_until_it_is_built() -> None:
    service = await _service()
    table = service.fakes.table
    step = CAP // slot_builds.CHECKS_PER_CAP
    checks = []
    for i, (player, at) in enumerate(_round(CAP + 8), start=1):
        before = table.calls["ranks.fine_counts"]
        await service.submit(player, 500, at_ms=at)
        if table.calls["ranks.fine_counts"] > before:
            checks.append(i)
    # Read every ``step`` landed while the slot held the cap or fewer (every rank in it exact
    # with no tie counters); built at the first read past it; then the submissions read its
    # grain and count nothing.
    first_past = (CAP // step + 1) * step
    assert checks == list(range(step, first_past + 1, step))
    assert len(table.grains) == 1
    assert table.calls["board_keys"] == 2  # one build: two walks that agreed


async def test_eight_tasks_sharing_a_round_build_its_slot_before_half_a_cap_more() -> None:
    """Eight tasks taking a round's submissions in turn, each counting only its own: one of them
    reads the slot's counter past the cap, and builds it, before the slot holds half a cap
    more."""
    first = await _service()
    tasks = [first] + [await _service(fakes=first.fakes) for _ in range(7)]
    table = first.fakes.table
    built_at = None
    for i, (player, at) in enumerate(_round(2 * CAP), start=1):
        await tasks[i % len(tasks)].submit(player, 500, at_ms=at)
        if built_at is None and table.grains:
            built_at = i
    assert built_at is not None
    assert CAP < built_at <= CAP + CAP // 2


async def test_moves_inside_a_slot_land_nothing_new_there() -> None:
    """A player who improves inside their slot adds no entry to it: not counted."""
    service = await _service()
    seen: list[tuple[str, RankKey]] = []
    service.builds.landed = lambda board_id, key, **_: seen.append((board_id, key))  # type: ignore[method-assign]
    layout = BucketLayout()
    low, high = 900_000_000, 900_000_001
    assert layout.slot_of(low) == layout.slot_of(high)  # a wide slot
    await service.submit("ann", low, at_ms=to_ms(NOW) - 10_000)
    await service.submit("ann", high, at_ms=to_ms(NOW) - 5_000)  # same slot, a better score
    await service.submit("ann", 2 * high, at_ms=to_ms(NOW) - 1_000)  # another slot
    assert [layout.slot_of(key.score) for _, key in seen] == [
        layout.slot_of(low),
        layout.slot_of(2 * high),
    ]


async def test_a_range_after_a_move_asks_for_the_build_at_once() -> None:
    """``rankDelta``: the rank after the move is a range, so the slot is crowded; its build is
    asked for as a read's range asks (no counting, no counter read first)."""
    service = await _service(rank_count_cap=4)
    wanted: list[str] = []
    original = service.builds.wanted

    def asked(board_id: str, key: RankKey, *, expires_at: int | None) -> None:
        wanted.append(key.player_id)
        original(board_id, key, expires_at=expires_at)

    service.builds.wanted = asked  # type: ignore[method-assign]
    service.builds.landed = lambda *_, **__: None  # type: ignore[method-assign]
    players = _round(8)
    for player, at in players:
        await service.submit(player, 500, at_ms=at, rank_delta=True)
    # The fifth in board order is the first whose rank, before the build, is a range (4 ahead
    # in the slot: the cap); its ask builds the slot, and the later ones find it built.
    assert wanted[0] == "p004"
    assert service.fakes.table.grains
    assert await service.exact_ranks([p for p, _ in players]) == list(range(1, 9))


async def test_on_a_sharded_board_a_slot_is_counted_in_the_player_s_partition() -> None:
    sharded = replace(ALLTIME, shards=4)
    service = await _service(sharded)
    seen: list[str] = []
    service.builds.landed = lambda board_id, key, **_: seen.append(board_id)  # type: ignore[method-assign]
    for player, at in _round(12):
        await service.submit(player, 500, at_ms=at)
    assert seen == [player_partition(BOARD.board_id, p, 4) for p, _ in _round(12)]


async def test_a_slot_left_by_a_build_is_tried_again_by_the_next_submissions_after_a_minute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build that found nothing to do holds the slot for ``every_s``: the submissions landing
    meanwhile are counted, not checked, and the first ``cap / 16`` after it look again, as a
    read's range does."""
    filled = await _service(tie_builds_on_read=False)
    for player, at in _round(CAP + 1):
        await filled.submit(player, 500, at_ms=at)
    built: list[SlotToBuild] = []

    async def gives_up(stores: Any, policy: Any, wanted: SlotToBuild) -> None:
        built.append(wanted)

    monkeypatch.setattr(slot_builds, "build_slot_ties", gives_up)
    now = [0.0]
    policy = RankingPolicy(BucketLayout(), cap=CAP, build_group=tie_group(CAP), pass_gap_s=0)
    builds = SlotBuilds(filled.fakes.stores, policy, every_s=60, clock=lambda: now[0])
    key = RankKey(500, to_ms(NOW), "late", Order.DESC)
    step = CAP // slot_builds.CHECKS_PER_CAP
    table = filled.fakes.table
    table.calls.clear()

    async def land(times: int) -> None:
        for _ in range(times):
            builds.landed(BOARD.board_id, key, expires_at=None)
            await builds.settled()

    await land(step)
    assert (len(built), table.calls["ranks.fine_counts"]) == (1, 1)
    now[0] = 30.0
    await land(3 * step)  # held: counted, not read
    builds.wanted(BOARD.board_id, key, expires_at=None)
    await builds.settled()
    assert (len(built), table.calls["ranks.fine_counts"]) == (1, 1)
    now[0] = 61.0
    await land(1)  # the count carried over the hold: the first landing after it looks again
    assert (len(built), table.calls["ranks.fine_counts"]) == (2, 2)
    now[0] = 122.0
    builds.wanted(BOARD.board_id, key, expires_at=None)  # a read's range: no counter read
    await builds.settled()
    assert (len(built), table.calls["ranks.fine_counts"]) == (3, 2)


async def test_a_build_whose_walks_never_agreed_is_started_again_by_the_next_submissions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Submissions kept landing through every walk (a round still under way, or a busy task's
    slow one): the slot is not held, so the next ``cap / 16`` landings start the build again,
    not a minute later."""
    filled = await _service(tie_builds_on_read=False)
    for player, at in _round(CAP + 1):
        await filled.submit(player, 500, at_ms=at)
    built: list[SlotToBuild] = []

    async def still_moving(stores: Any, policy: Any, wanted: SlotToBuild) -> None:
        built.append(wanted)
        raise slot_builds.SlotStillMoving("moved between every walk")

    monkeypatch.setattr(slot_builds, "build_slot_ties", still_moving)
    policy = RankingPolicy(BucketLayout(), cap=CAP, build_group=tie_group(CAP), pass_gap_s=0)
    builds = SlotBuilds(filled.fakes.stores, policy, every_s=60, clock=lambda: 0.0)
    key = RankKey(500, to_ms(NOW), "late", Order.DESC)
    step = CAP // slot_builds.CHECKS_PER_CAP
    for _ in range(2 * step):
        builds.landed(BOARD.board_id, key, expires_at=None)
        await builds.settled()
    assert len(built) == 2
    builds.wanted(BOARD.board_id, key, expires_at=None)
    await builds.settled()
    assert len(built) == 3
