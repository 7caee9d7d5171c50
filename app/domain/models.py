"""What the service keeps and returns, in the game's words; plain values, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.domain.keys import RankKey


@dataclass(frozen=True)
class Entry:
    """One player's place on a board as the RankIndex holds it."""

    key: RankKey
    display_name: str | None = None
    country: str | None = None
    last_played_at_ms: int | None = None

    @property
    def player_id(self) -> str:
        return self.key.player_id

    @property
    def score(self) -> int:
        return self.key.score


@dataclass(frozen=True)
class LastWrite:
    """Which request last improved or touched a standing, and what it found: lets a retry of that
    request (after a crash or a partial failure) report the outcome it really had."""

    request_id: str
    previous_best: int | None
    improved: bool


@dataclass(frozen=True)
class Standing:
    """A player's row on one board, as read (strongly) from the base table."""

    board_id: str
    entry: Entry
    version: int
    last_write: LastWrite | None = None
    expires_at: int | None = None


@dataclass(frozen=True)
class CounterDelta:
    """A change to the histogram: ``delta`` players in fine bucket ``slot`` of coarse ``bucket``."""

    bucket: int
    slot: int
    delta: int


@dataclass(frozen=True)
class StandingWrite:
    """One board's conditional write: the new row, the version it must find (``None``: no row),
    and the counter changes that go with it in the same transaction."""

    board_id: str
    standing: Standing
    expected_version: int | None
    counters: tuple[CounterDelta, ...] = ()
    context_json: str | None = None
    expires_at: int | None = None


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_start: tuple[str, str] | None
    """``(rankKey, playerId)`` of the last entry read, when the index holds more."""


@dataclass(frozen=True)
class BoardOutcome:
    board_id: str
    period: str
    best: int
    previous_best: int | None
    improved: bool
    rank_before: int | None = None
    rank_after: int | None = None


@dataclass(frozen=True)
class SubmitOutcome:
    player_id: str
    boards: list[BoardOutcome] = field(default_factory=list)
