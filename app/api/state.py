"""What the lifespan opens once and every request shares."""

from __future__ import annotations

from dataclasses import dataclass

from app.api.auth import KeyRing
from app.services.submit import SubmitPolicy
from app.settings import Settings
from app.store.dynamo import DynamoStore


@dataclass(frozen=True)
class AppState:
    settings: Settings
    store: DynamoStore
    keys: KeyRing
    policy: SubmitPolicy
