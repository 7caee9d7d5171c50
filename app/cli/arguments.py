"""What several commands do with their arguments: check a game or variant name as the API does,
and read a listing page by page into one (a command hands out no page cursor)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from app.domain.keys import is_valid_id
from app.domain.storage_keys import RESERVED_GAMES
from app.errors import InvalidInput

T = TypeVar("T")

PAGE = 100
"""How many a command reads a page."""
MAX_LISTED = 1000
"""The most ``--limit`` may ask for."""


def checked_name(text: str, what: str) -> str:
    """``text`` as a ``what`` ("game", "variant") name; a game may not be a reserved one."""
    if not is_valid_id(text) or (what == "game" and text in RESERVED_GAMES):
        raise InvalidInput(
            f"{text!r} is not a {what} name: 1 to 64 letters, digits, '_', '.', ':' or '-'"
            + (" (and not a reserved name)" if what == "game" else "")
        )
    return text


async def gathered(
    read: Callable[[str | None, int], Awaitable[tuple[Sequence[T], str | None]]],
    *,
    limit: int | None = None,
) -> list[T]:
    """Every item ``read(cursor, page_size)`` pages through, or the first ``limit`` of them
    (1..``MAX_LISTED``)."""
    if limit is not None and not 1 <= limit <= MAX_LISTED:
        raise InvalidInput(f"--limit must be in 1..{MAX_LISTED}")
    found: list[T] = []
    cursor: str | None = None
    while limit is None or len(found) < limit:
        page, cursor = await read(cursor, PAGE if limit is None else min(PAGE, limit - len(found)))
        found += page
        if cursor is None:
            break
    return found
