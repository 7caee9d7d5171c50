"""What each traced call costs by DynamoDB's published rules (``units``), from the items it really
read and wrote: the items a Query returned, the items a COUNT (or filtered) Query evaluated, read
back right after it (``Sizer``), and every written item as it was before and after the request
(``TableState``). Beside it, what the backend itself reported as ``ConsumedCapacity``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bench.harness import units
from bench.harness.trace import Call

KEY_ATTRIBUTES = {
    "scores": ("playerId", "leaderboardId"),
    "snapshots": ("leaderboardId", "snapshotTakenAt"),
}
Key = tuple[str, str]
State = dict[Key, dict[str, Any]]


def _key_of(table: str, item: Mapping[str, Any], names: tuple[str, str]) -> Key:
    return table, json.dumps({n: item[n] for n in names if n in item}, sort_keys=True)


@dataclass
class TableState:
    """The items of some (small) tables, read whole: taken before and after a request, it gives
    every written item's size before and after."""

    key_names: dict[str, tuple[str, str]]

    async def read(self, client: Any) -> State:
        state: State = {}
        for table, names in self.key_names.items():
            kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
            for _ in range(10_000):  # pages; bounded
                page = await client.scan(**kwargs)
                for item in page.get("Items", []):
                    state[_key_of(table, item, names)] = item
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return state


class Sizer:
    """Reads back what a COUNT or filtered Query evaluated: the same Query without its filter,
    returning the items, on a client of the harness's own (not traced), right after the call."""

    def __init__(self, client: Any) -> None:
        self._client = client

    async def read_back(self, call: Call) -> None:
        p = call.params
        if call.operation != "Query" or call.error is not None:
            return
        if p.get("Select") != "COUNT" and "FilterExpression" not in p:
            return
        shadow = {
            k: v
            for k, v in p.items()
            if k not in {"Select", "FilterExpression", "ReturnConsumedCapacity"}
        }
        condition = str(p.get("KeyConditionExpression", ""))
        shadow["ExpressionAttributeValues"] = {
            k: v for k, v in p.get("ExpressionAttributeValues", {}).items() if k in condition
        }
        if "ExpressionAttributeNames" in p:
            names = {k: v for k, v in p["ExpressionAttributeNames"].items() if k in condition}
            shadow.pop("ExpressionAttributeNames")
            if names:
                shadow["ExpressionAttributeNames"] = names
        shadow["Select"] = "ALL_PROJECTED_ATTRIBUTES" if "IndexName" in p else "ALL_ATTRIBUTES"
        page = await self._client.query(**shadow)
        call.evaluated = list(page.get("Items", []))


@dataclass(frozen=True)
class CallCost:
    read: float = 0.0
    write_table: float = 0.0
    write_index: float = 0.0
    backend_read: float = 0.0
    backend_write: float = 0.0
    read_bytes: int = 0

    @property
    def write(self) -> float:
        return self.write_table + self.write_index


def _written(call: Call) -> list[tuple[str, Mapping[str, Any], str]]:
    """(table, key or item, kind) of every item a write call names; kind is put, update, delete
    or check."""
    p = call.params
    op = call.operation
    if op == "PutItem":
        return [(p["TableName"], p["Item"], "put")]
    if op == "UpdateItem":
        return [(p["TableName"], p["Key"], "update")]
    if op == "DeleteItem":
        return [(p["TableName"], p["Key"], "delete")]
    if op == "TransactWriteItems":
        out = []
        for action in p["TransactItems"]:
            ((kind, body),) = action.items()
            kinds = {
                "Put": "put",
                "Update": "update",
                "Delete": "delete",
                "ConditionCheck": "check",
            }
            out.append((body["TableName"], body.get("Key") or body["Item"], kinds[kind]))
        return out
    if op == "BatchWriteItem":
        out = []
        for table, requests in p["RequestItems"].items():
            for request in requests:
                if "PutRequest" in request:
                    out.append((table, request["PutRequest"]["Item"], "put"))
                else:
                    out.append((table, request["DeleteRequest"]["Key"], "delete"))
        return out
    return []


def _backend_units(call: Call) -> tuple[float, float]:
    consumed = (call.response or {}).get("ConsumedCapacity")
    read = write = 0.0
    for c in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
        read += float(c.get("ReadCapacityUnits", 0) or 0)
        write += float(c.get("WriteCapacityUnits", 0) or 0)
        if "ReadCapacityUnits" not in c and "WriteCapacityUnits" not in c:
            total = float(c.get("CapacityUnits", 0) or 0)
            if _written(call):
                write += total
            else:
                read += total
    return read, write


def cost_of(
    call: Call, before: State, after: State, tables: Mapping[str, tuple[str, str]]
) -> CallCost:
    """One call's units by the rules. Writes need the state before and after the request (a
    cancelled transaction wrote nothing and is counted as 0, which DynamoDB does not promise)."""
    backend_read, backend_write = _backend_units(call)
    p, response = call.params, call.response or {}
    written = _written(call)
    if written:
        if call.operation == "TransactWriteItems" and call.error is not None:
            return CallCost(backend_read=backend_read, backend_write=backend_write)
        table_units = index_units = 0.0
        for table, named, kind in written:
            names = tables.get(table, ("playerId", "leaderboardId"))
            k = _key_of(table, named, names)
            old, new = before.get(k), after.get(k)
            if call.error is not None:  # a failed conditional write is charged; it wrote nothing
                new = old
            w = units.item_write_units(
                old,
                new,
                transactional=call.operation == "TransactWriteItems",
                checked_only=kind == "check",
            )
            table_units += w.table
            index_units += w.index
        return CallCost(
            write_table=table_units,
            write_index=index_units,
            backend_read=backend_read,
            backend_write=backend_write,
        )
    consistent = bool(p.get("ConsistentRead", False))
    read = 0.0
    nbytes = 0
    if call.operation == "GetItem":
        nbytes = units.item_size(response.get("Item"))
        read = units.read_units(nbytes, consistent=consistent)
    elif call.operation == "BatchGetItem":
        for table, request in p["RequestItems"].items():
            found = response.get("Responses", {}).get(table, [])
            missing = len(request["Keys"]) - len(found)
            consistent = bool(request.get("ConsistentRead", False))
            nbytes += sum(units.item_size(i) for i in found)
            read += units.batch_get_units(found, missing, consistent=consistent)
    elif call.operation in {"Query", "Scan"}:
        evaluated: Iterable[Mapping[str, Any]] = (
            call.evaluated if call.evaluated is not None else response.get("Items", [])
        )
        items = list(evaluated)
        nbytes = sum(units.item_size(i) for i in items)
        read = units.query_units(items, consistent=consistent)
    return CallCost(
        read=read, backend_read=backend_read, backend_write=backend_write, read_bytes=nbytes
    )


def total(costs: Iterable[CallCost]) -> CallCost:
    costs = list(costs)
    return CallCost(
        read=sum(c.read for c in costs),
        write_table=sum(c.write_table for c in costs),
        write_index=sum(c.write_index for c in costs),
        backend_read=sum(c.backend_read for c in costs),
        backend_write=sum(c.backend_write for c in costs),
        read_bytes=sum(c.read_bytes for c in costs),
    )
