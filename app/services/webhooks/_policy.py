"""What the webhook use cases are bound by, built from ``Settings`` by the composition root."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WebhookPolicy:
    production: bool
    """Production's rules for a URL: https only, and no loopback address."""
    cursor_secret: bytes
    poll_s: float = 5.0
    """How often a deliverer looks for due events; 0: it does not run."""
    lease_s: float = 30.0
    """How long a deliverer holds an event it sends: past the send's timeout, so that no two send
    it at once."""
    timeout_s: float = 10.0
    """How long a delivery waits for the receiver's answer."""
    batch: int = 25
    """The most events a deliverer sends at once."""
