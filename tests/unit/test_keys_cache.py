"""The key authenticator over an in-memory key store: configured and stored keys, the memory of
answers (found and refused) and its TTL, revocation taking effect within the TTL, the bound on
memory, and nothing secret in errors or logs. Time is a hand-driven clock: no test sleeps."""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from collections.abc import Sequence

import pytest
from pydantic import SecretStr
from structlog.testing import capture_logs

from app.bootstrap import build_authenticator
from app.domain.clock import iso_ms
from app.domain.principal import Principal
from app.errors import InvalidInput, LeaderboardError, NotFound, Unauthorized, Unavailable
from app.services.api_keys import (
    create_api_key,
    digest_of,
    list_api_keys,
    revoke_api_key,
)
from app.services.api_keys.auth import ApiKeyAuthenticator
from app.services.ports import StoredApiKey
from app.settings import ApiKeyEntry, Settings

TTL = 10.0


class HandClock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class MemoryKeyStore:
    """The ``ApiKeyStore`` port in a dict, counting reads; ``failing`` makes reads raise."""

    def __init__(self) -> None:
        self.keys: dict[str, StoredApiKey] = {}
        self.reads = 0
        self.failing = False
        self.gate: asyncio.Event | None = None

    async def get(self, digest: str) -> StoredApiKey | None:
        self.reads += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise Unavailable("DynamoDB did not answer during reading the API key")
        return self.keys.get(digest)

    async def create_key(
        self, digest: str, name: str, scopes: Sequence[str], *, created_at_ms: int | None = None
    ) -> StoredApiKey:
        key = StoredApiKey(digest, name, tuple(scopes), iso_ms(created_at_ms or 0))
        self.keys[digest] = key
        return key

    async def revoke(
        self,
        *,
        name: str | None = None,
        digest_prefix: str | None = None,
        revoked_at_ms: int | None = None,
    ) -> list[StoredApiKey]:
        matching = [
            k
            for k in self.keys.values()
            if k.name == name or (digest_prefix and k.digest.startswith(digest_prefix))
        ]
        if not matching:
            raise NotFound("no API key matches")
        for key in matching:
            if key.revoked_at is None:
                self.keys[key.digest] = StoredApiKey(
                    key.digest, key.name, key.scopes, key.created_at, iso_ms(revoked_at_ms or 0)
                )
        return [self.keys[k.digest] for k in matching]

    async def list_keys(self) -> list[StoredApiKey]:
        return list(self.keys.values())


@pytest.fixture
def clock() -> HandClock:
    return HandClock()


@pytest.fixture
def key_store() -> MemoryKeyStore:
    return MemoryKeyStore()


@pytest.fixture
def auth(key_store: MemoryKeyStore, clock: HandClock) -> ApiKeyAuthenticator:
    return ApiKeyAuthenticator(key_store, ttl=TTL, clock=clock)


def bearer(token: str) -> str:
    return f"Bearer {token}"


def random_issued_shape() -> str:
    return f"lb_live_{secrets.token_urlsafe(32)}"


# ---- issuing keys ---------------------------------------------------------------------------------


async def test_a_new_key_is_256_random_bits_and_only_its_digest_is_stored(
    key_store: MemoryKeyStore,
) -> None:
    token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    assert re.fullmatch(r"lb_live_[A-Za-z0-9_-]{43}", token)  # 43 base64url chars: 258 bits
    assert list(key_store.keys) == [hashlib.sha256(token.encode()).hexdigest()]
    assert token not in repr(key_store.keys)
    other = await create_api_key(key_store, "trivia-server", ["submit:trivia"], kind="test")
    assert other.startswith("lb_test_")
    assert other != token


@pytest.mark.parametrize(
    "scopes", [["submit"], ["submit:"], ["submit:tri#via"], ["root"], ["ADMIN"], []]
)
async def test_unknown_scopes_are_refused(key_store: MemoryKeyStore, scopes: list[str]) -> None:
    with pytest.raises(InvalidInput):
        await create_api_key(key_store, "x", scopes)
    assert key_store.keys == {}


@pytest.mark.parametrize("name", ["", "has#hash", "x" * 65, "spaced name"])
async def test_names_are_ids(key_store: MemoryKeyStore, name: str) -> None:
    with pytest.raises(InvalidInput):
        await create_api_key(key_store, name, ["admin"])
    assert key_store.keys == {}


async def test_listing_shows_a_key_id_never_the_digest(key_store: MemoryKeyStore) -> None:
    token = await create_api_key(key_store, "ops", ["admin", "submit:*"], now_ms=1_000)
    [info] = await list_api_keys(key_store)
    digest = digest_of(token)
    assert info.name == "ops"
    assert info.scopes == ("admin", "submit:*")
    assert info.key_id == digest[:8]
    assert info.created_at == "1970-01-01T00:00:01.000Z"
    assert info.revoked_at is None
    assert digest not in repr(info)


async def test_revoking_needs_a_name_or_a_well_formed_key_id(key_store: MemoryKeyStore) -> None:
    with pytest.raises(InvalidInput):
        await revoke_api_key(key_store)
    with pytest.raises(InvalidInput):
        await revoke_api_key(key_store, "ops", key_id="abcdef01")
    with pytest.raises(InvalidInput):
        await revoke_api_key(key_store, key_id="abc")  # too short to name one key
    with pytest.raises(InvalidInput):
        await revoke_api_key(key_store, key_id="ABCDEF01")


# ---- configured keys ------------------------------------------------------------------------------


async def test_configured_keys_need_no_store(key_store: MemoryKeyStore, clock: HandClock) -> None:
    settings = Settings.model_validate(
        {
            "api_keys": [
                ApiKeyEntry(name="ops", sha256=digest_of("ops-secret"), scopes=["admin"]),
            ],
            "dev_api_key": SecretStr("dev-secret"),
        }
    )
    auth = build_authenticator(settings, key_store, clock=clock)
    key_store.failing = True  # configured keys keep working while DynamoDB is down
    assert await auth.authenticate(bearer("ops-secret")) == Principal("ops", frozenset({"admin"}))
    dev = await auth.authenticate("bearer dev-secret")
    assert dev == Principal("dev", frozenset({"submit:*", "admin"}))
    assert key_store.reads == 0


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer   ",
        "Basic b3BzOnNlY3JldA==",
        "ops-secret",
        "Bearer " + "a" * 600,
    ],
)
async def test_missing_or_malformed_headers_are_401(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore, header: str | None
) -> None:
    with pytest.raises(Unauthorized):
        await auth.authenticate(header)
    assert key_store.reads == 0


async def test_tokens_not_shaped_like_issued_keys_cost_no_store_read(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore
) -> None:
    for junk in ("guess", "lb_live_short", "lb_prod_" + "a" * 43, "x" * 300):
        with pytest.raises(Unauthorized):
            await auth.authenticate(bearer(junk))
    assert key_store.reads == 0
    assert auth.remembered == 0


# ---- stored keys and the memory of answers ---------------------------------------------------------


async def test_a_stored_key_is_read_once_per_ttl(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore, clock: HandClock
) -> None:
    token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    expected = Principal("trivia-server", frozenset({"submit:trivia"}))
    for step in (2.0, 2.0, 2.0, 2.0, 1.5):
        assert await auth.authenticate(bearer(token)) == expected
        clock.advance(step)
    assert await auth.authenticate(bearer(token)) == expected
    assert key_store.reads == 1  # 9.5 s after the read: still remembered
    clock.advance(0.5)  # 10 s after the read
    assert await auth.authenticate(bearer(token)) == expected
    assert key_store.reads == 2


async def test_unknown_keys_are_remembered_as_unknown_for_the_ttl(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore, clock: HandClock
) -> None:
    token = random_issued_shape()
    for _ in range(3):
        with pytest.raises(Unauthorized):
            await auth.authenticate(bearer(token))
    assert key_store.reads == 1
    clock.advance(TTL)
    with pytest.raises(Unauthorized):
        await auth.authenticate(bearer(token))
    assert key_store.reads == 2


async def test_revocation_takes_effect_within_the_ttl(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore, clock: HandClock
) -> None:
    token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    spare = await create_api_key(key_store, "chess-server", ["submit:chess"])
    await auth.authenticate(bearer(token))
    await auth.authenticate(bearer(spare))

    revoked = await revoke_api_key(key_store, "trivia-server", now_ms=2_000)
    assert [(k.name, k.revoked_at) for k in revoked] == [
        ("trivia-server", "1970-01-01T00:00:02.000Z")
    ]
    clock.advance(TTL - 0.1)
    # Still remembered as good: this is the window the TTL buys, and it is bounded.
    await auth.authenticate(bearer(token))
    clock.advance(0.1)
    with pytest.raises(Unauthorized):
        await auth.authenticate(bearer(token))
    assert (await auth.authenticate(bearer(spare))).name == "chess-server"


async def test_revoking_by_key_id_leaves_the_other_keys_of_the_name(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore
) -> None:
    old = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    new = await create_api_key(key_store, "trivia-server", ["submit:trivia"])  # rotation
    await revoke_api_key(key_store, key_id=digest_of(old)[:8])
    with pytest.raises(Unauthorized):
        await auth.authenticate(bearer(old))
    assert (await auth.authenticate(bearer(new))).name == "trivia-server"


async def test_a_key_made_after_it_was_tried_works_once_the_ttl_passes(
    key_store: MemoryKeyStore, clock: HandClock
) -> None:
    auth = ApiKeyAuthenticator(key_store, ttl=TTL, clock=clock)
    token = random_issued_shape()
    with pytest.raises(Unauthorized):
        await auth.authenticate(bearer(token))
    await key_store.create_key(digest_of(token), "late", ["admin"])
    with pytest.raises(Unauthorized):
        await auth.authenticate(bearer(token))
    clock.advance(TTL)
    assert (await auth.authenticate(bearer(token))).name == "late"


async def test_a_zero_ttl_remembers_nothing(key_store: MemoryKeyStore, clock: HandClock) -> None:
    auth = ApiKeyAuthenticator(key_store, ttl=0, clock=clock)
    token = await create_api_key(key_store, "ops", ["admin"])
    await auth.authenticate(bearer(token))
    await auth.authenticate(bearer(token))
    assert key_store.reads == 2
    assert auth.remembered == 0


async def test_random_bad_keys_cannot_grow_memory_or_push_out_good_keys(
    key_store: MemoryKeyStore, clock: HandClock
) -> None:
    auth = ApiKeyAuthenticator(key_store, ttl=TTL, max_entries=5, clock=clock)
    token = await create_api_key(key_store, "ops", ["admin"])
    await auth.authenticate(bearer(token))
    for _ in range(200):
        with pytest.raises(Unauthorized):
            await auth.authenticate(bearer(random_issued_shape()))
        assert auth.remembered <= 1 + 5
    reads = key_store.reads
    await auth.authenticate(bearer(token))
    assert key_store.reads == reads, "the good key was forgotten"


async def test_concurrent_requests_with_one_key_share_one_read(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore
) -> None:
    token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    key_store.gate = asyncio.Event()
    waiting = [asyncio.create_task(auth.authenticate(bearer(token))) for _ in range(20)]
    await asyncio.sleep(0)  # let every request reach the store read (a yield, not a wait)
    key_store.gate.set()
    principals = await asyncio.gather(*waiting)
    assert {p.name for p in principals} == {"trivia-server"}
    assert key_store.reads == 1


async def test_one_request_giving_up_does_not_fail_the_others(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore
) -> None:
    token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    key_store.gate = asyncio.Event()
    first = asyncio.create_task(auth.authenticate(bearer(token)))
    second = asyncio.create_task(auth.authenticate(bearer(token)))
    await asyncio.sleep(0)
    first.cancel()
    key_store.gate.set()
    assert (await second).name == "trivia-server"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_a_store_failure_is_a_503_and_is_not_remembered(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore
) -> None:
    token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
    key_store.failing = True
    with pytest.raises(Unavailable):
        await auth.authenticate(bearer(token))
    key_store.failing = False
    assert (await auth.authenticate(bearer(token))).name == "trivia-server"
    assert key_store.reads == 2


@pytest.mark.parametrize(("ttl", "max_entries"), [(-1.0, 10), (10.0, 0)])
def test_nonsense_memory_bounds_are_refused(
    key_store: MemoryKeyStore, ttl: float, max_entries: int
) -> None:
    with pytest.raises(ValueError, match="must be"):
        ApiKeyAuthenticator(key_store, ttl=ttl, max_entries=max_entries)


# ---- nothing secret leaks ------------------------------------------------------------------------


async def test_no_key_digest_or_header_in_errors_or_logs(
    auth: ApiKeyAuthenticator, key_store: MemoryKeyStore, clock: HandClock
) -> None:
    with capture_logs() as logs:
        token = await create_api_key(key_store, "trivia-server", ["submit:trivia"])
        await auth.authenticate(bearer(token))
        await revoke_api_key(key_store, "trivia-server")
        clock.advance(TTL)
        errors: list[LeaderboardError] = []
        for header in (bearer(token), bearer(random_issued_shape()), "Basic " + token, token):
            with pytest.raises(Unauthorized) as caught:
                await auth.authenticate(header)
            errors.append(caught.value)
    assert any(entry["event"] == "api_key_refused" for entry in logs), "the test saw no log"
    digest = digest_of(token)
    secrets_seen = (token, token.removeprefix("lb_live_"), digest, digest[:8])
    published = [repr(logs)] + [
        f"{e} {e.detail} {e.problem('/v1/scores')} {e.headers()}" for e in errors
    ]
    for text in published:
        for secret in secrets_seen:
            assert secret not in text
