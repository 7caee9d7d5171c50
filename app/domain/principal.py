"""Who is calling, and what they may do: scopes ``submit:<game>``, ``submit:*``, ``admin``."""

from __future__ import annotations

from dataclasses import dataclass

from app.errors import Forbidden


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
