"""API keys: issuing them, listing them and revoking them (the operator's tools; recognising a key
on a request is ``app.services.api_keys.auth``). Only a key's SHA-256 digest is stored, and neither a key
nor its digest ever goes into an error or a log line (docs/security.md).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import structlog

from app.domain.clock import to_ms
from app.domain.keys import is_valid_id
from app.domain.principal import Principal
from app.errors import InvalidInput
from app.services.api_keys.auth import ApiKeyAuthenticator
from app.services.ports import API_KEY_ID_LENGTH, ApiKeyStore, StoredApiKey

log = structlog.get_logger(__name__)

ApiKeyKind = Literal["live", "test"]

_GAME_SCOPE = re.compile(r"^submit:(.+)$")


@dataclass(frozen=True)
class ApiKeyInfo:
    """What an operator sees of a key: never the digest, only its first characters."""

    name: str
    key_id: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None

    @classmethod
    def of(cls, key: StoredApiKey) -> ApiKeyInfo:
        return cls(key.name, key.key_id, key.scopes, key.created_at, key.revoked_at)


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
    store: ApiKeyStore,
    name: str,
    scopes: Iterable[str],
    *,
    kind: ApiKeyKind = "live",
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
    store: ApiKeyStore,
    name: str | None = None,
    *,
    key_id: str | None = None,
    now_ms: int | None = None,
) -> list[ApiKeyInfo]:
    """Revoke every key of ``name``, or the one key whose id (digest prefix, at least 8 hex
    characters) is ``key_id``. Returns what is now revoked."""
    if (name is None) == (key_id is None):
        raise InvalidInput("give either a key name or a key id")
    if key_id is not None and not re.fullmatch(rf"[0-9a-f]{{{API_KEY_ID_LENGTH},64}}", key_id):
        raise InvalidInput(f"a key id is {API_KEY_ID_LENGTH} to 64 lowercase hex characters")
    revoked_at_ms = _now_ms() if now_ms is None else now_ms
    revoked = await store.revoke(name=name, digest_prefix=key_id, revoked_at_ms=revoked_at_ms)
    log.info("api_key_revoked", names=sorted({key.name for key in revoked}), count=len(revoked))
    return [ApiKeyInfo.of(key) for key in revoked]


async def list_api_keys(store: ApiKeyStore) -> list[ApiKeyInfo]:
    """Every stored key, oldest first: names, ids, scopes, created and revoked times."""
    keys = await store.list_keys()
    return [ApiKeyInfo.of(key) for key in sorted(keys, key=lambda k: (k.created_at, k.name))]


class ApiKeys:
    """The operator's keys in the store, and recognising a key on a request (the configured
    ones, then the stored ones, remembered by ``ApiKeyAuthenticator``)."""

    def __init__(self, store: ApiKeyStore, authenticator: ApiKeyAuthenticator) -> None:
        self._store = store
        self.authenticator = authenticator

    async def authenticate(self, authorization: str | None) -> Principal:
        return await self.authenticator.authenticate(authorization)

    async def create(self, name: str, scopes: Iterable[str], *, kind: ApiKeyKind = "live") -> str:
        return await create_api_key(self._store, name, scopes, kind=kind)

    async def revoke(
        self, name: str | None = None, *, key_id: str | None = None
    ) -> list[ApiKeyInfo]:
        return await revoke_api_key(self._store, name, key_id=key_id)

    async def list(self) -> list[ApiKeyInfo]:
        return await list_api_keys(self._store)
