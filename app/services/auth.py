"""Recognising an API key on a request.

``KeyAuthenticator`` checks a bearer token against the configured keys first (from settings, as
SHA-256 digests), then the store, and remembers store answers, found or not, for a few seconds: a
revocation takes effect on every task within that TTL, with no redeploy. Neither a key, nor its
digest, nor the Authorization header ever goes into an error or a log line.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from app.domain.principal import Principal
from app.errors import Unauthorized
from app.services.ports import KeyLookup

log = structlog.get_logger(__name__)

# What ``create_api_key`` hands out: only tokens of this shape are worth a store lookup.
ISSUED_KEY = re.compile(r"^lb_(?:live|test)_[A-Za-z0-9_-]{43}$")
_LONGEST_TOKEN = 512  # longer than any key anyone configures; refused before hashing


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
        if principal is None and ISSUED_KEY.fullmatch(token):
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
