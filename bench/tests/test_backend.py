"""``bench.backend``'s Query answers exactly as moto's own: the same items in the same order, the
same counts and pages, on the table and on an index, every way the service asks."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped]
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table

from bench import backend


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        local = "local"  # moto's: any will do
        dynamodb = boto3.client(
            "dynamodb",
            region_name="us-east-1",
            aws_access_key_id=local,
            aws_secret_access_key=local,
        )
        dynamodb.create_table(
            TableName="t",
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "rk")
            ],
            BillingMode="PAY_PER_REQUEST",
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "RankIndex",
                    "KeySchema": [
                        {"AttributeName": "sk", "KeyType": "HASH"},
                        {"AttributeName": "rk", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n"]},
                }
            ],
        )
        rng = random.Random(3)
        for i in range(300):
            item = {"pk": {"S": f"p{i % 40:02d}"}, "sk": {"S": f"b{i % 7}"}, "n": {"N": str(i)}}
            if i % 5:  # a sparse index: some items are not on it
                item["rk"] = {"S": f"{rng.randrange(50):03d}#{i:04d}"}
            dynamodb.put_item(TableName="t", Item=item)
        yield dynamodb


def _queries() -> Iterator[dict[str, Any]]:
    for board in ("b0", "b3", "b9"):
        index = {"TableName": "t", "IndexName": "RankIndex"}
        yield {
            **index,
            "KeyConditionExpression": "sk = :b",
            "ExpressionAttributeValues": {":b": {"S": board}},
        }
        yield {
            **index,
            "KeyConditionExpression": "sk = :b AND rk BETWEEN :lo AND :hi",
            "ExpressionAttributeValues": {
                ":b": {"S": board},
                ":lo": {"S": "010"},
                ":hi": {"S": "030"},
            },
            "Select": "COUNT",
        }
        yield {
            **index,
            "KeyConditionExpression": "sk = :b AND rk < :hi",
            "ExpressionAttributeValues": {":b": {"S": board}, ":hi": {"S": "025"}},
            "ScanIndexForward": False,
            "Limit": 4,
        }
    for player in ("p00", "p17", "p99"):
        table = {"TableName": "t"}
        yield {
            **table,
            "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": {"S": player}},
        }
        yield {
            **table,
            "KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
            "ExpressionAttributeValues": {
                ":p": {"S": player},
                ":s": {"S": "b"},
                ":n": {"N": "100"},
            },
            "FilterExpression": "n > :n",
            "Limit": 2,
        }


def _pages(client: Any, asked: dict[str, Any]) -> list[dict[str, Any]]:
    pages = []
    while True:
        page = client.query(**asked)
        page.pop("ResponseMetadata", None)
        pages.append(page)
        if "LastEvaluatedKey" not in page or len(pages) > 50:
            return pages
        asked["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_a_query_answers_as_moto_answers_it(client: Any) -> None:
    before = [_pages(client, asked) for asked in _queries()]
    original = Table.query
    backend.install()
    try:
        after = [_pages(client, asked) for asked in _queries()]
    finally:
        Table.query = original  # type: ignore[method-assign]
    assert after == before
    assert any(page.get("Items") for pages in after for page in pages)
    assert any(page.get("Count") for pages in after for page in pages if "Items" not in page)
