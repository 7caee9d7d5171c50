"""One short run of the use cases (submissions, a replay, reads, a conflict per port, an erasure)
against the real adapters in the embedded DynamoDB and against ``tests.fakes_board.MemoryBoards``:
both must answer it the same, call for call."""

from __future__ import annotations

from dataclasses import dataclass

from app.bootstrap import Runtime
from app.domain.clock import from_ms
from app.domain.definitions import BoardDefinition
from app.domain.models import CounterDelta
from app.domain.periods import Board, Period, PeriodKind
from app.domain.submission import Submission
from app.errors import StoreError
from app.services.operations._erasure import erase_player
from app.services.policies import Policies
from app.services.ports import (
    BoardIndex,
    CounterStore,
    ErasureMarks,
    FineItem,
    RankReader,
    RegisteredBoard,
    RequestStore,
    SnapshotStore,
    StandingStore,
    SubmissionStore,
)
from app.services.ranking.pages import PlayerCounts, read_board
from app.services.reads._players import around_player, player_rank
from app.services.registry import BoardRegistrar
from app.services.submissions._submit import submit_score
from app.services.submissions.in_flight import KeysInFlight, SeenLeases
from tests.fakes import MemoryBoards, MemoryRegistry, MemorySnapshots

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


@dataclass(frozen=True)
class Ports:
    submissions: SubmissionStore
    standings: StandingStore
    requests: RequestStore
    erasures: ErasureMarks
    index: BoardIndex
    counters: CounterStore
    ranks: RankReader
    snapshots: SnapshotStore


async def _run(ports: Ports, policies: Policies) -> list[object]:
    """What the use cases and the ports answer, in order (an error by its type and kind)."""
    seen: list[object] = []
    registrar = BoardRegistrar(_Registry())
    in_flight, leases = KeysInFlight(hold_s=30), SeenLeases(ttl_s=0)

    async def submit(i: int) -> None:
        player, score, back = PLAYS[i]
        result = await submit_score(
            submissions=ports.submissions,
            ranks=ports.ranks,
            registrar=registrar,
            in_flight=in_flight,
            leases=leases,
            policy=policies.submit,
            definition=DEFINITION,
            client="c",
            idempotency_key=f"k{i}",
            request_hash=f"h{i}",
            submission=Submission(player, score, "trivia", "classic", achieved_at_ms=NOW_MS - back),
            now_ms=NOW_MS,
        )
        seen.append((result.replayed, result.outcome))

    for i in range(len(PLAYS)):
        await submit(i)
    await submit(0)  # a replay
    page = await read_board(
        index=ports.index,
        counters=ports.counters,
        player_counts=PlayerCounts(ttl_s=0),
        policy=policies.reads,
        board=BOARD,
        retention=DEFINITION.retention,
        limit=2,
        cursor=None,
        now=NOW,
    )
    seen.append((page.player_count, page.entries, page.next_cursor is not None))
    for player in ["ann", "bob", "cat"]:
        seen.append(await ports.standings.read_standing(BOARD.board_id, player))
        found = await player_rank(
            standings=ports.standings,
            ranks=ports.ranks,
            policy=policies.reads,
            board=BOARD,
            definition=DEFINITION,
            player_id=player,
            now=NOW,
        )
        seen.append(found.rank)
    around = await around_player(
        standings=ports.standings,
        index=ports.index,
        ranks=ports.ranks,
        policy=policies.reads,
        board=BOARD,
        definition=DEFINITION,
        player_id="ann",
        before=1,
        after=1,
        now=NOW,
    )
    seen.append(around.neighbours)

    # A conflict per writing port: each refused alike, nothing of it applied.
    stale = await ports.standings.read_standing(BOARD.board_id, "bob")
    assert stale is not None
    assert await ports.standings.mark_tie(BOARD.board_id, stale.entry.key, 0)
    bucket, slot = policies.layout.fine_of(stale.entry.score)
    for attempt in [
        ports.standings.delete_standing(
            stale, counters=(CounterDelta(bucket, slot, -1),), now_s=NOW_MS // 1000
        ),
        ports.counters.set_counter(
            BOARD.board_id, FineItem(bucket, slot), n=5, expected=4, expires_at=None
        ),
    ]:
        try:
            await attempt
        except StoreError as exc:
            # The adapter's own subclass (with DynamoDB's reasons) is the port's error.
            port_error = next(c for c in type(exc).__mro__ if c.__module__ == "app.errors")
            seen.append((port_error.__name__, getattr(exc, "kind", None)))
    seen.append(await ports.standings.rekey(BOARD.board_id, stale.entry.key, stale.entry.key))
    seen.append(await ports.standings.read_standing(BOARD.board_id, "bob"))  # version, no mark
    seen.append(await ports.ranks.fine_counts(BOARD.board_id, bucket, slot, slot))

    report = await erase_player(
        standings=ports.standings,
        requests=ports.requests,
        snapshots=ports.snapshots,
        marks=ports.erasures,
        player_id="ann",
        layout=policies.layout,
        now=NOW,
    )
    seen.append(report)
    seen.append(await ports.counters.coarse_counts(BOARD.board_id))
    seen.append(await ports.standings.rows_of_player("ann"))
    seen.append([row.board_id for row in await ports.standings.standings_of("cat")])
    return seen


async def test_the_fake_answers_a_run_as_the_adapters_do(runtime: Runtime) -> None:
    stores = runtime.stores
    real = Ports(
        stores.submissions,
        stores.standings,
        stores.requests,
        stores.erasures,
        stores.index,
        stores.counters,
        stores.ranks,
        stores.snapshots,
    )
    table = MemoryBoards(shards=stores.counters.coarse_shards("game#variant#alltime"))
    fake = Ports(
        table.submissions,
        table.standings,
        table.requests,
        table.erasures,
        table.index,
        table.counters,
        table.ranks,
        MemorySnapshots(table, MemoryRegistry()),
    )
    expected = await _run(real, runtime.policies)
    assert len(expected) > 20
    assert await _run(fake, runtime.policies) == expected
