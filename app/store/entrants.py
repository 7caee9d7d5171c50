"""Placements (the ``EntrantStore`` port, decision 0039): ``<player>`` / ``cohort#<board>``
holds the player's ``seat``, ``cohortId`` (where the variant has cohorts), ``attempts`` and the
``placeToken`` of the request that placed them; ``cohorts#<board>`` / ``cohorts`` holds ``placed``,
the players placed on the board. A placement is one transaction over both, conditioned on the
count read, so seats are dense and exactly once; both expire with their board."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from app.domain.cohorts import Placement
from app.domain.storage_keys import PLACED_SORT_KEY, placed_pk, placement_sk
from app.services.ports.entrants import EntryState
from app.store.client import Dynamo
from app.store.items import Item, get_n, get_s, key, n, s
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


class EntrantItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def read_entry(self, player_id: str, board_id: str) -> EntryState:
        found = await self._dynamo.batch_get(
            "reading the player's placement",
            table=self._table,
            keys=entry_keys(player_id, board_id),
        )
        return entry_state(found, player_id, board_id)

    async def read_entries(self, player_id: str, board_ids: list[str]) -> dict[str, EntryState]:
        found = await self._dynamo.batch_get(
            "reading the player's placements",
            table=self._table,
            keys=[k for board_id in board_ids for k in entry_keys(player_id, board_id)],
        )
        return {board_id: entry_state(found, player_id, board_id) for board_id in board_ids}

    async def place(
        self, placement: Placement, *, max_entrants: int | None, expires_at: int | None
    ) -> None:
        await self._dynamo.transact(
            "placing the player",
            placement_writes(
                self._table, placement, max_entrants=max_entrants, expires_at=expires_at
            ),
            token=transaction_token(placement),
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
    text = f"{placement.token}|{placement.board_id}|{placement.seat}"
    return hashlib.sha256(text.encode()).hexdigest()[:36]


def entry_keys(player_id: str, board_id: str) -> list[dict[str, AttributeValueTypeDef]]:
    """The player's placement on the board and the board's count (a submission reads them in
    its own BatchGetItem)."""
    return [key(player_id, placement_sk(board_id)), counter_key(board_id)]


def entry_state(found: list[Item], player_id: str, board_id: str) -> EntryState:
    """The placement and the count among ``found`` (items of any keys)."""
    placement, placed = None, 0
    mine, counter = entry_keys(player_id, board_id)
    for item in found:
        address = (get_s(item, "playerId"), get_s(item, "leaderboardId"))
        if address == (mine["playerId"].get("S"), mine["leaderboardId"].get("S")):
            placement = placement_of(item)
        elif address == (counter["playerId"].get("S"), counter["leaderboardId"].get("S")):
            placed = get_n(item, "placed") or 0
    return EntryState(placement, placed)


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


def counter_key(board_id: str) -> dict[str, AttributeValueTypeDef]:
    return key(placed_pk(board_id), PLACED_SORT_KEY)


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
    if expires_at is not None:
        item[TTL_ATTRIBUTE] = n(expires_at)
        update += ", #ttl = :ttl"
        values[":ttl"] = n(expires_at)
    counter: dict[str, Any] = {
        "TableName": table,
        "Key": counter_key(placement.board_id),
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
        attempts=get_n(item, "attempts") or 0,
        token=get_s(item, "placeToken") or "",
    )
