"""The ports: what the use cases need of storage, one ``Protocol`` per family of items, and the
records that cross them; ``app/store`` implements every port over DynamoDB, unit tests with small
fakes. Every method may raise ``Unavailable`` (or ``Throttled``) when DynamoDB does not answer,
and ``StoreRejected`` when it refuses a request as malformed (a bug of ours). The ports live by
family in ``players``, ``ranking`` and ``operations``; all are named here, where everything
imports them from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from app.services.ports.claims import Claim, ClaimLedger
from app.services.ports.entrants import EntrantStore, EntryState, LeagueWrite, MovesState
from app.services.ports.moderation import ModerationStore
from app.services.ports.operations import (
    API_KEY_ID_LENGTH,
    ApiKeyLookup,
    ApiKeyStore,
    BoardRegistrations,
    BoardRegistry,
    DefinitionStore,
    Lease,
    LeaseStore,
    RegisteredBoard,
    RegistryPage,
    Snapshot,
    SnapshotEntry,
    SnapshotFit,
    SnapshotReason,
    SnapshotStore,
    SnapshotSummary,
    StoredApiKey,
    StoredDefinition,
)
from app.services.ports.players import (
    COMPLETED,
    EntryWrite,
    ErasureMarks,
    Membership,
    PlayerRecord,
    PlayerRows,
    RequestRecord,
    RequestStore,
    RowOutcome,
    StandingsPage,
    StandingStore,
    SubmissionState,
    SubmissionStore,
    SubmissionWrite,
)
from app.services.ports.ranking import (
    BoardIndex,
    CoarseItem,
    CounterItem,
    CounterStore,
    FineItem,
    IndexedKey,
    RankReader,
    SlotAddress,
    StoredCounters,
    StoredTies,
    TieItem,
)
from app.services.ports.webhooks import OutboxStore, WebhookStore

# ---- the tables, and all of it together ---------------------------------------------------------


class Readiness(Protocol):
    async def ping(self) -> None:
        """Raise ``Unavailable`` unless both tables answer."""


@dataclass(frozen=True)
class TablesReport:
    """What ``create_tables`` did, by table name."""

    created: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    """Existing tables whose deletion protection it turned on."""
    ttl_enabled: list[str] = field(default_factory=list)
    """Existing tables whose TTL it turned on (a table it creates gets it as it is created)."""
    index_added: list[str] = field(default_factory=list)
    """Existing tables it added RankIndex to, each with the index's name (DynamoDB fills it in
    the background)."""
    unchanged: list[str] = field(default_factory=list)
    """Existing tables it left as they were."""


class TableAdmin(Readiness, Protocol):
    """Both tables as a whole: whether they answer, and creating them (an operator's command and
    the embedded backend, never a request)."""

    async def create_tables(self, *, deletion_protection: bool = False) -> TablesReport:
        """Create whatever is missing, TTL on; turn deletion protection on where asked."""


@dataclass(frozen=True)
class Stores:
    """Every port, as the composition root (``app/bootstrap.py``) built it: one client, one bound
    on calls in flight. It is all the service layer and the API ever see of storage."""

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
    api_keys: ApiKeyStore
    tables: TableAdmin
    moderation: ModerationStore
    webhooks: WebhookStore
    outbox: OutboxStore
    claims: ClaimLedger
    entrants: EntrantStore


__all__ = [
    "API_KEY_ID_LENGTH",
    "COMPLETED",
    "ApiKeyLookup",
    "ApiKeyStore",
    "BoardIndex",
    "BoardRegistrations",
    "BoardRegistry",
    "Claim",
    "ClaimLedger",
    "CoarseItem",
    "CounterItem",
    "CounterStore",
    "DefinitionStore",
    "EntrantStore",
    "EntryState",
    "EntryWrite",
    "ErasureMarks",
    "FineItem",
    "IndexedKey",
    "LeagueWrite",
    "Lease",
    "LeaseStore",
    "Membership",
    "ModerationStore",
    "MovesState",
    "OutboxStore",
    "PlayerRecord",
    "PlayerRows",
    "RankReader",
    "Readiness",
    "RegisteredBoard",
    "RegistryPage",
    "RequestRecord",
    "RequestStore",
    "RowOutcome",
    "SlotAddress",
    "Snapshot",
    "SnapshotEntry",
    "SnapshotFit",
    "SnapshotReason",
    "SnapshotStore",
    "SnapshotSummary",
    "StandingStore",
    "StandingsPage",
    "StoredApiKey",
    "StoredCounters",
    "StoredDefinition",
    "StoredTies",
    "Stores",
    "SubmissionState",
    "SubmissionStore",
    "SubmissionWrite",
    "TableAdmin",
    "TablesReport",
    "TieItem",
    "WebhookStore",
]
