"""Typed settings from the environment (prefix ``LEADERBOARD_``), checked at start-up.

``load_settings`` is the one way the service and the CLI read them: a bad configuration is a
``ConfigurationError`` that names each variable and what is wrong with it and never holds a value
(pydantic's own message echoes the input, secrets and all).
"""

from __future__ import annotations

import re
import secrets
from datetime import timedelta
from functools import lru_cache
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from app.domain.periods import PeriodKind


class ApiKeyEntry(BaseModel):
    """One configured API key: its name (the client identity), the SHA-256 hex digest of the
    plaintext, and its scopes: ``submit:<game>``, ``submit:*``, ``admin``."""

    name: str = Field(min_length=1, max_length=64)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    scopes: list[str] = Field(min_length=1)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LEADERBOARD_", extra="ignore", frozen=True)

    environment: Literal["development", "production"] = "development"
    dynamodb_endpoint: str | None = None
    allow_embedded_backend: bool = True
    """False (the container image sets it): with no endpoint, refuse to start rather than start
    the embedded backend."""
    region: str = "us-east-1"
    scores_table: str = "leaderboard-scores"
    snapshots_table: str = "leaderboard-snapshots"

    periods: list[PeriodKind] = Field(
        default_factory=lambda: [PeriodKind.ALLTIME, PeriodKind.DAY, PeriodKind.WEEK], min_length=1
    )
    retention_days: int = Field(default=30, ge=1, le=3650)
    idempotency_ttl_hours: int = Field(default=24, ge=1, le=24 * 30)
    idempotency_in_progress_seconds: int = Field(default=30, ge=1, le=3600)
    max_lateness_seconds: int = Field(default=3600, ge=0, le=30 * 86400)
    future_skew_seconds: int = Field(default=5, ge=0, le=300)
    max_body_bytes: int = Field(default=64 * 1024, ge=1024, le=1024 * 1024)
    rank_count_cap: int = Field(default=2000, ge=1, le=100_000)
    counter_shards: int = Field(default=4, ge=1, le=64)
    dynamodb_max_in_flight: int = Field(default=64, ge=1, le=1024)
    dynamodb_read_timeout_seconds: float = Field(default=5.0, gt=0, le=300)
    transact_max_attempts: int = Field(default=12, ge=1, le=20)
    request_deadline_seconds: float = Field(default=10.0, gt=0, le=600)
    shutdown_grace_seconds: float = Field(default=20.0, ge=0, le=300)
    """On SIGTERM, in-flight requests get this long to finish (keep ECS's stopTimeout above it)."""
    keep_alive_seconds: float = Field(default=5.0, gt=0, le=3600)
    """Idle keep-alive of client connections: above a load balancer's idle timeout, or it reuses a
    connection the server just closed (a 502)."""

    api_keys: list[ApiKeyEntry] = Field(default_factory=list)
    api_key_cache_ttl_seconds: float = Field(default=10.0, ge=0, le=300)
    api_key_cache_max_entries: int = Field(default=10_000, ge=1)
    write_rate_per_second: float = Field(default=100.0, gt=0)
    write_burst: int = Field(default=1000, ge=1)
    read_rate_per_second: float = Field(default=20.0, gt=0)
    read_burst: int = Field(default=100, ge=1)
    rate_limit_max_buckets: int = Field(default=10_000, ge=1)
    forwarded_allow_ips: str = "127.0.0.1"
    dev_api_key: SecretStr | None = None
    cursor_secret: SecretStr | None = None
    state_file: Path | None = None
    """Where ``leaderboard serve`` records its embedded backend for the operator commands (None:
    ``app.local.state_file.default_state_file``)."""

    @field_validator("periods")
    @classmethod
    def _distinct_periods(cls, value: list[PeriodKind]) -> list[PeriodKind]:
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _fail_fast(self) -> Self:
        problems = []
        if (
            self.dynamodb_endpoint is None
            and self.environment != "production"
            and not self.allow_embedded_backend
        ):
            problems.append(
                "set LEADERBOARD_DYNAMODB_ENDPOINT (or LEADERBOARD_ENVIRONMENT=production): the "
                "embedded backend is not allowed here (LEADERBOARD_ALLOW_EMBEDDED_BACKEND=false)"
            )
        if self.dev_api_key is not None and not self.uses_embedded_backend:
            problems.append(
                "LEADERBOARD_DEV_API_KEY is accepted only with the embedded backend "
                "(no LEADERBOARD_DYNAMODB_ENDPOINT, not in production)"
            )
        if self.environment == "production" and (
            self.cursor_secret is None or len(self.cursor_secret.get_secret_value()) < 32
        ):
            problems.append("production needs LEADERBOARD_CURSOR_SECRET of 32+ characters")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def uses_embedded_backend(self) -> bool:
        return self.dynamodb_endpoint is None and self.environment != "production"

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)

    def cursor_key(self) -> bytes:
        """The HMAC key for cursors; a random one per process when none is configured (dev only),
        which makes cursors from before a restart invalid (a 400), not wrong."""
        if self.cursor_secret is not None:
            return self.cursor_secret.get_secret_value().encode()
        return _PROCESS_CURSOR_KEY


_PROCESS_CURSOR_KEY = secrets.token_bytes(32)


class ConfigurationError(ValueError):
    """The environment holds settings the service cannot start with. The message names each
    variable and what is wrong with it, never a value: any of them may be a secret."""


_PARSING_FAILED = re.compile(r'error parsing value for field "(\w+)"')


def load_settings() -> Settings:
    """The settings from the environment; ``ConfigurationError`` (without the values) if they are
    not ones the service starts with."""
    try:
        return Settings()
    except ValidationError as exc:
        message = describe_errors(exc)
    except SettingsError as exc:  # a complex value (a list, say) that is not JSON
        found = _PARSING_FAILED.search(str(exc))
        message = f"LEADERBOARD_{found[1].upper()}: not valid JSON" if found else str(exc)
    # Raised outside the handler, so that the error carries no context: pydantic's exception
    # holds the input, secrets and all, and a traceback printer would show it.
    raise ConfigurationError(message)


def describe_errors(exc: ValidationError) -> str:
    """Each problem as ``VARIABLE: what is wrong``, without its input, context or help link."""
    lines = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        message = error["msg"].removeprefix("Value error, ")
        where = error["loc"]
        if where:
            variable = f"LEADERBOARD_{str(where[0]).upper()}"
            inside = ".".join(str(part) for part in where[1:])
            lines.append(f"{variable}{f' ({inside})' if inside else ''}: {message}")
        else:
            lines.append(message)
    return "; ".join(lines)


@lru_cache
def get_settings() -> Settings:
    return load_settings()
