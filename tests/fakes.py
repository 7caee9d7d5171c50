"""In-memory fakes of every port (``app/services/ports``), for use-case tests that need no
DynamoDB: ``MemoryBoards``, one Scores table behind the board ports, answering and failing as the
adapters in ``app.store`` do (RankIndex and every eventually consistent read are immediately
consistent here, and nothing expires by TTL); one fake of each operator's port; ``memory_stores``,
all of them as the ``Stores`` the composition root takes; and ``MemoryIndex``, a RankReader over a
sorted index for the rank code alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TypeVar

from app.domain.buckets import BucketLayout
from app.domain.clock import iso_ms, parse_iso_ms, to_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.events import Event
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Page, Standing
from app.domain.seed_file import SeedRow
from app.domain.shards import board_of_partition, is_shard_partition, player_partition
from app.domain.ties import LEVEL_A, SlotTies, TieCounts, mark_of, tie_counts
from app.errors import (
    ConditionFailed,
    CountsIncomplete,
    InvalidInput,
    LeaseHeld,
    NotFound,
    StoreRejected,
    TransactionCancelled,
    Unavailable,
)
from app.services.ports import (
    COMPLETED,
    Claim,
    CoarseItem,
    CounterItem,
    FineItem,
    IndexedKey,
    Lease,
    Membership,
    PlayerRecord,
    PlayerRows,
    RegisteredBoard,
    RegistryPage,
    RequestRecord,
    RowOutcome,
    SlotAddress,
    Snapshot,
    SnapshotEntry,
    SnapshotFit,
    SnapshotSummary,
    StandingsPage,
    StoredApiKey,
    StoredCounters,
    StoredDefinition,
    StoredTies,
    Stores,
    SubmissionState,
    SubmissionWrite,
    TablesReport,
)
from tests.fakes_cohorts import MemoryEntrants
from tests.fakes_moderation import MemoryModeration
from tests.fakes_webhooks import MemoryOutbox, MemoryWebhooks


class MemoryIndex:
    """``grains``: the crowded slots' tie grains (and ``cuts``, their cut chunks' cut lengths);
    their tie counters hold every key of the slot, except those in ``uncounted`` (rows from before
    the slot was built)."""

    def __init__(
        self,
        layout: BucketLayout,
        keys: list[RankKey],
        board_id: str = "b",
        *,
        grains: Mapping[tuple[int, int], int] | None = None,
        cuts: Mapping[tuple[int, int], Mapping[str, int]] | None = None,
        uncounted: frozenset[str] = frozenset(),
    ) -> None:
        self.layout = layout
        self.board_id = board_id
        self.keys = sorted(keys, key=lambda k: k.encode())
        self._encoded = [k.encode() for k in self.keys]
        self._fine = Counter(layout.slot_of(k.score) for k in keys)
        self.grains = dict(grains or {})
        self.cuts = dict(cuts or {})
        self._uncounted = uncounted
        self.tie_reads = 0
        self.counter_reads: list[tuple[str, str, bool]] = []
        """Each counter read: what (``coarse``, ``fine``, ``tie``), of which board, strongly."""

    def true_rank(self, key: RankKey) -> int:
        """1 + the number of entries strictly ahead of ``key`` (other than its own player)."""
        return 1 + sum(1 for k in self.keys if k.order < key.order and k.player_id != key.player_id)

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        self.counter_reads.append(("coarse", board_id, consistent))
        totals: Counter[int] = Counter()
        for (bucket, _), n in self._fine.items():
            totals[bucket] += n
        return dict(totals)

    async def fine_counts(
        self,
        board_id: str,
        bucket: int,
        first: int,
        last: int,
        *,
        consistent: bool = False,
        recent: bool = False,
    ) -> Mapping[int, int]:
        self.counter_reads.append(("fine", board_id, consistent))
        return {s: n for (b, s), n in self._fine.items() if b == bucket and first <= s <= last}

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        matching = [
            k
            for k, encoded in zip(self.keys, self._encoded, strict=True)
            if low <= encoded <= high and k.player_id != exclude_player
        ]
        return min(len(matching), limit), len(matching) >= limit

    async def tie_counts(
        self,
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        board_id, bucket, slot_no = slot
        self.tie_reads += 1
        self.counter_reads.append(("tie", board_id, consistent))
        grain = self.grains.get((bucket, slot_no))
        if grain is None:
            return TieCounts({}, {}, sealed=False)
        in_slot = [
            k
            for k in self.keys
            if self.layout.slot_of(k.score) == (bucket, slot_no)
            and k.player_id not in self._uncounted
        ]
        cuts = self.cuts.get((bucket, slot_no), {})
        counts = tie_counts(in_slot, [mark_of(k, grain, cuts) for k in in_slot])
        return TieCounts.within(counts, b_prefix, c_prefix=c_prefix, sealed=True)

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None


# ---- the board table ---------------------------------------------------------------------------

K = TypeVar("K")

MAX_TRANSACTION_ITEMS = 100
MAX_BATCH_KEYS = 100

SlotKey = tuple[str, int, int]
"""A fine slot of a board: board id, coarse bucket, slot (as ``SlotAddress``)."""


@dataclass
class Row:
    """A player's row on a board as the item holds it: the standing as ``standing_of`` reads it
    back, and the attributes no port returns but conditions read."""

    standing: Standing
    achieved_ms: int | None
    """``achievedMs``: what a seed of a ``latest`` board checks (``None``: an old row)."""
    seeded_by: str | None = None


@dataclass
class _Changes:
    """One transaction's counter ``ADD``s, merged by item as ``CounterItems.changes`` merges them."""

    coarse: dict[tuple[str, int, int], int] = field(default_factory=dict)
    fine: dict[tuple[str, int, int], int] = field(default_factory=dict)
    ties: dict[tuple[SlotKey, str], int] = field(default_factory=dict)
    versions: set[tuple[str, int, int]] = field(default_factory=set)
    """Coarse items whose version a row's arrival moves (``ADD v 1``)."""

    def __len__(self) -> int:
        return len(self.coarse) + len(self.fine) + len(self.ties)


def _stored(standing: Standing) -> Standing:
    """A standing as its row's item gives it back: the key decoded, ``lastPlayedAt`` at ms."""
    last = standing.last_played_at_ms
    return replace(
        standing,
        entry=replace(standing.entry, key=RankKey.decode(standing.entry.key.encode())),
        last_played_at_ms=None if last is None else parse_iso_ms(iso_ms(last)),
    )


def _between(low: str, high: str, what: str) -> None:
    if low > high:
        raise StoreRejected(
            f"DynamoDB refused {what} (the BETWEEN operator requires upper bound to be greater "
            "than or equal to lower bound)",
            code="ValidationException",
        )


def _limit(limit: int, what: str) -> None:
    if limit < 1:
        raise StoreRejected(f"DynamoDB refused {what} (Limit below 1)", code="ValidationException")


def _batch(keys: Sequence[object], what: str) -> None:
    for first in range(0, len(keys), MAX_BATCH_KEYS):
        chunk = keys[first : first + MAX_BATCH_KEYS]
        if len(set(chunk)) != len(chunk):
            raise StoreRejected(
                f"DynamoDB refused {what} (Provided list of item keys contains duplicates)",
                code="ValidationException",
            )


class MemoryBoards:
    """The table: every dict is public for tests to look at or set up, and each port is an
    attribute (``submissions``, ``standings``, ``requests``, ``erasures``, ``index``,
    ``counters``, ``ranks``). ``calls`` counts each port method called."""

    def __init__(self, *, shards: int = 1) -> None:
        if shards < 1:
            raise ValueError("a board needs at least one coarse shard")
        self.shards = shards
        self.rows: dict[tuple[str, str], Row] = {}
        """``(player, board)``: the only items on RankIndex."""
        self.records: dict[tuple[str, str], RequestRecord] = {}
        """``(player, record id)``: idempotency records."""
        self.erasing: dict[str, int] = {}
        """Player to the epoch second their erasure mark holds them until."""
        self.leases: dict[str, Lease] = {}
        """Board to its seeding lease (no port here writes them: tests do)."""
        self.memberships: dict[tuple[str, str, str], int | None] = {}
        """``(player, board, taken at)`` to the membership row's ``createdAt``."""
        self.strays: set[tuple[str, str]] = set()
        self.claims: dict[tuple[str, str], Claim] = {}
        """The claims ledger: by player and board."""
        """``(player, sort key)`` of rows of no known kind in a player's partition."""
        self.coarse: dict[tuple[str, int, int], int] = {}
        self.versions: dict[tuple[str, int, int], int] = {}
        """``(board, shard, bucket)``: coarse counter items (an item at 0 is still an item)."""
        self.fine: dict[tuple[str, int, int], int] = {}
        """``(board, bucket, slot)``: fine counter items."""
        self.ties: dict[SlotKey, dict[str, int]] = {}
        """A slot's level-A, -B and -C count items, by sort key."""
        self.grains: dict[SlotKey, SlotTies] = {}
        self.sealed: set[SlotKey] = set()
        self.incomplete: dict[str, str] = {}
        """Board to the writer that marked its counters part-written."""
        self.tokens: dict[str, SubmissionWrite] = {}
        """Each committed submission's ``ClientRequestToken``."""
        self.calls: Counter[str] = Counter()
        self._turn = 0
        self.submissions = MemorySubmissions(self)
        self.standings = MemoryStandings(self)
        self.requests = MemoryRequests(self)
        self.erasures = MemoryErasures(self)
        self.claim_ledger = MemoryClaims(self)
        self.index = MemoryBoardIndex(self)
        self.counters = MemoryCounters(self)
        self.ranks = MemoryRanks(self)

    # ---- helpers shared by the ports ----------------------------------------------------------

    def called(self, name: str) -> None:
        self.calls[name] += 1

    def standing(self, board_id: str, player_id: str) -> Standing | None:
        row = self.rows.get((player_id, board_id))
        return None if row is None else row.standing

    def board(self, board_id: str) -> list[tuple[str, Standing]]:
        """The board's rows as RankIndex holds them: ``(rankKey, standing)`` in rank key order."""
        found = [
            (row.standing.entry.key.encode(), row.standing)
            for (_, board), row in self.rows.items()
            if board == board_id
        ]
        return sorted(found, key=lambda pair: pair[0])

    def lease_live(self, board_id: str, now_s: int) -> bool:
        """``no_live_lease``: the lease's item (a shard's is its board's) exists and
        ``expiresAt > now``."""
        lease = self.leases.get(board_of_partition(board_id))
        return lease is not None and lease.expires_at > now_s

    def plan(self, board_id: str, deltas: Sequence[CounterDelta]) -> _Changes:
        """The counter items a row's change touches, merged per item, zero sums left out; the
        coarse item on the next shard in turn (the adapter picks a free one)."""
        coarse: Counter[int] = Counter()
        fine: Counter[tuple[int, int]] = Counter()
        ties: Counter[tuple[SlotKey, str]] = Counter()
        for change in deltas:
            coarse[change.bucket] += change.delta
            fine[(change.bucket, change.slot)] += change.delta
            if change.tie is not None:
                for sort_key in change.tie.sort_keys:
                    ties[((board_id, change.bucket, change.slot), sort_key)] += change.delta
        changes = _Changes()
        arrived = (
            {c.bucket for c in deltas if c.delta > 0} if is_shard_partition(board_id) else set()
        )
        for bucket, delta in coarse.items():
            if delta or bucket in arrived:
                shard = self._turn % self.shards
                self._turn += 1
                changes.coarse[(board_id, shard, bucket)] = delta
                if bucket in arrived:
                    changes.versions.add((board_id, shard, bucket))
        changes.fine = {(board_id, b, s): d for (b, s), d in fine.items() if d}
        changes.ties = {item: d for item, d in ties.items() if d}
        return changes

    def apply(self, changes: _Changes) -> None:
        """``ADD n :d``: an absent item is created at ``d``; an item brought to 0 stays."""
        for coarse_key, delta in changes.coarse.items():
            self.coarse[coarse_key] = self.coarse.get(coarse_key, 0) + delta
        for coarse_key in changes.versions:
            self.versions[coarse_key] = self.versions.get(coarse_key, 0) + 1
        for fine_key, delta in changes.fine.items():
            self.fine[fine_key] = self.fine.get(fine_key, 0) + delta
        for (slot, sort_key), delta in changes.ties.items():
            items = self.ties.setdefault(slot, {})
            items[sort_key] = items.get(sort_key, 0) + delta

    def coarse_totals(self, board_id: str) -> dict[int, int]:
        if board_id in self.incomplete:
            raise CountsIncomplete(
                f"board {board_id} is being counted (a seed or a counter rebuild has its counters "
                "part-written): ranks and the player count are known again once it completes",
                retry_after=5,
            )
        totals: Counter[int] = Counter()
        for (board, _, bucket), n in self.coarse.items():
            if board == board_id:
                totals[bucket] += n
        return {bucket: n for bucket, n in totals.items() if n}

    def fine_range(self, board_id: str, bucket: int, first: int, last: int) -> dict[int, int]:
        _between(f"{first:04d}", f"{last:04d}", "reading the counters")
        return {
            s: n
            for (board, b, s), n in sorted(self.fine.items())
            if board == board_id and b == bucket and first <= s <= last
        }

    def tie_counts(self, slot: SlotKey, b_prefix: str, c_prefix: str | None) -> TieCounts:
        """``TieItems.tie_counts``: level A and the seal, level B under ``b_prefix``, level C
        under ``c_prefix`` (items at 0 included, as a Query finds them)."""
        items = self.ties.get(slot, {})

        def under(prefix: str) -> dict[str, int]:
            return {k: n for k, n in sorted(items.items()) if k.startswith(prefix)}

        return TieCounts(
            under(LEVEL_A),
            under(b_prefix),
            slot in self.sealed,
            c={} if c_prefix is None else under(c_prefix),
        )

    def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None
    ) -> tuple[int, bool]:
        """``IndexReads.count_keys``: the entries with ``low <= rankKey <= high``, capped."""
        if limit <= 0:
            return limit, True  # the adapter's loop makes no call
        _between(low, high, "counting the entries ahead")
        matching = sum(
            1
            for encoded, standing in self.board(board_id)
            if low <= encoded <= high and standing.entry.player_id != exclude_player
        )
        return min(matching, limit), matching >= limit


# ---- SubmissionStore -------------------------------------------------------------------------


class MemorySubmissions:
    """``SubmissionItems``: the state in one read, the submission in one transaction."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table

    async def read_submission(
        self,
        record_id: str,
        player_id: str,
        board_ids: Sequence[str],
        *,
        lease_board_ids: Sequence[str],
        grain_slots: Sequence[SlotAddress] = (),
        entry_board_ids: Sequence[str] = (),
        entry_tiers: tuple[str, ...] = (),
    ) -> SubmissionState:
        t = self._t
        t.called("read_submission")
        if entry_board_ids:
            # Placements by submission are the real adapter's alone (tests/api/test_entrants.py).
            raise NotImplementedError("the fake table does not place players (decision 0039)")
        return SubmissionState(
            record=t.records.get((player_id, record_id)),
            rows={board: t.standing(board, player_id) for board in board_ids},
            leases={board: t.leases.get(board) for board in lease_board_ids},
            erasing_until=t.erasing.get(player_id),
            grains={
                slot: t.grains[slot] for slot in dict.fromkeys(grain_slots) if slot in t.grains
            },
        )

    async def read_grains(self, slots: Sequence[SlotAddress]) -> Mapping[SlotAddress, SlotTies]:
        self._t.called("read_grains")
        return {
            slot: self._t.grains[slot] for slot in dict.fromkeys(slots) if slot in self._t.grains
        }

    async def commit_submission(self, write: SubmissionWrite, *, token: str, now_ms: int) -> None:
        t = self._t
        t.called("commit_submission")
        if t.tokens.get(token) == write:
            return  # DynamoDB answers a resend of an applied transaction without applying it
        if token in t.tokens:
            raise TransactionCancelled("writing the scores: token mismatch", kind="other")
        board_ids = [board.board_id for board in write.boards]
        if len(set(board_ids)) != len(board_ids):
            raise StoreRejected(
                "DynamoDB refused writing the scores (Transaction request cannot include "
                "multiple operations on one item)",
                code="ValidationException",
            )
        planned = [t.plan(board.board_id, board.counters) for board in write.boards]
        if 1 + len(write.boards) + sum(len(p) for p in planned) > MAX_TRANSACTION_ITEMS:
            raise StoreRejected(
                "DynamoDB refused writing the scores (more than 100 actions)",
                code="ValidationException",
            )
        failed = False
        record = t.records.get((write.player_id, write.record_id))
        if record is not None and not (
            record.expires_at is not None and record.expires_at < now_ms // 1000
        ):
            failed = True  # a live record holds the key
        for board in write.boards:
            row = t.rows.get((write.player_id, board.board_id))
            if board.expected_version is None:
                failed |= row is not None
            else:
                # version 0: a row from before versions were kept, which has no ``version``
                failed |= row is None or row.standing.version != board.expected_version
        if failed:
            raise TransactionCancelled(
                "writing the scores: transaction cancelled", kind="condition"
            )
        t.records[(write.player_id, write.record_id)] = RequestRecord(
            write.request_hash, COMPLETED, write.response_json, write.expires_at
        )
        for board, changes in zip(write.boards, planned, strict=True):
            at = (write.player_id, board.board_id)
            standing = board.standing
            if board.moved:
                row = Row(
                    _stored(replace(standing, expires_at=board.expires_at)),
                    achieved_ms=standing.entry.key.achieved_at_ms,
                )
            else:  # an UpdateItem of the version, lastPlayedAt and expiresAt alone
                kept = t.rows[at]
                expires = kept.standing.expires_at if board.expires_at is None else board.expires_at
                row = replace(
                    kept,
                    standing=_stored(
                        replace(
                            kept.standing,
                            version=standing.version,
                            last_played_at_ms=standing.last_played_at_ms,
                            expires_at=expires,
                        )
                    ),
                )
            t.rows[at] = row
            t.apply(changes)
        t.tokens[token] = write


# ---- StandingStore, RequestStore, ErasureMarks ------------------------------------------------


class MemoryStandings:
    """``StandingItems``."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table

    async def read_standing(self, board_id: str, player_id: str) -> Standing | None:
        self._t.called("read_standing")
        return self._t.standing(board_id, player_id)

    async def standings_of(self, player_id: str) -> list[Standing]:
        self._t.called("standings_of")
        return [
            row.standing for (player, _), row in sorted(self._t.rows.items()) if player == player_id
        ]

    async def standings_page(self, player_id: str, *, after: str, limit: int) -> StandingsPage:
        self._t.called("standings_page")
        rows = [
            row.standing
            for (player, board_id), row in sorted(self._t.rows.items())
            if player == player_id and board_id > after
        ]
        return StandingsPage(rows[:limit], rows[limit - 1].board_id if len(rows) > limit else None)

    async def rows_of_player(self, player_id: str) -> PlayerRows:
        t = self._t
        t.called("rows_of_player")
        standings = [
            row.standing for (player, _), row in sorted(t.rows.items()) if player == player_id
        ]
        memberships = [
            Membership(board, taken_at, created_at)
            for (player, board, taken_at), created_at in sorted(t.memberships.items())
            if player == player_id
        ]
        records = [
            PlayerRecord(record_id, record)
            for (player, record_id), record in sorted(t.records.items())
            if player == player_id
        ]
        unknown = sum(1 for player, _ in t.strays if player == player_id)
        claims = sorted(board for player, board in t.claims if player == player_id)
        return PlayerRows(standings, memberships, records, unknown, claims=claims)

    async def delete_standing(
        self, standing: Standing, *, counters: Sequence[CounterDelta], now_s: int
    ) -> None:
        t = self._t
        t.called("delete_standing")
        board_id, player_id = standing.board_id, standing.entry.player_id
        planned = t.plan(board_id, counters)
        if t.lease_live(board_id, now_s):
            raise LeaseHeld(
                f"erasing the player's standing: a seeding lease holds board {board_id}"
            )
        row = t.rows.get((player_id, board_id))
        if (
            row is None
            or row.standing.entry.key.encode() != standing.entry.key.encode()
            or row.standing.version != standing.version  # 0 = no version attribute, as read
        ):
            raise TransactionCancelled(
                "erasing the player's standing: transaction cancelled", kind="condition"
            )
        del t.rows[(player_id, board_id)]
        t.apply(planned)

    async def put_seed_row(
        self,
        board_id: str,
        row: SeedRow,
        *,
        definition: BoardDefinition,
        expires_at: int | None,
        writer: str,
    ) -> RowOutcome:
        t = self._t
        t.called("put_seed_row")
        key = row.key_for(definition.order)
        encoded = key.encode()
        old = t.rows.get((row.player_id, board_id))
        if old is not None and not _seed_replaces(definition.operator, old, encoded, row):
            return _seeded(old, writer) if old.seeded_by == writer else "kept"
        entry = Entry(
            key,
            row.display_name
            if row.display_name is not None
            else (None if old is None else old.standing.entry.display_name),
            row.country
            if row.country is not None
            else (None if old is None else old.standing.entry.country),
        )
        kept_expiry = None if old is None else old.standing.expires_at
        t.rows[(row.player_id, board_id)] = Row(
            _stored(
                Standing(
                    board_id,
                    entry,
                    (0 if old is None else old.standing.version) + 1,
                    expires_at if expires_at is not None else kept_expiry,
                    tie_mark=None,
                    last_played_at_ms=row.achieved_at_ms,
                )
            ),
            achieved_ms=row.achieved_at_ms,
            seeded_by=writer,
        )
        return _seeded(old, writer)

    async def standings_on_board(
        self, board_id: str, player_ids: Sequence[str], *, shards: int = 1
    ) -> list[Standing]:
        self._t.called("standings_on_board")
        _batch(player_ids, "reading the group's rows")
        found = (
            self._t.standing(player_partition(board_id, player, shards), player)
            for player in player_ids
        )
        return [standing for standing in found if standing is not None]

    async def rekey(self, board_id: str, key: RankKey, new: RankKey) -> bool:
        t = self._t
        t.called("rekey")
        row = t.rows.get((key.player_id, board_id))
        if row is None or row.standing.entry.key.encode() != key.encode():
            # Moved meanwhile, or this very write, resent after a lost answer.
            return row is not None and row.standing.entry.key.encode() == new.encode()
        entry = replace(row.standing.entry, key=RankKey.decode(new.encode()))
        row.standing = replace(
            row.standing, entry=entry, version=row.standing.version + 1, tie_mark=None
        )
        return True

    async def mark_tie(self, board_id: str, key: RankKey, mark: int) -> bool:
        t = self._t
        t.called("mark_tie")
        row = t.rows.get((key.player_id, board_id))
        if row is None or row.standing.entry.key.encode() != key.encode():
            return False
        row.standing = replace(row.standing, version=row.standing.version + 1, tie_mark=mark)
        return True

    async def players_on_board(
        self, board_id: str, player_ids: Sequence[str], *, shards: int = 1
    ) -> set[str]:
        self._t.called("players_on_board")
        _batch(player_ids, "checking the snapshot's players")
        return {
            player
            for player in player_ids
            if (player, player_partition(board_id, player, shards)) in self._t.rows
        }


def _seed_replaces(operator: Operator, old: Row, encoded: str, row: SeedRow) -> bool:
    """``_seed_condition``, for a row that exists."""
    match operator:
        case Operator.BEST:
            return old.standing.entry.key.encode() > encoded
        case Operator.LATEST:
            return old.achieved_ms is None or old.achieved_ms < row.achieved_at_ms
        case Operator.SUM:
            return True


def _seeded(old: Row | None, writer: str) -> RowOutcome:
    """``standings._seeded``: what a seed's write did, from the row as it was before it."""
    if old is not None and old.seeded_by == writer:
        return "created" if old.standing.version <= 1 else "replaced"
    return "created" if old is None else "replaced"


class MemoryRequests:
    """``RequestItems``."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table

    async def erase_record(self, player_id: str, record_id: str) -> None:
        self._t.called("erase_record")
        self._t.records.pop((player_id, record_id), None)


class MemoryClaims:
    """``ClaimItems``: ``lose_next`` loses that many answers of ``record_claim`` after it was
    applied, and resends it, as botocore does."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table
        self.lose_next = 0

    async def get_claim(self, player_id: str, board_id: str) -> Claim | None:
        self._t.called("get_claim")
        return self._t.claims.get((player_id, board_id))

    async def record_claim(self, claim: Claim) -> Claim:
        self._t.called("record_claim")
        at = (claim.player_id, claim.board_id)
        if at not in self._t.claims:
            self._t.claims[at] = claim
            if self.lose_next <= 0:
                return claim
            self.lose_next -= 1  # applied, its answer lost: the resend finds it
        return self._t.claims[at]

    async def erase_claim(self, player_id: str, board_id: str) -> None:
        self._t.called("erase_claim")
        self._t.claims.pop((player_id, board_id), None)


class MemoryErasures:
    """``ErasureMarkItems``."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table

    async def mark_erasing(self, player_id: str, *, until: int) -> None:
        self._t.called("mark_erasing")
        self._t.erasing[player_id] = until

    async def clear_erasing(self, player_id: str) -> None:
        self._t.called("clear_erasing")
        self._t.erasing.pop(player_id, None)


# ---- BoardIndex ---------------------------------------------------------------------------


class MemoryBoardIndex:
    """``IndexReads``, over the rows in rank key order."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page:
        self._t.called("query_board")
        _limit(limit + 1, "reading the board")
        found = [
            standing.entry
            for encoded, standing in self._t.board(board_id)
            if start is None or encoded > start[0]
        ][: limit + 1]
        next_start = None
        if len(found) > limit:
            found = found[:limit]
            last = found[-1].key
            next_start = (last.encode(), last.player_id)
        return Page(entries=found, next_start=next_start)

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        self._t.called("query_neighbours")
        if limit <= 0:
            return []
        board = self._t.board(board_id)
        if ahead:
            return [s.entry for encoded, s in reversed(board) if encoded < key][:limit]
        return [s.entry for encoded, s in board if encoded > key][:limit]

    async def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        self._t.called("board_keys")
        _limit(page_size, "reading the whole board")
        if between is not None:
            _between(*between, "reading the whole board")
        keys = [
            IndexedKey(standing.entry.key, standing.tie_mark)
            for encoded, standing in self._t.board(board_id)
            if between is None or between[0] <= encoded <= between[1]
        ]
        for first in range(0, len(keys), page_size):
            yield keys[first : first + page_size]
        if len(keys) % page_size == 0:
            # A page that stops at its Limit has a LastEvaluatedKey, also when nothing follows:
            # the walk reads one more, empty, page.
            yield []


# ---- CounterStore and RankReader -------------------------------------------------------------


class MemoryCounters:
    """``CounterItems`` (with ``TieItems``)."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table

    def coarse_shards(self, board_id: str) -> int:
        return self._t.shards

    async def coarse_counts(self, board_id: str, *, consistent: bool = False) -> Mapping[int, int]:
        self._t.called("coarse_counts")
        return self._t.coarse_totals(board_id)

    async def coarse_versions(self, board_id: str) -> Mapping[int, tuple[int, int]]:
        t = self._t
        t.called("coarse_versions")
        t.coarse_totals(board_id)  # CountsIncomplete while marked
        found: dict[int, tuple[int, int]] = {}
        for (board, shard, bucket), n in t.coarse.items():
            if board == board_id:
                count, version = found.get(bucket, (0, 0))
                found[bucket] = (count + n, version + t.versions.get((board, shard, bucket), 0))
        return found

    async def mark_incomplete(self, board_id: str, *, by: str, expires_at: int | None) -> None:
        self._t.called("mark_incomplete")
        self._t.incomplete[board_id] = by

    async def clear_incomplete(self, board_id: str) -> None:
        self._t.called("clear_incomplete")
        self._t.incomplete.pop(board_id, None)

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int, *, consistent: bool = False
    ) -> Mapping[int, int]:
        self._t.called("fine_counts")
        return self._t.fine_range(board_id, bucket, first, last)

    async def read_counters(self, board_id: str, *, buckets: Iterable[int]) -> StoredCounters:
        t = self._t
        t.called("read_counters")
        wanted = set(buckets)
        return StoredCounters(
            coarse={(sh, b): n for (board, sh, b), n in t.coarse.items() if board == board_id},
            fine={
                (b, s): n
                for (board, b, s), n in t.fine.items()
                if board == board_id and b in wanted
            },
        )

    async def set_counter(
        self,
        board_id: str,
        item: CounterItem,
        *,
        n: int,
        expected: int | None,
        expires_at: int | None,
    ) -> None:
        t = self._t
        t.called("set_counter")
        if isinstance(item, CoarseItem):
            shards = self.coarse_shards(board_id)
            if not 0 <= item.shard < shards:
                raise ValueError(f"no counter shard {item.shard} (shards: {shards})")
            _set(t.coarse, (board_id, item.shard, item.bucket), n=n, expected=expected)
        elif isinstance(item, FineItem):
            _set(t.fine, (board_id, item.bucket, item.slot), n=n, expected=expected)
        else:
            slot = (board_id, item.bucket, item.slot)
            items = t.ties.setdefault(slot, {})
            _set(items, item.sort_key, n=n, expected=expected)
            if not items:
                del t.ties[slot]

    async def tie_counts(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
    ) -> TieCounts:
        self._t.called("tie_counts")
        return self._t.tie_counts((board_id, bucket, slot), b_prefix, c_prefix)

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        t = self._t
        t.called("read_ties")
        address = (board_id, bucket, slot)
        given = t.grains.get(address)
        return StoredTies(
            None if given is None else given.grain,
            dict(sorted(t.ties.get(address, {}).items())),
            address in t.sealed,
            cuts={} if given is None else dict(given.cuts),
        )

    async def set_grain(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        grain: int,
        *,
        cuts: Mapping[str, int] | None = None,
        expires_at: int | None,
    ) -> bool:
        t = self._t
        t.called("set_grain")
        address = (board_id, bucket, slot)
        held = t.grains.get(address)
        if held is not None and held.grain != grain:
            return False
        merged = {} if held is None else dict(held.cuts)
        for chunk, length in (cuts or {}).items():
            if merged.get(chunk, length) != length:
                return False
            merged[chunk] = length
        t.grains[address] = SlotTies(grain, merged)
        return True

    async def seal_ties(
        self, board_id: str, bucket: int, slot: int, *, expires_at: int | None
    ) -> None:
        self._t.called("seal_ties")
        self._t.sealed.add((board_id, bucket, slot))

    async def unseal_ties(self, board_id: str, bucket: int, slot: int) -> None:
        self._t.called("unseal_ties")
        self._t.sealed.discard((board_id, bucket, slot))


def _set(items: dict[K, int], key: K, *, n: int, expected: int | None) -> None:
    """``set_counter`` on one item: set it to ``n`` (delete it at 0) if it holds ``expected``
    (``None``: absent), else ``ConditionFailed``; as the adapter, a 0 where none is expected
    writes nothing, and a delete that finds the item gone already counts as done."""
    found = items.get(key)
    if n == 0:
        if expected is None or found is None:
            return
        if found != expected:
            raise ConditionFailed("deleting a counter: condition failed")
        del items[key]
        return
    if found != expected:
        raise ConditionFailed("repairing a counter: condition failed")
    items[key] = n


class MemoryRanks:
    """``RankReads``: the histogram from the counters, the capped COUNT from the index."""

    def __init__(self, table: MemoryBoards) -> None:
        self._t = table

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        self._t.called("ranks.coarse_counts")
        return self._t.coarse_totals(board_id)

    async def fine_counts(
        self,
        board_id: str,
        bucket: int,
        first: int,
        last: int,
        *,
        consistent: bool = False,
        recent: bool = False,
    ) -> Mapping[int, int]:
        self._t.called("ranks.fine_counts")
        return self._t.fine_range(board_id, bucket, first, last)

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        self._t.called("ranks.count_keys")
        return self._t.count_keys(board_id, low, high, limit=limit, exclude_player=exclude_player)

    async def tie_counts(
        self,
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        self._t.called("ranks.tie_counts")
        return self._t.tie_counts(slot, b_prefix, c_prefix)

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None


# ---- the operator's items ------------------------------------------------------------------------


def _iso_now() -> str:
    return iso_ms(to_ms(datetime.now(UTC)))


class MemoryApiKeys:
    """``ApiKeyStore``: keys by digest, as ``app/store/api_keys.py`` keeps them."""

    def __init__(self) -> None:
        self.keys: dict[str, StoredApiKey] = {}

    async def get(self, digest: str) -> StoredApiKey | None:
        return self.keys.get(digest)

    async def create_key(
        self, digest: str, name: str, scopes: Sequence[str], *, created_at_ms: int | None = None
    ) -> StoredApiKey:
        if digest in self.keys:
            raise ConditionFailed("storing the API key")
        created = _iso_now() if created_at_ms is None else iso_ms(created_at_ms)
        self.keys[digest] = StoredApiKey(digest, name, tuple(scopes), created)
        return self.keys[digest]

    async def revoke(
        self,
        *,
        name: str | None = None,
        digest_prefix: str | None = None,
        revoked_at_ms: int | None = None,
    ) -> list[StoredApiKey]:
        if (name is None) == (digest_prefix is None):
            raise ValueError("revoke by name or by digest prefix, not both or neither")
        matching = [
            k
            for k in self.keys.values()
            if k.name == name or (digest_prefix and k.digest.startswith(digest_prefix))
        ]
        if not matching:
            raise NotFound("no API key matches")
        if digest_prefix is not None and len(matching) > 1:
            raise InvalidInput("that key id matches several keys: give more of it")
        at = _iso_now() if revoked_at_ms is None else iso_ms(revoked_at_ms)
        for k in matching:
            if k.revoked_at is None:
                self.keys[k.digest] = replace(k, revoked_at=at)
        return [self.keys[k.digest] for k in matching]

    async def list_keys(self) -> list[StoredApiKey]:
        return list(self.keys.values())


class MemoryDefinitions:
    """``DefinitionStore``: each game's variants."""

    def __init__(self) -> None:
        self.stored: dict[tuple[str, str], StoredDefinition] = {}
        self.reads = 0
        """Calls made: a GetItem or a Query each."""

    async def get_definition(self, game: str, variant: str) -> StoredDefinition | None:
        self.reads += 1
        return self.stored.get((game, variant))

    async def definitions_of(self, game: str) -> list[StoredDefinition]:
        self.reads += 1
        return [d for (g, _), d in sorted(self.stored.items()) if g == game]

    async def put_definition(
        self, game: str, variant: str, definition: BoardDefinition
    ) -> StoredDefinition:
        self.stored[(game, variant)] = StoredDefinition(game, variant, definition, _iso_now())
        return self.stored[(game, variant)]


class MemoryRegistry:
    """``BoardRegistry``: every board registered, with its period-closed mark. Expired rows stay
    until TTL deletes them, as DynamoDB's do: here, never."""

    def __init__(self) -> None:
        self.boards: dict[str, RegisteredBoard] = {}

    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        if board_id in self.boards:
            return False
        self.boards[board_id] = RegisteredBoard(board_id, expires_at, None)
        return True

    async def registered_boards(self, *, prefix: str = "") -> list[RegisteredBoard]:
        return [b for i, b in sorted(self.boards.items()) if i.startswith(prefix)]

    async def registered_page(self, *, after: str, limit: int) -> RegistryPage:
        boards = [b for i, b in sorted(self.boards.items()) if i > after]
        return RegistryPage(
            boards[:limit], boards[limit - 1].board_id if len(boards) > limit else None
        )


class MemoryLeases:
    """``LeaseStore``: the table's leases (which a submission's read sees); a board is held while
    its lease's ``expires_at`` is past now."""

    def __init__(self, table: MemoryBoards) -> None:
        self.leases = table.leases

    async def read_lease(self, board_id: str) -> Lease | None:
        return self.leases.get(board_id)

    async def acquire_lease(
        self, board_id: str, *, holder: str, expires_at: int, now_s: int
    ) -> Lease | None:
        held = self.leases.get(board_id)
        if held is not None and held.is_live(now_s) and held.holder != holder:
            return held
        self.leases[board_id] = Lease(holder, expires_at)
        return None

    async def renew_lease(self, board_id: str, *, holder: str, expires_at: int, now_s: int) -> bool:
        held = self.leases.get(board_id)
        if held is None or held.holder != holder or not held.is_live(now_s):
            return False
        self.leases[board_id] = Lease(holder, expires_at)
        return True

    async def release_lease(self, board_id: str, *, holder: str) -> bool:
        held = self.leases.get(board_id)
        if held is None:
            return True
        if held.holder != holder:
            return False
        del self.leases[board_id]
        return True


class MemorySnapshots:
    """``SnapshotStore``: snapshots by board and time, and each player's memberships in the
    table's player partitions (where erasure finds them). Every snapshot fits: the item size is
    the adapter's to measure."""

    def __init__(self, table: MemoryBoards, registry: MemoryRegistry) -> None:
        self._registry = registry
        self.snapshots: dict[tuple[str, str], Snapshot] = {}
        self.memberships = table.memberships
        self.events: list[Event] = []
        """The events written with the closes, oldest first."""

    async def add_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None:
        created = to_ms(datetime.now(UTC)) // 1000
        for player in player_ids:
            self.memberships[(player, board_id, taken_at)] = created

    async def remove_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None:
        for player in player_ids:
            await self.delete_membership(player, board_id, taken_at)

    async def delete_membership(self, player_id: str, board_id: str, taken_at: str) -> None:
        self.memberships.pop((player_id, board_id, taken_at), None)

    def fit(self, snapshot: Snapshot) -> SnapshotFit:
        return SnapshotFit(0, 400 * 1024, len(snapshot.entries))

    async def put_snapshot(self, snapshot: Snapshot) -> None:
        at = (snapshot.board_id, snapshot.taken_at)
        if at in self.snapshots:
            raise ConditionFailed("writing the snapshot")
        self.snapshots[at] = snapshot

    async def put_closing_snapshot(self, snapshot: Snapshot, event: Event) -> bool:
        row = self._registry.boards.get(snapshot.board_id)
        if row is None or row.closed_snapshot_at is not None:
            return False
        await self.put_snapshot(snapshot)
        self.events.append(event)
        self._registry.boards[snapshot.board_id] = replace(
            row, closed_snapshot_at=snapshot.taken_at
        )
        return True

    async def list_snapshots(self, board_id: str, *, limit: int) -> list[SnapshotSummary]:
        mine = sorted(
            (s for (b, _), s in self.snapshots.items() if b == board_id),
            key=lambda s: s.taken_at,
            reverse=True,
        )
        return [SnapshotSummary(s.taken_at, s.reason, s.player_count) for s in mine[:limit]]

    async def get_snapshot(self, board_id: str, taken_at: str) -> Snapshot | None:
        return self.snapshots.get((board_id, taken_at))

    async def replace_snapshot_entry(
        self, board_id: str, taken_at: str, *, index: int, player_id: str, entry: SnapshotEntry
    ) -> None:
        snapshot = self.snapshots.get((board_id, taken_at))
        if snapshot is None or index >= len(snapshot.entries):
            raise ConditionFailed("scrubbing the snapshot")
        if snapshot.entries[index].player_id != player_id:
            raise ConditionFailed("scrubbing the snapshot")
        entries = (*snapshot.entries[:index], entry, *snapshot.entries[index + 1 :])
        self.snapshots[(board_id, taken_at)] = replace(snapshot, entries=entries)


class MemoryTables:
    """``TableAdmin``: ``down`` makes ``ping`` answer as tables that do not."""

    def __init__(self) -> None:
        self.down = False
        self.created = False
        self.protected = False

    async def create_tables(self, *, deletion_protection: bool = False) -> TablesReport:
        names = ["scores", "snapshots"]
        newly_protected = deletion_protection and self.created and not self.protected
        report = TablesReport(
            created=[] if self.created else names,
            protected=names if newly_protected else [],
            unchanged=names if self.created and not newly_protected else [],
        )
        self.created = True
        self.protected = self.protected or deletion_protection
        return report

    async def ping(self) -> None:
        if self.down:
            raise Unavailable("the tables do not answer (a fake that was told so)")


@dataclass
class MemoryStores:
    """Every fake, and the ``Stores`` over them that ``app.bootstrap.build_leaderboard`` takes."""

    table: MemoryBoards = field(default_factory=MemoryBoards)
    registry: MemoryRegistry = field(default_factory=MemoryRegistry)
    definitions: MemoryDefinitions = field(default_factory=MemoryDefinitions)
    api_keys: MemoryApiKeys = field(default_factory=MemoryApiKeys)
    tables: MemoryTables = field(default_factory=MemoryTables)
    moderation: MemoryModeration = field(default_factory=MemoryModeration)
    webhooks: MemoryWebhooks = field(default_factory=MemoryWebhooks)
    outbox: MemoryOutbox = field(default_factory=MemoryOutbox)
    entrants: MemoryEntrants = field(default_factory=MemoryEntrants)

    def __post_init__(self) -> None:
        self.moderation.rows = self.table.standing
        self.leases = MemoryLeases(self.table)
        self.snapshots = MemorySnapshots(self.table, self.registry)

    @property
    def stores(self) -> Stores:
        t = self.table
        return Stores(
            submissions=t.submissions,
            erasures=t.erasures,
            requests=t.requests,
            standings=t.standings,
            index=t.index,
            ranks=t.ranks,
            counters=t.counters,
            leases=self.leases,
            snapshots=self.snapshots,
            registry=self.registry,
            definitions=self.definitions,
            api_keys=self.api_keys,
            tables=self.tables,
            moderation=self.moderation,
            webhooks=self.webhooks,
            outbox=self.outbox,
            claims=t.claim_ledger,
            entrants=self.entrants,
        )
