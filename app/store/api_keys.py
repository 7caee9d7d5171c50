"""API keys in DynamoDB: the ``ApiKeyStore`` port over the Scores table, one bookkeeping item per key
(``apikey#<sha256 hex>`` / ``apikey``), never on RankIndex and never in a player's partition. Only
the digest is stored, never the key (docs/security.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from app.domain.clock import iso_ms, to_ms
from app.domain.storage_keys import API_KEY_PREFIX, KEYS_SORT_KEY, api_key_pk
from app.errors import ConditionFailed, InvalidInput, NotFound
from app.services.ports import StoredApiKey
from app.store.client import ConditionFailedWithItem, Dynamo
from app.store.items import Item, get_s, key, s

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


_DIGEST = re.compile(r"^[0-9a-f]{64}$")


def key_pk(digest: str) -> str:
    if not _DIGEST.fullmatch(digest):
        raise ValueError("a key digest is 64 lowercase hex characters")
    return api_key_pk(digest)


def _now_ms() -> int:
    return to_ms(datetime.now(UTC))


class ApiKeyItems:
    """API keys (the ``ApiKeyStore`` port)."""

    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    def _key(self, digest: str) -> dict[str, AttributeValueTypeDef]:
        return key(key_pk(digest), KEYS_SORT_KEY)

    async def create_key(
        self, digest: str, name: str, scopes: Sequence[str], *, created_at_ms: int | None = None
    ) -> StoredApiKey:
        """Store a new key; ``ConditionFailed`` if that digest is already stored (with 256 random
        bits behind it, that means the same key was submitted twice)."""
        created_at = iso_ms(_now_ms() if created_at_ms is None else created_at_ms)
        item: dict[str, AttributeValueTypeDef] = {
            **self._key(digest),
            "name": s(name),
            "scopes": {"L": [s(scope) for scope in scopes]},
            "createdAt": s(created_at),
        }
        try:
            await self._dynamo.put_item(
                "storing the API key",
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(playerId)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailedWithItem as failed:
            if failed.item != item:
                raise
            # This very put, resent after its answer was lost: the key is stored, as asked.
        return StoredApiKey(digest, name, tuple(scopes), created_at)

    async def get(self, digest: str) -> StoredApiKey | None:
        # Eventually consistent: the authenticator caches answers for seconds anyway.
        item = await self._dynamo.get_item(
            "reading the API key", table=self._table, key=self._key(digest), consistent=False
        )
        return None if item is None else _key_from_item(item)

    async def list_keys(self) -> list[StoredApiKey]:
        """Every key, revoked or not: a consistent Scan of the table. Listing has no index to query
        (the table is keyed by playerId first, and a key's playerId is its digest), so it is a
        Scan of the whole table filtered to ``leaderboardId = apikey``: it reads, and is billed
        for, every item. That is for operators' tools, never a request path."""
        items = await self._dynamo.scan_all(
            "listing the API keys",
            TableName=self._table,
            FilterExpression="leaderboardId = :keys AND begins_with(playerId, :prefix)",
            ExpressionAttributeValues={":keys": s(KEYS_SORT_KEY), ":prefix": s(API_KEY_PREFIX)},
            # Consistent, so that a key made a moment ago can be revoked a moment later.
            ConsistentRead=True,
        )
        return [_key_from_item(item) for item in items]

    async def revoke(
        self,
        *,
        name: str | None = None,
        digest_prefix: str | None = None,
        revoked_at_ms: int | None = None,
    ) -> list[StoredApiKey]:
        """Revoke every key of ``name``, or the one key whose digest starts with
        ``digest_prefix``. A key already revoked keeps its first ``revokedAt``; revoking again is
        harmless. Returns the matching keys as now stored.

        Raises ``NotFound`` when no key matches, ``InvalidInput`` when a prefix matches several."""
        if (name is None) == (digest_prefix is None):
            raise ValueError("revoke by name or by digest prefix, not both or neither")
        matching = [
            key
            for key in await self.list_keys()
            if key.name == name or (digest_prefix and key.digest.startswith(digest_prefix))
        ]
        if not matching:
            raise NotFound("no API key matches")
        if digest_prefix is not None and len(matching) > 1:
            raise InvalidInput("that key id matches several keys: give more of it")
        revoked_at = iso_ms(_now_ms() if revoked_at_ms is None else revoked_at_ms)
        return [await self._revoke_one(key, revoked_at) for key in matching]

    async def _revoke_one(self, key: StoredApiKey, revoked_at: str) -> StoredApiKey:
        if key.revoked_at is not None:
            return key
        try:
            updated = await self._dynamo.update_item(
                "revoking the API key",
                TableName=self._table,
                Key=self._key(key.digest),
                UpdateExpression="SET revokedAt = :at",
                ConditionExpression="attribute_exists(playerId) AND attribute_not_exists(revokedAt)",
                ExpressionAttributeValues={":at": s(revoked_at)},
                ReturnValues="ALL_NEW",
            )
        except ConditionFailed:
            # Revoked by someone else meanwhile: theirs is the time that stands.
            item = await self._dynamo.get_item(
                "reading the API key", table=self._table, key=self._key(key.digest)
            )
            return key if item is None else _key_from_item(item)
        return key if updated is None else _key_from_item(updated)


def _key_from_item(item: Item) -> StoredApiKey:
    pk = get_s(item, "playerId") or ""
    scopes = item.get("scopes", {}).get("L", [])
    return StoredApiKey(
        digest=pk.removeprefix(API_KEY_PREFIX),
        name=get_s(item, "name") or "",
        scopes=tuple(scope["S"] for scope in scopes if "S" in scope),
        created_at=get_s(item, "createdAt") or "",
        revoked_at=get_s(item, "revokedAt"),
    )
