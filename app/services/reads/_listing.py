"""The live boards ``GET /v1/boards`` lists: the games and variants that have boards, a page of
variants at a time, each with its live periods, from the registry (remembered per task)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC
from itertools import groupby

from app.domain.calendar import board_is_expired
from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.periods import Board, Period, PeriodKind
from app.domain.storage_keys import REGISTRY_PK
from app.errors import InvalidCursor
from app.services.policies import ReadPolicy
from app.services.ports import Stores
from app.services.reads._asks import PageAsk
from app.services.registry import RegisteredBoards
from app.services.rules.held import Definitions


@dataclass(frozen=True)
class VariantBoards:
    variant: str
    periods: list[Period]
    """All-time first, then each kind's periods (in ``PeriodKind`` order), newest first."""


@dataclass(frozen=True)
class GameBoards:
    game: str
    variants: list[VariantBoards]


@dataclass(frozen=True)
class BoardListing:
    games: list[GameBoards]
    current: list[Period]
    """The periods ``day`` and ``week`` (each dated kind's current one) name at this moment."""
    next_cursor: str | None = None
    """Where the next page of variants starts; ``None``: this page is the last."""


MAX_LISTED_VARIANTS = 100
"""Most variants one page of ``GET /v1/boards`` lists."""


def _variant_cursor(game: str, variant: str, secret: bytes) -> str:
    # Every board id of the variant sorts before "game#variant#~", and every later variant's
    # after it: an id holds only A-Z a-z 0-9 _ . : - and #, all below "~".
    after = f"{game}#{variant}#~"
    return encode_cursor(Cursor(REGISTRY_PK, after, "", 0), secret)


def _listing_start(cursor: str | None, secret: bytes) -> str:
    if cursor is None:
        return ""
    try:
        return decode_cursor(cursor, secret, board_id=REGISTRY_PK).rank_key
    except CursorError as exc:
        raise InvalidCursor(str(exc).replace("board", "listing")) from None


_KIND_ORDER = {kind: position for position, kind in enumerate(PeriodKind)}


def _board_order(board: Board) -> tuple[str, str, int, str]:
    return board.game, board.variant, _KIND_ORDER[board.period.kind], board.period.label


async def live_boards(
    stores: Stores,
    policy: ReadPolicy,
    definitions: Definitions,
    cache: RegisteredBoards,
    page: PageAsk,
) -> BoardListing:
    """Up to ``limit`` games' variants with a board, in order, after where ``cursor`` left off,
    and each one's live periods: expired period boards are left out, as reads hide them (decided
    by the period and the variant's retention, like every read, so an entry remembered by
    ``cache`` leaves the list the moment its board expires), and so is a variant with none live.
    At most ``REGISTRY_QUERIES_PER_PAGE`` Queries and a definition read for each variant not held
    (``Definitions``)."""
    now, cursor_secret = page.now, policy.cursor_secret
    after = _listing_start(page.cursor, cursor_secret)
    read = await cache.page(stores.registry, after=after, variants=page.limit)
    found = await asyncio.gather(*(definitions.of(v.game, v.variant) for v in read.variants))
    games: list[GameBoards] = []
    for rows, resolved in zip(read.variants, found, strict=True):
        definition = resolved.definition
        live = sorted(
            (b for b in rows.boards if not board_is_expired(b, now=now, definition=definition)),
            key=_board_order,
        )
        if not live:
            continue
        periods: list[Period] = []
        for _, of_kind in groupby(live, key=lambda b: b.period.kind):
            periods.extend(sorted((b.period for b in of_kind), key=lambda p: p.label, reverse=True))
        if not games or games[-1].game != rows.game:
            games.append(GameBoards(rows.game, []))
        games[-1].variants.append(VariantBoards(rows.variant, periods))
    dated = (PeriodKind.DAY, PeriodKind.WEEK, PeriodKind.MONTH)
    current = [Period.containing(kind, now.astimezone(UTC)) for kind in dated]
    next_cursor = None
    if read.more and read.variants:
        last = read.variants[-1]
        next_cursor = _variant_cursor(last.game, last.variant, cursor_secret)
    return BoardListing(games, current, next_cursor)
