"""``tests.dynamo_rules``: each rule refuses a request that breaks it, with DynamoDB's message,
and lets through the nearest request that does not; the requests the adapter builds pass."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import pytest

from app.domain.definitions import BoardDefinition, Operator
from app.domain.events import Event
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Standing, StandingWrite
from app.domain.seed_file import SeedRow
from app.domain.ties import TiePlace
from app.services.ports import (
    CoarseItem,
    CounterItem,
    FineItem,
    Snapshot,
    SnapshotEntry,
    StoredApiKey,
    SubmissionWrite,
    TieItem,
)
from app.store.api_keys import ApiKeyItems
from app.store.client import Dynamo
from app.store.counters import CounterItems
from app.store.definitions import DefinitionItems
from app.store.erasure_marks import ErasureMarkItems
from app.store.index import IndexReads
from app.store.item_locks import ItemLocks
from app.store.items import key
from app.store.leases import LeaseItems
from app.store.registry import RegistryItems
from app.store.requests import RequestItems
from app.store.snapshots import SnapshotItems
from app.store.standings import StandingItems
from app.store.submissions import SubmissionItems
from app.store.tables import RANK_INDEX, TableNames, table_specs
from tests.dynamo_rules import item_size, refusal, reserved_words, shapes_of

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient

TABLES = TableNames(scores="Scores", snapshots="Snapshots")
SHAPES = shapes_of(table_specs(TABLES))
ROW = key("player-1", "trivia#classic#all")
"""A Scores key: ``playerId`` / ``leaderboardId``."""
OTHER_ROW = key("player-2", "trivia#classic#all")


def refused(operation: str, body: Mapping[str, Any]) -> str | None:
    return refusal(operation, body, SHAPES)


def query(**fields: Any) -> dict[str, Any]:
    """A Query of one player's rows, with ``fields`` added or replacing its own."""
    body: dict[str, Any] = {
        "TableName": "Scores",
        "KeyConditionExpression": "playerId = :p",
        "ExpressionAttributeValues": {":p": {"S": "player-1"}},
    }
    return body | fields


def update(expression: str, values: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "TableName": "Scores",
        "Key": ROW,
        "UpdateExpression": expression,
        "ExpressionAttributeValues": values,
    }
    return body | fields


def put(item: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    return {"TableName": "Scores", "Item": dict(item), **fields}


def row_with(**attributes: Any) -> dict[str, Any]:
    return {**ROW, **attributes}


def expect(operation: str, body: Mapping[str, Any], message: str) -> None:
    """DynamoDB refuses ``body`` with exactly ``message``."""
    assert refused(operation, body) == message


# ---- a. expression attribute names and values ------------------------------------------------


def test_a_name_used_but_not_defined_is_refused() -> None:
    expect(
        "Query",
        query(
            FilterExpression="#s = :s",
            ExpressionAttributeValues={":p": {"S": "p"}, ":s": {"S": "x"}},
        ),
        "Invalid FilterExpression: An expression attribute name used in the document path is "
        "not defined; attribute name: #s",
    )
    assert (
        refused(
            "Query",
            query(
                FilterExpression="#s = :s",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":p": {"S": "p"}, ":s": {"S": "x"}},
            ),
        )
        is None
    )


def test_a_value_used_but_not_defined_is_refused() -> None:
    expect(
        "UpdateItem",
        update("SET g = :g", {":h": {"N": "1"}}, ConditionExpression="h = :h"),
        "Invalid UpdateExpression: An expression attribute value used in expression is not "
        "defined; attribute value: :g",
    )
    assert refused("UpdateItem", update("SET g = :h", {":h": {"N": "1"}})) is None


def test_a_name_or_value_defined_but_unused_is_refused() -> None:
    expect(
        "Query",
        query(
            ExpressionAttributeNames={"#b": "leaderboardId", "#a": "x"},
            KeyConditionExpression="playerId = :p AND #b = :b",
            ExpressionAttributeValues={":p": {"S": "p"}, ":b": {"S": "b"}},
        ),
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a}",
    )
    expect(
        "Query",
        query(ExpressionAttributeValues={":p": {"S": "p"}, ":q": {"S": "q"}, ":r": {"S": "r"}}),
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:q, :r}",
    )
    # A value used in any of the request's expressions is used.
    assert (
        refused(
            "UpdateItem",
            update(
                "SET g = :g",
                {":g": {"N": "1"}, ":k": {"S": "k"}},
                ConditionExpression="rankKey = :k",
            ),
        )
        is None
    )
    assert (
        refused(
            "GetItem",
            {
                "TableName": "Scores",
                "Key": ROW,
                "ProjectionExpression": "#r",
                "ExpressionAttributeNames": {"#r": "rankKey"},
            },
        )
        is None
    )


def test_each_transaction_action_uses_its_own_names_and_values() -> None:
    check = {
        "ConditionCheck": {
            "TableName": "Scores",
            "Key": OTHER_ROW,
            "ConditionExpression": "attribute_exists(playerId)",
            "ExpressionAttributeValues": {":v": {"N": "1"}},
        }
    }
    delete = {"Delete": {"TableName": "Scores", "Key": ROW, "ConditionExpression": "version = :v"}}
    # :v is defined in one action and used in the other: DynamoDB reads each action alone.
    expect(
        "TransactWriteItems",
        {"TransactItems": [check, delete]},
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:v}",
    )
    check["ConditionCheck"].pop("ExpressionAttributeValues")
    delete["Delete"]["ExpressionAttributeValues"] = {":v": {"N": "1"}}
    assert refused("TransactWriteItems", {"TransactItems": [check, delete]}) is None


def test_each_batch_get_table_uses_its_own_names() -> None:
    scores: dict[str, Any] = {"Keys": [ROW], "ProjectionExpression": "#r"}
    snapshots: dict[str, Any] = {
        "Keys": [{"leaderboardId": {"S": "b"}, "snapshotTakenAt": {"S": "t"}}],
        "ExpressionAttributeNames": {"#r": "rankKey"},
    }
    expect(
        "BatchGetItem",
        {"RequestItems": {"Scores": scores, "Snapshots": snapshots}},
        "Invalid ProjectionExpression: An expression attribute name used in the document path is "
        "not defined; attribute name: #r",
    )
    scores["ExpressionAttributeNames"] = snapshots.pop("ExpressionAttributeNames")
    assert (
        refused("BatchGetItem", {"RequestItems": {"Scores": scores, "Snapshots": snapshots}})
        is None
    )


def test_empty_name_and_value_maps_are_refused() -> None:
    expect(
        "Query", query(ExpressionAttributeNames={}), "ExpressionAttributeNames must not be empty"
    )
    expect(
        "PutItem",
        put(
            ROW, ConditionExpression="attribute_not_exists(playerId)", ExpressionAttributeValues={}
        ),
        "ExpressionAttributeValues must not be empty",
    )
    assert (
        refused("PutItem", put(ROW, ConditionExpression="attribute_not_exists(playerId)")) is None
    )


def test_values_with_no_expression_that_takes_them_are_refused() -> None:
    expect(
        "DeleteItem",
        {"TableName": "Scores", "Key": ROW, "ExpressionAttributeValues": {":v": {"N": "1"}}},
        "ExpressionAttributeValues can only be specified when using expressions: "
        "ConditionExpression is null",
    )
    assert refused("DeleteItem", {"TableName": "Scores", "Key": ROW}) is None


# ---- b. reserved words ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "word"),
    [
        ("SET name = :v", "name"),
        ("SET Status = :v", "Status"),  # case does not escape it
        ("SET entries[0].rank = :v", "rank"),  # nor does nesting
        ("SET add = :v", "add"),  # a section's keyword, but where a path goes
        ("SET x = :v REMOVE size", "size"),  # a function's name, but not called
    ],
)
def test_a_reserved_word_as_an_attribute_name_is_refused(expression: str, word: str) -> None:
    expect(
        "UpdateItem",
        update(expression, {":v": {"N": "1"}}),
        f"Invalid UpdateExpression: Attribute name is a reserved keyword; reserved keyword: {word}",
    )


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("SET #n = :v", {"#n": "name"}),
        ("SET entries[0].#r = :v", {"#r": "rank"}),
        (
            "SET x = if_not_exists(x, :v) + :v, y = list_append(y, :l) REMOVE z ADD n :v DELETE s :s",
            None,
        ),
        ("set x = :v remove z add n :v", None),
    ],
)
def test_escaped_names_functions_and_sections_are_not_reserved_words(
    expression: str, names: dict[str, str] | None
) -> None:
    values = {":v": {"N": "1"}, ":l": {"L": []}, ":s": {"SS": ["a"]}}
    used = {k: v for k, v in values.items() if k in expression}
    body = update(expression, used, **({"ExpressionAttributeNames": names} if names else {}))
    assert refused("UpdateItem", body) is None


def test_a_condition_keywords_in_their_places_are_not_reserved_words() -> None:
    condition = (
        "NOT attribute_exists(a) AND (b BETWEEN :lo AND :hi OR c IN (:lo, :hi)) "
        "AND size(d) > :lo AND begins_with(e, :s) AND contains(f, :s) "
        "AND attribute_type(g, :s) AND attribute_not_exists(h)"
    )
    values = {":lo": {"N": "1"}, ":hi": {"N": "2"}, ":s": {"S": "S"}}
    assert (
        refused(
            "DeleteItem",
            {
                "TableName": "Scores",
                "Key": ROW,
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values,
            },
        )
        is None
    )
    expect(
        "DeleteItem",
        {
            "TableName": "Scores",
            "Key": ROW,
            "ConditionExpression": "a = :lo AND and = :hi",
            "ExpressionAttributeValues": values,
        },
        "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: and",
    )


def test_a_reserved_word_in_a_projection_is_refused() -> None:
    expect(
        "Query",
        query(ProjectionExpression="rankKey, count"),
        "Invalid ProjectionExpression: Attribute name is a reserved keyword; reserved keyword: count",
    )
    assert refused("Query", query(ProjectionExpression="rankKey, tieGrain")) is None


def test_the_reserved_words_are_dynamodbs_list_as_moto_ships_it() -> None:
    words = reserved_words()
    assert len(words) > 500
    assert {"NAME", "STATUS", "COUNT", "SIZE", "AND", "SET"} <= words
    assert not {"RANKKEY", "VERSION", "N", "CONTEXT"} & words


# ---- c. a Query filter on a key of what it queries ------------------------------------------


def test_a_table_query_may_not_filter_on_the_tables_keys() -> None:
    values = {":p": {"S": "p"}, ":b": {"S": "b"}}
    expect(
        "Query",
        query(
            FilterExpression="#b <> :b",
            ExpressionAttributeNames={"#b": "leaderboardId"},
            ExpressionAttributeValues=values,
        ),
        "Filter Expression can only contain non-primary key attributes: "
        "Primary key attribute: leaderboardId",
    )
    assert (
        refused("Query", query(FilterExpression="rankKey <> :b", ExpressionAttributeValues=values))
        is None
    )
    # A Scan has no key condition: it may filter on anything.
    assert (
        refused(
            "Scan",
            {
                "TableName": "Scores",
                "FilterExpression": "leaderboardId = :b",
                "ExpressionAttributeValues": {":b": {"S": "b"}},
            },
        )
        is None
    )


def test_an_index_query_may_not_filter_on_the_indexs_keys_but_may_on_the_tables() -> None:
    board = {
        "TableName": "Scores",
        "IndexName": RANK_INDEX,
        "KeyConditionExpression": "leaderboardId = :b",
    }
    values = {":b": {"S": "b"}, ":x": {"S": "x"}}
    expect(
        "Query",
        board | {"FilterExpression": "rankKey > :x", "ExpressionAttributeValues": values},
        "Filter Expression can only contain non-primary key attributes: Primary key attribute: rankKey",
    )
    # playerId keys the table, not RankIndex: DynamoDB lets a RankIndex query filter on it.
    assert (
        refused(
            "Query",
            board | {"FilterExpression": "playerId <> :x", "ExpressionAttributeValues": values},
        )
        is None
    )


# ---- d. BETWEEN bounds in a key condition ----------------------------------------------------


def between(low: dict[str, str], high: dict[str, str]) -> dict[str, Any]:
    return {
        "TableName": "Scores",
        "IndexName": RANK_INDEX,
        "KeyConditionExpression": "leaderboardId = :b AND rankKey BETWEEN :lo AND :hi",
        "ExpressionAttributeValues": {":b": {"S": "b"}, ":lo": low, ":hi": high},
    }


def test_between_bounds_the_wrong_way_round_are_refused() -> None:
    # UTF-8 bytes: "é" is 0xC3 0xA9, after "z" (0x7A).
    expect(
        "Query",
        between({"S": "é"}, {"S": "z"}),
        "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to be greater "
        "than or equal to lower bound; lower bound operand: AttributeValue: {S:é}, upper bound "
        "operand: AttributeValue: {S:z}",
    )
    assert refused("Query", between({"S": "z"}, {"S": "é"})) is None
    assert refused("Query", between({"S": "Z"}, {"S": "a"})) is None  # by bytes, not by letter
    assert refused("Query", between({"S": "a"}, {"S": "a"})) is None


def test_number_bounds_compare_as_numbers() -> None:
    assert "upper bound to be greater" in (refused("Query", between({"N": "10"}, {"N": "9"})) or "")
    assert refused("Query", between({"N": "9"}, {"N": "10"})) is None
    assert refused("Query", between({"N": "-1e3"}, {"N": "-999"})) is None


def test_bounds_of_two_types_are_refused() -> None:
    expect(
        "Query",
        between({"N": "1"}, {"S": "1"}),
        "Invalid KeyConditionExpression: The BETWEEN operator requires same data type for lower "
        "and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: "
        "AttributeValue: {S:1}",
    )


def test_between_bounds_are_checked_in_a_condition_too() -> None:
    body = {
        "TableName": "Scores",
        "Key": ROW,
        "ConditionExpression": "achievedMs BETWEEN :lo AND :hi",
        "ExpressionAttributeValues": {":lo": {"N": "2"}, ":hi": {"N": "1"}},
    }
    assert (refused("DeleteItem", body) or "").startswith(
        "Invalid ConditionExpression: The BETWEEN operator requires upper bound"
    )


# ---- e. numbers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "message"),
    [
        ("1" * 39, "Attempting to store more than 38 significant digits in a Number"),
        ("-0.00" + "12345" * 8, "Attempting to store more than 38 significant digits in a Number"),
        (
            "1E126",
            "Number overflow. Attempting to store a number with magnitude larger than supported range",
        ),
        (
            "-1E126",
            "Number overflow. Attempting to store a number with magnitude larger than supported range",
        ),
        (
            "1E-131",
            "Number underflow. Attempting to store a number with magnitude smaller than supported range",
        ),
        ("NaN", "The parameter cannot be converted to a numeric value: NaN"),
    ],
)
def test_a_number_dynamodb_cannot_store_is_refused(number: str, message: str) -> None:
    expect("PutItem", put(row_with(n={"N": number})), message)
    expect("PutItem", put(row_with(m={"M": {"l": {"L": [{"NS": ["1", number]}]}}})), message)
    expect(
        "UpdateItem",
        update("SET n = :n", {":n": {"N": number}}),
        f"ExpressionAttributeValues contains invalid value: {message} for key :n",
    )


@pytest.mark.parametrize(
    "number",
    [
        "1" * 38,
        "1" + "0" * 100,
        "0.000" + "1" * 38,
        "9.9999999999999999999999999999999999999E+125",
        "-1E-130",
        "0",
        "-0.0",
    ],
)
def test_a_number_dynamodb_stores_is_taken(number: str) -> None:
    assert refused("PutItem", put(row_with(n={"N": number}))) is None


# ---- f. item size --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "héllo"}, 6),
        ({"N": "12345"}, 4),  # 5 significant digits: 3 bytes, and 1
        ({"N": "-0.0012300"}, 3),  # 3 significant digits: 2 bytes, and 1
        ({"B": base64.b64encode(b"\x00\x01\x02").decode()}, 3),  # raw bytes, not base64's
        ({"BOOL": False}, 1),
        ({"NULL": True}, 1),
        ({"SS": ["ab", "c"]}, 3),
        ({"NS": ["1", "22", "333"]}, 2 + 2 + 3),
        ({"L": []}, 3),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + (1 + 2) + (1 + 2)),
        ({"M": {"k": {"S": "ab"}}}, 3 + 1 + (1 + 2)),
    ],
)
def test_item_size_follows_dynamodbs_formula(value: dict[str, Any], size: int) -> None:
    assert item_size({"attr": value}) == len("attr") + size


def padded(total: int, **attributes: Any) -> dict[str, Any]:
    """A Scores row of exactly ``total`` bytes."""
    item = row_with(**attributes)
    return item | {"pad": {"S": "x" * (total - item_size(item) - len("pad"))}}


def test_an_item_over_400_kb_is_refused() -> None:
    too_big, largest = padded(409_601), padded(409_600)
    message = "Item size has exceeded the maximum allowed size"
    expect("PutItem", put(too_big), message)
    assert refused("PutItem", put(largest)) is None
    expect(
        "BatchWriteItem", {"RequestItems": {"Scores": [{"PutRequest": {"Item": too_big}}]}}, message
    )
    assert (
        refused("BatchWriteItem", {"RequestItems": {"Scores": [{"PutRequest": {"Item": largest}}]}})
        is None
    )
    expect("TransactWriteItems", {"TransactItems": [{"Put": put(too_big)}]}, message)
    assert refused("TransactWriteItems", {"TransactItems": [{"Put": put(largest)}]}) is None


def test_an_update_setting_over_400_kb_is_refused() -> None:
    # Key (playerId + leaderboardId) and "big" with its value: 400 KB and one byte.
    room = 409_600 - item_size(ROW) - len("big")
    expect(
        "UpdateItem",
        update("SET big = :v", {":v": {"S": "x" * (room + 1)}}),
        "Item size to update has exceeded the maximum allowed size",
    )
    assert refused("UpdateItem", update("SET big = :v", {":v": {"S": "x" * room}})) is None


# ---- g. keys ---------------------------------------------------------------------------------


def test_a_partition_key_over_2048_bytes_is_refused() -> None:
    largest = "é" * 1024  # 2048 bytes in UTF-8
    expect(
        "GetItem",
        {"TableName": "Scores", "Key": key(largest + "x", "b")},
        "One or more parameter values were invalid: Size of hashkey has exceeded the maximum "
        "size limit of2048 bytes",
    )
    assert refused("GetItem", {"TableName": "Scores", "Key": key(largest, "b")}) is None


def test_a_sort_key_over_1024_bytes_is_refused() -> None:
    expect(
        "PutItem",
        put(key("p", "x" * 1025)),
        "One or more parameter values were invalid: Aggregated size of all range keys has "
        "exceeded the size limit of 1024 bytes",
    )
    assert refused("PutItem", put(key("p", "x" * 1024))) is None


def test_an_empty_string_key_is_refused() -> None:
    expect(
        "DeleteItem",
        {"TableName": "Scores", "Key": key("p", "")},
        "One or more parameter values are not valid. The AttributeValue for a key attribute "
        "cannot contain an empty string value. Key: leaderboardId",
    )
    expect(
        "PutItem",
        put(key("", "b")),
        "One or more parameter values are not valid. The AttributeValue for a key attribute "
        "cannot contain an empty string value. Key: playerId",
    )
    # An empty string is fine where it keys nothing.
    assert refused("PutItem", put(row_with(displayName={"S": ""}))) is None


def test_an_empty_string_index_key_on_a_written_item_is_refused() -> None:
    message = (
        "One or more parameter values are not valid. A value specified for a secondary index key "
        "is not supported. The AttributeValue for a key attribute cannot contain an empty string "
        f"value. IndexName: {RANK_INDEX}, IndexKey: rankKey"
    )
    expect("PutItem", put(row_with(rankKey={"S": ""})), message)
    expect(
        "TransactWriteItems",
        {"TransactItems": [{"Put": put(row_with(rankKey={"S": ""}))}]},
        message,
    )
    assert refused("PutItem", put(row_with(rankKey={"S": "k"}))) is None
    expect(
        "UpdateItem",
        update("SET rankKey = :k", {":k": {"S": ""}}),
        "One or more parameter values are not valid. The update expression attempted to update a "
        "secondary index key to a value that is not supported. The AttributeValue for a key "
        "attribute cannot contain an empty string value.",
    )
    assert refused("UpdateItem", update("SET rankKey = :k", {":k": {"S": "k"}})) is None


def test_a_key_must_hold_the_key_attributes_and_nothing_else() -> None:
    message = "The provided key element does not match the schema"
    expect("GetItem", {"TableName": "Scores", "Key": {"playerId": {"S": "p"}}}, message)
    expect("GetItem", {"TableName": "Scores", "Key": row_with(rankKey={"S": "k"})}, message)
    expect(
        "BatchGetItem", {"RequestItems": {"Scores": {"Keys": [{"playerId": {"S": "p"}}]}}}, message
    )
    assert refused("GetItem", {"TableName": "Scores", "Key": ROW}) is None


def test_a_written_item_must_hold_the_key_attributes() -> None:
    expect(
        "PutItem",
        put({"playerId": {"S": "p"}}),
        "One or more parameter values were invalid: Missing the key leaderboardId in the item",
    )


def test_an_update_may_not_change_a_key_attribute() -> None:
    expect(
        "UpdateItem",
        update("SET #b = :b", {":b": {"S": "b"}}, ExpressionAttributeNames={"#b": "leaderboardId"}),
        "One or more parameter values were invalid: Cannot update attribute leaderboardId. "
        "This attribute is part of the key",
    )


def test_a_table_of_unknown_shape_gets_the_checks_that_need_none() -> None:
    assert refused("GetItem", {"TableName": "Elsewhere", "Key": {"id": {"S": ""}}}) is None
    assert "reserved keyword" in (
        refused(
            "Query",
            {
                "TableName": "Elsewhere",
                "KeyConditionExpression": "name = :n",
                "ExpressionAttributeValues": {":n": {"S": "n"}},
            },
        )
        or ""
    )


# ---- h. duplicates ---------------------------------------------------------------------------


def test_a_batch_get_may_not_ask_for_one_item_twice() -> None:
    expect(
        "BatchGetItem",
        {"RequestItems": {"Scores": {"Keys": [ROW, OTHER_ROW, dict(reversed(ROW.items()))]}}},
        "Provided list of item keys contains duplicates",
    )
    assert refused("BatchGetItem", {"RequestItems": {"Scores": {"Keys": [ROW, OTHER_ROW]}}}) is None


def test_a_batch_write_may_not_write_one_item_twice() -> None:
    writes = [{"PutRequest": {"Item": row_with(n={"N": "1"})}}, {"DeleteRequest": {"Key": ROW}}]
    expect(
        "BatchWriteItem",
        {"RequestItems": {"Scores": writes}},
        "Provided list of item keys contains duplicates",
    )
    writes[1] = {"DeleteRequest": {"Key": OTHER_ROW}}
    assert refused("BatchWriteItem", {"RequestItems": {"Scores": writes}}) is None


def test_a_transaction_may_not_act_twice_on_one_item() -> None:
    put_row = {"Put": put(row_with(version={"N": "1"}))}
    check = {
        "ConditionCheck": {
            "TableName": "Scores",
            "Key": ROW,
            "ConditionExpression": "attribute_exists(playerId)",
        }
    }
    expect(
        "TransactWriteItems",
        {"TransactItems": [put_row, check]},
        "Transaction request cannot include multiple operations on one item",
    )
    check["ConditionCheck"]["Key"] = OTHER_ROW
    assert refused("TransactWriteItems", {"TransactItems": [put_row, check]}) is None
    # The same key in another table is another item.
    check["ConditionCheck"] |= {"TableName": "Elsewhere", "Key": ROW}
    assert refused("TransactWriteItems", {"TransactItems": [put_row, check]}) is None


def test_keys_are_compared_by_value() -> None:
    # 1 and 1.0 are one number, so one key: on a table of unknown shape too.
    keys = [{"id": {"N": "1"}}, {"id": {"N": "1.0"}}]
    expect(
        "BatchGetItem",
        {"RequestItems": {"Numbers": {"Keys": keys}}},
        "Provided list of item keys contains duplicates",
    )
    keys[1] = {"id": {"N": "10"}}
    assert refused("BatchGetItem", {"RequestItems": {"Numbers": {"Keys": keys}}}) is None


# ---- i. limits -------------------------------------------------------------------------------


def rows(count: int) -> list[dict[str, Any]]:
    return [key(f"player-{n}", "trivia#classic#all") for n in range(count)]


def test_a_transaction_of_more_than_100_actions_is_refused() -> None:
    def checks(count: int) -> dict[str, Any]:
        return {
            "TransactItems": [
                {
                    "ConditionCheck": {
                        "TableName": "Scores",
                        "Key": row,
                        "ConditionExpression": "attribute_exists(playerId)",
                    }
                }
                for row in rows(count)
            ]
        }

    message = (
        "1 validation error detected: Value '[...]' at 'transactItems' failed to satisfy "
        "constraint: Member must have length less than or equal to 100"
    )
    expect("TransactWriteItems", checks(101), message)
    assert refused("TransactWriteItems", checks(100)) is None
    gets = [{"Get": {"TableName": "Scores", "Key": row}} for row in rows(101)]
    expect("TransactGetItems", {"TransactItems": gets}, message)
    assert refused("TransactGetItems", {"TransactItems": gets[:100]}) is None


def test_a_transaction_over_4_mb_is_refused() -> None:
    def puts(count: int) -> dict[str, Any]:
        return {
            "TransactItems": [
                {"Put": put(padded(400_000, playerId={"S": f"player-{n}"}))} for n in range(count)
            ]
        }

    expect(
        "TransactWriteItems",
        puts(11),
        "Collection size of items exceeded, which can also be caused by the aggregate size of "
        "the items in the transaction exceeding the 4MB limit",
    )
    assert refused("TransactWriteItems", puts(10)) is None


def test_a_batch_write_of_more_than_25_requests_is_refused() -> None:
    def deletes(count: int) -> list[dict[str, Any]]:
        return [{"DeleteRequest": {"Key": row}} for row in rows(count)]

    expect(
        "BatchWriteItem",
        {"RequestItems": {"Scores": deletes(26)}},
        "1 validation error detected: Value '{Scores=[...]}' at 'requestItems' failed to satisfy "
        "constraint: Map value must satisfy constraint: [Member must have length less than or "
        "equal to 25, Member must have length greater than or equal to 1]",
    )
    assert refused("BatchWriteItem", {"RequestItems": {"Scores": deletes(25)}}) is None
    snapshot = {
        "DeleteRequest": {"Key": {"leaderboardId": {"S": "b"}, "snapshotTakenAt": {"S": "t"}}}
    }
    expect(
        "BatchWriteItem",
        {"RequestItems": {"Scores": deletes(25), "Snapshots": [snapshot]}},
        "Too many items requested for the BatchWriteItem call",
    )


def test_a_batch_get_of_more_than_100_keys_is_refused() -> None:
    expect(
        "BatchGetItem",
        {"RequestItems": {"Scores": {"Keys": rows(101)}}},
        "1 validation error detected: Value at 'RequestItems.Scores.member.Keys' failed to "
        "satisfy constraint: Member must have length less than or equal to 100",
    )
    assert refused("BatchGetItem", {"RequestItems": {"Scores": {"Keys": rows(100)}}}) is None
    snapshot = {"leaderboardId": {"S": "b"}, "snapshotTakenAt": {"S": "t"}}
    expect(
        "BatchGetItem",
        {"RequestItems": {"Scores": {"Keys": rows(100)}, "Snapshots": {"Keys": [snapshot]}}},
        "Too many items requested for the BatchGetItem call",
    )


def test_a_limit_under_1_is_refused() -> None:
    expect(
        "Query",
        query(Limit=0),
        "1 validation error detected: Value at 'Limit' failed to satisfy constraint: Member must "
        "have value greater than or equal to 1",
    )
    expect(
        "Scan",
        {"TableName": "Scores", "Limit": -1},
        "1 validation error detected: Value '-1' at 'limit' failed to satisfy constraint: Member "
        "must have value greater than or equal to 1",
    )
    assert refused("Query", query(Limit=1)) is None
    assert refused("Scan", {"TableName": "Scores", "Limit": 1}) is None


def test_other_operations_are_let_through() -> None:
    assert refused("DescribeTable", {"TableName": "Scores", "ExpressionAttributeNames": {}}) is None


# ---- the adapter's own requests ---------------------------------------------------------------


class RecordingClient:
    """A DynamoDB client that answers every call as an empty table would and keeps each request,
    as the adapter made it."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Callable[..., Awaitable[dict[str, Any]]]:
        operation = method.title().replace("_", "")  # get_item: GetItem

        async def call(**request: Any) -> dict[str, Any]:
            self.requests.append((operation, request))
            return {"Items": [], "Count": 0, "Responses": {}}

        return call


BOARD = "trivia#classic#day-2024-05-01"
LATER_BOARD = "trivia#classic#all"
THIRD_BOARD = "trivia#classic#week-2024-W18"
FOURTH_BOARD = "trivia#sprint#all"


def standing(player: str, board: str, *, version: int, tie_mark: int | None = None) -> Standing:
    entry = Entry(RankKey(1200, 1_714_550_400_000, player), "Ada", "GB", '{"car":"mk2"}')
    return Standing(
        board,
        entry,
        version,
        expires_at=1_717_000_000,
        tie_mark=tie_mark,
        last_played_at_ms=1_714_550_400_000,
        context_json="{}",
    )


async def every_request_the_adapter_makes(client: RecordingClient) -> None:
    """Each store's every operation once (each form of it where it has several)."""
    dynamo = Dynamo(cast("DynamoDBClient", client), in_flight=asyncio.Semaphore(4))
    scores = TABLES.scores
    counters = CounterItems(dynamo, table=scores, shards=4, locks=ItemLocks())
    standings = StandingItems(dynamo, table=scores, counters=counters)
    rank_key = RankKey(1200, 1_714_550_400_000, "player-1")
    tie = TiePlace.of(rank_key, 3)
    deltas = (CounterDelta(12, 34, 1, tie), CounterDelta(11, 7, -1))
    write = StandingWrite(
        BOARD, standing("player-1", BOARD, version=2, tie_mark=3), 1, deltas, 1_717_000_000
    )
    new_row = StandingWrite(
        LATER_BOARD, standing("player-1", LATER_BOARD, version=1), None, deltas[1:]
    )
    unmoved = StandingWrite(
        THIRD_BOARD, standing("player-1", THIRD_BOARD, version=4), 3, (), 1_717_000_000, moved=False
    )
    legacy = StandingWrite(
        FOURTH_BOARD, standing("player-1", FOURTH_BOARD, version=1), 0, (), None, moved=False
    )

    submissions = SubmissionItems(dynamo, table=scores, counters=counters)
    await submissions.read_submission(
        "idem#client#k1",
        "player-1",
        [BOARD, LATER_BOARD],
        lease_board_ids=[BOARD],
        grain_slots=[(BOARD, 12, 34)],
    )
    await submissions.read_grains([(BOARD, 12, 34), (BOARD, 12, 35)])
    await submissions.commit_submission(
        SubmissionWrite(
            "idem#client#k1",
            "h",
            "{}",
            1_717_000_000,
            "player-1",
            (write, new_row, unmoved, legacy),
        ),
        token="t",
        now_ms=1_714_550_400_000,
    )

    await standings.read_standing(BOARD, "player-1")
    await standings.standings_of("player-1")
    await standings.standings_page("player-1", after="", limit=20)
    await standings.standings_page("player-1", after=BOARD, limit=20)
    await standings.rows_of_player("player-1")
    await standings.delete_standing(
        standing("player-1", BOARD, version=2), counters=deltas, now_s=1_714_550_400
    )
    await standings.delete_standing(
        standing("player-1", BOARD, version=0), counters=(), now_s=1_714_550_400
    )
    for operator in Operator:
        row = SeedRow(1, "player-1", 1200, 1_714_550_400_000, "Ada", "GB")
        await standings.put_seed_row(
            BOARD,
            row,
            definition=BoardDefinition(operator=operator),
            expires_at=1_717_000_000,
            writer="seeder-1",
        )
    await standings.put_seed_row(
        LATER_BOARD,
        SeedRow(2, "player-2", 5, 0),
        definition=BoardDefinition(),
        expires_at=None,
        writer="seeder-1",
    )
    await standings.standings_on_board(BOARD, ["player-1", "player-2"])
    await standings.mark_tie(BOARD, rank_key, 3)
    await standings.players_on_board(BOARD, ["player-1", "player-2"])
    marks = ErasureMarkItems(dynamo, table=scores)
    await marks.mark_erasing("player-1", until=1_714_550_500)
    await marks.clear_erasing("player-1")

    await counters.coarse_counts(BOARD)
    await counters.fine_counts(BOARD, 12, 0, 99)
    await counters.read_counters(BOARD, buckets=[11, 12])
    await counters.tie_counts(BOARD, 12, 34, tie.b_sort_key)
    await counters.read_ties(BOARD, 12, 34)
    await counters.set_grain(BOARD, 12, 34, 3, expires_at=1_717_000_000)
    await counters.set_grain(BOARD, 12, 35, 3, expires_at=None)
    repairs: list[tuple[CounterItem, int, int | None]] = [
        (CoarseItem(1, 12), 5, None),
        (FineItem(12, 34), 0, 5),
        (TieItem(12, 34, tie.a_sort_key), 2, 1),
    ]
    for item, n, expected in repairs:
        await counters.set_counter(BOARD, item, n=n, expected=expected, expires_at=1_717_000_000)

    index = IndexReads(dynamo, table=scores)
    await index.query_board(BOARD, limit=50, start=None)
    await index.query_board(BOARD, limit=50, start=(rank_key.encode(), "player-1"))
    await index.query_neighbours(BOARD, rank_key.encode(), ahead=True, limit=5)
    await index.query_neighbours(BOARD, rank_key.encode(), ahead=False, limit=5)
    async for _ in index.board_keys(BOARD, page_size=500):
        pass
    await index.count_keys(BOARD, "a", "z", limit=1000)
    await index.count_keys(BOARD, "a", "z", limit=1000, exclude_player="player-1")

    leases = LeaseItems(dynamo, table=scores)
    await leases.read_lease(BOARD)
    await leases.acquire_lease(
        BOARD, holder="seeder-1", expires_at=1_714_550_500, now_s=1_714_550_400
    )
    await leases.renew_lease(
        BOARD, holder="seeder-1", expires_at=1_714_550_600, now_s=1_714_550_400
    )
    await leases.release_lease(BOARD, holder="seeder-1")

    registry = RegistryItems(dynamo, table=scores)
    await registry.register_board(BOARD, expires_at=1_717_000_000)
    await registry.register_board(LATER_BOARD, expires_at=None)
    await registry.registered_boards()
    await registry.registered_boards(prefix="trivia#")
    await registry.registered_page(after="", limit=1_000)
    await registry.registered_page(after="trivia#classic#~", limit=1_000)

    keys = ApiKeyItems(dynamo, table=scores)
    await keys.create_key("a" * 64, "ops", ["admin"])
    await keys.get("a" * 64)
    await keys.list_keys()
    await keys._revoke_one(
        StoredApiKey("a" * 64, "ops", ("admin",), "2024-05-01T00:00:00.000Z"),
        "2024-05-02T00:00:00.000Z",
    )

    await RequestItems(dynamo, table=scores).erase_record("player-1", "idem#client#k1")

    snapshots = SnapshotItems(dynamo, TABLES)
    entries = (
        SnapshotEntry(1, "player-1", "Ada", "GB", 1200, "2024-05-01T08:00:00.000Z"),
        SnapshotEntry(2, None, None, None, 5, None),
    )
    snapshot = Snapshot(BOARD, "2024-05-02T00:00:00.000Z", "closed", 2, 100, entries)
    await snapshots.add_memberships(BOARD, snapshot.taken_at, [f"player-{n}" for n in range(30)])
    await snapshots.remove_memberships(BOARD, snapshot.taken_at, ["player-1", "player-2"])
    await snapshots.delete_membership("player-1", BOARD, snapshot.taken_at)
    await snapshots.put_snapshot(snapshot)
    await snapshots.put_closing_snapshot(
        snapshot, Event.of("trivia", "board.closed", {}, created_at_ms=1_714_608_000_000)
    )
    await snapshots.list_snapshots(BOARD, limit=20)
    await snapshots.get_snapshot(BOARD, snapshot.taken_at)
    await snapshots.replace_snapshot_entry(
        BOARD, snapshot.taken_at, index=0, player_id="player-1", entry=entries[0].scrubbed()
    )

    definitions = DefinitionItems(dynamo, table=scores)
    await definitions.get_definition("trivia", "classic")
    await definitions.definitions_of("trivia")
    await definitions.put_definition("trivia", "classic", BoardDefinition(operator=Operator.SUM))


async def test_every_request_the_adapter_makes_is_one_dynamodb_takes() -> None:
    client = RecordingClient()
    await every_request_the_adapter_makes(client)
    operations = {operation for operation, _ in client.requests}
    assert operations == {
        "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
        "BatchGetItem", "BatchWriteItem", "TransactWriteItems",
    }  # fmt: skip
    refusals = [
        (operation, request, message)
        for operation, request in client.requests
        if (message := refusal(operation, request, SHAPES))
    ]
    assert refusals == []
