"""The ports: what the use cases need of storage, one ``Protocol`` per family of items, and the
records that cross them. ``app/store`` implements every port over DynamoDB (one module per family);
unit tests use small fakes. The composition root (``app/bootstrap.py``) bundles the adapters into a
``Stores`` typed by these ports, which is all the service layer and the API ever see.

Every method may raise ``Unavailable`` (or ``Throttled``) when DynamoDB does not answer, and
``StoreRejected`` when it refuses a request as malformed (a bug of ours).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Page, Standing, StandingWrite
from app.domain.principal import Principal
from app.domain.seed_file import SeedRow
from app.domain.ties import SlotTies, TieCounts

# ---- idempotency records ------------------------------------------------------------------------

COMPLETED = "completed"


@dataclass(frozen=True)
class RequestRecord:
    """An idempotency record (``<player>`` / ``idem#<client>#<key>``): the request it answered and
    the response it replays."""

    request_hash: str
    status: str
    response_json: str | None
    expires_at: int | None = None
    """Epoch seconds; past it the record is gone as far as anyone can tell (TTL deletes late)."""

    def is_live(self, now_s: int) -> bool:
        return self.expires_at is None or self.expires_at >= now_s


class RequestStore(Protocol):
    """Idempotency records as erasure sees them (a submission writes its record inside its one
    transaction: ``SubmissionStore``)."""

    async def erase_record(self, player_id: str, record_id: str) -> None:
        """Delete the record (nothing, if it is gone already)."""


# ---- a submission, read and written whole -------------------------------------------------------


SlotAddress = tuple[str, int, int]
"""A fine slot: board id, coarse bucket, slot."""


@dataclass(frozen=True)
class SubmissionState:
    """Everything a submission decides on, read strongly in one call: its idempotency record, the
    player's row and the seeding lease of each board, and whether the player is being erased."""

    record: RequestRecord | None
    rows: Mapping[str, Standing | None]
    """By board id."""
    leases: Mapping[str, Lease | None]
    """By board id, for the boards whose lease was read."""
    erasing_until: int | None
    """Epoch seconds an erasure of the player holds them until, if one is running."""
    grains: Mapping[SlotAddress, SlotTies] = field(default_factory=dict)
    """The tie grains (and cuts) of the slots asked for that have one (crowded slots)."""


@dataclass(frozen=True)
class SubmissionWrite:
    """A submission's every write, applied together or not at all: the completed idempotency
    record (with the response it answers) and each board's row with its counters."""

    record_id: str
    request_hash: str
    response_json: str
    expires_at: int
    """When the record may go: the replay window."""
    player_id: str
    boards: tuple[StandingWrite, ...]


class SubmissionStore(Protocol):
    async def read_submission(
        self,
        record_id: str,
        player_id: str,
        board_ids: Sequence[str],
        *,
        lease_board_ids: Sequence[str],
        grain_slots: Sequence[SlotAddress] = (),
    ) -> SubmissionState:
        """The record, the rows of ``board_ids``, the leases of ``lease_board_ids`` (the others
        are known), the erasure mark, the tie grains of ``grain_slots``: one call."""

    async def read_grains(self, slots: Sequence[SlotAddress]) -> Mapping[SlotAddress, SlotTies]:
        """The tie grains (and cuts) of those of ``slots`` that have one: one call."""

    async def commit_submission(self, write: SubmissionWrite, *, token: str, now_ms: int) -> None:
        """One transaction: the record (only where none is live), every row conditioned on the
        version read, every counter change. ``TransactionCancelled`` when it was not applied."""


class ErasureMarks(Protocol):
    """A mark on a player while they are erased: submissions for them are refused meanwhile."""

    async def mark_erasing(self, player_id: str, *, until: int) -> None: ...

    async def clear_erasing(self, player_id: str) -> None: ...


# ---- standings ----------------------------------------------------------------------------------

RowOutcome = Literal["created", "replaced", "kept"]
"""What a seeded row did: a new entry, a better entry in place of a worse one, or nothing (the
board already held an equal or better entry for that player)."""


@dataclass(frozen=True)
class Membership:
    """The player is (or was) in the snapshot ``board_id`` / ``taken_at``."""

    board_id: str
    taken_at: str
    created_at: int | None
    """Epoch seconds the row was written."""


@dataclass(frozen=True)
class PlayerRecord:
    """One of the player's idempotency records: ``record_id`` is ``idem#<client>#<key>``."""

    record_id: str
    record: RequestRecord


@dataclass(frozen=True)
class PlayerRows:
    """Every row of a player's partition, by kind."""

    standings: list[Standing]
    memberships: list[Membership]
    records: list[PlayerRecord]
    unknown: int = 0
    """Rows of no kind above (left alone, and logged)."""


class StandingStore(Protocol):
    """Players' rows on boards (``<player>`` / ``<board>``, with ``rankKey``), written together
    with their counters, and the player's partition as a whole."""

    async def read_standing(self, board_id: str, player_id: str) -> Standing | None:
        """The player's row, strongly consistent."""

    async def standings_of(self, player_id: str) -> list[Standing]:
        """Every board row of the player: one Query on the base table."""

    async def rows_of_player(self, player_id: str) -> PlayerRows:
        """Every row in the player's partition, strongly consistent."""

    async def delete_standing(
        self, standing: Standing, *, counters: Sequence[CounterDelta], now_s: int
    ) -> None:
        """Delete the row if it is as read, with its counters' changes, unless a seeding lease
        holds the board: ``LeaseHeld``, or ``TransactionCancelled`` when the row changed."""

    async def put_seed_row(
        self,
        board_id: str,
        row: SeedRow,
        *,
        definition: BoardDefinition,
        expires_at: int | None,
        writer: str,
    ) -> RowOutcome:
        """Write a seeded row by the board's operator: unless the board holds an equal or better
        entry (``best``), a later one (``latest``); a ``sum`` row sets the total. ``writer``
        names this seed (its lease holder), so that a write resent after a lost answer is told
        by what it left, not taken for a row that was there."""

    async def standings_on_board(self, board_id: str, player_ids: Sequence[str]) -> list[Standing]:
        """The rows of those of ``player_ids`` (at most 100) on the board, in no order: one
        BatchGetItem, two where DynamoDB leaves keys unprocessed."""

    async def rekey(self, board_id: str, key: RankKey, new: RankKey) -> bool:
        """Give the player's row the key ``new`` (the same place under the board's order), no
        tie mark, and a new version, if it still holds ``key``; ``False`` if it does not."""

    async def mark_tie(self, board_id: str, key: RankKey, mark: int) -> bool:
        """Mark the player's row as counted in its slot's tie counters at ``mark`` (bumping its
        version), if it still holds ``key``; ``False`` if it does not."""

    async def players_on_board(self, board_id: str, player_ids: Sequence[str]) -> set[str]:
        """Which of these players have a row on the board now, strongly consistent."""


# ---- the index and the counters -----------------------------------------------------------------


class RankReader(Protocol):
    """What the rank code reads: the histogram and a capped count of index keys. ``strong`` reads
    the counters strongly (twice the read units): as of every write committed before the read."""

    async def coarse_counts(self, board_id: str, *, strong: bool = False) -> Mapping[int, int]:
        """Players per coarse bucket (summed over shards); absent buckets are empty.
        ``CountsIncomplete`` while the board's counters are marked part-written: no rank is
        known then, exact or range."""

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int, *, strong: bool = False
    ) -> Mapping[int, int]:
        """Players per fine slot ``first..last`` (inclusive) of coarse ``bucket``."""

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        """Count index entries with ``low <= rankKey <= high`` (not ``exclude_player``'s), stopping
        at ``limit``; returns the count and whether it stopped there."""

    async def tie_counts(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        strong: bool = False,
    ) -> TieCounts:
        """A crowded slot's level-A counts and seal, its level-B counts under ``b_prefix``, and
        (where given) its level-C counts under ``c_prefix``."""


@dataclass(frozen=True)
class IndexedKey:
    """A key as a walk of RankIndex finds it, with the tie mark its row is counted at, if any."""

    key: RankKey
    tie_mark: int | None = None


class BoardIndex(Protocol):
    """RankIndex: a board in rank order (eventually consistent, as every GSI read)."""

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page: ...

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        """Up to ``limit`` entries just ahead of (or behind) ``key``, nearest first."""

    def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        """The board's rank keys (each with its row's tie grain), in pages, best first; only
        those from ``between[0]`` to ``between[1]`` (encoded keys, both included) if given."""


@dataclass(frozen=True)
class CoarseItem:
    """One coarse counter item: a shard of a coarse bucket."""

    shard: int
    bucket: int


@dataclass(frozen=True)
class FineItem:
    """One fine counter item: a slot of a coarse bucket."""

    bucket: int
    slot: int


@dataclass(frozen=True)
class TieItem:
    """One tie counter item of a crowded slot: level A or B, by its sort key
    (``app.domain.ties.TiePlace``)."""

    bucket: int
    slot: int
    sort_key: str


CounterItem = CoarseItem | FineItem | TieItem


@dataclass(frozen=True)
class StoredTies:
    """A slot's tie counters as a builder reads them (strongly): the grain, if the slot has one,
    and every level-A and level-B count by sort key."""

    grain: int | None
    counts: dict[str, int]
    sealed: bool
    """The slot's last build sealed its counts (``TieCounts.sealed``)."""
    cuts: dict[str, int] = field(default_factory=dict)
    """The cut length of each cut level-B chunk, by its sort key."""


@dataclass(frozen=True)
class StoredCounters:
    """A board's counter items as read: coarse ``(shard, bucket) -> n`` and fine
    ``(bucket, slot) -> n``; an absent key is an absent item (which counts as 0)."""

    coarse: dict[tuple[int, int], int]
    fine: dict[tuple[int, int], int]

    def coarse_total(self, bucket: int) -> int:
        return sum(n for (_, b), n in self.coarse.items() if b == bucket)

    @property
    def coarse_buckets(self) -> set[int]:
        return {b for _, b in self.coarse}


class CounterStore(Protocol):
    """A board's histogram counters, read whole and set one by one (the reconciler's and the
    seeder's view; submissions change them inside ``commit_submission``)."""

    @property
    def counter_shards(self) -> int: ...

    async def coarse_counts(self, board_id: str, *, consistent: bool = False) -> Mapping[int, int]:
        """Players per coarse bucket (summed over shards): the player count is their sum.
        ``CountsIncomplete`` while the board's counters are marked part-written."""

    async def mark_incomplete(self, board_id: str, *, by: str, expires_at: int | None) -> None:
        """Mark the board's counters part-written, before a seed or a rebuild writes any: until
        ``clear_incomplete``, every rank and player count of the board is ``CountsIncomplete``."""

    async def clear_incomplete(self, board_id: str) -> None:
        """Every counter of the board is written: ranks and player counts are known again."""

    async def read_counters(self, board_id: str, *, buckets: Iterable[int]) -> StoredCounters:
        """Every coarse counter item (all shards) and the fine items of ``buckets``, strongly."""

    async def set_counter(
        self,
        board_id: str,
        item: CounterItem,
        *,
        n: int,
        expected: int | None,
        expires_at: int | None,
    ) -> None:
        """Set one counter item to ``n`` (delete it when ``n`` is 0) if it still holds
        ``expected`` (``None``: absent); else ``ConditionFailed``."""

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        """A slot's grain and tie counts, strongly."""

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
        """Give the slot its grain and these chunks their cuts, unless it has another grain, or
        one of them another cut (``False``): from then on, submissions to the slot count it in
        its tie counters (and in a cut chunk's level C)."""

    async def seal_ties(
        self, board_id: str, bucket: int, slot: int, *, expires_at: int | None
    ) -> None:
        """A build of the slot's tie counters finished whole: rank reads may trust them (where
        they add up)."""

    async def unseal_ties(self, board_id: str, bucket: int, slot: int) -> None:
        """A build of the slot's tie counters begins: rank reads give its range until sealed."""


# ---- seeding leases -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Lease:
    """A board's seeding lease as read: who holds it and until when (epoch seconds)."""

    holder: str
    expires_at: int

    def is_live(self, now_s: float) -> bool:
        # The one rule everything applies: a lease holds the board while ``expiresAt > now``.
        return self.expires_at > now_s


class LeaseStore(Protocol):
    async def read_lease(self, board_id: str) -> Lease | None:
        """The board's seeding lease, strongly consistent (``None`` when there is none)."""

    async def acquire_lease(
        self, board_id: str, *, holder: str, expires_at: int, now_s: int
    ) -> Lease | None:
        """Take the lease if there is none or it has expired: ``None`` when taken, else the
        lease in the way."""

    async def renew_lease(self, board_id: str, *, holder: str, expires_at: int, now_s: int) -> bool:
        """Extend the lease if ``holder`` still holds it and it has not expired."""

    async def release_lease(self, board_id: str, *, holder: str) -> bool:
        """Remove the lease if ``holder`` still holds it."""


# ---- snapshots and the board registry -----------------------------------------------------------

SnapshotReason = Literal["period-closed", "manual"]


@dataclass(frozen=True)
class SnapshotEntry:
    """One place in a snapshot. An erased player's place keeps its ``rank`` and ``score`` (so the
    other ranks and the score distribution stay as they were) and loses everything else."""

    rank: int
    player_id: str | None
    display_name: str | None
    country: str | None
    score: int | None
    achieved_at: str | None

    def scrubbed(self) -> SnapshotEntry:
        return SnapshotEntry(self.rank, None, None, None, self.score, None)


@dataclass(frozen=True)
class Snapshot:
    board_id: str
    taken_at: str
    """ISO 8601 UTC with milliseconds and ``Z``: the sort key, and the snapshot's name."""
    reason: str
    player_count: int
    top_n: int
    entries: tuple[SnapshotEntry, ...]


@dataclass(frozen=True)
class SnapshotSummary:
    taken_at: str
    reason: str
    player_count: int


@dataclass(frozen=True)
class SnapshotFit:
    """A snapshot measured against the store's largest item (a snapshot is one item)."""

    item_bytes: int
    """What the snapshot's item would take, every entry in it."""
    limit_bytes: int
    """The most one item may take."""
    entries_that_fit: int
    """How many of its first entries fit in one item: all of them when it fits."""

    @property
    def fits(self) -> bool:
        return self.item_bytes <= self.limit_bytes


class SnapshotStore(Protocol):
    """The Snapshots table, and the membership rows that let erasure find a player's snapshots."""

    async def add_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None: ...

    async def remove_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None: ...

    async def delete_membership(self, player_id: str, board_id: str, taken_at: str) -> None: ...

    def fit(self, snapshot: Snapshot) -> SnapshotFit:
        """How the snapshot's item measures against the largest item the store takes (no call
        is made). ``put_snapshot`` and ``put_closing_snapshot`` take only snapshots that fit."""

    async def put_snapshot(self, snapshot: Snapshot) -> None:
        """Write a new snapshot; ``ConditionFailed`` if one exists with that board and time."""

    async def put_closing_snapshot(self, snapshot: Snapshot) -> bool:
        """Write the board's period-closed snapshot and mark its registry row, together; ``False``
        (nothing written) if the row is marked already, or is missing."""

    async def list_snapshots(self, board_id: str, *, limit: int) -> list[SnapshotSummary]:
        """Newest first."""

    async def get_snapshot(self, board_id: str, taken_at: str) -> Snapshot | None: ...

    async def replace_snapshot_entry(
        self, board_id: str, taken_at: str, *, index: int, player_id: str, entry: SnapshotEntry
    ) -> None:
        """Put ``entry`` at ``index`` if that place still holds ``player_id``; else
        ``ConditionFailed``."""


@dataclass(frozen=True)
class RegisteredBoard:
    board_id: str
    expires_at: int | None
    closed_snapshot_at: str | None
    """When the board's period-closed snapshot was taken, once it has been."""


class BoardRegistry(Protocol):
    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        """Record the board once; ``True`` if this call recorded it, ``False`` if it was known."""

    async def registered_boards(self, *, prefix: str = "") -> list[RegisteredBoard]:
        """Every registered board, or those whose id starts with ``prefix``
        (``game#variant#``: a variant's boards)."""


# ---- board definitions --------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredDefinition:
    game: str
    variant: str
    definition: BoardDefinition
    defined_at: str
    """ISO 8601 UTC: when it was last put."""


class DefinitionStore(Protocol):
    async def get_definition(self, game: str, variant: str) -> StoredDefinition | None: ...

    async def definitions_of(self, game: str) -> list[StoredDefinition]:
        """Every defined variant of ``game``: one Query."""

    async def put_definition(
        self, game: str, variant: str, definition: BoardDefinition
    ) -> StoredDefinition: ...


# ---- API keys -----------------------------------------------------------------------------------

KEY_ID_LENGTH = 8
"""Hex characters of the digest shown in listings: enough to tell keys apart, useless to an attacker."""


@dataclass(frozen=True)
class StoredKey:
    """A key as the store holds it. ``digest`` is the SHA-256 hex digest of the plaintext."""

    digest: str
    name: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None = None

    @property
    def key_id(self) -> str:
        return self.digest[:KEY_ID_LENGTH]

    @property
    def principal(self) -> Principal:
        return Principal(self.name, frozenset(self.scopes))


class KeyLookup(Protocol):
    """What authentication needs of the store."""

    async def get(self, digest: str) -> StoredKey | None:
        """The key with this digest, revoked or not; ``None`` if there is none."""


class KeyStore(KeyLookup, Protocol):
    """What the operator tools need of the store."""

    async def create_key(
        self, digest: str, name: str, scopes: Sequence[str], *, created_at_ms: int | None = None
    ) -> StoredKey: ...

    async def revoke(
        self,
        *,
        name: str | None = None,
        digest_prefix: str | None = None,
        revoked_at_ms: int | None = None,
    ) -> list[StoredKey]:
        """Revoke every key of ``name``, or the one key whose digest starts with
        ``digest_prefix``; keys already revoked keep their time. Raises ``NotFound`` when nothing
        matches and ``InvalidInput`` when a prefix matches several keys."""

    async def list_keys(self) -> list[StoredKey]: ...


# ---- the tables, and all of it together ---------------------------------------------------------


class Readiness(Protocol):
    async def ping(self) -> None:
        """Raise ``Unavailable`` unless both tables answer."""


@dataclass(frozen=True)
class Stores:
    """Every port, as the composition root built it: one client, one bound on calls in flight."""

    submissions: SubmissionStore
    erasures: ErasureMarks
    requests: RequestStore
    standings: StandingStore
    index: BoardIndex
    ranks: RankReader
    counters: CounterStore
    leases: LeaseStore
    snapshots: SnapshotStore
    registry: BoardRegistry
    definitions: DefinitionStore
    keys: KeyStore
    tables: Readiness
