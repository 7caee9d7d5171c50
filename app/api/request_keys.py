"""An optional ``Idempotency-Key`` on a request that answers 201 once and 200 after (a claim, a
join): a retry with the same key, after an answer that never came, is told it was the first."""

from __future__ import annotations

import hashlib
import uuid
from typing import Annotated

from fastapi import Header

from app.api.patterns import IDEMPOTENCY_KEY_PATTERN

OptionalIdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="optional, 1..255 visible ASCII characters: a retry with the same key after "
        "an answer that never came answers as the first did (201 if it was the first)",
    ),
]


def request_token(client: str, idempotency_key: str | None) -> str:
    """What tells this request's write: its key's, scoped to the calling client, or its own."""
    if idempotency_key is None:
        return uuid.uuid4().hex
    return hashlib.sha256(f"{client}\n{idempotency_key}".encode()).hexdigest()[:32]
