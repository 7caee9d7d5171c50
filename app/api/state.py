"""What the lifespan opens once and every request shares."""

from __future__ import annotations

from dataclasses import dataclass

from app.api.ratelimit import RateLimiter
from app.services.keys import KeyAuthenticator
from app.services.snapshots import BoardRegistrar
from app.services.submit import SubmitPolicy
from app.settings import Settings
from app.store.archive import ArchiveStore
from app.store.dynamo import DynamoStore


@dataclass(frozen=True)
class AppState:
    settings: Settings
    store: DynamoStore
    keys: KeyAuthenticator
    policy: SubmitPolicy
    write_limits: RateLimiter
    read_limits: RateLimiter
    archive: ArchiveStore
    registrar: BoardRegistrar
