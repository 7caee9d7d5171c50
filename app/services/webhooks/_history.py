"""A game's events and their deliveries, newest first, a page at a time (the deliveries
endpoint), with a signed cursor as the other lists hand out."""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.storage_keys import OUTBOX_PREFIX
from app.errors import InvalidCursor
from app.services.ports import Stores
from app.services.ports.webhooks import StoredEvent


@dataclass(frozen=True)
class Deliveries:
    events: list[StoredEvent]
    next_cursor: str | None


async def deliveries(
    stores: Stores, game: str, *, cursor: str | None, limit: int, secret: bytes
) -> Deliveries:
    scope = f"{OUTBOX_PREFIX}{game}"
    before = ""
    if cursor is not None:
        try:
            before = decode_cursor(cursor, secret, board_id=scope).rank_key
        except CursorError as exc:
            raise InvalidCursor(str(exc).replace("board", "list")) from None
    page = await stores.outbox.events(game, before=before, limit=limit)
    after = None if page.last is None else encode_cursor(Cursor(scope, page.last, "", 0), secret)
    return Deliveries(page.events, after)
