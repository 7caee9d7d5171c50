"""The rules each use case obeys, as plain values. The composition root builds them once from
``Settings``; nothing below it reads settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition


@dataclass(frozen=True)
class SubmitPolicy:
    """What every submission obeys; what its boards are and how they rank is their variant's
    ``BoardDefinition``."""

    idempotency_ttl: timedelta
    max_lateness: timedelta
    future_skew: timedelta
    max_attempts: int
    """Transactions per board before the submission gives up (503)."""
    rank_cap: int
    layout: BucketLayout
    backoff_base_s: float = 0.02
    backoff_cap_s: float = 1.0
    in_flight_s: float = 10.0
    """How long a key's first request may run (the request deadline): a second one waits that
    at most."""
    lease_cache_s: float = 0.0
    """How long a task acts on a board's seeding lease as it last read it."""
    board_in_flight_per_shard: int = 0
    """Submissions to one board (per shard) a task lets in at once; 0: no limit."""
    board_wait_s: float = 0.0
    """How long one more waits for a place before it is refused (503 board-busy)."""


@dataclass(frozen=True)
class ReadPolicy:
    layout: BucketLayout
    cap: int
    """Most index entries one rank read counts."""
    cursor_secret: bytes = field(repr=False)
    """The HMAC key of page cursors."""
    board_list_s: float = 0.0
    """How often, at most, a task reads the board registry for ``GET /v1/boards`` (0: every
    request)."""


@dataclass(frozen=True)
class RankingPolicy:
    """How ranks are read, and what a task keeps to read them."""

    layout: BucketLayout
    cap: int
    """Most index entries one rank read counts."""
    summary_s: float = 0.0
    """How old, at most, a hot board's summary may be (0: every read is live)."""
    player_count_s: float = 0.0
    """How often, at most, a task reads a board's player count for its pages (0: every page)."""
    build_group: int | None = None
    """A crowded slot's tie counters are built on a rank read's range past this many entries;
    ``None``: reads build none."""
    pass_gap_s: float = 1.0
    """Between the two walks of a tie build: longer than RankIndex's usual lag."""


@dataclass(frozen=True)
class CountPolicy:
    """How operator work counts a board from its index (``app.services.ranking.counting``)."""

    layout: BucketLayout
    tie_group: int | None = None
    """The entries of every slot holding more than this are kept: what tie counters are built
    from; ``None``: none are."""
    page_size: int = 1000
    """Entries per RankIndex page (DynamoDB also stops a page at 1 MB)."""
    settle_attempts: int = 10
    settle_delay_s: float = 1.0
    """Counting until two passes agree waits this between passes (RankIndex lags the table)."""
    pass_gap_s: float = 1.0
    """Between the reconciler's counter read and its second pass: longer than RankIndex's usual
    lag, so a submission the first pass missed shows as a disagreement, not a false difference."""


@dataclass(frozen=True)
class SeedPolicy:
    layout: BucketLayout = field(default_factory=BucketLayout)
    lease_ttl_s: float = 60.0
    """How long the lease outlives a seeder that stops renewing it (one that died)."""
    renew_every_s: float | None = None
    """How often the lease is renewed while seeding runs; a third of the TTL by default."""
    grace_s: float = 10.0
    """The wait after taking the lease before writing: submissions that read the board free just
    before the lease was taken finish within their request deadline."""
    concurrency: int = 16
    """Row writes in flight at once."""
    settle_attempts: int = 10
    settle_delay_s: float = 1.0
    """Recounting waits for RankIndex to show every row written (it lags the table)."""
    tie_group: int | None = None
    """A slot holding more entries than this gets tie counters (``app.domain.ties``); ``None``:
    none are built."""
    counters_absent: bool = False
    """The board is known to have no counter items yet: its tables were made moments ago by the
    process that seeds it (the demo, on the embedded backend it starts). Rebuilding the counters
    then skips reading the board's counter partitions (a shard each, and one for each of the
    layout's coarse buckets: 132 Queries a board by default). Each counter is written only where
    it is absent; if one was there after all (a submission just before the lease), the counters
    are read whole and rebuilt again, as they are by default."""

    def __post_init__(self) -> None:
        if self.lease_ttl_s < 1 or self.grace_s < 0 or self.concurrency < 1:
            raise ValueError("a seed policy needs lease_ttl_s >= 1, grace_s >= 0, concurrency >= 1")
        if self.renew_every_s is not None and not 0 < self.renew_every_s < self.lease_ttl_s:
            raise ValueError("renew_every_s must be positive and shorter than the lease TTL")

    @property
    def renew_interval_s(self) -> float:
        return self.renew_every_s if self.renew_every_s is not None else self.lease_ttl_s / 3

    @property
    def counting(self) -> CountPolicy:
        """How the seeder counts the board it wrote: until two passes agree."""
        return CountPolicy(
            self.layout,
            self.tie_group,
            settle_attempts=self.settle_attempts,
            settle_delay_s=self.settle_delay_s,
        )


RANKING_CHANGE_HOLDER = "definition:"
"""How the leases of a change of order, operator or shards name their holder (a submission's 409
says why the board is held)."""


def ranking_change_holder(game: str, variant: str, wanted: BoardDefinition, nonce: str) -> str:
    """A ranking change's lease holder: it ends with the ranking the change puts, which a
    submission already holding that definition may write under (``lets_through``)."""
    return f"{RANKING_CHANGE_HOLDER}{game}/{variant}:{nonce}:{_ranking(wanted)}"


def lets_through(holder: str, definition: BoardDefinition) -> bool:
    """Whether a ranking change's lease leaves a submission under ``definition`` free to write:
    only one that already follows the ranking the change puts (a task learns it once it is put).
    """
    return holder.startswith(RANKING_CHANGE_HOLDER) and holder.endswith(f":{_ranking(definition)}")


def _ranking(definition: BoardDefinition) -> str:
    return f"{definition.order.value}.{definition.operator.value}.{definition.shards}"


@dataclass(frozen=True)
class RedefinePolicy:
    """How a change of a variant's order, operator or shards keeps the submissions under the old
    definition out (``app.services.rules._define``)."""

    grace_s: float
    """How long the boards are held before they are checked: every submission that read the old
    definition and no lease is done, or cut off, by then."""
    after_s: float
    """How long the boards stay held once the definition is put: until every task's copy of the
    old one has lapsed (``definition_cache_seconds``, and a second for the clocks); 0: released
    at once."""
    reach: timedelta
    """How far back a submission may reach (its lateness): the periods held go back as far."""


@dataclass(frozen=True)
class Policies:
    submit: SubmitPolicy
    reads: ReadPolicy
    ranking: RankingPolicy
    seed: SeedPolicy
    layout: BucketLayout
    tie_group: int | None
    """A slot holding more entries than this gets tie counters when the reconciler or a seed
    walks its board."""
    settle: timedelta
    """How long after a period ends it counts as closed (the lateness a submission may have)."""
    redefine: RedefinePolicy
    pass_gap_s: float = 1.0
    """Between the two walks of a recount or a tie build: longer than RankIndex's usual lag."""
    sweep_again_s: float = 11.0
    """How long after a moderation its later pass over the player's rows is due (a request
    deadline and a second: decision 0036)."""
    close_interval_s: float = 30.0
    """How often a task's closer looks for periods to close (``app.services.operations``)."""
