"""The moderation port: a player's moderation record in a game (``<player>`` / ``mod#<game>``),
the game's listing of moderated players (``mod#<game>`` / ``<player>``) and its audit log
(``modlog#<game>`` / ``<at>#<id>``), and the player's rows of a game hidden and shown again in
place (decision 0036)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from app.domain.models import CounterDelta, Standing
from app.domain.moderation import EventPage, Moderation, ModerationEvent, ModerationPage


class ModerationStore(Protocol):
    async def moderation_of(self, player_id: str, game: str) -> Moderation | None:
        """The player's record in ``game``, strongly consistent."""

    async def put_moderation(self, moderation: Moderation, event: ModerationEvent) -> None:
        """The record, its listing item and the log's event, in one transaction (a record there
        already is replaced)."""

    async def remove_moderation(self, player_id: str, game: str, event: ModerationEvent) -> bool:
        """Delete the record and its listing item and log the event, in one transaction, if the
        player is moderated; ``False`` (nothing written) if not."""

    async def clear_sweep_again(self, player_id: str, game: str, *, due_ms: int) -> None:
        """The later pass the record asked for at ``due_ms`` is done: the record and its listing
        item no longer ask for it (nothing, if they ask for another or are gone)."""

    async def log_event(self, event: ModerationEvent) -> None:
        """Append the event to its game's log."""

    async def erase_moderation(self, player_id: str, game: str) -> None:
        """Delete the record and the listing item, logging nothing (an erasure's)."""

    async def moderated_players(self, game: str, *, after: str, limit: int) -> ModerationPage:
        """The game's listing, by player id, from after ``after`` (``""``: the first)."""

    async def moderation_log(self, game: str, *, before: str, limit: int) -> EventPage:
        """The game's log, newest first, from before the sort key ``before`` (``""``: the
        newest)."""

    async def rows_in_game(self, player_id: str, game: str) -> list[Standing]:
        """Every row of the player on the game's boards (every variant, period and shard),
        visible and hidden: one Query, strongly consistent."""

    async def read_row(self, row_id: str, player_id: str) -> Standing | None:
        """The player's row at ``row_id`` (a board, or a partition of a sharded one), visible or
        hidden, strongly consistent."""

    async def hide_row(
        self, row: Standing, *, counters: Sequence[CounterDelta], since_ms: int, now_s: int
    ) -> None:
        """Take the visible row off RankIndex (its key kept as ``hiddenKey``), its counters'
        changes with it, if the row is as read and no seeding lease holds the board:
        ``LeaseHeld``, or ``TransactionCancelled`` when the row changed."""

    async def show_row(
        self, row: Standing, *, counters: Sequence[CounterDelta], tie_mark: int | None, now_s: int
    ) -> None:
        """Put the hidden row back on RankIndex at its key (counted at ``tie_mark`` in its slot's
        tie counters, if any), its counters' changes with it, on the same conditions."""
