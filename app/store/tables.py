"""The one definition of the tables, used by ``leaderboard create-tables``, the embedded backend,
compose's bootstrap and the tests (and checked against the CDK stack).

Scores (``playerId`` / ``leaderboardId``) holds players' standings, which alone carry ``rankKey`` and
so alone reach the sparse ``RankIndex`` (``leaderboardId`` / ``rankKey``), plus the bookkeeping rows:
idempotency records, histogram counters and seeding leases. Snapshots (``leaderboardId`` /
``snapshotTakenAt``) holds frozen tops of boards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ReadTimeoutError,
)

from app.errors import StoreRejected, Unavailable
from app.services.ports import TablesReport
from app.store.client import Dynamo

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient

RANK_INDEX = "RankIndexV2"
"""RankIndex as its second definition names it (decision 0025: ``metadata`` in, ``lastPlayedAt``
out); an index's projection cannot change in place, so a new definition is a new name."""
PREVIOUS_RANK_INDEX = "RankIndex"
"""The first definition, which a deployment from before decision 0025 still has until it drops it."""
METADATA_ATTRIBUTE = "metadata"
TIE_GRAIN_ATTRIBUTE = "tieGrain"
"""On a row counted in its slot's tie counters: its tie mark (``app.domain.ties``: the grain, and
the cut of its chunk, if cut; named for the grain, which is the whole mark in an uncut chunk)."""
RANK_INDEX_PROJECTED = ("displayName", "country", METADATA_ATTRIBUTE, TIE_GRAIN_ATTRIBUTE)
"""What every read of the board shows, and the tie mark; nothing that a write changes without
moving the entry (``lastPlayedAt`` is the row's alone), so such a write leaves the index alone."""
PREVIOUS_RANK_INDEX_PROJECTED = ("displayName", "country", "lastPlayedAt", TIE_GRAIN_ATTRIBUTE)
TTL_ATTRIBUTE = "expiresAt"
HIDDEN_KEY_ATTRIBUTE = "hiddenKey"
"""On a hidden row (its player moderated, decision 0036): the rank key it had, and has again when
restored; the row has no ``rankKey`` meanwhile, so it is off the sparse RankIndex."""
HIDDEN_SINCE_ATTRIBUTE = "hiddenSince"


@dataclass(frozen=True)
class TableNames:
    scores: str
    snapshots: str


def scores_table_spec(name: str) -> dict[str, Any]:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "playerId", "AttributeType": "S"},
            {"AttributeName": "leaderboardId", "AttributeType": "S"},
            {"AttributeName": "rankKey", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "playerId", "KeyType": "HASH"},
            {"AttributeName": "leaderboardId", "KeyType": "RANGE"},
        ],
        "GlobalSecondaryIndexes": [rank_index_spec()],
    }


def rank_index_spec(*, previous: bool = False) -> dict[str, Any]:
    """RankIndex as ``CreateTable`` and ``UpdateTable`` take it; ``previous``: the first definition,
    which the CDK stack keeps through a migration (docs/decisions/0025)."""
    return {
        "IndexName": PREVIOUS_RANK_INDEX if previous else RANK_INDEX,
        "KeySchema": [
            {"AttributeName": "leaderboardId", "KeyType": "HASH"},
            {"AttributeName": "rankKey", "KeyType": "RANGE"},
        ],
        "Projection": {
            "ProjectionType": "INCLUDE",
            "NonKeyAttributes": list(
                PREVIOUS_RANK_INDEX_PROJECTED if previous else RANK_INDEX_PROJECTED
            ),
        },
    }


def snapshots_table_spec(name: str) -> dict[str, Any]:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "leaderboardId", "AttributeType": "S"},
            {"AttributeName": "snapshotTakenAt", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "leaderboardId", "KeyType": "HASH"},
            {"AttributeName": "snapshotTakenAt", "KeyType": "RANGE"},
        ],
    }


def table_specs(names: TableNames) -> list[dict[str, Any]]:
    return [scores_table_spec(names.scores), snapshots_table_spec(names.snapshots)]


_REFUSED_CREDENTIALS = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidSignatureException",
        "ExpiredTokenException",
        "MissingAuthenticationTokenException",
    }
)


def not_ready_cause(error: BaseException | None) -> str:  # noqa: PLR0911 - a return per kind
    """Why a readiness call failed, in an operator's words (botocore's message after them)."""
    if isinstance(error, NoCredentialsError):
        return "no AWS credentials found (the task role, or AWS_* variables)"
    if isinstance(error, NoRegionError):
        return "no AWS region set (LEADERBOARD_REGION)"
    if isinstance(error, EndpointConnectionError | ConnectTimeoutError | ReadTimeoutError):
        return f"the DynamoDB endpoint is unreachable: {error}"
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", "")
        if code == "ResourceNotFoundException":
            return f"the table is missing (create it: leaderboard create-tables): {message}"
        if code == "AccessDeniedException":
            return f"access denied (the role lacks dynamodb:DescribeTable?): {message}"
        if code in _REFUSED_CREDENTIALS:
            return f"the credentials were refused ({code}): {message}"
        return f"DynamoDB answered {code}: {message}"
    return f"DynamoDB did not answer: {error!r}"


def _rank_index_of(table: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """RankIndex as ``DescribeTable`` describes it on the Scores table, if the table has it."""
    indexes = table.get("GlobalSecondaryIndexes", [])
    return next((index for index in indexes if index.get("IndexName") == RANK_INDEX), None)


def index_not_ready(table: Mapping[str, Any]) -> str | None:
    """Why the Scores table, as ``DescribeTable`` gives it, cannot serve the board reads yet, if it
    cannot: RankIndex missing (a table from before its second definition) or still filling."""
    index = _rank_index_of(table)
    if index is None:
        return (
            f"index {RANK_INDEX} is missing (a table from before it: leaderboard create-tables "
            "adds it; docs/decisions/0025-metadata-in-the-index.md)"
        )
    status = index.get("IndexStatus", "ACTIVE")
    if status != "ACTIVE" or index.get("Backfilling"):
        return f"index {RANK_INDEX} is {status} (filling from the table); wait for ACTIVE"
    return None


class Tables:
    """Both tables as a whole: creating them (operators and the embedded backend only) and the
    readiness check (the service)."""

    def __init__(self, dynamo: Dynamo, names: TableNames, *, probe: Dynamo | None = None) -> None:
        self._dynamo = dynamo
        self._names = names
        self._probe = probe or dynamo
        """The readiness check's client: one that asks once (``open_client(probe=True)``)."""

    @property
    def _client(self) -> DynamoDBClient:
        return self._dynamo.client

    async def ping(self) -> None:
        """Both tables answer; else ``Unavailable`` whose detail says why, for the operator's
        log: no credentials, the endpoint unreachable, a table missing, access denied."""

        async def describe(name: str) -> None:
            try:
                answer = await self._probe.call(
                    "the readiness check",
                    lambda: self._probe.client.describe_table(TableName=name),
                )
            except (Unavailable, StoreRejected) as exc:
                # A refused request here (a table name DynamoDB does not take, say) is the
                # configuration's fault, not a request's: not ready, with the reason.
                retry_after = exc.retry_after if isinstance(exc, Unavailable) else 5
                raise Unavailable(
                    f"table {name}: {not_ready_cause(exc.__cause__)}", retry_after=retry_after
                ) from exc
            if name == self._names.scores:
                missing = index_not_ready(answer.get("Table", {}))
                if missing is not None:
                    raise Unavailable(f"table {name}: {missing}", retry_after=5)

        # Both answers, then the first failure in table order: the same cause every time, so
        # the readiness log is not told of a new one whenever the other table fails first.
        answers = await asyncio.gather(
            describe(self._names.scores), describe(self._names.snapshots), return_exceptions=True
        )
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer

    async def create_tables(self, *, deletion_protection: bool = False) -> TablesReport:
        """Create both tables (and the Scores table's TTL) where missing; turn TTL on where an
        existing Scores table lacks it (else its idempotency records, leases, erasure marks and
        period boards' rows are never deleted); with ``deletion_protection``, also turn it on where an existing
        table lacks it."""
        report = TablesReport()
        existing = await self._table_names()
        for spec in table_specs(self._names):
            name = spec["TableName"]
            if name in existing:
                changed = False
                # TTL before deletion protection: UpdateTimeToLive leaves the table's status as
                # it is, and an UpdateTable may leave it UPDATING for a while.
                if name == self._names.scores and not await self._ttl_on(name):
                    await self._enable_ttl(name)
                    report.ttl_enabled.append(name)
                    changed = True
                if deletion_protection and not await self._protected(name):
                    await self._client.update_table(TableName=name, DeletionProtectionEnabled=True)
                    report.protected.append(name)
                    changed = True
                # Last: adding an index leaves the table UPDATING, which refuses other updates.
                if name == self._names.scores and await self._add_rank_index(name):
                    report.index_added.append(f"{name} ({RANK_INDEX})")
                    changed = True
                if not changed:
                    report.unchanged.append(name)
                continue
            kwargs = dict(spec)
            if deletion_protection:
                kwargs["DeletionProtectionEnabled"] = True
            await self._client.create_table(**kwargs)
            report.created.append(name)
        for name in report.created:
            waiter = self._client.get_waiter("table_exists")
            await waiter.wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        if self._names.scores in report.created:
            await self._enable_ttl(self._names.scores)
        return report

    async def _add_rank_index(self, name: str) -> bool:
        """Add RankIndex to a Scores table from before its second definition (decision 0025);
        DynamoDB fills it from the table in the background. ``False``: it is there already."""
        described = await self._client.describe_table(TableName=name)
        if _rank_index_of(described["Table"]) is not None:
            return False
        spec = scores_table_spec(name)
        await self._client.update_table(
            TableName=name,
            AttributeDefinitions=spec["AttributeDefinitions"],
            GlobalSecondaryIndexUpdates=[{"Create": cast("Any", rank_index_spec())}],
        )
        return True

    async def _table_names(self) -> set[str]:
        """Every table of the account in the region: ListTables answers at most 100 names a
        page, and an account may hold many more (other services' tables)."""
        names: set[str] = set()
        kwargs: dict[str, Any] = {}
        while True:
            page = await self._client.list_tables(**kwargs)
            names.update(page.get("TableNames", []))
            last = page.get("LastEvaluatedTableName")
            if not last:
                return names
            kwargs["ExclusiveStartTableName"] = last

    async def _ttl_on(self, name: str) -> bool:
        """TTL is on, or turning on (DynamoDB takes up to an hour to finish)."""
        described = await self._client.describe_time_to_live(TableName=name)
        status = described.get("TimeToLiveDescription", {}).get("TimeToLiveStatus")
        return status in ("ENABLED", "ENABLING")

    async def _enable_ttl(self, name: str) -> None:
        await self._client.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
        )

    async def _protected(self, name: str) -> bool:
        described = await self._client.describe_table(TableName=name)
        return bool(described["Table"].get("DeletionProtectionEnabled", False))
