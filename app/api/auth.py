"""API keys: bearer tokens checked against SHA-256 hashes, with scopes (``submit:<game>``,
``submit:*``, ``admin``). Neither a key nor its hash is ever logged or echoed."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from app.errors import Forbidden, Unauthorized
from app.settings import Settings


@dataclass(frozen=True)
class Principal:
    """The caller: ``name`` scopes idempotency keys and appears in logs."""

    name: str
    scopes: frozenset[str]

    def require_submit(self, game: str) -> None:
        if not ({f"submit:{game}", "submit:*"} & self.scopes):
            raise Forbidden(f"this key may not submit scores for game {game!r}")

    def require_admin(self) -> None:
        if "admin" not in self.scopes:
            raise Forbidden("this operation needs a key with the admin scope")


@dataclass(frozen=True)
class _Key:
    digest: bytes
    principal: Principal


class KeyRing:
    def __init__(self, keys: list[_Key]) -> None:
        self._keys = keys

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyRing:
        keys = [
            _Key(bytes.fromhex(entry.sha256), Principal(entry.name, frozenset(entry.scopes)))
            for entry in settings.api_keys
        ]
        if settings.dev_api_key is not None:
            digest = hashlib.sha256(settings.dev_api_key.get_secret_value().encode()).digest()
            keys.append(_Key(digest, Principal("dev", frozenset({"submit:*", "admin"}))))
        return cls(keys)

    def authenticate(self, authorization: str | None) -> Principal:
        if not authorization:
            raise Unauthorized("an API key is required: send Authorization: Bearer <key>")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("send the API key as Authorization: Bearer <key>")
        digest = hashlib.sha256(token.strip().encode()).digest()
        found: Principal | None = None
        for key in self._keys:  # every key is compared, in constant time each
            if hmac.compare_digest(digest, key.digest):
                found = key.principal
        if found is None:
            raise Unauthorized("the API key is not valid")
        return found
