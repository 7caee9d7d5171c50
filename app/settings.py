"""Typed settings from the environment (prefix ``LEADERBOARD_``), checked at start-up.

``load_settings`` is the one way the service and the CLI read them: a bad configuration is a
``ConfigurationError`` that names each variable and what is wrong with it and never holds a value
(pydantic's own message echoes the input, secrets and all).
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path
from typing import Annotated, ClassVar, Literal, Self

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from app.domain.definitions import Operator
from app.domain.keys import Order
from app.domain.periods import PeriodKind
from app.settings_text import ORIGIN, json_list


class ApiKeyEntry(BaseModel):
    """One configured API key: its name (the client identity), the SHA-256 hex digest of the
    plaintext, and its scopes: ``submit:<game>``, ``submit:*``, ``admin``."""

    name: str = Field(min_length=1, max_length=64)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    scopes: list[str] = Field(min_length=1)


class Settings(BaseSettings):
    """Every setting, with its description: docs/configuration.md's table is rendered from these
    (``python -m tools.settings_table --write docs/configuration.md``); a test holds them together."""

    model_config = SettingsConfigDict(env_prefix="LEADERBOARD_", extra="ignore", frozen=True)

    issues_cursors: ClassVar[bool] = True
    """Whether what runs on these settings hands out page cursors (the service does), which in
    production must be signed with a secret every task shares."""

    environment: Literal["development", "production"] = Field(
        default="development",
        description="`production` never starts the embedded backend, needs `CURSOR_SECRET`, and "
        "refuses `DEV_API_KEY`",
    )
    dynamodb_endpoint: str | None = Field(
        default=None,
        description="DynamoDB endpoint (DynamoDB Local, say); none outside production: the "
        "embedded backend",
    )
    allow_embedded_backend: bool = Field(
        default=True,
        description="false (the container image sets it): with no endpoint, refuse to start "
        "rather than start the embedded backend",
    )
    region: str = Field(default="us-east-1", description="AWS region")
    scores_table: str = Field(default="leaderboard-scores", description="the Scores table's name")
    snapshots_table: str = Field(
        default="leaderboard-snapshots", description="the Snapshots table's name"
    )

    undefined_boards: Literal["allow", "refuse"] = Field(
        # Refused in production unless allowed: there a submit key could otherwise bring any
        # number of variants, and their boards, into being (docs/decisions/0028-*).
        default_factory=lambda given: (
            "refuse" if given.get("environment") == "production" else "allow"
        ),
        description="`refuse`: a variant with no definition is a 404 for reads and a 422 for "
        "submissions (so a typo in a game name is not an empty board, and a submit key cannot "
        "bring new variants into being); `allow`: it follows the default definition below",
        json_schema_extra={"shown_default": "`refuse` in production, `allow` elsewhere"},
    )
    default_order: Order = Field(
        default=Order.DESC,
        description="the default definition's order: `desc` (higher is better) or `asc`",
    )
    default_operator: Operator = Field(
        default=Operator.BEST,
        description="the default definition's operator: `best`, `latest` or `sum`",
    )
    definition_cache_seconds: float = Field(
        default=10.0,
        ge=0,
        le=300,
        description="a change reaches every task within it: a task holds every variant with "
        "boards from start-up and reads the games in use again every half of it, in the background",
    )
    # NoDecode on each list setting: pydantic-settings would read the value as JSON, and a value
    # that is not JSON would then stop the loading before any other setting is checked. The
    # ``_listed`` validators below read it instead, as one error among the others.
    periods: Annotated[list[PeriodKind], NoDecode] = Field(
        default_factory=lambda: [PeriodKind.ALLTIME, PeriodKind.DAY, PeriodKind.WEEK],
        min_length=1,
        description="the default definition's periods: the boards a score fans out to (not "
        "`season`: seasons are a variant's own); separated by commas as the CLI's `--periods` "
        'takes them (`alltime,day`), or a JSON list (`["alltime", "day"]`)',
    )
    retention_days: int = Field(
        default=30,
        ge=1,
        le=3650,
        description="the default definition's retention: period boards are kept this long "
        "after their period ends",
    )
    idempotency_ttl_hours: int = Field(
        default=24, ge=1, le=24 * 30, description="how long a submission's outcome replays"
    )
    max_lateness_seconds: int = Field(
        default=3600,
        ge=0,
        le=30 * 86400,
        description="`achievedAt` older than this is a 422 (seeding is exempt); also how long "
        "after its end a period counts as closed for its snapshot",
    )
    close_interval_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="how often each task looks for closed periods to close (with jitter): a "
        "period is closed within about twice this after its end plus the lateness",
    )
    future_skew_seconds: int = Field(
        default=5,
        ge=0,
        le=300,
        description="`achievedAt` further ahead of the server's clock than this is a 422",
    )
    max_body_bytes: int = Field(
        default=64 * 1024,
        ge=1024,
        le=1024 * 1024,
        description="request body limit, checked while streaming (413 above it); a batch of "
        "submissions (`POST /v1/scores:batch`) may take 16 times as much",
    )
    # A submission's context is stored on each board row it writes. Every other attribute of a
    # row, at its largest, takes under 1 KiB: ids of 64 characters (player; game and variant in
    # the board id), a display name of 64 four-byte characters (256 bytes), the rank key, the
    # numbers and times, their names. So a context of 384 KiB (393,216 bytes) leaves a row
    # under DynamoDB's 400 KB item (409,600 bytes) with 15 KiB to spare; and a submission's
    # transaction, at most 4 such rows (alltime, day, week, month) with its idempotency record
    # and counters of a few hundred bytes each, stays under 1.6 MB of its 4 MB.
    max_context_bytes: int = Field(
        default=16 * 1024,
        ge=1024,
        le=384 * 1024,
        description="a submission's `context`, as stored (compact JSON, non-ASCII escaped), at "
        "most this many bytes (422 above it); it is stored on each board row the submission "
        "writes, and at most 384 KiB keeps such a row, with every other field at its largest, "
        "inside DynamoDB's 400 KB item",
    )
    rank_count_cap: int = Field(
        default=2000, ge=1, le=100_000, description="most index entries one rank read counts"
    )
    player_count_cache_seconds: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="a page's `playerCount` is read from the counters at most this often per "
        "board and task (0: every page)",
    )
    hot_board_summary_seconds: float = Field(
        default=1.0,
        ge=0,
        le=10,
        description="each task reads a sharded board's top page, player count and the counters "
        "of the shards other than the asking player's at most this often, and answers from what "
        "it read in between (0: every read is live)",
    )
    board_list_cache_seconds: float = Field(
        default=10.0,
        ge=0,
        le=300,
        description="`GET /v1/boards` reads the board registry at most this often per task (0: "
        "every request); a new board is listed within it",
    )
    tie_builds_on_read: bool = Field(
        default=True,
        description="a rank read that can only answer a range, or the submissions that find "
        "their slot crowded, have their task build (or repair) the slot's tie counters in the "
        "background, where they are missing, unsealed, short of rows or hold an uncut crowded "
        "chunk (off: only the reconciler and seeding build them)",
    )
    definition_change_grace_seconds: float | None = Field(
        default=None,
        ge=0,
        le=900,
        description="how long a change of a variant's order, operator or shards holds its boards "
        "before it checks that they are empty: the submissions that read the old definition are "
        "done or cut off by then (unset: the request deadline plus the lease cache's time)",
    )
    lease_cache_seconds: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="a board's seeding lease is read at most this often per task (0: every "
        "submission); a seed's grace period covers it",
    )
    board_in_flight_per_shard: int = Field(
        default=64,
        ge=0,
        le=10_000,
        description="submissions to one board a task lets in at once, per shard of the board "
        "(0: no limit); one more waits for a place, then is refused (503 board-busy)",
    )
    board_admission_wait_seconds: float = Field(
        default=2.0,
        ge=0,
        le=60,
        description="how long a submission waits for a place on a board whose limit of "
        "submissions at once is reached, before it is refused with Retry-After",
    )
    admission_latency_target_seconds: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="the latency a task keeps its requests under `/v1/` within: it lets in as "
        "many at once as its backend answers within it, and refuses the rest at once (503 "
        "`overloaded`, with Retry-After) instead of queueing them to the deadline; health, "
        "readiness, metrics and the admin's seeds, reconciles and definitions are never refused "
        "(0: no limit)",
    )
    admission_initial_limit: int = Field(
        default=16,
        ge=1,
        le=10000,
        description="requests under `/v1/` a task lets in at once when it starts, before it has "
        "measured its backend; the limit then follows the latency, up to doubling every half "
        "second while answers come within the target",
    )
    counter_shards: int = Field(
        default=2,
        ge=1,
        le=64,
        description="partitions a board's coarse counters are spread over (2 take what a board's "
        "index partition takes: docs/decisions/0006-fewer-calls-and-units.md)",
    )
    dynamodb_max_in_flight: int = Field(
        default=64,
        ge=1,
        le=1024,
        description="DynamoDB calls in flight per process; more wait their turn",
    )
    dynamodb_read_timeout_seconds: float = Field(
        default=5.0,
        gt=0,
        le=300,
        description="how long one DynamoDB call may take to answer before botocore retries it",
    )
    transact_max_attempts: int = Field(
        default=20,
        ge=1,
        le=50,
        description="attempts per submission when its transaction is cancelled (the request "
        "deadline bounds them first under a long burst)",
    )
    request_deadline_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="a request not answered by then is a 503 with `Retry-After`; seeding, "
        "reconciling and defining boards (`.../seed`, `.../reconcile`, `PUT /v1/games/...`) are "
        "exempt. With the lease cache, also a seed's default grace period and a ranking "
        "change's",
    )
    shutdown_grace_seconds: float = Field(
        default=20.0,
        ge=0,
        le=300,
        description="on SIGTERM, in-flight requests get this long to finish (keep ECS's "
        "stopTimeout above it)",
    )
    keep_alive_seconds: float = Field(
        default=5.0,
        gt=0,
        le=3600,
        description="idle keep-alive of client connections: above a load balancer's idle "
        "timeout, or it reuses a connection the server just closed (a 502)",
    )

    cors_origins: Annotated[list[str] | None, NoDecode] = Field(
        default=None,
        description="origins whose pages may read the public boards from a browser (`GET` under "
        "`/v1/`, no credentials): separated by commas, `https://game.example,https://x.example`, "
        'or a JSON list, `["https://game.example"]`; `*` for any; unset: any outside '
        "production, none in production. The viewer's own origin needs none",
        json_schema_extra={"shown_default": "any outside production, none in production"},
    )
    api_keys: Annotated[list[ApiKeyEntry], NoDecode] = Field(
        default_factory=list,
        description='JSON list of `{"name", "sha256", "scopes"}`; scopes `submit:<game>`, '
        "`submit:*`, `admin`",
    )
    api_key_cache_ttl_seconds: float = Field(
        default=10.0,
        ge=0,
        le=300,
        description="how long a task remembers a stored key's answer: a revocation takes "
        "effect within it",
    )
    api_key_cache_max_entries: int = Field(
        default=10_000,
        ge=1,
        description="most keys remembered, found and unknown ones each",
    )
    write_rate_per_second: float = Field(
        default=100.0, gt=0, description="token bucket per API key: its rate (429 over it)"
    )
    write_burst: int = Field(default=1000, ge=1, description="token bucket per API key: its size")
    read_rate_per_second: float = Field(
        default=20.0, gt=0, description="token bucket per client address: its rate"
    )
    read_burst: int = Field(
        default=100, ge=1, description="token bucket per client address: its size"
    )
    rate_limit_max_buckets: int = Field(
        default=10_000,
        ge=1,
        description="most callers' buckets kept per process; past it the least recently used "
        "is forgotten",
    )
    forwarded_allow_ips: str = Field(
        default="127.0.0.1",
        description="proxies whose `X-Forwarded-For` is trusted for the client address",
    )
    dev_api_key: SecretStr | None = Field(
        default=None,
        description="a plaintext key with every scope, accepted only with the embedded backend",
    )
    cursor_secret: SecretStr | None = Field(
        default=None,
        description="HMAC key of page cursors; set it (32+ characters) when several tasks "
        "serve one board",
        json_schema_extra={"shown_default": "random per process"},
    )
    webhook_poll_seconds: float = Field(default=5.0, ge=0, description="poll for webhooks; 0: off")
    state_file: Path | None = Field(
        default=None,
        description="where `leaderboard serve` records its embedded backend for the operator "
        "commands: each serve writes `embedded-<pid>.json` in this file's directory",
        json_schema_extra={
            "shown_default": "`$XDG_RUNTIME_DIR/leaderboard/embedded.json`, else "
            "`/tmp/leaderboard-<uid>/embedded.json`"
        },
    )

    @field_validator("periods", "cors_origins", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        """A list from the environment: names separated by commas (``alltime,day``, the form the
        CLI's ``--periods`` takes), or a JSON list."""
        if not isinstance(value, str):
            return value
        if value.lstrip().startswith("["):
            return json_list(value)
        return [part.strip() for part in value.split(",") if part.strip()]

    @field_validator("api_keys", mode="before")
    @classmethod
    def _keys_listed(cls, value: object) -> object:
        # JSON only: each key is an object, which no comma-separated form would spell.
        if not isinstance(value, str):
            return value
        return json_list(value, expected='a JSON list of {"name", "sha256", "scopes"} objects')

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        for origin in value:
            if origin != "*" and not ORIGIN.fullmatch(origin):
                raise ValueError(
                    f"{origin!r} is not an origin: scheme://host[:port], no path, or *"
                )
        return value

    @property
    def browser_origins(self) -> list[str]:
        """The origins CORS lets read the public boards."""
        if self.cors_origins is not None:
            return self.cors_origins
        return [] if self.environment == "production" else ["*"]

    @field_validator("periods")
    @classmethod
    def _distinct_periods(cls, value: list[PeriodKind]) -> list[PeriodKind]:
        if PeriodKind.SEASON in value:  # seasons are a variant's own
            raise ValueError("the default definition has no seasons: define them per variant")
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
        if (
            self.issues_cursors
            and self.environment == "production"
            and (self.cursor_secret is None or len(self.cursor_secret.get_secret_value()) < 32)
        ):
            problems.append("production needs LEADERBOARD_CURSOR_SECRET of 32+ characters")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def uses_embedded_backend(self) -> bool:
        return self.dynamodb_endpoint is None and self.environment != "production"

    @property
    def signs_with_dummy_credentials(self) -> bool:
        """Outside production DynamoDB is local (DynamoDB Local, moto, the embedded backend) and
        takes any credentials. Production signs with the default chain's whatever its endpoint (a
        VPC endpoint URL is still AWS): on ECS the task role's, which the container credentials
        provider gives and no ``AWS_ACCESS_KEY_ID`` announces."""
        return self.environment != "production"

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)

    def cursor_key(self) -> bytes:
        """The HMAC key for cursors; per process where none is set (dev: a restart's are 400s)."""
        if self.cursor_secret is not None:
            return self.cursor_secret.get_secret_value().encode()
        return _PROCESS_CURSOR_KEY


_PROCESS_CURSOR_KEY = secrets.token_bytes(32)
