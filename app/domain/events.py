"""Events a game's webhook receives (docs/operations.md, "Webhooks"), and their signature.

An event is a JSON object with at least ``id`` (``evt_`` and 32 hex digits, the consumer's key to
drop a repeat), ``type`` and the fields of its type. Each POST carries
``Leaderboard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the secret>``:
the time is signed with the body, so a consumer that checks the signature and refuses old times
refuses a forged event and a replayed one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SIGNATURE_HEADER = "Leaderboard-Signature"
BOARD_CLOSED = "board.closed"
DEFAULT_TOLERANCE_S = 300
"""How old a signed time a consumer should accept by default (the clients' own default)."""


def new_event_id() -> str:
    return f"evt_{secrets.token_hex(16)}"


@dataclass(frozen=True)
class Event:
    """One event of a game, as its webhook receives it: ``body`` is the JSON text POSTed, fixed
    when the event is made, so every attempt sends (and signs) the very same bytes."""

    id: str
    type: str
    game: str
    created_at_ms: int
    body: str

    @classmethod
    def of(cls, game: str, type_: str, fields: Mapping[str, Any], *, created_at_ms: int) -> Event:
        event_id = new_event_id()
        body = json.dumps(
            {"id": event_id, "type": type_, **fields}, separators=(",", ":"), ensure_ascii=False
        )
        return cls(id=event_id, type=type_, game=game, created_at_ms=created_at_ms, body=body)


def signature(secret: str, timestamp_s: int, body: bytes) -> str:
    """The ``Leaderboard-Signature`` header's value for ``body`` sent at ``timestamp_s``."""
    digest = hmac.new(
        secret.encode(), str(timestamp_s).encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return f"t={timestamp_s},v1={digest}"


def verify(
    secret: str, header: str, body: bytes, *, now_s: int, tolerance_s: int = DEFAULT_TOLERANCE_S
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` at a time within ``tolerance_s`` of
    ``now_s`` (what a consumer checks; the clients carry the same check)."""
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        fields.setdefault(name, []).append(value)
    try:
        timestamp_s = int(fields["t"][0])
    except (KeyError, ValueError):
        return False
    if abs(now_s - timestamp_s) > tolerance_s:
        return False
    expected = signature(secret, timestamp_s, body).rpartition("v1=")[2]
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1", []))
