"""Placements (the ``EntrantStore`` port, decision 0039): ``<player>`` / ``cohort#<board>``
holds the player's ``seat``, ``cohortId`` (where the variant has cohorts), ``tier`` (in a
league), ``attempts`` and the ``placeToken`` of the request that placed them; ``cohorts#<board>``
/ ``cohorts`` holds ``placed``, the players placed on the board (in a league, ``cohorts#<tier>``
per tier). A placement is one transaction over both, conditioned on the count read, so seats are
dense and exactly once; both expire with their board. In a league (decision 0040) the same
transaction puts the player's league record, ``<player>`` / ``league#<game>#<variant>``
(``tier``, ``boardId``, ``periodStart``, ``cohortId``; no expiry), conditioned on the one read;
``league#<board>`` / ``<cohortId>`` holds who of a cohort moved at the board's close (``tier``,
``up``, ``down``), put once."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from app.domain.cohorts import CohortMoves, LeagueRecord, Placement
from app.domain.periods import Board
from app.domain.storage_keys import (
    LEAGUE_PREFIX,
    league_sk,
    moves_pk,
    placed_pk,
    placed_sk,
    placement_sk,
)
from app.services.ports.entrants import EntryState, LeagueWrite, MovesState
from app.store.client import Dynamo
from app.store.items import Item, get_n, get_s, key, n, s
from app.store.registry import registry_key
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


class EntrantItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def read_entry(
        self, player_id: str, board_id: str, tiers: tuple[str, ...] = ()
    ) -> EntryState:
        found = await self._dynamo.batch_get(
            "reading the player's placement",
            table=self._table,
            keys=entry_keys(player_id, board_id, tiers),
        )
        return entry_state(found, player_id, board_id, tiers)

    async def read_entries(
        self, player_id: str, board_ids: list[str], tiers: tuple[str, ...] = ()
    ) -> dict[str, EntryState]:
        found = await self._dynamo.batch_get(
            "reading the player's placements",
            table=self._table,
            keys=entries_keys(player_id, board_ids, tiers),
        )
        return {board_id: entry_state(found, player_id, board_id, tiers) for board_id in board_ids}

    async def place(
        self,
        placement: Placement,
        *,
        max_entrants: int | None,
        expires_at: int | None,
        league: LeagueWrite | None = None,
    ) -> None:
        writes = placement_writes(
            self._table, placement, max_entrants=max_entrants, expires_at=expires_at
        )
        if league is not None:
            writes.append(league_put(self._table, placement.player_id, league))
        await self._dynamo.transact(
            "placing the player", writes, token=transaction_token(placement)
        )

    async def read_counts(self, board_id: str, tiers: tuple[str, ...]) -> dict[str, int]:
        found = await self._dynamo.batch_get(
            "reading the tiers' counts",
            table=self._table,
            keys=[counter_key(board_id, tier) for tier in tiers],
        )
        by_key = {get_s(item, "leaderboardId"): get_n(item, "placed") or 0 for item in found}
        return {tier: by_key.get(placed_sk(tier), 0) for tier in tiers}

    async def placed_on(self, board_id: str, tiers: tuple[str, ...]) -> int:
        found = await self._dynamo.batch_get(
            "reading the board's counts of players placed",
            table=self._table,
            keys=[counter_key(board_id), *(counter_key(board_id, tier) for tier in tiers)],
        )
        return sum(get_n(item, "placed") or 0 for item in found)

    async def still_placed(self, board_id: str, player_ids: tuple[str, ...]) -> set[str]:
        found = await self._dynamo.batch_get(
            "reading the movers' placements",
            table=self._table,
            keys=[key(player, placement_sk(board_id)) for player in player_ids],
            projection="playerId",
        )
        return {get_s(item, "playerId") or "" for item in found}

    async def read_moves(self, board_id: str, cohort_id: str) -> MovesState:
        found = await self._dynamo.batch_get(
            "reading the league's moves",
            table=self._table,
            keys=[key(moves_pk(board_id), cohort_id), registry_key(board_id)],
        )
        moves, closed = None, False
        for item in found:
            if get_s(item, "playerId") == moves_pk(board_id):
                moves = moves_of(item)
            else:
                closed = get_s(item, "closedSnapshotAt") is not None
        return MovesState(moves, closed)

    async def put_moves(
        self, board_id: str, cohort_id: str, moves: CohortMoves, *, expires_at: int | None
    ) -> CohortMoves:
        item: dict[str, AttributeValueTypeDef] = {
            **key(moves_pk(board_id), cohort_id),
            "tier": s(moves.tier),
        }
        # String sets (none where empty: DynamoDB has no empty set), so erasure can DELETE one.
        if moves.up:
            item["up"] = {"SS": list(moves.up)}
        if moves.down:
            item["down"] = {"SS": list(moves.down)}
        if expires_at is not None:
            item[TTL_ATTRIBUTE] = n(expires_at)
        written = await self._dynamo.applied(
            self._dynamo.put_item(
                "writing a cohort's moves",
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(playerId)",
            )
        )
        if written:
            return moves
        # Another closer's, put first: the moves are theirs (read strongly).
        found = await self._dynamo.batch_get(
            "reading a cohort's moves", table=self._table, keys=[key(moves_pk(board_id), cohort_id)]
        )
        return moves_of(found[0]) if found else moves

    async def scrub_moves(self, board_id: str, cohort_id: str, player_id: str) -> None:
        # DELETE from a set takes the id out wherever it is; on no item, the condition keeps
        # it from making one (a resend finds it scrubbed already, as right as the first).
        await self._dynamo.applied(
            self._dynamo.update_item(
                "erasing the player from a cohort's moves",
                TableName=self._table,
                Key=key(moves_pk(board_id), cohort_id),
                UpdateExpression="DELETE up :p, down :p",
                ConditionExpression="attribute_exists(playerId)",
                ExpressionAttributeValues={":p": {"SS": [player_id]}},
            )
        )

    async def read_league(self, player_id: str, game: str, variant: str) -> LeagueRecord | None:
        found = await self._dynamo.batch_get(
            "reading the player's league",
            table=self._table,
            keys=[key(player_id, league_sk(game, variant))],
        )
        return league_of(found[0]) if found else None

    async def erase_league(self, player_id: str, league: str) -> None:
        await self._dynamo.delete_item(
            "erasing the league record",
            TableName=self._table,
            Key=key(player_id, f"{LEAGUE_PREFIX}{league}"),
        )

    async def erase_placement(self, player_id: str, board_id: str) -> None:
        # Unconditional: a resend after a lost answer finds nothing and is as right as the first.
        await self._dynamo.delete_item(
            "erasing the placement",
            TableName=self._table,
            Key=key(player_id, placement_sk(board_id)),
        )


def transaction_token(placement: Placement) -> str | None:
    """The same request placing at the same seat: the same call, applied once by DynamoDB
    however often botocore resends it; another seat is another call."""
    if not placement.token:
        return None
    text = f"{placement.token}|{placement.board_id}|{placement.tier}|{placement.seat}"
    return hashlib.sha256(text.encode()).hexdigest()[:36]


def entry_keys(
    player_id: str, board_id: str, tiers: tuple[str, ...] = ()
) -> list[dict[str, AttributeValueTypeDef]]:
    """The player's placement on the board and the board's count (a submission reads them in
    its own BatchGetItem); in a league, each tier's count and the player's league record."""
    if not tiers:
        return [key(player_id, placement_sk(board_id)), counter_key(board_id)]
    board = Board.from_id(board_id)
    return [
        key(player_id, placement_sk(board_id)),
        key(player_id, league_sk(board.game, board.variant)),
        *(counter_key(board_id, tier) for tier in tiers),
    ]


def entries_keys(
    player_id: str, board_ids: Sequence[str], tiers: tuple[str, ...] = ()
) -> list[dict[str, AttributeValueTypeDef]]:
    """``entry_keys`` of each board, each key once (the league record is every board's)."""
    every = (k for board_id in board_ids for k in entry_keys(player_id, board_id, tiers))
    return list({_address(k): k for k in every}.values())


def _address(k: Item | dict[str, AttributeValueTypeDef]) -> tuple[str | None, str | None]:
    return (k["playerId"].get("S"), k["leaderboardId"].get("S"))


def entry_state(
    found: list[Item], player_id: str, board_id: str, tiers: tuple[str, ...] = ()
) -> EntryState:
    """The placement, the counts and the league record among ``found`` (items of any keys)."""
    placement, league, counts = None, None, {}
    mine, *rest = entry_keys(player_id, board_id, tiers)
    counters = {_address(counter_key(board_id, tier)): tier for tier in tiers or (None,)}
    league_address = _address(rest[0]) if tiers else None
    for item in found:
        address = (get_s(item, "playerId"), get_s(item, "leaderboardId"))
        if address == _address(mine):
            placement = placement_of(item)
        elif address == league_address:
            league = league_of(item)
        elif address in counters:
            counts[counters[address] or ""] = get_n(item, "placed") or 0
    return EntryState(placement, counts.get("", 0), counts, league)


def attempt_update(table: str, placement: Placement) -> dict[str, Any]:
    """One more attempt on a placement read with ``placement.attempts - 1``: conditioned on that
    count, so two submissions racing for the last attempt cannot both land."""
    return {
        "Update": {
            "TableName": table,
            "Key": key(placement.player_id, placement_sk(placement.board_id)),
            "UpdateExpression": "SET attempts = :next",
            "ConditionExpression": "attempts = :read",
            "ExpressionAttributeValues": {
                ":next": n(placement.attempts),
                ":read": n(placement.attempts - 1),
            },
        }
    }


def counter_key(board_id: str, tier: str | None = None) -> dict[str, AttributeValueTypeDef]:
    return key(placed_pk(board_id), placed_sk(tier))


def league_put(table: str, player_id: str, league: LeagueWrite) -> dict[str, Any]:
    """The player's league record as placed now, conditioned on the one read (none, or the one
    of the period it started): a raced placement of theirs cancels the transaction."""
    record = league.record
    board = Board.from_id(record.board_id)
    values: dict[str, AttributeValueTypeDef] = {}
    if league.read_start_ms is None:
        condition = "attribute_not_exists(playerId)"
    else:
        condition = "periodStart = :read"
        values[":read"] = n(league.read_start_ms)
    put: dict[str, Any] = {
        "TableName": table,
        "Item": {
            **key(player_id, league_sk(board.game, board.variant)),
            "tier": s(record.tier),
            "boardId": s(record.board_id),
            "periodStart": n(record.period_start_ms),
            "cohortId": s(record.cohort_id),
        },
        "ConditionExpression": condition,
    }
    if values:
        put["ExpressionAttributeValues"] = values
    return {"Put": put}


def league_of(item: Item) -> LeagueRecord:
    return LeagueRecord(
        tier=get_s(item, "tier") or "",
        board_id=get_s(item, "boardId") or "",
        period_start_ms=get_n(item, "periodStart") or 0,
        cohort_id=get_s(item, "cohortId") or "",
    )


def moves_of(item: Item) -> CohortMoves:
    def players(name: str) -> tuple[str, ...]:
        return tuple(sorted(item.get(name, {}).get("SS", [])))

    return CohortMoves(get_s(item, "tier") or "", players("up"), players("down"))


def placement_writes(
    table: str, placement: Placement, *, max_entrants: int | None, expires_at: int | None
) -> list[dict[str, Any]]:
    """The two items of a placement's transaction (a submission that places its player adds them
    to its own): the count moved from the seat read to one more, and the placement put."""
    seat = placement.seat
    values: dict[str, AttributeValueTypeDef] = {":next": n(seat + 1)}
    if seat == 0:
        condition = "attribute_not_exists(placed)"
    else:
        condition = "placed = :seat"
        values[":seat"] = n(seat)
    if max_entrants is not None and seat >= max_entrants:
        # The caller read the count under the cap; the count's condition keeps it so.
        raise ValueError(f"seat {seat} is past maxEntrants {max_entrants}")
    update = "SET placed = :next"
    item: dict[str, AttributeValueTypeDef] = {
        **key(placement.player_id, placement_sk(placement.board_id)),
        "seat": n(seat),
        "attempts": n(placement.attempts),
        "placeToken": s(placement.token),
    }
    if placement.cohort_id is not None:
        item["cohortId"] = s(placement.cohort_id)
    if placement.tier is not None:
        item["tier"] = s(placement.tier)
    if expires_at is not None:
        item[TTL_ATTRIBUTE] = n(expires_at)
        update += ", #ttl = :ttl"
        values[":ttl"] = n(expires_at)
    counter: dict[str, Any] = {
        "TableName": table,
        "Key": counter_key(placement.board_id, placement.tier),
        "UpdateExpression": update,
        "ConditionExpression": condition,
        "ExpressionAttributeValues": values,
    }
    if expires_at is not None:
        counter["ExpressionAttributeNames"] = {"#ttl": TTL_ATTRIBUTE}
    return [
        {"Update": counter},
        {
            "Put": {
                "TableName": table,
                "Item": item,
                "ConditionExpression": "attribute_not_exists(playerId)",
            }
        },
    ]


def placement_of(item: Item) -> Placement:
    return Placement(
        player_id=get_s(item, "playerId") or "",
        board_id=(get_s(item, "leaderboardId") or "").removeprefix(placement_sk("")),
        seat=get_n(item, "seat") or 0,
        cohort_id=get_s(item, "cohortId"),
        tier=get_s(item, "tier"),
        attempts=get_n(item, "attempts") or 0,
        token=get_s(item, "placeToken") or "",
    )
