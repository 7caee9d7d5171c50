"""Ports of the operator's items: seeding leases, snapshots, the board registry, board
definitions, API keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from app.domain.definitions import BoardDefinition
from app.domain.events import Event
from app.domain.principal import Principal

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

SnapshotReason = Literal["closed", "manual"]
"""Why a snapshot was taken: its period closed (the board's final snapshot), or on demand."""


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
    reason: SnapshotReason
    player_count: int
    top_n: int
    entries: tuple[SnapshotEntry, ...]


@dataclass(frozen=True)
class SnapshotSummary:
    taken_at: str
    reason: SnapshotReason
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

    async def put_closing_snapshot(self, snapshot: Snapshot, event: Event) -> bool:
        """Write the board's final snapshot, mark its registry row and put ``event`` (its
        ``board.closed``) in the outbox, all together; ``False`` (nothing written) if the row is
        marked already by another close, or is missing. A call resent after its answer was lost
        is told by its own mark: ``True``."""

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


@dataclass(frozen=True)
class RegistryPage:
    boards: list[RegisteredBoard]
    """In board id order."""
    last: str | None
    """The board id to read on after; ``None``: the registry holds no more."""


class BoardRegistrations(Protocol):
    """The registry as a submission uses it."""

    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        """Record the board once; ``True`` if this call recorded it, ``False`` if it was known."""


class BoardRegistry(BoardRegistrations, Protocol):
    async def registered_boards(self, *, prefix: str = "") -> list[RegisteredBoard]:
        """Every registered board, or those whose id starts with ``prefix``
        (``game#variant#``: a variant's boards)."""

    async def registered_page(self, *, after: str, limit: int) -> RegistryPage:
        """The registered boards whose id sorts after ``after`` (``""``: from the first), from
        one Query reading at most ``limit`` rows."""


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

API_KEY_ID_LENGTH = 8
"""Hex characters of the digest shown in listings: enough to tell keys apart, useless to an attacker."""


@dataclass(frozen=True)
class StoredApiKey:
    """A key as the store holds it. ``digest`` is the SHA-256 hex digest of the plaintext."""

    digest: str
    name: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None = None

    @property
    def key_id(self) -> str:
        return self.digest[:API_KEY_ID_LENGTH]

    @property
    def principal(self) -> Principal:
        return Principal(self.name, frozenset(self.scopes))


class ApiKeyLookup(Protocol):
    """What authentication needs of the store."""

    async def get(self, digest: str) -> StoredApiKey | None:
        """The key with this digest, revoked or not; ``None`` if there is none."""


class ApiKeyStore(ApiKeyLookup, Protocol):
    """What the operator tools need of the store."""

    async def create_key(
        self, digest: str, name: str, scopes: Sequence[str], *, created_at_ms: int | None = None
    ) -> StoredApiKey: ...

    async def revoke(
        self,
        *,
        name: str | None = None,
        digest_prefix: str | None = None,
        revoked_at_ms: int | None = None,
    ) -> list[StoredApiKey]:
        """Revoke every key of ``name``, or the one key whose digest starts with
        ``digest_prefix``; keys already revoked keep their time. Raises ``NotFound`` when nothing
        matches and ``InvalidInput`` when a prefix matches several keys."""

    async def list_keys(self) -> list[StoredApiKey]: ...
