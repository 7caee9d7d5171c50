"""Ports of a player's items: idempotency records, a submission read and written whole, the erasure
mark, and the player's rows on boards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from app.domain.cohorts import Placement
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Standing, StandingWrite
from app.domain.moderation import Action
from app.domain.seed_file import SeedRow
from app.domain.ties import SlotTies
from app.services.ports.entrants import EntryState, LeagueWrite
from app.services.ports.operations import Lease
from app.services.ports.ranking import SlotAddress

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
    moderation: Action | None = None
    """The player's moderation in the game (decision 0036): ``ban`` refuses the submission,
    ``hide`` writes it hidden."""
    placements: Mapping[str, Placement | None] = field(default_factory=dict)
    """By period board id, for the boards whose entry was read (decision 0039): the player's
    place, or ``None``."""
    placed: Mapping[str, int] = field(default_factory=dict)
    """By period board id, for the same boards: the players placed on it so far."""
    entries: Mapping[str, EntryState] = field(default_factory=dict)
    """By period board id, for the same boards: all that was read of the player's place (in a
    league, each tier's count and their league record: decision 0040)."""


@dataclass(frozen=True)
class EntryReads:
    """What a submission to a variant that places its players reads of their places (decision
    0039): on each of ``board_ids``, and in a league each of ``tiers``' count (decision 0040)."""

    board_ids: tuple[str, ...] = ()
    tiers: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntryWrite:
    """What a submission to a variant that places its players writes of the player's place on
    one period board (decision 0039): a new placement at the seat read, or one more attempt on
    the placement read. Either is conditioned on what was read, so a raced seat or a raced
    attempt cancels the transaction."""

    placement: Placement
    """As it is to be after the submission (``attempts`` counts this one)."""
    new: bool
    """Placed by this submission (the board's count moves from ``placement.seat``)."""
    expires_at: int | None
    league: LeagueWrite | None = None
    """In a league, the player's league record a new placement puts (decision 0040)."""
    counted: bool = True
    """An attempt on a placement read is written (and conditioned): only under ``maxAttempts``,
    which nothing else reads."""


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
    entries: tuple[EntryWrite, ...] = ()
    """The player's places it writes (decision 0039), none on an ordinary variant."""
    moderated: bool | None = None
    """Where the writes follow the player's moderation record (decision 0036), the record as
    read: there (rows written hidden) or not (hidden rows shown again); the transaction is
    cancelled if it is not so any more. ``None``: an ordinary submission, which checks nothing."""


class SubmissionStore(Protocol):
    async def read_submission(
        self,
        record_id: str,
        player_id: str,
        board_ids: Sequence[str],
        *,
        lease_board_ids: Sequence[str],
        grain_slots: Sequence[SlotAddress] = (),
        entries: EntryReads | None = None,
    ) -> SubmissionState:
        """The record, the rows of ``board_ids``, the leases of ``lease_board_ids`` (the others
        are known), the erasure mark, the tie grains of ``grain_slots``, the player's placement
        and ``entries``' (the player's placement on each of its boards and their counts, in a league
        each tier's count and the player's league record): one call."""

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
    hidden: list[Standing] = field(default_factory=list)
    """Rows hidden by moderation (decision 0036): no counts to take back."""
    moderated_games: list[str] = field(default_factory=list)
    """The games whose moderation record the player has (``<player>`` / ``mod#<game>``)."""
    claims: list[str] = field(default_factory=list)
    """The boards whose reward the player claimed (``<player>`` / ``claim#<board>``)."""
    placements: list[str] = field(default_factory=list)
    """The period boards the player is placed on (``<player>`` / ``cohort#<board>``: decision
    0039)."""
    cohorts: dict[str, str] = field(default_factory=dict)
    """Their cohort on each of those boards that has cohorts, by board id."""
    leagues: list[str] = field(default_factory=list)
    """The leagues the player has a record in (``<player>`` / ``league#<game>#<variant>``:
    decision 0040), as ``<game>#<variant>``."""


@dataclass(frozen=True)
class StandingsPage:
    standings: list[Standing]
    """In board (partition) id order."""
    last: str | None
    """The sort key to read on after; ``None``: the player's partition holds no more."""


class StandingStore(Protocol):
    """Players' rows on boards (``<player>`` / ``<board>``, with ``rankKey``), written together
    with their counters, and the player's partition as a whole."""

    async def read_standing(self, board_id: str, player_id: str) -> Standing | None:
        """The player's row, strongly consistent."""

    async def standings_of(self, player_id: str) -> list[Standing]:
        """Every board row of the player: one Query on the base table."""

    async def cohort_row(self, board_id: str, player_id: str) -> Standing | None:
        """The player's row on their cohort of the period board ``board_id`` (decision 0039),
        visible or hidden, if they have one: one Query of their partition, strongly
        consistent."""

    async def standings_page(self, player_id: str, *, after: str, limit: int) -> StandingsPage:
        """The player's board rows whose board (partition) id sorts after ``after`` (``""``:
        from the first), from one Query reading at most ``limit`` rows of their partition (its
        other rows, idempotency records and snapshot memberships, count too)."""

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

    async def standings_on_board(
        self, board_id: str, player_ids: Sequence[str], *, shards: int = 1
    ) -> list[Standing]:
        """The rows of those of ``player_ids`` (at most 100) on the board of ``shards``, each on
        its partition, in no order: one BatchGetItem, two where DynamoDB leaves keys
        unprocessed."""

    async def rekey(self, board_id: str, key: RankKey, new: RankKey) -> bool:
        """Give the player's row the key ``new`` (the same place under the board's order), no
        tie mark, and a new version, if it still holds ``key``; ``False`` if it does not."""

    async def mark_tie(self, board_id: str, key: RankKey, mark: int) -> bool:
        """Mark the player's row as counted in its slot's tie counters at ``mark`` (bumping its
        version), if it still holds ``key``; ``False`` if it does not."""

    async def players_on_board(
        self, board_id: str, player_ids: Sequence[str], *, shards: int = 1
    ) -> set[str]:
        """Which of these players have a row on the board of ``shards`` now, strongly
        consistent."""
