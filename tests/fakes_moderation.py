"""A fake of the ``ModerationStore`` port's records, listing and log (``ModerationItems``), for
use-case tests that need no DynamoDB. Hidden rows are the real adapter's alone: the tests of
hiding run on the embedded backend (tests/api/test_moderation*.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from app.domain.clock import iso_ms
from app.domain.models import CounterDelta, Standing
from app.domain.moderation import (
    EventPage,
    Moderation,
    ModerationEvent,
    ModerationPage,
)


def _sort_key(event: ModerationEvent) -> str:
    return f"{iso_ms(event.at_ms)}#{event.event_id}"


@dataclass
class MemoryModeration:
    records: dict[tuple[str, str], Moderation] = field(default_factory=dict)
    """By (game, player)."""
    log: dict[str, list[ModerationEvent]] = field(default_factory=dict)
    rows: Callable[[str, str], Standing | None] | None = None
    """The fake table's rows by (board, player), all visible (``MemoryStores`` sets it)."""

    async def moderation_of(self, player_id: str, game: str) -> Moderation | None:
        return self.records.get((game, player_id))

    async def put_moderation(self, moderation: Moderation, event: ModerationEvent) -> None:
        self.records[(moderation.game, moderation.player_id)] = moderation
        await self.log_event(event)

    async def remove_moderation(self, player_id: str, game: str, event: ModerationEvent) -> bool:
        if self.records.pop((game, player_id), None) is None:
            return False
        await self.log_event(event)
        return True

    async def clear_sweep_again(self, player_id: str, game: str, *, due_ms: int) -> None:
        found = self.records.get((game, player_id))
        if found is not None and found.sweep_again_ms == due_ms:
            self.records[(game, player_id)] = replace(found, sweep_again_ms=None)

    async def log_event(self, event: ModerationEvent) -> None:
        self.log.setdefault(event.game, []).append(event)

    async def erase_moderation(self, player_id: str, game: str) -> None:
        self.records.pop((game, player_id), None)

    async def moderated_players(self, game: str, *, after: str, limit: int) -> ModerationPage:
        listed = sorted(
            (m for (g, p), m in self.records.items() if g == game and p > after),
            key=lambda m: m.player_id,
        )
        page = listed[:limit]
        return ModerationPage(page, page[-1].player_id if len(listed) > limit else None)

    async def moderation_log(self, game: str, *, before: str, limit: int) -> EventPage:
        events = sorted(self.log.get(game, []), key=_sort_key, reverse=True)
        older = [e for e in events if not before or _sort_key(e) < before]
        page = older[:limit]
        return EventPage(page, _sort_key(page[-1]) if len(older) > limit else None)

    async def rows_in_game(self, player_id: str, game: str) -> list[Standing]:
        return []  # no hidden rows here: see the module's docstring

    async def read_row(self, row_id: str, player_id: str) -> Standing | None:
        return None if self.rows is None else self.rows(row_id, player_id)

    async def hide_row(
        self, row: Standing, *, counters: Sequence[CounterDelta], since_ms: int, now_s: int
    ) -> None:
        raise NotImplementedError("hidden rows are tested on the embedded backend")

    async def show_row(
        self, row: Standing, *, counters: Sequence[CounterDelta], tie_mark: int | None, now_s: int
    ) -> None:
        raise NotImplementedError("hidden rows are tested on the embedded backend")
