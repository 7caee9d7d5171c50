"""The embedded backend's Query answers as moto's own does, though it starts from the partition
asked for instead of every item of the table, sorted (``app/local/moto_runner.py``): the same items
in the same order, the same counts and the same ``LastEvaluatedKey``, page after page, on the table
and on RankIndex, forwards and backwards, with key conditions, filters and limits. And the list of
moto's own modules, which its server consults for every request, is the same list, made once."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from moto import mock_aws
from moto.dynamodb.models.table import Table

from app.local import moto_runner
from app.store.tables import RANK_INDEX, scores_table_spec

TABLE = "scores"
BOARDS = ["trivia#classic#alltime", "trivia#classic#day#2026-12-01", "kart#tt#alltime"]


def _items(rng: random.Random) -> Iterator[dict[str, Any]]:
    """Rows of players on boards (on RankIndex, some of them tied on a rank key), and bookkeeping
    items (counters, a lease) that carry no rank key, in partitions of 1 to 40 items."""
    for p in range(60):
        player = f"p{p:03d}"
        for board in rng.sample(BOARDS, rng.randint(1, len(BOARDS))):
            item = {"playerId": {"S": player}, "leaderboardId": {"S": board}}
            if rng.random() < 0.9:
                item["rankKey"] = {"S": f"{rng.randrange(40):04d}#{rng.randrange(3)}"}
            yield item
    for c in range(8):
        for bucket in range(rng.randint(1, 40)):
            yield {
                "playerId": {"S": f"hist#trivia#classic#alltime#c{c}"},
                "leaderboardId": {"S": f"{bucket:04d}"},
                "n": {"N": str(rng.randrange(1, 9))},
            }
    yield {"playerId": {"S": "lease#kart#tt#alltime"}, "leaderboardId": {"S": "lease"}}


QUERIES: list[dict[str, Any]] = [
    *(
        {
            "KeyConditionExpression": "playerId = :p",
            "ExpressionAttributeValues": {":p": {"S": pk}},
        }
        for pk in ("p000", "p017", "p059", "hist#trivia#classic#alltime#c3", "nobody")
    ),
    {
        "KeyConditionExpression": "playerId = :p AND leaderboardId BETWEEN :lo AND :hi",
        "ExpressionAttributeValues": {
            ":p": {"S": "hist#trivia#classic#alltime#c5"},
            ":lo": {"S": "0003"},
            ":hi": {"S": "0017"},
        },
    },
    {
        "KeyConditionExpression": "playerId = :p AND begins_with(leaderboardId, :b)",
        "ExpressionAttributeValues": {":p": {"S": "p004"}, ":b": {"S": "trivia#"}},
    },
    {
        "KeyConditionExpression": "playerId = :p",
        "FilterExpression": "n > :n",
        "ExpressionAttributeValues": {
            ":p": {"S": "hist#trivia#classic#alltime#c0"},
            ":n": {"N": "4"},
        },
    },
    *(
        {
            "IndexName": RANK_INDEX,
            "KeyConditionExpression": "leaderboardId = :b",
            "ExpressionAttributeValues": {":b": {"S": board}},
        }
        for board in [*BOARDS, "nothing#here#alltime"]
    ),
    {
        "IndexName": RANK_INDEX,
        "KeyConditionExpression": "leaderboardId = :b AND rankKey > :k",
        "ExpressionAttributeValues": {":b": {"S": BOARDS[0]}, ":k": {"S": "0019"}},
    },
    {
        "IndexName": RANK_INDEX,
        "KeyConditionExpression": "leaderboardId = :b AND rankKey BETWEEN :lo AND :hi",
        "ExpressionAttributeValues": {
            ":b": {"S": BOARDS[1]},
            ":lo": {"S": "0005"},
            ":hi": {"S": "0030"},
        },
    },
    {
        "IndexName": RANK_INDEX,
        "KeyConditionExpression": "leaderboardId = :b",
        "ExpressionAttributeValues": {":b": {"S": BOARDS[2]}},
        "Select": "COUNT",
    },
]


def _pages(client: Any, query: dict[str, Any], *, forward: bool, limit: int | None) -> list[Any]:
    """Every page of ``query``, each answer as the client parsed it (its metadata left out)."""
    kwargs = {"TableName": TABLE, "ScanIndexForward": forward, **query}
    if limit is not None:
        kwargs["Limit"] = limit
    pages = []
    while True:
        page = client.query(**kwargs)
        page.pop("ResponseMetadata")
        pages.append(page)
        if "LastEvaluatedKey" not in page or len(pages) > 200:
            return pages
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def test_a_query_answers_as_moto_s_own_and_reads_no_other_partition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    own = Table.query
    monkeypatch.setattr(Table, "query", own)  # put back after the test
    moto_runner._query_by_partition()
    ours = Table.query
    assert ours is not own

    whole_table_reads = 0
    all_items = Table.all_items

    def counted(self: Table) -> Any:
        nonlocal whole_table_reads
        whole_table_reads += 1
        return all_items(self)

    monkeypatch.setattr(Table, "all_items", counted)
    with mock_aws():
        client: Any = botocore.session.get_session().create_client(
            "dynamodb",
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        client.create_table(**scores_table_spec(TABLE))
        for item in _items(random.Random(27)):
            client.put_item(TableName=TABLE, Item=item)
        compared = 0
        for query in QUERIES:
            for forward in (True, False):
                for limit in (None, 3):
                    Table.query = own  # type: ignore[method-assign]
                    expected = _pages(client, query, forward=forward, limit=limit)
                    read_before = whole_table_reads
                    Table.query = ours  # type: ignore[method-assign]
                    found = _pages(client, query, forward=forward, limit=limit)
                    assert found == expected, (query, forward, limit)
                    # Moto's own path reads the whole table, sorted, for every page; ours never.
                    assert whole_table_reads == read_before, (query, forward, limit)
                    compared += len(found)
        # The answers compared were worth comparing: many pages, and whole partitions of many
        # items, on the table and on the index.
        assert compared > 150
        whole = {
            i: len(_pages(client, q, forward=True, limit=None)[0]["Items"])
            for i, q in enumerate(QUERIES)
            if "Select" not in q
        }
        assert max(n for i, n in whole.items() if "IndexName" not in QUERIES[i]) > 10, whole
        assert max(n for i, n in whole.items() if "IndexName" in QUERIES[i]) > 20, whole


def test_moto_s_modules_are_listed_once_and_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import backends

    own = backends.list_of_moto_modules
    monkeypatch.setattr(backends, "list_of_moto_modules", own)  # put back after the test
    expected = list(own())
    assert "dynamodb" in expected
    moto_runner._moto_modules_listed_once()
    listings = 0
    listdir = os.listdir

    def counted(path: str) -> list[str]:
        nonlocal listings
        listings += 1
        return listdir(path)

    monkeypatch.setattr(os, "listdir", counted)
    for _ in range(3):
        assert list(backends.list_of_moto_modules()) == expected
        assert "dynamodb.us-east-1.amazonaws.com" not in backends.list_of_moto_modules()
    assert listings == 1
