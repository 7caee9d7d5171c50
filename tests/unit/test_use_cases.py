"""Every use case of the ``Leaderboard`` the composition root builds, over the in-memory fakes of
its ports (``tests/fakes.py``): submissions, reads, board rules, operations and keys, each checked
against what was put in, with no backend."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from app.bootstrap import build_leaderboard, build_policies
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.keys import Order
from app.domain.periods import Board, Period, PeriodKind
from app.domain.ranks import ExactRank, Rank
from app.domain.seed_file import parse_seed_text
from app.domain.submission import Submission
from app.errors import (
    BoardBeingSeeded,
    Conflict,
    IdempotencyKeyReused,
    NotFound,
    Unauthorized,
    Unavailable,
)
from app.local.demo import load_demo
from app.services.leaderboard import Leaderboard
from app.services.ports import StoredDefinition
from app.services.registry import register_board
from app.settings import Settings
from tests.fakes import MemoryStores

GAME, VARIANT = "trivia", "classic"


@dataclass
class Service:
    leaderboard: Leaderboard
    fakes: MemoryStores
    now: datetime

    @property
    def alltime(self) -> Board:
        return Board(GAME, VARIANT, Period(PeriodKind.ALLTIME))

    async def submit(
        self, player: str, score: int, *, key: str | None = None, variant: str = VARIANT
    ) -> bool:
        """Submit a round now (``key``: its Idempotency-Key, by default one of its own); whether
        the answer was a replay."""
        fields = {"playerId": player, "score": score, "game": GAME, "variant": variant}
        result = await self.leaderboard.submissions.submit(
            Submission(player, score, GAME, variant, display_name=player.title()),
            client="game-server",
            idempotency_key=key or f"{player}-{score}",
            fields=fields,
            now_ms=to_ms(self.now),
        )
        return result.replayed

    async def top(self, board: Board | None = None) -> list[tuple[int, str, int]]:
        board = board or self.alltime
        definition = await self.leaderboard.rules.for_reading(board.game, board.variant)
        page = await self.leaderboard.reads.top(
            board, definition, limit=100, cursor=None, now=self.now
        )
        return [(r.rank, r.entry.player_id, r.entry.score) for r in page.entries]


def _service(settings: Settings | None = None) -> Service:
    """The service as ``app.bootstrap`` assembles it, over fakes, with no waiting: no grace before
    a seed's or a ranking change's writes, and no gap between a recount's walks (the fakes' index
    is never behind)."""
    settings = settings or Settings()
    fakes = MemoryStores()
    policies = build_policies(settings)
    policies = replace(
        policies,
        pass_gap_s=0,
        seed=replace(policies.seed, grace_s=0, settle_delay_s=0),
        redefine=replace(policies.redefine, grace_s=0, after_s=0),
        ranking=replace(policies.ranking, pass_gap_s=0),
    )
    leaderboard = build_leaderboard(settings, fakes.stores, policies)
    return Service(leaderboard, fakes, datetime.now(UTC))


def _exact(rank: Rank | None) -> int | None:
    return rank.rank if isinstance(rank, ExactRank) else None


SCORES = {"ann": 300, "bob": 500, "cat": 100, "dan": 400, "eve": 200}
BEST_FIRST = sorted(SCORES, key=lambda p: -SCORES[p])


async def test_submissions_fan_out_and_every_read_agrees_with_the_scores() -> None:
    service = _service()
    for player, score in SCORES.items():
        assert await service.submit(player, score) is False
    reads = service.leaderboard.reads
    board = service.alltime
    definition = await service.leaderboard.rules.for_reading(GAME, VARIANT)
    expected = [(i + 1, p, SCORES[p]) for i, p in enumerate(BEST_FIRST)]
    assert await service.top() == expected
    day = Board(GAME, VARIANT, Period.containing(PeriodKind.DAY, service.now))
    assert await service.top(day) == expected  # the day's board too

    for place, player in enumerate(BEST_FIRST, start=1):
        found = await reads.rank(board, definition, player, now=service.now)
        assert _exact(found.rank) == place
    around = await reads.around(board, definition, "ann", before=1, after=1, now=service.now)
    assert [(n.entry.player_id, around.rank_of(n)) for n in around.neighbours] == [
        ("dan", 2),
        ("ann", 3),
        ("eve", 4),
    ]
    group = await reads.group(board, definition, ["cat", "bob"], with_rank=True, now=service.now)
    assert [(m.group_rank, m.entry.player_id, _exact(m.rank)) for m in group] == [
        (1, "bob", 1),
        (2, "cat", 5),
    ]
    standings = await reads.standings("dan", now=service.now)
    assert standings.next_cursor is None
    assert {(s.board.period.kind, _exact(s.rank)) for s in standings.boards} == {
        (PeriodKind.ALLTIME, 2),
        (PeriodKind.DAY, 2),
        (PeriodKind.WEEK, 2),
    }
    listing = await reads.boards(now=service.now)
    assert [g.game for g in listing.games] == [GAME]
    with pytest.raises(NotFound):
        await reads.rank(board, definition, "nobody", now=service.now)


async def test_a_resent_submission_is_replayed_and_a_reused_key_refused() -> None:
    service = _service()
    assert await service.submit("ann", 300, key="k1") is False
    assert await service.submit("ann", 300, key="k1") is True
    with pytest.raises(IdempotencyKeyReused):
        await service.submit("ann", 900, key="k1")
    assert await service.top() == [(1, "ann", 300)]


async def test_a_defined_variant_ranks_by_its_rules_and_its_order_cannot_change_once_played() -> (
    None
):
    service = _service()
    rules = service.leaderboard.rules
    laps = BoardDefinition(order=Order.ASC, periods=(PeriodKind.ALLTIME,))
    await rules.define(GAME, "laps", laps, now=service.now)
    assert [d.variant for d in await rules.variants(GAME)] == ["laps"]
    assert (await rules.show(GAME, "laps")).definition == laps
    for player, score in SCORES.items():
        await service.submit(player, score, variant="laps")
    fastest = sorted(SCORES, key=lambda p: SCORES[p])
    board = Board(GAME, "laps", Period(PeriodKind.ALLTIME))
    assert [p for _, p, _ in await service.top(board)] == fastest
    with pytest.raises(Conflict):
        await rules.define(GAME, "laps", replace(laps, order=Order.DESC), now=service.now)
    # A change that keeps the order and the operator lands at once.
    await rules.define(GAME, "laps", replace(laps, retention_days=7), now=service.now)
    assert (await rules.for_reading(GAME, "laps")).retention_days == 7
    # The change held nothing: its boards take submissions again.
    assert not service.fakes.table.leases


def _held_service(grace_s: float, after_s: float) -> Service:
    """A service whose ranking changes hold their boards as in production."""
    service = _service()
    rules = service.leaderboard.rules
    rules._policy = replace(rules._policy, grace_s=grace_s, after_s=after_s)
    return service


async def test_a_variant_no_task_has_submitted_to_is_defined_without_its_grace() -> None:
    # Nothing is registered, so no task has read these boards' leases: none can be writing.
    service = _held_service(grace_s=60, after_s=30)
    laps = BoardDefinition(order=Order.ASC, periods=(PeriodKind.ALLTIME,))
    told: list[tuple[str, int, int | None]] = []
    async with asyncio.timeout(5):
        await service.leaderboard.rules.define(
            GAME, "laps", laps, now=service.now, progress=lambda *said: told.append(said)
        )
    assert told == []
    # Its boards stay held for tasks that may still hold the default, but a submission under
    # the new definition is let through at once.
    assert service.fakes.table.leases
    for player, score in SCORES.items():
        await service.submit(player, score, variant="laps")
    board = Board(GAME, "laps", Period(PeriodKind.ALLTIME))
    assert [p for _, p, _ in await service.top(board)] == sorted(SCORES, key=SCORES.__getitem__)


async def test_a_variant_with_registered_boards_is_held_for_its_grace_and_says_so() -> None:
    service = _held_service(grace_s=2, after_s=0)
    await register_board(
        registry=service.fakes.registry,
        board=Board(GAME, "laps", Period(PeriodKind.ALLTIME)),
        definition=BoardDefinition(),
    )
    laps = BoardDefinition(order=Order.ASC, periods=(PeriodKind.ALLTIME,))
    told: list[tuple[str, int, int | None]] = []
    began = time.monotonic()
    await service.leaderboard.rules.define(
        GAME, "laps", laps, now=service.now, progress=lambda *said: told.append(said)
    )
    assert time.monotonic() - began >= 2
    assert told[0] == ("holding boards", 0, 2)
    assert told[-1] == ("holding boards", 2, 2)


async def test_a_submission_registers_its_boards_before_it_reads_their_leases() -> None:
    service = _service()

    async def unavailable(board_id: str, *, expires_at: int | None) -> bool:
        raise Unavailable("the registry did not answer", retry_after=1)

    service.fakes.registry.register_board = unavailable  # type: ignore[method-assign]
    with pytest.raises(Unavailable):
        await service.submit("bob", 500)
    assert await service.top() == []


async def test_a_seeded_board_reads_back_and_reconciles_clean_until_a_counter_drifts() -> None:
    service = _service()
    board = service.alltime
    operations = service.leaderboard.operations
    definition = await service.leaderboard.rules.for_submitting(GAME, VARIANT)
    at = iso_ms(to_ms(service.now - timedelta(minutes=1)))
    text = "playerId,score,achievedAt\n" + "".join(f"{p},{s},{at}\n" for p, s in SCORES.items())
    seed = parse_seed_text(text, board=board, now=service.now, definition=definition)
    report = await operations.seed(board, seed)
    assert (report.rows_read, report.rows_created) == (5, 5)
    assert [p for _, p, _ in await service.top()] == BEST_FIRST
    assert service.fakes.table.leases == {}  # released

    clean = await operations.reconcile(board, definition, apply=False)
    assert (clean.player_count, clean.differences) == (5, [])
    # A counter off by one, as a lost write would leave it.
    coarse = service.fakes.table.coarse
    some = next(k for k in coarse if k[0] == board.board_id and coarse[k])
    coarse[some] -= 1
    dry = await operations.reconcile(board, definition, apply=False)
    assert (len(dry.differences), dry.repaired) == (1, [])
    fixed = await operations.reconcile(board, definition, apply=True)
    assert len(fixed.repaired) == 1
    assert (await operations.reconcile(board, definition, apply=False)).differences == []
    live = await operations.reconcile_live(apply=False, now=service.now)
    assert [r.board_id for r in live.boards] == [board.board_id]
    assert (live.drifted, live.failed) == ([], {})


async def test_a_board_being_seeded_refuses_submissions() -> None:
    service = _service()
    held = await service.fakes.leases.acquire_lease(
        service.alltime.board_id,
        holder="seeder",
        expires_at=int(service.now.timestamp()) + 60,
        now_s=int(service.now.timestamp()),
    )
    assert held is None
    with pytest.raises(BoardBeingSeeded):
        await service.submit("bob", 500)
    assert await service.top() == []


async def test_a_snapshot_is_listed_and_an_erased_player_leaves_boards_and_snapshots() -> None:
    service = _service()
    for player, score in SCORES.items():
        await service.submit(player, score)
    board = service.alltime
    definition = await service.leaderboard.rules.for_reading(GAME, VARIANT)
    operations, reads = service.leaderboard.operations, service.leaderboard.reads
    taken = await operations.snapshot(board, definition, now=service.now, top=3)
    assert [e.player_id for e in taken.entries] == BEST_FIRST[:3]
    assert [s.taken_at for s in await reads.snapshots(board)] == [taken.taken_at]

    erased = await operations.erase("dan", now=service.now)
    assert (erased.boards, erased.snapshots, erased.complete) == (3, 1, True)
    assert not [m for m in service.fakes.table.memberships if m[0] == "dan"]
    assert (await service.leaderboard.reads.standings("dan", now=service.now)).boards == []
    assert "dan" not in [p for _, p, _ in await service.top()]
    kept = await reads.snapshot(board, taken.taken_at)
    assert [e.player_id for e in kept.entries] == ["bob", None, "ann"]
    assert kept.entries[1].score == SCORES["dan"]  # the place and score stay, the player goes


async def test_keys_are_issued_recognised_listed_and_revoked() -> None:
    service = _service()
    keys = service.leaderboard.api_keys
    token = await keys.create("studio", ["submit:trivia"])
    principal = await keys.authenticate(f"Bearer {token}")
    assert principal.name == "studio"
    principal.require_submit(GAME)
    listed = await keys.list()
    assert [(k.name, k.revoked_at) for k in listed] == [("studio", None)]
    revoked = await keys.revoke("studio")
    assert revoked[0].revoked_at is not None
    with pytest.raises(Unauthorized):
        await keys.authenticate("Bearer lb_live_not-a-key")


async def test_the_service_is_ready_only_while_the_tables_answer() -> None:
    service = _service()
    await service.leaderboard.ping()
    service.fakes.tables.down = True
    with pytest.raises(Unavailable):
        await service.leaderboard.ping()


async def test_a_closed_days_board_gets_its_snapshot_once() -> None:
    service = _service()
    three_days_ago = service.now - timedelta(days=3)
    day = Board(GAME, VARIANT, Period.containing(PeriodKind.DAY, three_days_ago))
    definition = await service.leaderboard.rules.for_submitting(GAME, VARIANT)
    at = iso_ms(to_ms(three_days_ago))
    text = "playerId,score,achievedAt\n" + "".join(f"{p},{s},{at}\n" for p, s in SCORES.items())
    seed = parse_seed_text(text, board=day, now=service.now, definition=definition)
    await service.leaderboard.operations.seed(day, seed)

    operations = service.leaderboard.operations
    report = await operations.snapshot_closed_periods(now=service.now, top=3)
    assert [(s.board_id, [e.player_id for e in s.entries]) for s in report.taken] == [
        (day.board_id, BEST_FIRST[:3])
    ]
    again = await operations.snapshot_closed_periods(now=service.now, top=3)
    assert (again.taken, again.already_taken) == ([], [day.board_id])


async def test_the_registered_variants_are_held_before_a_request_asks() -> None:
    service = _service()
    await service.submit("ann", 300)  # registers the variant's boards
    rules = service.leaderboard.rules
    laps = BoardDefinition(operator=Operator.LATEST, periods=(PeriodKind.ALLTIME,))
    service.fakes.definitions.stored[(GAME, VARIANT)] = StoredDefinition(
        GAME, VARIANT, laps, "2026-12-01T00:00:00.000Z"
    )  # defined on another task
    rebuilt = build_leaderboard(Settings(), service.fakes.stores, build_policies(Settings()))
    assert await rebuilt.rules.hold_registered() == (1, 1)
    reads = service.fakes.definitions.reads
    assert (await rebuilt.rules.for_reading(GAME, VARIANT)).operator is Operator.LATEST
    assert service.fakes.definitions.reads == reads  # held: no read of its own
    assert (await rules.show(GAME, VARIANT)).definition != laps  # this task's copy, until it lapses


async def test_the_demo_fills_its_boards_through_the_same_methods() -> None:
    service = _service()
    boards = await load_demo(service.leaderboard, players=12)
    assert len(boards) == len(set(boards)) == 10
    for board_id in boards:
        board = Board.from_id(board_id)
        assert await service.top(board), board_id
    assert await service.leaderboard.rules.variants("kart")  # the demo defined its variants


async def test_the_tables_are_created_once() -> None:
    service = _service()
    operations = service.leaderboard.operations
    assert (await operations.create_tables()).created == ["scores", "snapshots"]
    again = await operations.create_tables(deletion_protection=True)
    assert (again.created, again.protected) == ([], ["scores", "snapshots"])


async def test_a_board_of_two_orders_is_given_its_own() -> None:
    """Rows written under a descending definition, on a board that now ranks ascending (a change
    raced by submissions): the reconciler's rekey gives each row the board's order."""
    service = _service()
    for player, score in SCORES.items():
        await service.submit(player, score)
    board = service.alltime
    ascending = BoardDefinition(order=Order.ASC)
    operations = service.leaderboard.operations
    found = await operations.rekey(board, ascending, apply=False)
    assert (found.found, found.rekeyed) == (5, 0)
    done = await operations.rekey(board, ascending, apply=True)
    assert (done.found, done.rekeyed) == (5, 5)
    await operations.reconcile(board, ascending, apply=True)
    page = await service.leaderboard.reads.top(
        board, ascending, limit=10, cursor=None, now=service.now
    )
    assert [r.entry.player_id for r in page.entries] == BEST_FIRST[::-1]
    assert (await operations.rekey(board, ascending, apply=False)).found == 0
