"""The narrow ports the use cases depend on; the DynamoDB adapter and the test fakes implement them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from app.domain.models import Entry, Page, Standing, StandingWrite


class RankReader(Protocol):
    """What the rank code reads: the histogram and a capped count of index keys."""

    async def coarse_counts(self, board_id: str) -> Mapping[int, int]:
        """Players per coarse bucket (summed over shards); absent buckets are empty."""
        ...

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int
    ) -> Mapping[int, int]:
        """Players per fine slot ``first..last`` (inclusive) of coarse ``bucket``."""
        ...

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        """Count index entries with ``low <= rankKey <= high`` (not ``exclude_player``'s), stopping
        at ``limit``; returns the count and whether it stopped there."""
        ...


@dataclass(frozen=True)
class RequestRecord:
    """An idempotency record as found when a reservation failed."""

    request_hash: str
    status: str
    deadline_ms: int
    response_json: str | None


class ScoreStore(RankReader, Protocol):
    async def reserve_request(
        self,
        record_id: str,
        *,
        request_hash: str,
        owner: str,
        deadline_ms: int,
        now_ms: int,
        expires_at: int,
    ) -> RequestRecord | None:
        """Reserve an idempotency record; ``None`` when reserved (new, expired, or a stale
        in-progress record of the same request taken over), else the record in the way."""
        ...

    async def complete_request(
        self, record_id: str, *, owner: str, response_json: str, expires_at: int
    ) -> None: ...

    async def release_request(self, record_id: str, *, owner: str) -> None: ...

    async def read_standing(self, board_id: str, player_id: str) -> Standing | None:
        """The player's row, strongly consistent."""
        ...

    async def write_standing(self, write: StandingWrite, *, token: str) -> None:
        """Apply one board's write in one transaction (the row conditioned on the version read,
        and its counters). Raises ``TransactionCancelled``."""
        ...

    async def lease_expiry(self, board_id: str) -> int | None:
        """When the board's seeding lease runs out (epoch seconds), if there is one."""
        ...

    async def note_request(self, player_id: str, record_id: str, *, expires_at: int) -> None:
        """Point from the player to an idempotency record holding their data (for erasure)."""
        ...

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page: ...

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        """Up to ``limit`` entries just ahead of (or behind) ``key``, nearest first."""
        ...

    async def standings_of(self, player_id: str) -> list[Standing]:
        """Every board row of the player: one Query on the base table."""
        ...

    async def ping(self) -> None:
        """Raise ``Unavailable`` unless both tables answer."""
        ...
