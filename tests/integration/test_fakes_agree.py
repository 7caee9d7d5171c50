"""One short run of the use cases (submissions, a replay, reads, a conflict per port, an erasure)
against the real adapters in the embedded DynamoDB and against ``tests.fakes_board.MemoryBoards``:
both must answer it the same, call for call."""

from __future__ import annotations

from dataclasses import replace

from app.bootstrap import Runtime
from app.domain.clock import from_ms
from app.domain.definitions import BoardDefinition
from app.domain.models import CounterDelta
from app.domain.periods import Board, Period, PeriodKind
from app.domain.shards import partition_ids
from app.domain.storage_keys import record_sort_key
from app.domain.submission import Submission
from app.errors import StoreError
from app.services.operations._erasure import erase_player
from app.services.policies import Policies
from app.services.ports import (
    FineItem,
    RegisteredBoard,
    RegistryPage,
    Stores,
)
from app.services.ranking import Ranking
from app.services.reads._asks import BoardAsk, PageAsk
from app.services.reads._players import around_player, player_rank
from app.services.reads._top import read_page
from app.services.submissions._ask import SubmitAsk
from app.services.submissions._submit import write_submission
from app.services.submissions.in_flight import SeenLeases
from tests.fakes import MemoryBoards, MemoryStores

NOW_MS = 1_800_000_000_000
NOW = from_ms(NOW_MS)
DEFINITION = BoardDefinition(periods=(PeriodKind.ALLTIME, PeriodKind.DAY))
BOARD = Board("trivia", "classic", Period(PeriodKind.ALLTIME))
PLAYS = [("ann", 300, 5), ("bob", 300, 3), ("cat", 40, 9), ("ann", 200, 1), ("cat", 900, 2)]
"""Player, score, milliseconds before now: a tie of score, a lesser score, an improvement."""


class _Registry:
    """A ``BoardRegistry`` in a dict: registration is no board port, and not compared."""

    def __init__(self) -> None:
        self.boards: set[str] = set()

    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        known = board_id in self.boards
        self.boards.add(board_id)
        return not known

    async def registered_boards(self, *, prefix: str = "") -> list[RegisteredBoard]:
        return []

    async def registered_page(self, *, after: str, limit: int) -> RegistryPage:
        return RegistryPage([], None)


async def _run(stores: Stores, policies: Policies) -> list[object]:
    """What the use cases and the ports answer, in order (an error by its type and kind)."""
    seen: list[object] = []
    ranking = Ranking(stores, replace(policies.ranking, summary_s=0))
    leases = SeenLeases(ttl_s=0)
    asked = BoardAsk(BOARD, DEFINITION, NOW)

    async def submit(i: int) -> None:
        player, score, back = PLAYS[i]
        submission = Submission(player, score, "trivia", "classic", achieved_at_ms=NOW_MS - back)
        record = record_sort_key("c", f"k{i}")
        ask = SubmitAsk(submission, DEFINITION, NOW_MS - back, record, f"h{i}", NOW_MS)
        result = await write_submission(stores, policies.submit, ranking, leases, ask)
        seen.append((result.replayed, result.outcome))

    for i in range(len(PLAYS)):
        await submit(i)
    await submit(0)  # a replay
    page = await read_page(stores, policies.reads, ranking, asked, PageAsk(2, None, NOW))
    seen.append((page.player_count, page.entries, page.next_cursor is not None))
    for player in ["ann", "bob", "cat"]:
        seen.append(await stores.standings.read_standing(BOARD.board_id, player))
        found = await player_rank(stores, ranking, asked, player)
        seen.append(found.rank)
    around = await around_player(stores, ranking, asked, "ann", 1, 1)
    seen.append(around.neighbours)

    # A conflict per writing port: each refused alike, nothing of it applied.
    stale = await stores.standings.read_standing(BOARD.board_id, "bob")
    assert stale is not None
    assert await stores.standings.mark_tie(BOARD.board_id, stale.entry.key, 0)
    bucket, slot = policies.layout.slot_of(stale.entry.score)
    for attempt in [
        stores.standings.delete_standing(
            stale, counters=(CounterDelta(bucket, slot, -1),), now_s=NOW_MS // 1000
        ),
        stores.counters.set_counter(
            BOARD.board_id, FineItem(bucket, slot), n=5, expected=4, expires_at=None
        ),
    ]:
        try:
            await attempt
        except StoreError as exc:
            # The adapter's own subclass (with DynamoDB's reasons) is the port's error.
            port_error = next(c for c in type(exc).__mro__ if c.__module__ == "app.errors")
            seen.append((port_error.__name__, getattr(exc, "kind", None)))
    seen.append(await stores.standings.rekey(BOARD.board_id, stale.entry.key, stale.entry.key))
    seen.append(await stores.standings.read_standing(BOARD.board_id, "bob"))  # version, no mark
    seen.append(await stores.ranks.fine_counts(BOARD.board_id, bucket, slot, slot))

    report = await erase_player(stores, policies.layout, "ann", now=NOW)
    seen.append(report)
    seen.append(await stores.counters.coarse_counts(BOARD.board_id))
    seen.append(await stores.standings.rows_of_player("ann"))
    seen.append([row.board_id for row in await stores.standings.standings_of("cat")])

    # A sharded board: each bucket's players and version (every arrival moves it, also a move
    # inside the bucket), as a task's mirror reads them.
    hot = replace(DEFINITION, periods=(PeriodKind.ALLTIME,), shards=2)
    for i, (player, score) in enumerate([("ann", 300), ("bob", 310), ("ann", 305), ("cat", 9)]):
        submission = Submission(player, score, "trivia", "classic", achieved_at_ms=NOW_MS)
        ask = SubmitAsk(submission, hot, NOW_MS, record_sort_key("c", f"h{i}"), f"x{i}", NOW_MS)
        await write_submission(stores, policies.submit, ranking, leases, ask)
    pairs = [await stores.counters.coarse_versions(p) for p in partition_ids(BOARD.board_id, 2)]
    # Four arrivals (ann's move to 305 stays in its bucket, and still counts).
    assert sum(version for found in pairs for _, version in found.values()) == 4, pairs
    seen += pairs
    return seen


async def test_the_fake_answers_a_run_as_the_adapters_do(runtime: Runtime) -> None:
    real = replace(runtime.stores, registry=_Registry())
    table = MemoryBoards(shards=runtime.stores.counters.coarse_shards("game#variant#alltime"))
    fake = replace(MemoryStores(table=table).stores, registry=_Registry())
    expected = await _run(real, runtime.policies)
    assert len(expected) > 20
    assert await _run(fake, runtime.policies) == expected
