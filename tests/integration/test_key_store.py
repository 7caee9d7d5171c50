"""API keys in the real Scores table (the embedded DynamoDB): create, read, list, revoke; keys stay
off RankIndex; no plaintext key is ever written; the authenticator over the real store."""

from __future__ import annotations

import asyncio

import pytest

from app.bootstrap import Runtime
from app.errors import ConditionFailed, InvalidInput, NotFound, Unauthorized, Unavailable
from app.services.api_keys import (
    create_api_key,
    digest_of,
    list_api_keys,
    revoke_api_key,
)
from app.services.api_keys.auth import ApiKeyAuthenticator
from app.services.ports import ApiKeyStore
from app.store.api_keys import ApiKeyItems
from app.store.client import Dynamo
from app.store.tables import RANK_INDEX
from tests.support import scores_items

DIGEST_A = "a" * 64
DIGEST_B = "b" * 64


@pytest.fixture
def key_store(runtime: Runtime) -> ApiKeyStore:
    return runtime.stores.api_keys


async def test_a_key_is_stored_and_read_back(key_store: ApiKeyStore) -> None:
    made = await key_store.create_key(
        DIGEST_A, "trivia-server", ["submit:trivia"], created_at_ms=1_764_460_800_123
    )
    found = await key_store.get(DIGEST_A)
    assert found == made
    assert found is not None
    assert found.name == "trivia-server"
    assert found.scopes == ("submit:trivia",)
    assert found.created_at == "2025-11-30T00:00:00.123Z"
    assert found.revoked_at is None
    assert await key_store.get(DIGEST_B) is None


async def test_the_item_has_the_documented_layout(key_store: ApiKeyStore, runtime: Runtime) -> None:
    await key_store.create_key(DIGEST_A, "ops", ["admin", "submit:*"], created_at_ms=0)
    [item] = await scores_items(runtime)
    assert item == {
        "playerId": {"S": f"apikey#{DIGEST_A}"},
        "leaderboardId": {"S": "apikey"},
        "name": {"S": "ops"},
        "scopes": {"L": [{"S": "admin"}, {"S": "submit:*"}]},
        "createdAt": {"S": "1970-01-01T00:00:00.000Z"},
    }


async def test_listing_finds_keys_and_nothing_else(
    key_store: ApiKeyStore, runtime: Runtime
) -> None:
    await key_store.create_key(DIGEST_A, "trivia-server", ["submit:trivia"])
    await key_store.create_key(DIGEST_B, "ops", ["admin"])
    # A player's standing and an idempotency record share the table; neither is a key.
    for player, board in (("p1", "trivia#classic#alltime"), ("idem#ops#k1", "idem")):
        await runtime.client.put_item(
            TableName=runtime.tables.scores,
            Item={"playerId": {"S": player}, "leaderboardId": {"S": board}},
        )
    keys = await key_store.list_keys()
    assert sorted(k.digest for k in keys) == [DIGEST_A, DIGEST_B]


async def test_keys_never_reach_the_rank_index(key_store: ApiKeyStore, runtime: Runtime) -> None:
    await key_store.create_key(DIGEST_A, "ops", ["admin"])
    page = await runtime.client.query(
        TableName=runtime.tables.scores,
        IndexName=RANK_INDEX,
        KeyConditionExpression="leaderboardId = :b",
        ExpressionAttributeValues={":b": {"S": "apikey"}},
    )
    assert page["Items"] == []


async def test_revoking_by_name_revokes_every_key_of_that_name_once(
    key_store: ApiKeyStore,
) -> None:
    await key_store.create_key(DIGEST_A, "trivia-server", ["submit:trivia"])
    await key_store.create_key("a" * 63 + "c", "trivia-server", ["submit:trivia"])
    await key_store.create_key(DIGEST_B, "ops", ["admin"])
    revoked = await key_store.revoke(name="trivia-server", revoked_at_ms=5_000)
    assert {k.revoked_at for k in revoked} == {"1970-01-01T00:00:05.000Z"}
    assert len(revoked) == 2
    again = await key_store.revoke(name="trivia-server", revoked_at_ms=9_000)
    assert {k.revoked_at for k in again} == {"1970-01-01T00:00:05.000Z"}, "first time stands"
    ops = await key_store.get(DIGEST_B)
    assert ops is not None
    assert ops.revoked_at is None


async def test_revoking_by_digest_prefix_takes_exactly_one_key(
    key_store: ApiKeyStore,
) -> None:
    twin = "a" * 8 + "f" * 56
    await key_store.create_key(DIGEST_A, "trivia-server", ["submit:trivia"])
    await key_store.create_key(twin, "trivia-server", ["submit:trivia"])
    with pytest.raises(InvalidInput):
        await key_store.revoke(digest_prefix="aaaaaaaa")
    assert all(k.revoked_at is None for k in await key_store.list_keys())
    [revoked] = await key_store.revoke(digest_prefix="aaaaaaaaf")
    assert revoked.digest == twin
    assert revoked.revoked_at is not None
    untouched = await key_store.get(DIGEST_A)
    assert untouched is not None
    assert untouched.revoked_at is None


async def test_revoking_what_is_not_there_is_not_found(key_store: ApiKeyStore) -> None:
    with pytest.raises(NotFound):
        await key_store.revoke(name="nobody")
    with pytest.raises(NotFound):
        await key_store.revoke(digest_prefix="0123abcd")


async def test_the_same_digest_cannot_be_stored_twice(key_store: ApiKeyStore) -> None:
    await key_store.create_key(DIGEST_A, "ops", ["admin"])
    with pytest.raises(ConditionFailed):
        await key_store.create_key(DIGEST_A, "impostor", ["admin"])
    found = await key_store.get(DIGEST_A)
    assert found is not None
    assert found.name == "ops"


async def test_dynamodb_errors_arrive_as_the_services_own(runtime: Runtime) -> None:
    missing = ApiKeyItems(
        Dynamo(runtime.client, in_flight=asyncio.Semaphore(4)), table="no-such-table"
    )
    with pytest.raises(Unavailable):
        await missing.get(DIGEST_A)


async def test_the_plaintext_key_is_written_nowhere(
    key_store: ApiKeyStore, runtime: Runtime
) -> None:
    tokens = [
        await create_api_key(key_store, "trivia-server", ["submit:trivia"]),
        await create_api_key(key_store, "ops", ["admin"], kind="test"),
    ]
    await revoke_api_key(key_store, "ops")
    stored = repr(await scores_items(runtime))
    for token in tokens:
        assert token not in stored
        assert token.split("_", 2)[2] not in stored  # nor its random part alone
        assert digest_of(token) in stored
    listed = await list_api_keys(key_store)
    assert sorted((k.name, k.revoked_at is not None) for k in listed) == [
        ("ops", True),
        ("trivia-server", False),
    ]
    assert all(len(k.key_id) == 8 for k in listed)


async def test_authenticating_against_the_real_store(key_store: ApiKeyStore) -> None:
    now = [0.0]
    auth = ApiKeyAuthenticator(key_store, ttl=10.0, clock=lambda: now[0])
    token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    principal = await auth.authenticate(f"Bearer {token}")
    assert principal.name == "trivia-server"
    assert principal.scopes == frozenset({"submit:trivia"})

    await revoke_api_key(key_store, key_id=digest_of(token)[:8])
    now[0] = 10.0
    with pytest.raises(Unauthorized):
        await auth.authenticate(f"Bearer {token}")
