"""What the service keeps and returns, in the game's words; plain values, no I/O."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.domain.keys import RankKey
from app.domain.ties import TiePlace

MAX_METADATA_BYTES = 256
"""An entry's ``metadata``, as compact JSON: small enough that every read of the index carries it."""


@dataclass(frozen=True)
class Entry:
    """One player's place on a board as the RankIndex holds it."""

    key: RankKey
    display_name: str | None = None
    country: str | None = None
    metadata_json: str | None = None
    """What the game shows beside the entry (compact JSON, at most ``MAX_METADATA_BYTES``): the
    submission's that set the entry, so replaced with it."""

    @property
    def player_id(self) -> str:
        return self.key.player_id

    @property
    def score(self) -> int:
        return self.key.score


@dataclass(frozen=True)
class Standing:
    """A player's row on one board, as read (strongly) from the base table."""

    board_id: str
    entry: Entry
    version: int
    """Bumped by every write; 0 for a row that carries none."""
    expires_at: int | None = None
    tie_mark: int | None = None
    """Where its slot's tie counters count it (``app.domain.ties.TiePlace.of``: the grain, and
    the cut where its chunk is cut); ``None``: not in any."""
    last_played_at_ms: int | None = None
    """The latest submission to the board, whether or not it moved the entry (not on the index)."""
    context_json: str | None = None
    """The free-form context of the submission that set the entry (not on the index)."""
    hidden_since_ms: int | None = None
    """Set on a hidden row (its player is moderated, decision 0036): the row keeps its key as
    ``hiddenKey``, off RankIndex and out of the counters; ``None``: a visible row."""

    @property
    def hidden(self) -> bool:
        return self.hidden_since_ms is not None


@dataclass(frozen=True)
class CounterDelta:
    """A change to the histogram: ``delta`` players in fine bucket ``slot`` of coarse ``bucket``."""

    bucket: int
    slot: int
    delta: int
    tie: TiePlace | None = None
    """Where in the slot's tie counters the change goes too (a crowded slot's), if anywhere."""


@dataclass(frozen=True)
class StandingWrite:
    """One board's conditional write: the new row, the version it must find (``None``: no row),
    and the counter changes that go with it in the same transaction. ``moved`` false: the entry
    stays as it is, and only the row's version and ``lastPlayedAt`` change, which leaves the
    index untouched."""

    board_id: str
    standing: Standing
    expected_version: int | None
    counters: tuple[CounterDelta, ...] = ()
    expires_at: int | None = None
    moved: bool = True


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

    def to_json(self) -> str:
        """As stored on the idempotency record (and read by erasure: ``playerId``): the response
        body as first served, so a replay answers the same."""
        boards = []
        for board in self.boards:
            stored: dict[str, Any] = {
                "leaderboardId": board.board_id,
                "period": board.period,
                "best": board.best,
                "previousBest": board.previous_best,
                "improved": board.improved,
            }
            if board.rank_before is not None:
                stored["rankBefore"] = board.rank_before
            if board.rank_after is not None:
                stored["rankAfter"] = board.rank_after
            boards.append(stored)
        return json.dumps({"playerId": self.player_id, "boards": boards}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SubmitOutcome:
        stored = json.loads(text)
        return cls(
            stored["playerId"],
            [
                BoardOutcome(
                    board_id=board["leaderboardId"],
                    period=board["period"],
                    best=board["best"],
                    previous_best=board["previousBest"],
                    improved=board["improved"],
                    rank_before=board.get("rankBefore"),
                    rank_after=board.get("rankAfter"),
                )
                for board in stored["boards"]
            ],
        )
