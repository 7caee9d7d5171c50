"""Moderation of a player within a game (DESIGN.md section 14, decision 0036): what a moderator
did, as the record beside the player's rows and the game's audit log keep it; plain values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Action(StrEnum):
    """What a moderation record says: ``hide`` keeps taking the player's submissions, hidden;
    ``ban`` also refuses them."""

    HIDE = "hide"
    BAN = "ban"


class Logged(StrEnum):
    """What an event of the audit log did."""

    HIDE = "hide"
    BAN = "ban"
    RESTORE = "restore"
    VOID = "void"


@dataclass(frozen=True)
class Moderation:
    """The player is moderated in ``game`` since ``since_ms`` (the first of the actions in force:
    a hide made a ban keeps its moment)."""

    player_id: str
    game: str
    action: Action
    reason: str
    since_ms: int
    by: str
    """The name of the key that moderated the player last."""
    sweep_again_ms: int | None = None
    """When a later pass over the player's rows is due (a submission that read no record before
    the first pass and wrote after it is found then); ``None``: none is due."""


@dataclass(frozen=True)
class ModerationEvent:
    """One line of a game's append-only audit log (``modlog#<game>`` / ``<at>#<id>``)."""

    game: str
    at_ms: int
    event_id: str
    """Unique among the events of one millisecond (the log's sort key is ``<at>#<id>``)."""
    action: Logged
    player_id: str
    reason: str
    by: str
    board_id: str | None = None
    """The board of a void; ``None`` for an action on the whole game."""


@dataclass(frozen=True)
class ModerationPage:
    players: list[Moderation]
    last: str | None
    """The player id to list on after; ``None``: the listing holds no more."""


@dataclass(frozen=True)
class EventPage:
    events: list[ModerationEvent]
    last: str | None
    """The sort key to read on after (older events); ``None``: the log holds no more."""
