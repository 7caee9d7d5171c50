"""Board definitions (the ``DefinitionStore`` port): ``definition#<game>`` / ``<variant>``, with
``order``, ``operator``, ``periods`` (a list), ``retentionDays``, ``scoreFormat``, ``shards``,
``scoreMin`` and ``scoreMax`` (each only where set: a definition stored before them has neither,
and reads back unbounded), ``timeZone`` and ``seasons`` (a list of ``{id, startsAt, endsAt}``,
epoch ms; each only where not UTC's and not empty: one stored before them reads back UTC, with
no seasons), ``cohortSize``, ``joinRequired``, ``maxEntrants`` and ``maxAttempts`` (each only
where set: decision 0039), ``tiers`` (a list of ``{id, promote, demote}``, lowest first, only
where set: decision 0040) and ``definedAt``. Keyed by game, so a game's variants are one Query;
the partition key holds ``#``, which no player id can."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from app.domain.calendar import UTC_NAME, Season
from app.domain.clock import iso_ms, to_ms
from app.domain.cohorts import Tier
from app.domain.definitions import BoardDefinition, Operator, ScoreFormat
from app.domain.keys import Order
from app.domain.periods import PeriodKind
from app.domain.storage_keys import definition_pk
from app.services.ports import StoredDefinition
from app.store.client import Dynamo
from app.store.items import Item, get_n, get_s, key, n, s

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


class DefinitionItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def get_definition(self, game: str, variant: str) -> StoredDefinition | None:
        item = await self._dynamo.get_item(
            "reading the board definition", table=self._table, key=key(definition_pk(game), variant)
        )
        return None if item is None else _stored(game, item)

    async def definitions_of(self, game: str) -> list[StoredDefinition]:
        items = await self._dynamo.query_all(
            "reading the game's board definitions",
            TableName=self._table,
            KeyConditionExpression="playerId = :p",
            ExpressionAttributeValues={":p": s(definition_pk(game))},
            ConsistentRead=True,
        )
        return [_stored(game, item) for item in items]

    async def put_definition(
        self, game: str, variant: str, definition: BoardDefinition
    ) -> StoredDefinition:
        defined_at = iso_ms(to_ms(datetime.now(UTC)))
        item: dict[str, AttributeValueTypeDef] = {
            **key(definition_pk(game), variant),
            "order": s(definition.order.value),
            "operator": s(definition.operator.value),
            "periods": {"L": [s(p.value) for p in definition.periods]},
            "retentionDays": n(definition.retention_days),
            "scoreFormat": s(definition.score_format.value),
            "shards": n(definition.shards),
            "definedAt": s(defined_at),
        }
        if definition.score_min is not None:
            item["scoreMin"] = n(definition.score_min)
        if definition.score_max is not None:
            item["scoreMax"] = n(definition.score_max)
        if definition.time_zone != UTC_NAME:
            item["timeZone"] = s(definition.time_zone)
        for name, value in (
            ("cohortSize", definition.cohort_size),
            ("maxEntrants", definition.max_entrants),
            ("maxAttempts", definition.max_attempts),
        ):
            if value is not None:
                item[name] = n(value)
        if definition.join_required:
            item["joinRequired"] = {"BOOL": True}
        if definition.seasons:
            item["seasons"] = {"L": [{"M": _season_map(season)} for season in definition.seasons]}
        if definition.tiers:
            item["tiers"] = {"L": [{"M": _tier_map(tier)} for tier in definition.tiers]}
        await self._dynamo.put_item(
            "storing the board definition", TableName=self._table, Item=item
        )
        return StoredDefinition(game, variant, definition, defined_at)


def _season_map(season: Season) -> dict[str, AttributeValueTypeDef]:
    return {"id": s(season.id), "startsAt": n(season.starts_at_ms), "endsAt": n(season.ends_at_ms)}


def _tier_map(tier: Tier) -> dict[str, AttributeValueTypeDef]:
    return {"id": s(tier.id), "promote": n(tier.promote), "demote": n(tier.demote)}


def _tiers(item: Item) -> tuple[Tier, ...]:
    return tuple(
        Tier(get_s(m, "id") or "", get_n(m, "promote") or 0, get_n(m, "demote") or 0)
        for m in (value["M"] for value in item.get("tiers", {}).get("L", []) if "M" in value)
    )


def _seasons(item: Item) -> tuple[Season, ...]:
    return tuple(
        Season(get_s(m, "id") or "", get_n(m, "startsAt") or 0, get_n(m, "endsAt") or 0)
        for m in (value["M"] for value in item.get("seasons", {}).get("L", []) if "M" in value)
    )


def _stored(game: str, item: Item) -> StoredDefinition:
    periods = tuple(PeriodKind(p["S"]) for p in item.get("periods", {}).get("L", []) if "S" in p)
    return StoredDefinition(
        game=game,
        variant=get_s(item, "leaderboardId") or "",
        definition=BoardDefinition(
            order=Order(get_s(item, "order") or BoardDefinition().order),
            operator=Operator(get_s(item, "operator") or BoardDefinition().operator),
            periods=periods,
            retention_days=get_n(item, "retentionDays") or 30,
            score_format=ScoreFormat(get_s(item, "scoreFormat") or ScoreFormat.INTEGER),
            shards=get_n(item, "shards") or 1,
            # Not ``or``: a bound of 0 is a bound.
            score_min=get_n(item, "scoreMin"),
            score_max=get_n(item, "scoreMax"),
            time_zone=get_s(item, "timeZone") or UTC_NAME,
            seasons=_seasons(item),
            cohort_size=get_n(item, "cohortSize"),
            join_required=item.get("joinRequired", {}).get("BOOL", False),
            max_entrants=get_n(item, "maxEntrants"),
            max_attempts=get_n(item, "maxAttempts"),
            tiers=_tiers(item),
        ),
        defined_at=get_s(item, "definedAt") or "",
    )
