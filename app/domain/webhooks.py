"""A game's webhook and its deliveries, as pure rules: what URL and secret are taken, which
addresses a delivery may never reach (the service would otherwise be a way into its own network),
and when a failed delivery is tried again."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

MIN_SECRET, MAX_SECRET = 16, 256
MAX_URL = 2048
RETRY_DELAYS_S = (10, 30, 60, 300, 900, 1800)
"""The waits after the first failed attempts, in order; every later one waits ``LAST_DELAY_S``."""
LAST_DELAY_S = 3600
GIVE_UP_AFTER_MS = 24 * 3600 * 1000
"""An event not delivered this long after it was made is given up (``failed``)."""
KEPT_ATTEMPTS = 20
"""The most attempts an event keeps on its item: the latest ones."""

Outcome = Literal["delivered", "failed", "error", "refused", "no-webhook"]
"""An attempt's outcome: ``delivered`` (a 2xx), ``failed`` (another status), ``error`` (no
answer: a timeout, a refused connection), ``refused`` (the address is one a delivery may never
reach), ``no-webhook`` (the game has none set)."""
Status = Literal["pending", "delivered", "failed"]
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class Webhook:
    game: str
    url: str
    secret: str
    updated_at_ms: int

    def __repr__(self) -> str:  # never the secret, wherever a webhook is printed or logged
        return f"Webhook(game={self.game!r}, url={self.url!r}, updated_at_ms={self.updated_at_ms})"


@dataclass(frozen=True)
class Attempt:
    at_ms: int
    outcome: Outcome
    duration_ms: int
    status: int | None = None
    """The receiver's HTTP status, where it answered."""
    error: str | None = None
    """Why there was no answer, or no request."""


@dataclass(frozen=True)
class Target:
    """A webhook URL taken apart: what the address check needs."""

    url: str
    host: str
    port: int


def secret_problem(secret: str) -> str | None:
    """What is wrong with a secret (never quoting it), or ``None``."""
    if not MIN_SECRET <= len(secret) <= MAX_SECRET:
        return f"must be {MIN_SECRET} to {MAX_SECRET} characters"
    return None


def target_of(url: str, *, production: bool) -> Target:
    """The URL's host and port; ``ValueError`` saying why it is no webhook URL."""
    if len(url) > MAX_URL:
        raise ValueError(f"must be at most {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("is not a URL") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must be an http or https URL")
    if production and parts.scheme != "https":
        raise ValueError("must be an https URL in production")
    if not parts.hostname:
        raise ValueError("has no host")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry a user name or password")
    default = 443 if parts.scheme == "https" else 80
    return Target(url=url, host=parts.hostname, port=port or default)


def address_problem(address: IpAddress, *, production: bool) -> str | None:
    """Why a delivery may not reach ``address``, or ``None`` where it may: in production, a
    public unicast address only; elsewhere any unicast one (a test's receiver on loopback, a
    compose network's private addresses, a laptop's)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if not production:
        if address.is_unspecified:
            return "an unspecified address"
        return "a multicast address" if address.is_multicast else None
    if address.is_loopback:
        return "a loopback address"
    for refused, said in (
        (address.is_unspecified, "an unspecified address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_reserved, "a reserved address"),
        (address.is_private, "a private address"),
        (not address.is_global, "not a public address"),
    ):
        if refused:
            return said
    return None


def literal_address(host: str) -> IpAddress | None:
    """The host as an IP address, where it is one (``[::1]``'s brackets already gone)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def next_attempt_ms(*, failed_attempts: int, now_ms: int, created_at_ms: int) -> int | None:
    """When to try again after the ``failed_attempts``-th failed attempt (1 for the first), or
    ``None``: the event's 24 hours are over, and it is given up. The last try comes at the end of
    the 24 hours, whatever the schedule."""
    deadline = created_at_ms + GIVE_UP_AFTER_MS
    if now_ms >= deadline:
        return None
    index = failed_attempts - 1
    delay_s = RETRY_DELAYS_S[index] if 0 <= index < len(RETRY_DELAYS_S) else LAST_DELAY_S
    return min(now_ms + delay_s * 1000, deadline)


def kept(attempts: list[Attempt], attempt: Attempt) -> list[Attempt]:
    """The attempts an event keeps once ``attempt`` is made: the last ``KEPT_ATTEMPTS``."""
    return [*attempts, attempt][-KEPT_ATTEMPTS:]
