"""The players a game's moderators have hidden or banned, as the game's listing holds them
(decision 0036): what the reconciler, a seed and a snapshot's read each leave out."""

from __future__ import annotations

from app.domain.moderation import Moderation
from app.services.ports import Stores

_PAGE = 100


async def moderated_of(stores: Stores, game: str) -> list[Moderation]:
    """The game's whole listing: one Query a page of 100 (a game's moderated players are few)."""
    found: list[Moderation] = []
    after = ""
    while True:
        page = await stores.moderation.moderated_players(game, after=after, limit=_PAGE)
        found += page.players
        if page.last is None:
            return found
        after = page.last
