"""What cohorts cost in DynamoDB calls (``bench/cohort_costs.py``, docs/benchmarks.md), pinned
on the embedded backend so that a join, a cohort submission or a cohort's rank read cannot start
costing more calls or round trips unnoticed: a change that adds one fails here, and the figures
in docs/benchmarks.md and docs/boards.md are then to be measured again."""

from __future__ import annotations

from typing import Any

from bench import cohort_costs

PINNED: dict[str, dict[str, tuple[int, int]]] = {
    # request: (calls, round trips)
    "ordinary": {
        "first submission": (14, 3),
        "improvement": (20, 3),
        "rank read": (5, 2),
        "top page (25)": (1, 1),
    },
    "cohorts": {
        # The first join on a board in a task registers it (once), so its period closes.
        "join (201)": (3, 3),
        "join again (200)": (1, 1),
        "first submission": (15, 4),
        "improvement": (20, 3),
        "rank read": (7, 2),
        "top page (25)": (1, 1),
        "cohort's top page": (1, 1),
    },
}
PINNED["cup"] = PINNED["cohorts"] | {"join (201)": (2, 2)}  # its boards registered by joins


def _operations(figures: dict[str, Any]) -> list[str]:
    return [call["operation"] for call in figures["sequence"]]


async def test_joins_and_cohort_requests_cost_the_calls_documented(dynamo_endpoint: str) -> None:
    measured = await cohort_costs.measure(dynamo_endpoint, latency_s=0.02)
    found = {
        variant: {name: (s["calls"], s["round_trips"]) for name, s in requests.items()}
        for variant, requests in measured.items()
    }
    assert found == PINNED
    for variant in ("cohorts", "cup"):
        requests = measured[variant]
        # A join: the place and the count read together, then one transaction of the two items
        # (2 write units each, in a transaction); a repeat is the read alone.
        join = requests["join (201)"]
        registering = ["PutItem"] if variant == "cohorts" else []
        assert _operations(join) == [*registering, "BatchGetItem", "TransactWriteItems"]
        assert (join["write_units"], join["index_write_units"]) == (4 + len(registering), 0)
        assert _operations(requests["join again (200)"]) == ["BatchGetItem"]
        # A submission: the ordinary one, after one read of the player's places; once the task
        # knows their places (they never move), the ordinary one alone.
        first = _operations(measured["ordinary"]["first submission"])
        assert _operations(requests["first submission"]) == ["BatchGetItem", *first], variant
        improvement = _operations(measured["ordinary"]["improvement"])
        assert _operations(requests["improvement"]) == improvement, variant
        # A rank read: the ordinary one, with the player's cohort row read beside it (a Query
        # of their rows under the board's cohorts) and then the cohort's COUNT.
        rank = requests["rank read"]["sequence"]
        ordinary_rank = _operations(measured["ordinary"]["rank read"])
        assert sorted(_operations(requests["rank read"])) == sorted(
            [*ordinary_rank, "Query", "Query"]
        )
        # Of the player's own rows (their cohort's among them), then the cohort's COUNT.
        queries = [call["target"] for call in rank if call["operation"] == "Query"]
        player = "ann" if variant == "cup" else "bea"
        assert queries[0] == f"table {player}", queries
        counts = [q for q in queries if q.startswith("RankIndexV2 COUNT") and q.endswith("#~1")]
        assert len(counts) == 1, queries
    # The table the bench prints has a row a request and a cell a variant, "-" where it has none.
    printed = cohort_costs.table(measured).splitlines()
    assert printed[2].startswith("| join (201) | - | - | - | 3 in 3 |"), printed[2]
