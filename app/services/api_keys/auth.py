"""Recognising an API key on a request.

``ApiKeyAuthenticator`` checks a bearer token against the configured keys first (from settings, as
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
from collections.abc import Callable, Sequence

import structlog

from app.domain.principal import Principal
from app.errors import Unauthorized
from app.services.memory import Recent
from app.services.ports import ApiKeyLookup

log = structlog.get_logger(__name__)

# What ``create_api_key`` hands out: only tokens of this shape are worth a store lookup.
ISSUED_KEY = re.compile(r"^lb_(?:live|test)_[A-Za-z0-9_-]{43}$")
_LONGEST_TOKEN = 512  # longer than any key anyone configures; refused before hashing


class ApiKeyAuthenticator:
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
        store: ApiKeyLookup,
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
        # Apart, so that a flood of refused keys does not push out the keys in use.
        self._found: Recent[bytes, Principal] = Recent(
            max_entries=max_entries, ttl_s=ttl, clock=clock
        )
        self._refused: Recent[bytes, None] = Recent(max_entries=max_entries, ttl_s=ttl, clock=clock)
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
        found = self._found.get(digest)
        if found is not None:
            return found
        if digest in self._refused:
            return None
        reading = self._reading.get(digest)
        if reading is None:
            reading = asyncio.create_task(self._read(digest))
            self._reading[digest] = reading
            reading.add_done_callback(functools.partial(self._read_done, digest))
        # Shielded: one caller giving up does not cancel the read the others wait for.
        return await asyncio.shield(reading)

    async def _read(self, digest: bytes) -> Principal | None:
        key = await self._store.get(digest.hex())
        if key is None or key.revoked_at is not None:
            if key is not None:
                log.info("api_key_refused", reason="revoked", name=key.name)
            self._refused.put(digest, None)
            return None
        principal = key.principal
        self._found.put(digest, principal)
        return principal

    def _read_done(self, digest: bytes, task: asyncio.Task[Principal | None]) -> None:
        if self._reading.get(digest) is task:
            del self._reading[digest]
        if not task.cancelled():
            task.exception()  # retrieved here, so a failure nobody awaited is not reported twice
