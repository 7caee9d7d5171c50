"""Moderation's bodies (DESIGN.md section 14): a hide or a ban, the record, a restore, a void,
the game's moderated players and its audit log."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.api.schemas.common import CamelModel
from app.api.schemas.reads import EntryOut
from app.domain.clock import iso_ms
from app.domain.models import Entry
from app.domain.moderation import Action, Moderation, ModerationEvent
from app.services.operations import LogPage, ModeratedPlayers, Restored
from app.services.operations._moderation import MAX_REASON


class ModerationIn(CamelModel):
    action: Literal["hide", "ban"] = Field(
        description="hide: the player disappears from every read of the game's boards and their "
        "submissions are still taken, hidden; ban: hidden, and their submissions refused (403 "
        "player-banned)"
    )
    reason: str = Field(max_length=MAX_REASON, description="why, for the audit log")

    model_config = CamelModel.model_config | {"extra": "forbid"}

    @property
    def chosen(self) -> Action:
        return Action(self.action)


class ModerationOut(CamelModel):
    player_id: str
    game: str
    action: Literal["hide", "ban"]
    reason: str
    since: str = Field(description="when the player was first moderated (of the actions in force)")

    @classmethod
    def of(cls, moderation: Moderation) -> ModerationOut:
        return cls(
            player_id=moderation.player_id,
            game=moderation.game,
            action=moderation.action.value,
            reason=moderation.reason,
            since=iso_ms(moderation.since_ms),
        )


class RestoredOut(CamelModel):
    player_id: str
    game: str
    rows_restored: int = Field(description="the player's entries put back on the boards")

    @classmethod
    def of(cls, restored: Restored) -> RestoredOut:
        return cls(player_id=restored.player_id, game=restored.game, rows_restored=restored.rows)


class VoidedOut(CamelModel):
    voided: EntryOut = Field(description="the entry as it was (rank null: it is on no board now)")

    @classmethod
    def of(cls, entry: Entry) -> VoidedOut:
        return cls(voided=EntryOut.of(entry, None))


class ModeratedPlayerOut(CamelModel):
    player_id: str
    action: Literal["hide", "ban"]
    reason: str
    since: str


class ModeratedPlayersOut(CamelModel):
    players: list[ModeratedPlayerOut]
    next_cursor: str | None

    @classmethod
    def of(cls, page: ModeratedPlayers) -> ModeratedPlayersOut:
        return cls(
            players=[
                ModeratedPlayerOut(
                    player_id=m.player_id,
                    action=m.action.value,
                    reason=m.reason,
                    since=iso_ms(m.since_ms),
                )
                for m in page.players
            ],
            next_cursor=page.next_cursor,
        )


class ModerationEventOut(CamelModel):
    at: str
    action: Literal["hide", "ban", "restore", "void"]
    player_id: str
    leaderboard_id: str | None = Field(
        default=None, description="the board of a void; absent for an action on the whole game"
    )
    reason: str
    by: str = Field(description="the name of the key that acted")

    @classmethod
    def of(cls, event: ModerationEvent) -> ModerationEventOut:
        return cls(
            at=iso_ms(event.at_ms),
            action=event.action.value,
            player_id=event.player_id,
            leaderboard_id=event.board_id,
            reason=event.reason,
            by=event.by,
        )


class ModerationLogOut(CamelModel):
    events: list[ModerationEventOut] = Field(description="newest first")
    next_cursor: str | None

    @classmethod
    def of(cls, page: LogPage) -> ModerationLogOut:
        return cls(
            events=[ModerationEventOut.of(e) for e in page.events], next_cursor=page.next_cursor
        )
