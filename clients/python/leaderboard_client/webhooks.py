"""Checking a webhook delivery's ``Leaderboard-Signature`` header, as the service makes it:
``t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the webhook's secret>``. Check it on
the body's raw bytes, before parsing them; then drop an event whose ``id`` was seen already
(delivery is at least once)."""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Leaderboard-Signature"
EVENT_ID_HEADER = "Leaderboard-Event-Id"
DEFAULT_TOLERANCE_SECONDS = 300


def verify_signature(
    secret: str,
    header: str,
    body: bytes | str,
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    now: int | None = None,
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` at a time within ``tolerance_seconds``
    of ``now`` (unix seconds; default: the clock's). An old time is refused too, so a recorded
    delivery replayed later fails."""
    raw = body.encode() if isinstance(body, str) else body
    fields: dict[str, list[str]] = {}
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        fields.setdefault(name, []).append(value)
    try:
        timestamp = int(fields["t"][0])
    except (KeyError, ValueError):
        return False
    current = int(time.time()) if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        return False
    expected = hmac.new(
        secret.encode(), str(timestamp).encode() + b"." + raw, hashlib.sha256
    ).hexdigest()
    return any(hmac.compare_digest(expected, given) for given in fields.get("v1", []))
