"""The composition root: the one place that reads ``Settings`` and builds from them the DynamoDB
client, every adapter (over one bound on calls in flight and one set of item locks), the bucket
layout and every policy. The service's lifespan, every CLI command and the tests all open the
service's parts through ``open_runtime``, so they cannot drift apart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import structlog

from app.domain import ties
from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition
from app.domain.principal import Principal
from app.services.api_keys import ApiKeys, digest_of
from app.services.api_keys.auth import ApiKeyAuthenticator
from app.services.cohorts import Cohorts, PlacePolicy
from app.services.leaderboard import Leaderboard
from app.services.operations import Operations
from app.services.policies import (
    Policies,
    RankingPolicy,
    ReadPolicy,
    RedefinePolicy,
    SeedPolicy,
    SubmitPolicy,
)
from app.services.ports import ApiKeyLookup, Stores
from app.services.ranking import Ranking
from app.services.ranking.slot_builds import SlotBuilds
from app.services.reads import BoardReads
from app.services.registry import RegisteredBoards
from app.services.rules import BoardRules
from app.services.rules.held import Definitions
from app.services.seasons import ClaimPolicy, Claims
from app.services.submissions import Submissions
from app.services.webhooks import WebhookPolicy, Webhooks
from app.settings import Settings
from app.store.api_keys import ApiKeyItems
from app.store.claims import ClaimItems
from app.store.client import Dynamo, open_client
from app.store.counters import CounterItems
from app.store.definitions import DefinitionItems
from app.store.entrants import EntrantItems
from app.store.index import IndexReads, RankReads
from app.store.item_locks import ItemLocks
from app.store.leases import LeaseItems
from app.store.moderation import ModerationItems
from app.store.outbox import OutboxItems
from app.store.registry import RegistryItems
from app.store.requests import RequestItems
from app.store.snapshots import SnapshotItems
from app.store.standings import ErasureMarkItems, StandingItems
from app.store.submissions import SubmissionItems
from app.store.tables import TableNames, Tables
from app.store.webhooks import WebhookItems

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient


log = structlog.get_logger(__name__)

LAYOUT = BucketLayout()
"""The histogram's layout, chosen by simulation (docs/decisions/0002-bucket-layout.md)."""


def table_names(settings: Settings) -> TableNames:
    return TableNames(settings.scores_table, settings.snapshots_table)


def build_policies(settings: Settings) -> Policies:
    return Policies(
        submit=SubmitPolicy(
            idempotency_ttl=timedelta(hours=settings.idempotency_ttl_hours),
            max_lateness=timedelta(seconds=settings.max_lateness_seconds),
            future_skew=timedelta(seconds=settings.future_skew_seconds),
            max_attempts=settings.transact_max_attempts,
            rank_cap=settings.rank_count_cap,
            layout=LAYOUT,
            # A key's first request runs at most the request deadline: a second one waits that.
            in_flight_s=settings.request_deadline_seconds,
            lease_cache_s=settings.lease_cache_seconds,
            board_in_flight_per_shard=settings.board_in_flight_per_shard,
            board_wait_s=settings.board_admission_wait_seconds,
        ),
        reads=ReadPolicy(
            layout=LAYOUT,
            cap=settings.rank_count_cap,
            cursor_secret=settings.cursor_key(),
            board_list_s=settings.board_list_cache_seconds,
        ),
        ranking=RankingPolicy(
            layout=LAYOUT,
            cap=settings.rank_count_cap,
            summary_s=settings.hot_board_summary_seconds,
            player_count_s=settings.player_count_cache_seconds,
            build_group=tie_group(settings) if settings.tie_builds_on_read else None,
        ),
        # The grace period: a submission that read the board free just before the lease was
        # taken (or remembers so, for up to the lease cache's time) is done, or cut off, by then.
        seed=SeedPolicy(
            layout=LAYOUT,
            tie_group=tie_group(settings),
            grace_s=settings.request_deadline_seconds + settings.lease_cache_seconds,
        ),
        layout=LAYOUT,
        tie_group=tie_group(settings),
        settle=timedelta(seconds=settings.max_lateness_seconds),
        redefine=redefine_policy(settings),
        sweep_again_s=settings.request_deadline_seconds + 1,
        close_interval_s=settings.close_interval_seconds,
    )


def redefine_policy(settings: Settings) -> RedefinePolicy:
    """A ranking change's grace covers the submissions that read the old definition and no lease
    (a request deadline, and the lease cache's time, as a seed's); once it is put, the boards stay
    held while a task may still hold the old definition (a submission that takes it then reads
    the lease first, and is refused)."""
    grace = settings.definition_change_grace_seconds
    if grace is None:
        grace = settings.request_deadline_seconds + settings.lease_cache_seconds
    ttl = settings.definition_cache_seconds
    return RedefinePolicy(
        grace_s=grace,
        after_s=ttl + settings.lease_cache_seconds + 1 if ttl > 0 else 0.0,
        reach=timedelta(seconds=settings.max_lateness_seconds + settings.future_skew_seconds),
    )


def tie_group(settings: Settings) -> int:
    """The most entries a builder leaves in one tie chunk (``app.domain.ties.tie_group``)."""
    return ties.tie_group(settings.rank_count_cap)


def default_definition(settings: Settings) -> BoardDefinition:
    """What a variant with no definition of its own follows."""
    return BoardDefinition(
        order=settings.default_order,
        operator=settings.default_operator,
        periods=tuple(settings.periods),
        retention_days=settings.retention_days,
    )


def build_stores(dynamo: Dynamo, settings: Settings, *, probe: Dynamo | None = None) -> Stores:
    """Every adapter over one client and its bound on calls in flight (the readiness check over
    ``probe``, a client that asks once, where given)."""
    names = table_names(settings)
    counters = CounterItems(
        dynamo, table=names.scores, shards=settings.counter_shards, locks=ItemLocks()
    )
    index = IndexReads(dynamo, table=names.scores)
    return Stores(
        submissions=SubmissionItems(dynamo, table=names.scores, counters=counters),
        erasures=ErasureMarkItems(dynamo, table=names.scores),
        requests=RequestItems(dynamo, table=names.scores),
        standings=StandingItems(dynamo, table=names.scores, counters=counters),
        index=index,
        ranks=RankReads(counters, index),
        counters=counters,
        leases=LeaseItems(dynamo, table=names.scores),
        snapshots=SnapshotItems(dynamo, names),
        registry=RegistryItems(dynamo, table=names.scores),
        definitions=DefinitionItems(dynamo, table=names.scores),
        api_keys=ApiKeyItems(dynamo, table=names.scores),
        tables=Tables(dynamo, names, probe=probe),
        moderation=ModerationItems(dynamo, table=names.scores, counters=counters),
        webhooks=WebhookItems(dynamo, table=names.scores),
        outbox=OutboxItems(dynamo, table=names.scores),
        claims=ClaimItems(dynamo, table=names.scores),
        entrants=EntrantItems(dynamo, table=names.scores),
    )


def build_authenticator(
    settings: Settings, keys: ApiKeyLookup, *, clock: Callable[[], float] = time.monotonic
) -> ApiKeyAuthenticator:
    """The configured keys (from settings, as digests; the dev key with every scope), then the
    stored ones."""
    configured = [
        (entry.sha256, Principal(entry.name, frozenset(entry.scopes)))
        for entry in settings.api_keys
    ]
    if settings.dev_api_key is not None:
        configured.append(
            (
                digest_of(settings.dev_api_key.get_secret_value()),
                Principal("dev", frozenset({"submit:*", "admin"})),
            )
        )
    return ApiKeyAuthenticator(
        keys,
        configured=configured,
        ttl=settings.api_key_cache_ttl_seconds,
        max_entries=settings.api_key_cache_max_entries,
        clock=clock,
    )


@dataclass(frozen=True)
class Runtime:
    """The service's parts, open: what the lifespan hands to the app and the CLI to a command."""

    leaderboard: Leaderboard
    """The use cases: all that the routes, the commands and the demo call."""
    stores: Stores
    """For tests and benchmarks that look under the use cases; entry points never do."""
    policies: Policies
    endpoint: str | None
    """The DynamoDB endpoint in use (``None``: AWS's own for the region)."""
    client: DynamoDBClient
    """For tests and benchmarks that count or fault calls; services never see it."""
    probe_client: DynamoDBClient
    """The readiness check's (it asks once), for tests that fault it."""
    tables: TableNames
    table_admin: Tables
    """Creating the tables: operators' and the embedded backend's, never a request's."""

    @property
    def definitions(self) -> Definitions:
        """The per-task memory of board definitions (for tests that look at it)."""
        return self.leaderboard.rules.definitions

    @property
    def slot_builds(self) -> SlotBuilds:
        """Tie counters of crowded slots built in the background where a rank read is a range
        (for tests that wait for them)."""
        return self.leaderboard.ranking.builds


@asynccontextmanager
async def open_runtime(
    settings: Settings, *, endpoint: str | None = None, create_tables: bool = False
) -> AsyncIterator[Runtime]:
    """Open the client on ``endpoint`` (default: the configured one) and build everything over it;
    ``create_tables`` creates the tables where missing (the embedded backend starts empty)."""
    endpoint = endpoint or settings.dynamodb_endpoint
    async with (
        open_client(
            endpoint=endpoint,
            region=settings.region,
            dummy_credentials=settings.signs_with_dummy_credentials,
            read_timeout=settings.dynamodb_read_timeout_seconds,
            # A connection for every call the bound lets through, and no more.
            max_pool_connections=settings.dynamodb_max_in_flight,
        ) as client,
        open_client(
            endpoint=endpoint,
            region=settings.region,
            dummy_credentials=settings.signs_with_dummy_credentials,
            probe=True,
        ) as probe_client,
    ):
        # A burst queues at the bound on calls in flight instead of opening ever more
        # connections and failing.
        dynamo = Dynamo(client, in_flight=asyncio.Semaphore(settings.dynamodb_max_in_flight))
        probe = Dynamo(probe_client, in_flight=asyncio.Semaphore(2))
        stores = build_stores(dynamo, settings, probe=probe)
        table_admin = Tables(dynamo, table_names(settings))
        if create_tables:
            await table_admin.create_tables()
        policies = build_policies(settings)
        leaderboard = build_leaderboard(settings, stores, policies)
        try:
            yield Runtime(
                leaderboard=leaderboard,
                stores=stores,
                policies=policies,
                endpoint=endpoint,
                client=client,
                probe_client=probe_client,
                tables=table_names(settings),
                table_admin=table_admin,
            )
        finally:
            await leaderboard.ranking.close()
            await leaderboard.operations.close()
            dynamo.close()
            probe.close()


def build_leaderboard(settings: Settings, stores: Stores, policies: Policies) -> Leaderboard:
    """The use cases over ``stores`` (the DynamoDB adapters, or the tests' fakes), each with its
    policy and the process memory it keeps."""
    definitions = Definitions(
        stores.definitions,
        default=default_definition(settings),
        undefined=settings.undefined_boards,
        ttl_s=settings.definition_cache_seconds,
    )
    registered = RegisteredBoards(ttl_s=policies.reads.board_list_s)
    ranking = Ranking(stores, policies.ranking)
    return Leaderboard(
        submissions=Submissions(stores, policies.submit, definitions, ranking),
        reads=BoardReads(stores, policies.reads, definitions, ranking, registered),
        rules=BoardRules(stores, policies.redefine, definitions, registered),
        operations=Operations(stores, policies=policies, definitions=definitions),
        api_keys=ApiKeys(stores.api_keys, build_authenticator(settings, stores.api_keys)),
        readiness=stores.tables,
        ranking=ranking,
        webhooks=Webhooks(stores, webhook_policy(settings)),
        claims=Claims(stores, stores.claims, claim_policy(policies)),
        cohorts=Cohorts(
            stores.entrants, stores.ranks, place_policy(policies), registry=stores.registry
        ),
    )


def place_policy(policies: Policies) -> PlacePolicy:
    """A placement's transactions meet every other placement on the board's one count: many
    short tries (each lost try read again, with a new seat), not the submissions' few."""
    submit = policies.submit
    return PlacePolicy(
        attempts=max(64, submit.max_attempts),
        backoff_base_s=submit.backoff_base_s / 2,
        backoff_cap_s=min(0.25, submit.backoff_cap_s),
        settle=policies.settle,
    )


def webhook_policy(settings: Settings) -> WebhookPolicy:
    return WebhookPolicy(
        production=settings.environment == "production",
        cursor_secret=settings.cursor_key(),
        poll_s=settings.webhook_poll_seconds,
    )


def claim_policy(policies: Policies) -> ClaimPolicy:
    """Claims rank as reads do, on boards closed as the closer closes them."""
    return ClaimPolicy(layout=policies.layout, cap=policies.reads.cap, settle=policies.settle)
