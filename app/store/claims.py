"""The claims ledger (the ``ClaimLedger`` port): ``<player>`` / ``claim#<board>``, holding the
claim's ``rank``, ``playerCount``, ``claimedAt`` and the ``claimToken`` of the request that wrote
it. Written once, by a conditional put; never on RankIndex (no ``rankKey``); kept until the
player is erased.
"""

from __future__ import annotations

from app.domain.storage_keys import claim_sk
from app.services.ports.claims import Claim
from app.store.client import ConditionFailedWithItem, Dynamo
from app.store.items import Item, get_n, get_s, key, n, s


class ClaimItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def get_claim(self, player_id: str, board_id: str) -> Claim | None:
        item = await self._dynamo.get_item(
            "reading the player's claim", table=self._table, key=key(player_id, claim_sk(board_id))
        )
        return None if item is None else _claim_of(item)

    async def record_claim(self, claim: Claim) -> Claim:
        try:
            await self._dynamo.put_item(
                "recording the claim",
                TableName=self._table,
                Item={
                    **key(claim.player_id, claim_sk(claim.board_id)),
                    "rank": n(claim.rank),
                    "playerCount": n(claim.player_count),
                    "claimedAt": s(claim.claimed_at),
                    "claimToken": s(claim.token),
                },
                ConditionExpression="attribute_not_exists(playerId)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailedWithItem as failed:
            if failed.item is None:
                raise
            # Another request's claim, or this very put resent by botocore after its answer was
            # lost: its token says which.
            return _claim_of(failed.item)
        return claim

    async def erase_claim(self, player_id: str, board_id: str) -> None:
        # Unconditional: a resend after a lost answer finds nothing and is as right as the first.
        await self._dynamo.delete_item(
            "erasing the claim", TableName=self._table, Key=key(player_id, claim_sk(board_id))
        )


def _claim_of(item: Item) -> Claim:
    return Claim(
        player_id=get_s(item, "playerId") or "",
        board_id=(get_s(item, "leaderboardId") or "").removeprefix(claim_sk("")),
        rank=get_n(item, "rank") or 0,
        player_count=get_n(item, "playerCount") or 0,
        claimed_at=get_s(item, "claimedAt") or "",
        token=get_s(item, "claimToken") or "",
    )
