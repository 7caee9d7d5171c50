"""The operators' use cases on a sharded board (``app.domain.shards``), over the in-memory fakes
(``tests/fakes.py``): a seed puts each row on its player's partition and counts each partition on
its own, the reconciler repairs one partition and reports it as the board's, erasure fixes the
player's partition, the rekey walks every partition; and the progress of partitions worked on at
once reads as one board's."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from app.bootstrap import build_leaderboard, build_policies
from app.domain.buckets import BucketLayout
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import Order
from app.domain.periods import Board, Period, PeriodKind
from app.domain.seed_file import parse_seed_text
from app.domain.shards import partition_ids, player_partition
from app.services.leaderboard import Leaderboard
from app.services.work import Stage, shared_progress
from app.settings import Settings
from tests.fakes import MemoryStores

BOARD = Board("trivia", "sharded", Period(PeriodKind.ALLTIME))
SHARDS = 4
DEFINITION = BoardDefinition(shards=SHARDS)
PARTITIONS = partition_ids(BOARD.board_id, SHARDS)
SCORES = {f"p{i:02d}": 1_000 + 37 * i for i in range(24)}
LAYOUT = BucketLayout()


def _leaderboard() -> tuple[Leaderboard, MemoryStores]:
    """As ``app.bootstrap`` assembles it, over fakes, with no waiting (``test_use_cases``)."""
    settings = Settings()
    fakes = MemoryStores()
    policies = build_policies(settings)
    policies = replace(
        policies,
        pass_gap_s=0,
        seed=replace(policies.seed, grace_s=0, settle_delay_s=0),
        ranking=replace(policies.ranking, pass_gap_s=0),
    )
    return build_leaderboard(settings, fakes.stores, policies), fakes


async def _seeded(definition: BoardDefinition = DEFINITION) -> tuple[Leaderboard, MemoryStores]:
    leaderboard, fakes = _leaderboard()
    now = datetime.now(UTC)
    at = iso_ms(to_ms(now - timedelta(minutes=1)))
    text = "playerId,score,achievedAt\n" + "".join(f"{p},{s},{at}\n" for p, s in SCORES.items())
    seed = parse_seed_text(text, board=BOARD, now=now, definition=definition)
    report = await leaderboard.operations.seed(BOARD, seed)
    assert (report.board_id, report.player_count) == (BOARD.board_id, len(SCORES))
    return leaderboard, fakes


def _players_on(fakes: MemoryStores) -> Counter[str]:
    """Rows per partition id."""
    return Counter(board for _, board in fakes.table.rows)


def _counted(fakes: MemoryStores) -> dict[str, int]:
    """Each partition's player count, from its coarse counters."""
    return {pid: sum(fakes.table.coarse_totals(pid).values()) for pid in PARTITIONS}


def _expected() -> dict[str, int]:
    placed = Counter(player_partition(BOARD.board_id, p, SHARDS) for p in SCORES)
    return {pid: placed[pid] for pid in PARTITIONS}


async def test_a_seed_puts_each_row_on_its_players_partition_and_counts_each() -> None:
    _, fakes = await _seeded()
    table = fakes.table
    assert {(p, b) for p, b in table.rows} == {
        (p, player_partition(BOARD.board_id, p, SHARDS)) for p in SCORES
    }
    assert _counted(fakes) == _expected() == dict(_players_on(fakes))
    assert {board for board, _, _ in table.coarse} <= set(PARTITIONS)
    assert table.incomplete == {}  # every partition's mark set, and cleared
    assert table.calls["mark_incomplete"] == table.calls["clear_incomplete"] == SHARDS
    assert table.leases == {}
    assert [r.board_id for r in await fakes.registry.registered_boards()] == [BOARD.board_id]


async def test_the_reconciler_repairs_one_partition_and_reports_it_as_the_boards() -> None:
    leaderboard, fakes = await _seeded()
    operations = leaderboard.operations
    damaged = player_partition(BOARD.board_id, "p05", SHARDS)
    bucket, _ = LAYOUT.slot_of(SCORES["p05"])
    fakes.table.coarse[(damaged, 0, bucket)] += 3

    dry = await operations.reconcile(BOARD, DEFINITION, apply=False)
    assert (dry.board_id, dry.player_count, len(dry.differences)) == (
        BOARD.board_id,
        len(SCORES),
        1,
    )
    assert dry.differences[0].stored - dry.differences[0].counted == 3
    assert [s.board_id for s in dry.shards] == PARTITIONS
    assert [s.board_id for s in dry.shards if s.differences] == [damaged]

    fixed = await operations.reconcile(BOARD, DEFINITION, apply=True)
    assert fixed.repaired == dry.differences
    assert _counted(fakes) == _expected()
    assert fakes.table.incomplete == {}
    # Only the damaged partition was marked while its counters were known wrong.
    assert fakes.table.calls["mark_incomplete"] == SHARDS + 1
    assert (await operations.reconcile(BOARD, DEFINITION, apply=False)).drift == 0


async def test_erasure_fixes_the_players_partition() -> None:
    leaderboard, fakes = await _seeded()
    partition = player_partition(BOARD.board_id, "p05", SHARDS)
    erased = await leaderboard.operations.erase("p05", now=datetime.now(UTC))
    assert erased.boards == 1
    assert ("p05", partition) not in fakes.table.rows
    assert _counted(fakes) == {**_expected(), partition: _expected()[partition] - 1}


async def test_the_rekey_gives_every_partitions_rows_the_boards_order() -> None:
    leaderboard, fakes = await _seeded()
    ascending = replace(DEFINITION, order=Order.ASC)
    operations = leaderboard.operations
    assert (await operations.rekey(BOARD, ascending, apply=False)).found == len(SCORES)
    done = await operations.rekey(BOARD, ascending, apply=True)
    assert (done.board_id, done.found, done.rekeyed) == (BOARD.board_id, len(SCORES), len(SCORES))
    assert {row.standing.entry.key.order_by for row in fakes.table.rows.values()} == {Order.ASC}
    assert dict(_players_on(fakes)) == _expected()  # each row stays on its partition
    assert (await operations.rekey(BOARD, ascending, apply=False)).found == 0


def test_partitions_worked_on_at_once_tell_their_progress_as_one_boards() -> None:
    told: list[tuple[Stage, int, int | None]] = []

    def progress(stage: Stage, done: int, total: int | None) -> None:
        told.append((stage, done, total))

    first, second = shared_progress(progress, 2)
    assert first is not None
    assert second is not None
    first("recounting", 5, None)
    second("recounting", 3, 10)
    first("recounting", 7, 7)
    second("recounting", 10, 10)
    assert told == [
        ("recounting", 5, None),
        ("recounting", 8, None),  # the size is known once every partition has told its own
        ("recounting", 10, 17),
        ("recounting", 17, 17),
    ]
    assert shared_progress(progress, 1) == [progress]
    assert shared_progress(None, 3) == [None, None, None]
