"""The composition root: the one place that reads ``Settings`` and builds from them the DynamoDB
client, every adapter (over one bound on calls in flight and one set of item locks), the bucket
layout and every policy. The service's lifespan, every CLI command and the tests all open the
service's parts through ``open_runtime``, so they cannot drift apart.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from app.domain import ties
from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition
from app.domain.principal import Principal
from app.services.api_keys import ApiKeys, digest_of
from app.services.api_keys.auth import KeyAuthenticator
from app.services.leaderboard import Leaderboard
from app.services.operations import Operations
from app.services.policies import (
    Policies,
    ReadPolicy,
    RedefinePolicy,
    SeedPolicy,
    SubmitPolicy,
)
from app.services.ports import KeyLookup, Stores
from app.services.ranking.pages import PlayerCounts
from app.services.ranking.slot_builds import SlotBuildPorts, SlotBuilds
from app.services.ranking.summary import HotBoards
from app.services.reads import BoardReads
from app.services.registry import BoardRegistrar, RegisteredBoards
from app.services.rules import BoardRules, DefinePorts
from app.services.rules.held import Definitions
from app.services.submissions import Submissions
from app.services.submissions.admission import BoardAdmission
from app.services.submissions.in_flight import KeysInFlight, SeenLeases
from app.settings import Settings
from app.store.api_keys import KeyItems
from app.store.client import Dynamo, open_client
from app.store.counters import CounterItems
from app.store.definitions import DefinitionItems
from app.store.index import IndexReads, RankReads
from app.store.item_locks import ItemLocks
from app.store.leases import LeaseItems
from app.store.registry import RegistryItems
from app.store.requests import RequestItems
from app.store.snapshots import SnapshotItems
from app.store.standings import ErasureMarkItems, StandingItems
from app.store.submissions import SubmissionItems
from app.store.tables import TableNames, Tables

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient

    from app.local.state_file import EmbeddedState

log = structlog.get_logger(__name__)

LAYOUT = BucketLayout()
"""The histogram's layout, chosen by simulation (docs/decisions/0002-bucket-layout.md)."""


class NoBackend(Exception):
    """There is no DynamoDB to talk to: no endpoint is configured, and the caller may not start
    the embedded backend (it lives only as long as the process that starts it)."""


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
        ),
        reads=ReadPolicy(
            layout=LAYOUT,
            cap=settings.rank_count_cap,
            cursor_secret=settings.cursor_key(),
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
        keys=KeyItems(dynamo, table=names.scores),
        tables=Tables(dynamo, names, probe=probe),
    )


def build_authenticator(
    settings: Settings, keys: KeyLookup, *, clock: Callable[[], float] = time.monotonic
) -> KeyAuthenticator:
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
    return KeyAuthenticator(
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
    slot_builds: SlotBuilds
    """Tie counters of crowded slots built in the background where a rank read is a range."""
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
        slot_builds = build_slot_builds(settings, stores, policies)
        try:
            yield Runtime(
                leaderboard=build_leaderboard(settings, stores, policies, slot_builds),
                stores=stores,
                policies=policies,
                slot_builds=slot_builds,
                endpoint=endpoint,
                client=client,
                probe_client=probe_client,
                tables=table_names(settings),
                table_admin=table_admin,
            )
        finally:
            await slot_builds.close()
            dynamo.close()
            probe.close()


def build_slot_builds(settings: Settings, stores: Stores, policies: Policies) -> SlotBuilds:
    """The background builds of crowded slots' tie counters that range reads ask for."""
    return SlotBuilds(
        SlotBuildPorts(stores.index, stores.counters, stores.standings),
        layout=LAYOUT,
        group=tie_group(settings) if settings.tie_builds_on_read else None,
        pass_gap_s=policies.pass_gap_s,
    )


def build_leaderboard(
    settings: Settings, stores: Stores, policies: Policies, slot_builds: SlotBuilds
) -> Leaderboard:
    """The use cases over ``stores`` (the DynamoDB adapters, or the tests' fakes), each with its
    policy and the process memory it keeps."""
    definitions = Definitions(
        stores.definitions,
        default=default_definition(settings),
        undefined=settings.undefined_boards,
        ttl_s=settings.definition_cache_seconds,
    )
    registered = RegisteredBoards(ttl_s=settings.board_list_cache_seconds)
    hot = HotBoards(
        stores.ranks,
        policies.reads.layout,
        ttl_s=settings.hot_board_summary_seconds,
        ties=stores.counters,
    )
    return Leaderboard(
        submissions=Submissions(
            store=stores.submissions,
            ranks=hot,
            definitions=definitions,
            registrar=BoardRegistrar(stores.registry),
            # A key's first request runs at most the request deadline: a second one waits that.
            keys_in_flight=KeysInFlight(hold_s=settings.request_deadline_seconds),
            seen_leases=SeenLeases(ttl_s=settings.lease_cache_seconds),
            policy=policies.submit,
            admission=BoardAdmission(
                per_shard=settings.board_in_flight_per_shard,
                wait_s=settings.board_admission_wait_seconds,
            ),
        ),
        reads=BoardReads(
            index=stores.index,
            counters=stores.counters,
            standings=stores.standings,
            ranks=hot,
            hot=hot,
            registry=stores.registry,
            snapshots=stores.snapshots,
            definitions=definitions,
            player_counts=PlayerCounts(ttl_s=settings.player_count_cache_seconds),
            registered=registered,
            slot_builds=slot_builds,
            policy=policies.reads,
        ),
        rules=BoardRules(
            definitions,
            DefinePorts(
                stores.definitions, stores.registry, stores.index, stores.leases, stores.counters
            ),
            policy=policies.redefine,
            registered=registered,
        ),
        operations=Operations(stores, definitions=definitions, policies=policies),
        keys=ApiKeys(stores.keys, build_authenticator(settings, stores.keys)),
        readiness=stores.tables,
    )


def embedded_state_file(settings: Settings) -> Path:
    """Where this process, a ``leaderboard serve``, records its embedded backend for the operator
    commands: a file of its own, beside any other ``serve``'s."""
    from app.local.state_file import serve_state_file

    return serve_state_file(_state_base(settings), os.getpid())


def _state_base(settings: Settings) -> Path:
    from app.local.state_file import default_state_file

    return settings.state_file or default_state_file()


def _record_embedded(settings: Settings, runtime: Runtime) -> Path | None:
    """Tell the operator commands where this process's embedded backend is; ``None`` if it
    cannot (the service runs on regardless)."""
    from app.local.state_file import EmbeddedState, UntrustedStateFile, write_state

    path = embedded_state_file(settings)
    if runtime.endpoint is None:  # pragma: no cover - the embedded backend always has one
        return None
    state = EmbeddedState(
        runtime.endpoint, runtime.tables.scores, runtime.tables.snapshots, os.getpid()
    )
    try:
        write_state(path, state)
    except (OSError, UntrustedStateFile) as exc:
        log.warning("embedded_backend_not_recorded", path=str(path), error=str(exc))
        return None
    return path


def record_service(settings: Settings, url: str) -> Path | None:
    """Add where the service listens (``url``) to this process's record of its embedded backend,
    so that an operator command can say which service it works on, and be pointed at one by its
    port; the record's path, or ``None`` when this process keeps none (not on the embedded
    backend, or it could not write one)."""
    from app.local.state_file import UntrustedStateFile, read_live_state, write_state

    path = embedded_state_file(settings)
    try:
        recorded = read_live_state(path)
        if recorded is None or recorded.pid != os.getpid():
            return None
        write_state(path, replace(recorded, service=url))
    except (OSError, UntrustedStateFile) as exc:
        log.warning("embedded_backend_not_recorded", path=str(path), error=str(exc))
        return None
    return path


@asynccontextmanager
async def open_service_runtime(settings: Settings) -> AsyncIterator[Runtime]:
    """The service's runtime: on the configured endpoint, or, with none outside production, on
    the embedded backend (moto's server as a child process, stopped when this exits), recorded
    for the operator commands while it runs (``embedded_state_file``)."""
    if not settings.uses_embedded_backend:
        async with open_runtime(settings) as runtime:
            yield runtime
        return
    from app.local.embedded import EmbeddedDynamo
    from app.local.state_file import remove_state

    embedded = EmbeddedDynamo()
    endpoint = await asyncio.to_thread(embedded.start)
    log.info("embedded_backend_started", endpoint=endpoint, pid=embedded.pid)
    try:
        async with open_runtime(settings, endpoint=endpoint, create_tables=True) as runtime:
            recorded = _record_embedded(settings, runtime)
            try:
                yield runtime
            finally:
                if recorded is not None:
                    remove_state(recorded, pid=os.getpid())
    finally:
        await asyncio.to_thread(embedded.stop)
        log.info("embedded_backend_stopped")


@dataclass(frozen=True)
class OperatorBackend:
    """The DynamoDB an operator command works on, and how it says so."""

    settings: Settings
    """The settings with the endpoint and the tables to work on."""
    where: str
    """The endpoint, how it was chosen, the service it belongs to and the tables, in words."""


def operator_backend(
    settings: Settings, *, endpoint: str | None = None, serve: str | None = None
) -> OperatorBackend:
    """What an operator command works on: ``endpoint`` (its ``--endpoint``), else the configured
    endpoint (or production's AWS), else the embedded backend of the one ``leaderboard serve``
    running on this machine, or of the one ``serve`` names (its port, address or process id);
    never an embedded backend of its own, whose data would vanish when the command ends.
    ``NoBackend`` says why there is none, or which ones there are to choose from."""
    tables = f"tables {settings.scores_table} and {settings.snapshots_table}"
    if endpoint is not None:
        if serve is not None:
            raise NoBackend("--endpoint and --serve each choose the DynamoDB to work on: give one")
        return OperatorBackend(
            settings.model_copy(update={"dynamodb_endpoint": endpoint}),
            f"DynamoDB at {endpoint} (--endpoint), {tables}",
        )
    if serve is None and settings.dynamodb_endpoint is not None:
        return OperatorBackend(
            settings,
            f"DynamoDB at {settings.dynamodb_endpoint} (LEADERBOARD_DYNAMODB_ENDPOINT), {tables}",
        )
    if settings.environment == "production":
        if serve is not None:
            raise NoBackend(
                "--serve chooses the embedded backend of a `leaderboard serve`, which production "
                "never uses: leave it out (or give --endpoint URL)"
            )
        return OperatorBackend(
            settings,
            f"AWS DynamoDB in {settings.region} (LEADERBOARD_ENVIRONMENT=production), {tables}",
        )
    served = _running_serve(settings, serve)
    log.info("using_embedded_backend", endpoint=served.endpoint, serve_pid=served.pid)
    return OperatorBackend(
        settings.model_copy(
            update={
                "dynamodb_endpoint": served.endpoint,
                "scores_table": served.scores_table,
                "snapshots_table": served.snapshots_table,
            }
        ),
        f"the embedded DynamoDB at {served.endpoint} of {served.describe()}, tables "
        f"{served.scores_table} and {served.snapshots_table}",
    )


def _running_serve(settings: Settings, serve: str | None) -> EmbeddedState:
    """The one running ``leaderboard serve`` (of those ``serve`` names, if given)."""
    from app.local.state_file import UntrustedStateFile, live_states

    base = _state_base(settings)
    try:
        running = live_states(base)
    except UntrustedStateFile as exc:
        raise NoBackend(str(exc)) from None
    chosen = [
        state
        for state in running
        if serve is None or serve in (str(state.port), str(state.pid), state.service)
    ]
    if len(chosen) == 1:
        return chosen[0]
    listed = "; ".join(f"{state.describe()}, DynamoDB at {state.endpoint}" for state in running)
    if len(chosen) > 1:
        raise NoBackend(
            f"{len(chosen)} `leaderboard serve`s run on this machine, each with its own "
            f"embedded DynamoDB: {listed}. Choose one with --serve PORT (or its pid), or "
            "--endpoint URL"
        )
    if running:  # none of them is the one named
        raise NoBackend(
            f"no `leaderboard serve` on this machine listens on port {serve} or has that pid; "
            f"running: {listed}. Give --serve one of their ports, or --endpoint URL"
        )
    raise NoBackend(
        "no DynamoDB to work on: start `leaderboard serve` (its embedded backend is found "
        f"through {base.parent} while it runs), or give --endpoint URL (or set "
        "LEADERBOARD_DYNAMODB_ENDPOINT)"
    )


@asynccontextmanager
async def open_operator_runtime(
    settings: Settings, *, endpoint: str | None = None, serve: str | None = None
) -> AsyncIterator[Runtime]:
    """An operator command's runtime, on what ``operator_backend`` chooses."""
    async with open_runtime(
        operator_backend(settings, endpoint=endpoint, serve=serve).settings
    ) as runtime:
        yield runtime
