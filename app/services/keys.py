"""API keys: issuing them, revoking them, and recognising them on each request.

A key is ``lb_<kind>_`` and 256 random bits (``secrets.token_urlsafe(32)``). Its plaintext is shown
once, when it is made; only its SHA-256 hex digest is stored (in the Scores table through the
``KeyStore`` port, or in settings for the statically configured keys). The first 8 hex characters of
the digest, the key id, are enough to tell keys apart in listings and to revoke one of them.

``KeyAuthenticator`` checks a bearer token against the configured keys first, then the store, and
remembers store answers, found or not, for a few seconds: a revocation takes effect on every task
within that TTL, with no redeploy. Neither a key, nor its digest, nor the Authorization header ever
goes into an error or a log line.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

import structlog

from app.api.auth import Principal
from app.domain.clock import to_ms
from app.domain.keys import is_valid_id
from app.errors import InvalidInput, Unauthorized
from app.settings import Settings

log = structlog.get_logger(__name__)

KEY_ID_LENGTH = 8
"""Hex characters of the digest shown in listings: enough to tell keys apart, useless to an attacker."""

KeyKind = Literal["live", "test"]

# What ``create_api_key`` hands out: only tokens of this shape are worth a store lookup.
_ISSUED_KEY = re.compile(r"^lb_(?:live|test)_[A-Za-z0-9_-]{43}$")
_LONGEST_TOKEN = 512  # longer than any key anyone configures; refused before hashing
_GAME_SCOPE = re.compile(r"^submit:(.+)$")


@dataclass(frozen=True)
class StoredKey:
    """A key as the store holds it. ``digest`` is the SHA-256 hex digest of the plaintext."""

    digest: str
    name: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None = None

    @property
    def key_id(self) -> str:
        return self.digest[:KEY_ID_LENGTH]

    @property
    def principal(self) -> Principal:
        return Principal(self.name, frozenset(self.scopes))


@dataclass(frozen=True)
class KeyInfo:
    """What an operator sees of a key: never the digest, only its first characters."""

    name: str
    key_id: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None

    @classmethod
    def of(cls, key: StoredKey) -> KeyInfo:
        return cls(key.name, key.key_id, key.scopes, key.created_at, key.revoked_at)


class KeyLookup(Protocol):
    """What authentication needs of the store."""

    async def get(self, digest: str) -> StoredKey | None:
        """The key with this digest, revoked or not; ``None`` if there is none."""
        ...


class KeyStore(KeyLookup, Protocol):
    """What the operator tools need of the store."""

    async def create_key(
        self, digest: str, name: str, scopes: Sequence[str], *, created_at_ms: int | None = None
    ) -> StoredKey: ...

    async def revoke(
        self,
        *,
        name: str | None = None,
        digest_prefix: str | None = None,
        revoked_at_ms: int | None = None,
    ) -> list[StoredKey]:
        """Revoke every key of ``name``, or the one key whose digest starts with
        ``digest_prefix``; keys already revoked keep their time. Raises ``NotFound`` when nothing
        matches and ``InvalidInput`` when a prefix matches several keys."""
        ...

    async def list_keys(self) -> list[StoredKey]: ...


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    """``admin``, ``submit:*`` or ``submit:<game>``; anything else is refused, not stored."""
    checked: list[str] = []
    for scope in scopes:
        game = _GAME_SCOPE.fullmatch(scope)
        if scope != "admin" and not (game and (game[1] == "*" or is_valid_id(game[1]))):
            raise InvalidInput(
                f"unknown scope {scope!r}: use admin, submit:* or submit:<game>",
                errors=[{"field": "scopes", "message": "invalid"}],
            )
        checked.append(scope)
    if not checked:
        raise InvalidInput("a key needs at least one scope")
    return tuple(dict.fromkeys(checked))


def _check_name(name: str) -> str:
    # The name scopes idempotency records (``idem#<name>#<key>``) and appears in logs: no ``#``.
    if not is_valid_id(name):
        raise InvalidInput(
            "a key name is 1..64 characters of [A-Za-z0-9_.:-]",
            errors=[{"field": "name", "message": "invalid"}],
        )
    return name


def _now_ms() -> int:
    return to_ms(datetime.now(UTC))


# ---- the operator's tools (the CLI calls these) --------------------------------------------------


async def create_api_key(
    store: KeyStore,
    name: str,
    scopes: Iterable[str],
    *,
    kind: KeyKind = "live",
    now_ms: int | None = None,
) -> str:
    """Make a key for client ``name`` and return its plaintext, which is shown this once and kept
    nowhere. Several keys may share a name (that is how a key is rotated)."""
    name = _check_name(name)
    checked = check_scopes(scopes)
    token = f"lb_{kind}_{secrets.token_urlsafe(32)}"
    created_at_ms = _now_ms() if now_ms is None else now_ms
    await store.create_key(digest_of(token), name, checked, created_at_ms=created_at_ms)
    log.info("api_key_created", name=name, scopes=list(checked))
    return token


async def revoke_api_key(
    store: KeyStore,
    name: str | None = None,
    *,
    key_id: str | None = None,
    now_ms: int | None = None,
) -> list[KeyInfo]:
    """Revoke every key of ``name``, or the one key whose id (digest prefix, at least 8 hex
    characters) is ``key_id``. Returns what is now revoked."""
    if (name is None) == (key_id is None):
        raise InvalidInput("give either a key name or a key id")
    if key_id is not None and not re.fullmatch(rf"[0-9a-f]{{{KEY_ID_LENGTH},64}}", key_id):
        raise InvalidInput(f"a key id is {KEY_ID_LENGTH} to 64 lowercase hex characters")
    revoked_at_ms = _now_ms() if now_ms is None else now_ms
    revoked = await store.revoke(name=name, digest_prefix=key_id, revoked_at_ms=revoked_at_ms)
    log.info("api_key_revoked", names=sorted({key.name for key in revoked}), count=len(revoked))
    return [KeyInfo.of(key) for key in revoked]


async def list_api_keys(store: KeyStore) -> list[KeyInfo]:
    """Every stored key, oldest first: names, ids, scopes, created and revoked times."""
    keys = await store.list_keys()
    return [KeyInfo.of(key) for key in sorted(keys, key=lambda k: (k.created_at, k.name))]


# ---- recognising a key on a request --------------------------------------------------------------


@dataclass(frozen=True)
class _Remembered:
    principal: Principal | None  # None: unknown or revoked
    until: float


class _Memory:
    """Store answers kept for ``ttl`` seconds, at most ``max_entries`` of them. Entries share one
    TTL, so insertion order is expiry order, and the oldest is the one to drop."""

    def __init__(self, ttl: float, max_entries: int) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._entries: OrderedDict[bytes, _Remembered] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def recall(self, digest: bytes, now: float) -> _Remembered | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if now >= entry.until:
            del self._entries[digest]
            return None
        return entry

    def remember(self, digest: bytes, principal: Principal | None, now: float) -> None:
        if self._ttl <= 0:
            return
        self._entries.pop(digest, None)
        while self._entries and (
            len(self._entries) >= self._max or next(iter(self._entries.values())).until <= now
        ):
            self._entries.popitem(last=False)
        self._entries[digest] = _Remembered(principal, now + self._ttl)


class KeyAuthenticator:
    """Recognises bearer tokens: the configured keys (from settings), then the stored ones.

    Store answers are remembered for ``ttl`` seconds (default 10): found keys and, separately,
    unknown or revoked ones, each memory bounded by ``max_entries`` so that a stream of random keys
    churns only the memory of bad keys and never grows it. Concurrent requests with the same
    unremembered key share one store read.

    A store failure is not a 401 (that would tell a good client its key is bad): ``Unavailable``
    from the store propagates as a 503. Configured keys keep working while the store is down.
    """

    def __init__(
        self,
        store: KeyLookup,
        *,
        configured: Sequence[tuple[str, Principal]] = (),
        ttl: float = 10.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl < 0 or max_entries < 1:
            raise ValueError("ttl must be >= 0 and max_entries >= 1")
        self._store = store
        self._configured = [(bytes.fromhex(digest), who) for digest, who in configured]
        self._clock = clock
        self._found = _Memory(ttl, max_entries)
        self._refused = _Memory(ttl, max_entries)
        self._reading: dict[bytes, asyncio.Task[Principal | None]] = {}

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        store: KeyLookup,
        *,
        ttl: float = 10.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> KeyAuthenticator:
        configured = [
            (entry.sha256, Principal(entry.name, frozenset(entry.scopes)))
            for entry in settings.api_keys
        ]
        if settings.dev_api_key is not None:
            configured.append(
                (
                    digest_of(settings.dev_api_key.get_secret_value()),
                    Principal("dev", frozenset({"submit:*", "admin"})),
                )
            )
        return cls(store, configured=configured, ttl=ttl, max_entries=max_entries, clock=clock)

    @property
    def remembered(self) -> int:
        """How many store answers are held (for tests and metrics)."""
        return len(self._found) + len(self._refused)

    async def authenticate(self, authorization: str | None) -> Principal:
        if not authorization:
            raise Unauthorized("an API key is required: send Authorization: Bearer <key>")
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token or len(token) > _LONGEST_TOKEN:
            raise Unauthorized("send the API key as Authorization: Bearer <key>")
        digest = hashlib.sha256(token.encode()).digest()

        principal = self._configured_principal(digest)
        if principal is None and _ISSUED_KEY.fullmatch(token):
            # Only tokens shaped like issued keys cost a store read: junk is refused for free.
            principal = await self._stored_principal(digest)
        if principal is None:
            raise Unauthorized("the API key is not valid")
        return principal

    def _configured_principal(self, digest: bytes) -> Principal | None:
        found: Principal | None = None
        for known, principal in self._configured:  # every key compared, in constant time each
            if hmac.compare_digest(digest, known):
                found = principal
        return found

    async def _stored_principal(self, digest: bytes) -> Principal | None:
        # Looked up by digest (as DynamoDB does): an attacker picks tokens, not digests, so timing
        # that depends on the digest tells them nothing that brings them nearer a valid key.
        now = self._clock()
        for memory in (self._found, self._refused):
            entry = memory.recall(digest, now)
            if entry is not None:
                return entry.principal
        reading = self._reading.get(digest)
        if reading is None:
            reading = asyncio.create_task(self._read(digest))
            self._reading[digest] = reading
            reading.add_done_callback(functools.partial(self._read_done, digest))
        # Shielded: one caller giving up does not cancel the read the others wait for.
        return await asyncio.shield(reading)

    async def _read(self, digest: bytes) -> Principal | None:
        key = await self._store.get(digest.hex())
        now = self._clock()
        if key is None or key.revoked_at is not None:
            if key is not None:
                log.info("api_key_refused", reason="revoked", name=key.name)
            self._refused.remember(digest, None, now)
            return None
        principal = key.principal
        self._found.remember(digest, principal, now)
        return principal

    def _read_done(self, digest: bytes, task: asyncio.Task[Principal | None]) -> None:
        if self._reading.get(digest) is task:
            del self._reading[digest]
        if not task.cancelled():
            task.exception()  # retrieved here, so a failure nobody awaited is not reported twice
