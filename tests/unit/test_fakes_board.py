"""The real use cases (submitting, a player's rank and neighbours, a board's pages, erasure, a tie
build) over ``tests.fakes_board.MemoryBoards``, checked against ranks found by sorting what was
submitted; and each port of the fake failing where and as its DynamoDB adapter does."""

from __future__ import annotations

import functools
import inspect
import random
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import pytest

from app.domain.buckets import BucketLayout
from app.domain.clock import from_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Standing, StandingWrite
from app.domain.periods import Board, Period, PeriodKind
from app.domain.ranks import EstimatedRank, ExactRank, Rank
from app.domain.seed_file import SeedRow
from app.domain.storage_keys import record_sort_key
from app.domain.submission import Submission
from app.domain.ties import tie_group
from app.errors import (
    ConditionFailed,
    CountsIncomplete,
    IdempotencyKeyReused,
    LeaseHeld,
    NotFound,
    PlayerBeingErased,
    StoreRejected,
    TransactionCancelled,
)
from app.services import ports
from app.services.operations._erasure import erase_player
from app.services.policies import RankingPolicy, ReadPolicy, SubmitPolicy
from app.services.ports import (
    BoardIndex,
    CoarseItem,
    CounterStore,
    ErasureMarks,
    FineItem,
    Lease,
    RankReader,
    RequestStore,
    StandingStore,
    SubmissionStore,
    SubmissionWrite,
)
from app.services.ranking import Ranking
from app.services.ranking.slot_builds import SlotToBuild, build_slot_ties
from app.services.reads import Around
from app.services.reads._asks import BoardAsk, PageAsk
from app.services.reads._players import around_player, player_rank
from app.services.reads._top import read_page
from app.services.submissions._ask import SubmitAsk
from app.services.submissions._submit import (
    SubmitResult,
    request_fingerprint,
    write_submission,
)
from app.services.submissions.in_flight import SeenLeases
from tests.fakes import MemoryBoards, MemoryStores

LAYOUT = BucketLayout(coarse=8, fine=4)
"""Few slots: players share them, so a rank needs the index's COUNT inside a slot too."""
CAP = 64
NOW_MS = 1_800_000_000_000  # 2027-01-15T08:00:00Z
NOW = from_ms(NOW_MS)
DEFINITION = BoardDefinition()
VARIANTS = [("trivia", "classic"), ("chess", "blitz")]
SUBMIT = SubmitPolicy(
    idempotency_ttl=timedelta(hours=24),
    max_lateness=timedelta(days=2),
    future_skew=timedelta(seconds=5),
    max_attempts=3,
    rank_cap=CAP,
    layout=LAYOUT,
    backoff_base_s=0.0,
    backoff_cap_s=0.0,
)
READS = ReadPolicy(layout=LAYOUT, cap=CAP, cursor_secret=b"a cursor secret of enough length")
RANKING = RankingPolicy(layout=LAYOUT, cap=CAP, pass_gap_s=0)


@dataclass
class Truth:
    """What was submitted, and each board's order found by sorting it (``best``, ``desc``)."""

    best: dict[str, dict[str, tuple[int, int]]] = field(default_factory=lambda: defaultdict(dict))
    """Board to player to ``(score, achievedAt)`` of their best."""

    def add(self, board_id: str, player: str, score: int, at: int) -> bool:
        held = self.best[board_id].get(player)
        if held is None or (-score, at) < (-held[0], held[1]):
            self.best[board_id][player] = (score, at)
            return True
        return False

    def order(self, board_id: str) -> list[str]:
        """The board's players, best first: the higher score, then the earlier, then the id."""
        held = self.best[board_id]
        return sorted(held, key=lambda p: (-held[p][0], held[p][1], p))

    def rank(self, board_id: str, player: str) -> int:
        return self.order(board_id).index(player) + 1

    def forget(self, player: str) -> None:
        for held in self.best.values():
            held.pop(player, None)


class World:
    """The fake table, and the service's memory around a submission, as the composition root
    builds them."""

    def __init__(self, *, cap: int = CAP) -> None:
        self.fakes = MemoryStores(table=MemoryBoards(shards=3))
        self.table = self.fakes.table
        self.registry = self.fakes.registry
        self.stores = self.fakes.stores
        self.ranking = Ranking(self.stores, replace(RANKING, cap=cap))
        self.leases = SeenLeases(ttl_s=0)
        self.truth = Truth()

    async def submit(
        self,
        player: str,
        score: int,
        *,
        key: str,
        at: int = NOW_MS,
        variant: tuple[str, str] = VARIANTS[0],
        now_ms: int = NOW_MS,
        definition: BoardDefinition = DEFINITION,
    ) -> SubmitResult:
        game, name = variant
        submission = Submission(player, score, game, name, achieved_at_ms=at, display_name=player)
        fields = {"playerId": player, "score": score, "achievedAt": at, "game": game, "v": name}
        ask = SubmitAsk(
            submission,
            definition,
            at,
            record_sort_key("game-server", key),
            request_fingerprint("game-server", fields),
            now_ms,
        )
        return await write_submission(self.stores, SUBMIT, self.ranking, self.leases, ask)

    async def rank(self, board: Board, player: str) -> Rank:
        found = await player_rank(
            self.stores, self.ranking, BoardAsk(board, DEFINITION, NOW), player
        )
        return found.rank

    async def around(self, board: Board, player: str, before: int, after: int) -> Around:
        asked = BoardAsk(board, DEFINITION, NOW)
        return await around_player(self.stores, self.ranking, asked, player, before, after)

    async def pages(self, board: Board, limit: int) -> tuple[list[tuple[int, str]], set[int]]:
        """Every page of the board, followed by cursor: (rank, player) in order, and the player
        counts the pages gave."""
        seen: list[tuple[int, str]] = []
        counts: set[int] = set()
        cursor: str | None = None
        asked = BoardAsk(board, DEFINITION, NOW)
        while True:
            page = await read_page(
                self.stores, READS, self.ranking, asked, PageAsk(limit, cursor, NOW)
            )
            seen += [(e.rank, e.entry.player_id) for e in page.entries]
            counts.add(page.player_count)
            if page.next_cursor is None:
                return seen, counts
            cursor = page.next_cursor


def boards_of(variant: tuple[str, str], at: int) -> list[Board]:
    return [
        Board(variant[0], variant[1], Period.containing(kind, from_ms(at)))
        for kind in DEFINITION.periods
    ]


@dataclass(frozen=True)
class Sent:
    player: str
    score: int
    at: int
    variant: tuple[str, str]


async def submitted_world(seed: int = 7) -> tuple[World, dict[str, Sent]]:
    """Twelve players' scores on two variants (some a day back, many ties of score), each outcome
    checked against the sorted truth as it lands. Returns the world and what each key sent."""
    world = World()
    rng = random.Random(seed)
    scores = [5, 5, 17, 300, 300, 4_000, 90_000, 90_000, 2_500_000, 10**9]
    sent: dict[str, Sent] = {}
    for i in range(48):
        player = f"p{rng.randrange(12):02d}"
        variant = VARIANTS[rng.randrange(2)]
        score = rng.choice(scores)
        at = NOW_MS - rng.choice([0, 1, 2, 60_000, 3_600_000, 30 * 3_600_000])
        key = f"k{i}"
        sent[key] = Sent(player, score, at, variant)
        boards = boards_of(variant, at)
        before = {b.board_id: world.truth.best[b.board_id].get(player) for b in boards}
        ranks_before = {
            b.board_id: world.truth.rank(b.board_id, player)
            for b in boards
            if before[b.board_id] is not None
        }
        improved = {b.board_id: world.truth.add(b.board_id, player, score, at) for b in boards}
        result = await world.submit(player, score, key=key, at=at, variant=variant)
        assert not result.replayed
        assert [o.board_id for o in result.outcome.boards] == [b.board_id for b in boards]
        for outcome in result.outcome.boards:
            board_id = outcome.board_id
            assert outcome.improved == improved[board_id], (i, board_id)
            assert outcome.best == world.truth.best[board_id][player][0]
            held = before[board_id]
            assert outcome.previous_best == (None if held is None else held[0])
            assert outcome.rank_after == world.truth.rank(board_id, player), (i, board_id)
            assert outcome.rank_before == ranks_before.get(board_id)
    return world, sent


def all_boards(world: World) -> list[Board]:
    return [Board.from_id(board_id) for board_id in sorted(world.truth.best)]


# ---- the use cases over the fake --------------------------------------------------------------


async def test_ranks_neighbours_and_pages_agree_with_sorting_the_scores() -> None:
    world, _ = await submitted_world()
    boards = all_boards(world)
    assert len(boards) >= 8  # both variants, and day and week boards of two days
    for board in boards:
        order = world.truth.order(board.board_id)
        for place, player in enumerate(order, start=1):
            rank = await world.rank(board, player)
            assert isinstance(rank, ExactRank), (board, player)
            assert rank.rank == place, (board, player)
            around = await world.around(board, player, before=2, after=3)
            expected = order[max(0, place - 3) : place + 3]
            assert [n.entry.player_id for n in around.neighbours] == expected
            assert [around.rank_of(n) for n in around.neighbours] == [
                order.index(p) + 1 for p in expected
            ]
        seen, counts = await world.pages(board, limit=3)
        assert seen == list(enumerate(order, start=1))
        assert counts == {len(order)}
        stored = await world.table.counters.read_counters(board.board_id, buckets=range(8))
        assert sum(stored.coarse.values()) == len(order)
        assert sum(stored.fine.values()) == len(order)
    with pytest.raises(NotFound):
        await world.rank(boards[0], "nobody")


async def test_a_replayed_key_answers_as_first_served_and_writes_nothing() -> None:
    world, sent = await submitted_world()
    rows = {address: row.standing for address, row in world.table.rows.items()}
    commits = world.table.calls["commit_submission"]
    for key in ["k0", "k20", "k47"]:
        first = sent[key]
        stored = world.table.records[(first.player, f"idem#game-server#{key}")]
        replayed = await world.submit(
            first.player, first.score, key=key, at=first.at, variant=first.variant
        )
        assert replayed.replayed
        assert replayed.outcome.to_json() == stored.response_json
        with pytest.raises(IdempotencyKeyReused):
            await world.submit(first.player, first.score + 1, key=key, at=first.at)
    assert world.table.calls["commit_submission"] == commits
    assert {address: row.standing for address, row in world.table.rows.items()} == rows


async def test_an_improvement_moves_the_player_and_a_lesser_score_only_touches_the_row() -> None:
    world = World()
    for i, (player, score) in enumerate([("ann", 500), ("bob", 300), ("cat", 100)]):
        await world.submit(player, score, key=f"seed-{i}", at=NOW_MS - 10 + i)
    board = boards_of(VARIANTS[0], NOW_MS)[0]
    counters_before = dict(world.table.fine)

    lesser = await world.submit("cat", 50, key="lesser")
    assert [(o.improved, o.best, o.previous_best) for o in lesser.outcome.boards] == [
        (False, 100, 100)
    ] * 3
    assert [o.rank_before for o in lesser.outcome.boards] == [3, 3, 3]
    assert [o.rank_after for o in lesser.outcome.boards] == [3, 3, 3]
    assert dict(world.table.fine) == counters_before  # the same place: no counter moved
    row = await world.table.standings.read_standing(board.board_id, "cat")
    assert row is not None
    assert row.version == 2
    assert row.entry.score == 100

    better = await world.submit("cat", 400, key="better")
    assert [(o.improved, o.rank_before, o.rank_after) for o in better.outcome.boards] == [
        (True, 3, 2)
    ] * 3
    assert world.table.fine != counters_before
    seen, _ = await world.pages(board, limit=2)
    assert seen == [(1, "ann"), (2, "cat"), (3, "bob")]
    rank = await world.rank(board, "bob")
    assert isinstance(rank, ExactRank)
    assert rank.rank == 3


async def test_erasure_removes_the_player_everywhere_and_the_counters_drop() -> None:
    world, sent = await submitted_world()
    victim = max(
        (s.player for s in sent.values()),
        key=lambda p: sum(p in held for held in world.truth.best.values()),
    )
    on_boards = [b for b, held in world.truth.best.items() if victim in held]
    counts = {b: len(world.truth.best[b]) for b in world.truth.best}

    report = await erase_player(world.stores, LAYOUT, victim, now=NOW)
    world.truth.forget(victim)
    assert report.boards == len(on_boards)
    assert report.complete
    assert report.idempotency_records == sum(s.player == victim for s in sent.values())
    assert await world.table.standings.standings_of(victim) == []
    assert victim not in world.table.erasing  # the mark is cleared
    for board in all_boards(world):
        left = counts[board.board_id] - (board.board_id in on_boards)
        assert sum((await world.table.counters.coarse_counts(board.board_id)).values()) == left
        seen, _ = await world.pages(board, limit=4)
        assert seen == list(enumerate(world.truth.order(board.board_id), start=1))
        for place, player in enumerate(world.truth.order(board.board_id), start=1):
            rank = await world.rank(board, player)
            assert isinstance(rank, ExactRank)
            assert rank.rank == place
        with pytest.raises(NotFound):
            await world.rank(board, victim)

    again = await erase_player(world.stores, LAYOUT, victim, now=NOW)
    assert (again.boards, again.idempotency_records) == (0, 0)


async def test_a_marked_player_is_refused_until_the_mark_is_cleared() -> None:
    world = World()
    await world.table.erasures.mark_erasing("ann", until=NOW_MS // 1000 + 60)
    with pytest.raises(PlayerBeingErased):
        await world.submit("ann", 10, key="k")
    assert world.table.rows == {}
    await world.table.erasures.clear_erasing("ann")
    await world.table.erasures.clear_erasing("ann")  # a delete of nothing is no error
    assert not (await world.submit("ann", 10, key="k")).replayed
    assert len(world.table.rows) == len(DEFINITION.periods)


async def test_a_tie_build_makes_a_crowded_slots_ranks_exact_and_submissions_keep_them() -> None:
    cap = 4
    world = World(cap=cap)
    board = boards_of(VARIANTS[0], NOW_MS)[0]
    players = [f"t{i:02d}" for i in range(14)]
    for i, player in enumerate(players):  # one score, many moments: one crowded slot
        at = NOW_MS - 5_000 + 300 * i
        await world.submit(player, 777, key=f"k{i}", at=at)
        world.truth.add(board.board_id, player, 777, at)

    async def ranks() -> list[Rank]:
        return [await world.rank(board, player) for player in players]

    before = await ranks()
    assert any(isinstance(r, EstimatedRank) for r in before)
    for place, rank in enumerate(before, start=1):
        if isinstance(rank, EstimatedRank):
            assert rank.rank_range[0] <= place <= rank.rank_range[1]
    building = replace(RANKING, cap=cap, build_group=tie_group(cap))
    wanted = SlotToBuild((board.board_id, *LAYOUT.slot_of(777)), DEFINITION.order, None)
    report = await build_slot_ties(world.stores, building, wanted)
    assert report is not None
    assert [r.rank if isinstance(r, ExactRank) else None for r in await ranks()] == list(
        range(1, len(players) + 1)
    )

    # Later submissions read the slot's grain and count themselves in its tie counters.
    for i, at in enumerate([NOW_MS - 4_950, NOW_MS - 100]):
        player = f"late{i}"
        await world.submit(player, 777, key=f"late{i}", at=at)
        world.truth.add(board.board_id, player, 777, at)
        players.append(player)
    players.sort(key=lambda p: world.truth.rank(board.board_id, p))
    assert [r.rank if isinstance(r, ExactRank) else None for r in await ranks()] == list(
        range(1, len(players) + 1)
    )


async def test_a_latest_board_ranks_a_player_who_fell_without_counting_their_old_place() -> None:
    """On a ``latest`` board a player's place can fall: the rank after, asked before the write,
    must not count the player's own entry still on the index ahead of where they land."""
    latest = BoardDefinition(operator=Operator.LATEST, periods=(PeriodKind.ALLTIME,))
    world = World()
    board = Board("trivia", "classic", Period(PeriodKind.ALLTIME))
    held: dict[str, tuple[int, int]] = {}
    plays = [("ann", 90, 1), ("bob", 80, 2), ("cat", 70, 3), ("ann", 60, 4), ("bob", 95, 5)]
    plays += [("cat", 85, 6), ("ann", 10, 7), ("cat", 82, 8)]
    for i, (player, score, step) in enumerate(plays):
        at = NOW_MS - 1_000 + step
        held[player] = (score, at)
        result = await world.submit(
            player, score, key=f"k{i}", at=at, variant=("trivia", "classic"), definition=latest
        )
        order = sorted(held, key=lambda p: (-held[p][0], held[p][1], p))
        (outcome,) = result.outcome.boards
        assert outcome.rank_after == order.index(player) + 1, plays[i]
    seen, _ = await world.pages(board, limit=10)
    assert seen == list(enumerate(order, start=1))


async def test_seed_rows_replace_only_as_the_boards_operator_says() -> None:
    table = MemoryBoards()
    standings: StandingStore = table.standings
    board_id = "trivia#classic#alltime"
    best, latest = BoardDefinition(), BoardDefinition(operator=Operator.LATEST)

    def row(score: int, at: int, name: str | None = None) -> SeedRow:
        return SeedRow(1, "ann", score, NOW_MS + at, display_name=name)

    seed = functools.partial(standings.put_seed_row, board_id, expires_at=None)
    assert await seed(row(50, 0, "Ann"), definition=best, writer="s1") == "created"
    assert await seed(row(40, 0), definition=best, writer="s2") == "kept"
    assert await seed(row(50, 0), definition=best, writer="s2") == "kept"  # not better: equal
    assert await seed(row(60, 0), definition=best, writer="s2") == "replaced"
    assert await seed(row(10, 0), definition=best, writer="s2") == "replaced"  # its own, resent
    assert await seed(row(10, 5), definition=latest, writer="s3") == "replaced"
    assert await seed(row(99, 1), definition=latest, writer="s4") == "kept"  # earlier
    found = await standings.read_standing(board_id, "ann")
    assert found is not None
    assert (found.entry.score, found.version, found.entry.display_name) == (10, 3, "Ann")


# ---- each port fails as its adapter does ------------------------------------------------------


def _write(
    table: MemoryBoards, player: str, version: int | None, score: int, *, record: str = ""
) -> SubmissionWrite:
    board_id = "trivia#classic#alltime"
    key = RankKey(score, NOW_MS, player)
    bucket, slot = LAYOUT.slot_of(score)
    return SubmissionWrite(
        record_id=record or f"idem#c#{player}-{version}-{score}",
        request_hash="h",
        response_json="{}",
        expires_at=NOW_MS // 1000 + 60,
        player_id=player,
        boards=(
            StandingWrite(
                board_id,
                Standing(board_id, Entry(key), (version or 0) + 1),
                version,
                (CounterDelta(bucket, slot, 1),),
            ),
        ),
    )


async def test_submission_store_cancels_a_commit_after_a_concurrent_change() -> None:
    table = MemoryBoards()
    store: SubmissionStore = table.submissions
    await store.commit_submission(_write(table, "ann", None, 10), token="t1", now_ms=NOW_MS)
    fine = dict(table.fine)
    with pytest.raises(TransactionCancelled) as raised:  # a second "new row": it exists now
        await store.commit_submission(_write(table, "ann", None, 20), token="t2", now_ms=NOW_MS)
    assert raised.value.kind == "condition"
    with pytest.raises(TransactionCancelled):  # a version read before another write
        await store.commit_submission(_write(table, "ann", 5, 20), token="t3", now_ms=NOW_MS)
    assert table.fine == fine  # nothing of either landed
    assert ("ann", "idem#c#ann-None-20") not in table.records
    await store.commit_submission(_write(table, "ann", 1, 20), token="t4", now_ms=NOW_MS)
    state = await store.read_submission(
        "idem#c#ann-1-20", "ann", ["trivia#classic#alltime"], lease_board_ids=[]
    )
    row = state.rows["trivia#classic#alltime"]
    assert row is not None
    assert (row.version, row.entry.score) == (2, 20)
    assert state.record is not None
    assert state.record.response_json == "{}"
    taken = _write(table, "ann", 2, 30, record="idem#c#ann-1-20")
    with pytest.raises(TransactionCancelled):  # the record is live: the key is taken
        await store.commit_submission(taken, token="t5", now_ms=NOW_MS)
    # Past its expiry the record is gone as far as a write can tell (TTL deletes it late).
    await store.commit_submission(taken, token="t5", now_ms=NOW_MS + 61_000)
    assert (await table.standings.standings_of("ann"))[0].entry.score == 30


async def test_standing_store_refuses_a_stale_delete_and_a_held_board() -> None:
    table = MemoryBoards()
    standings: StandingStore = table.standings
    await table.submissions.commit_submission(
        _write(table, "ann", None, 10), token="t", now_ms=NOW_MS
    )
    read = await standings.read_standing("trivia#classic#alltime", "ann")
    assert read is not None
    bucket, slot = LAYOUT.slot_of(10)
    minus = (CounterDelta(bucket, slot, -1),)
    assert await standings.mark_tie("trivia#classic#alltime", read.entry.key, 3)
    with pytest.raises(TransactionCancelled):  # the version moved since the read
        await standings.delete_standing(read, counters=minus, now_s=NOW_MS // 1000)
    moved = replace(read.entry.key, score=11)
    assert not await standings.rekey(
        "trivia#classic#alltime", replace(read.entry.key, score=9), moved
    )
    table.leases["trivia#classic#alltime"] = Lease("seeder", NOW_MS // 1000 + 1)
    fresh = await standings.read_standing("trivia#classic#alltime", "ann")
    assert fresh is not None
    assert fresh.tie_mark == 3
    with pytest.raises(LeaseHeld):
        await standings.delete_standing(fresh, counters=minus, now_s=NOW_MS // 1000)
    await standings.delete_standing(fresh, counters=minus, now_s=NOW_MS // 1000 + 1)
    assert await standings.standings_of("ann") == []
    assert table.fine == {("trivia#classic#alltime", bucket, slot): 0}  # an item at 0 stays


async def test_request_store_erases_a_record_whether_or_not_it_is_there() -> None:
    table = MemoryBoards()
    requests: RequestStore = table.requests
    await table.submissions.commit_submission(
        _write(table, "ann", None, 10), token="t", now_ms=NOW_MS
    )
    (record,) = (await table.standings.rows_of_player("ann")).records
    await requests.erase_record("ann", record.record_id)
    await requests.erase_record("ann", record.record_id)
    assert (await table.standings.rows_of_player("ann")).records == []


async def test_erasure_marks_hold_until_the_time_they_name() -> None:
    table = MemoryBoards()
    marks: ErasureMarks = table.erasures
    await marks.mark_erasing("ann", until=123)
    state = await table.submissions.read_submission("idem#x", "ann", [], lease_board_ids=[])
    assert state.erasing_until == 123
    await marks.clear_erasing("ann")
    state = await table.submissions.read_submission("idem#x", "ann", [], lease_board_ids=[])
    assert state.erasing_until is None


async def test_board_index_pages_end_as_dynamodb_ends_them_and_refuses_an_empty_range() -> None:
    table = MemoryBoards()
    index: BoardIndex = table.index
    for i in range(4):
        await table.submissions.commit_submission(
            _write(table, f"p{i}", None, 10 * i), token=f"t{i}", now_ms=NOW_MS
        )
    pages = [page async for page in index.board_keys("trivia#classic#alltime", page_size=2)]
    assert [[k.key.player_id for k in page] for page in pages] == [["p3", "p2"], ["p1", "p0"], []]
    page = await index.query_board("trivia#classic#alltime", limit=4, start=None)
    assert page.next_start is None
    assert len(page.entries) == 4
    high, low = pages[0][0].key.encode(), pages[1][1].key.encode()
    with pytest.raises(StoreRejected):
        async for _ in index.board_keys("trivia#classic#alltime", page_size=2, between=(low, high)):
            pass


async def test_counter_store_refuses_a_repair_of_a_counter_that_moved() -> None:
    table = MemoryBoards(shards=2)
    counters: CounterStore = table.counters
    board_id = "trivia#classic#alltime"
    await counters.set_counter(board_id, FineItem(0, 1), n=3, expected=None, expires_at=None)
    with pytest.raises(ConditionFailed):
        await counters.set_counter(board_id, FineItem(0, 1), n=4, expected=2, expires_at=None)
    with pytest.raises(ConditionFailed):
        await counters.set_counter(board_id, FineItem(0, 1), n=4, expected=None, expires_at=None)
    await counters.set_counter(board_id, FineItem(0, 1), n=0, expected=3, expires_at=None)
    await counters.set_counter(board_id, FineItem(0, 1), n=0, expected=3, expires_at=None)
    with pytest.raises(ValueError, match="no counter shard"):
        await counters.set_counter(board_id, CoarseItem(2, 0), n=1, expected=None, expires_at=None)
    await counters.set_counter(board_id, CoarseItem(1, 0), n=5, expected=None, expires_at=None)
    assert await counters.coarse_counts(board_id) == {0: 5}
    assert await counters.set_grain(board_id, 0, 1, 7, expires_at=None)
    assert not await counters.set_grain(board_id, 0, 1, 8, expires_at=None)
    await counters.mark_incomplete(board_id, by="seed", expires_at=None)
    with pytest.raises(CountsIncomplete):
        await counters.coarse_counts(board_id)
    stored = await counters.read_counters(board_id, buckets=[0])
    assert stored.coarse == {(1, 0): 5}
    assert stored.fine == {}


async def test_rank_reader_refuses_counts_while_the_counters_are_part_written() -> None:
    table = MemoryBoards()
    ranks: RankReader = table.ranks
    await table.submissions.commit_submission(
        _write(table, "ann", None, 10), token="t", now_ms=NOW_MS
    )
    assert await ranks.coarse_counts("trivia#classic#alltime") == {LAYOUT.coarse_of(10): 1}
    await table.counters.mark_incomplete("trivia#classic#alltime", by="seed", expires_at=None)
    with pytest.raises(CountsIncomplete):
        await ranks.coarse_counts("trivia#classic#alltime", consistent=True)
    with pytest.raises(StoreRejected):
        await ranks.count_keys("trivia#classic#alltime", "b", "a", limit=3)


_PORTS: dict[str, tuple[type[Any], str]] = {
    "SubmissionStore": (SubmissionStore, "submissions"),
    "StandingStore": (StandingStore, "standings"),
    "RequestStore": (RequestStore, "requests"),
    "ErasureMarks": (ErasureMarks, "erasures"),
    "BoardIndex": (BoardIndex, "index"),
    "CounterStore": (CounterStore, "counters"),
    "RankReader": (RankReader, "ranks"),
}


@pytest.mark.parametrize("port", sorted(_PORTS))
def test_each_port_is_offered_with_the_protocols_signatures(port: str) -> None:
    protocol, attribute = _PORTS[port]
    assert getattr(ports, port) is protocol
    fake = getattr(MemoryBoards(), attribute)
    members = [
        name
        for name in vars(protocol)
        if not name.startswith("_") and callable(getattr(protocol, name, None))
    ]
    assert members
    for name in members:
        wanted = inspect.signature(getattr(protocol, name))
        found = inspect.signature(getattr(fake, name))
        assert list(found.parameters.values()) == list(wanted.parameters.values())[1:], name
