"""The benchmark harness against the embedded backend, on a tiny scale, so it cannot rot silently:
the traced calls and round trips of a new player and a rank read are what docs/architecture.md
says, and the CPU and A/B parts run. The pieces that need no backend are tested in
``bench/tests/``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bench.harness import ab, calls, document, overhead, report


async def test_a_new_player_and_a_rank_read_trace_as_docs_architecture_says(
    dynamo_endpoint: str,
) -> None:
    scenarios = {s.name: s for s in await calls.run_calls(dynamo_endpoint, latency_s=0.02)}
    new = scenarios["new player"]
    assert (len(new.calls), new.round_trips) == (14, 3)
    assert new.calls[0].operation == "BatchGetItem"
    assert new.calls[-1].operation == "TransactWriteItems"
    # The record (in the player's partition), three rows and six counter items, in a transaction
    # (2 units a KB), the record and rows sized by the rules; 3 index entries.
    assert new.write_units == 23
    assert new.index_write_units == 3
    first = scenarios["new player, first time the task sees its boards"]
    # Also the variant's definition, then the registry, each a round trip before the first read:
    # a board is registered before its lease is first read (decision 0031), and only the boards
    # of the variant's own definition.
    assert (len(first.calls), first.round_trips) == (18, 5)
    assert [c.operation for c in first.calls[:5]] == ["GetItem", *["PutItem"] * 3, "BatchGetItem"]
    # A score that is not the player's best moves nothing: no tie grain to read, 3 round trips.
    same = scenarios["no improvement"]
    assert (same.round_trips, [c.operation for c in same.calls].count("BatchGetItem")) == (3, 1)
    rank = scenarios["rank read"]
    assert (len(rank.calls), rank.round_trips) == (5, 2)
    assert len(scenarios["409 (same key in flight, same task)"].calls) == 0
    replay = scenarios["replay"]
    assert (len(replay.calls), replay.round_trips, replay.write_units) == (1, 1, 0)

    # The page and its plots render from these results.
    results: dict[str, Any] = {
        "run": {
            "command": "test",
            "machine": "test",
            "started": "now",
            "minutes": 0.0,
            "commit": "x",
            "dynamodb": "embedded",
            "base_url": "-",
            "latency_ms": 20,
        },
        "calls": [s.summary() for s in scenarios.values()],
    }
    text = document.render(results, report.kept_notes(Path("/nonexistent")))
    assert "| new player | 200 | 14 in 3 | 30 in 4 |" in text


def test_the_cpu_part_alternates_the_service_and_the_replay_of_the_same_calls(
    dynamo_endpoint: str, tmp_path: Path
) -> None:
    figures, floor = overhead.run_overhead(dynamo_endpoint, tmp_path, n=4, warm=1)
    measured = {o.operation: o for o in figures}
    assert list(measured) == ["submission", "top page", "rank read", "around", "standings"]
    for figure in measured.values():
        assert figure.service_cpu_ms > 0, figure
        assert figure.bare_cpu_ms > 0, figure
        assert figure.replay_errors == 0, figure  # the twin tables stayed in the service's state
        assert figure.requests + figure.left_out == 4, figure
        assert figure.requests >= 1, figure
    # The calls replayed are the service's: a new player's read and transaction at least (more
    # with the ranks), one Query or more for a page, and a rank read's row and counters.
    assert measured["submission"].calls_per_request >= 2
    assert measured["top page"].calls_per_request >= 1
    assert measured["rank read"].calls_per_request >= 3
    # The floor: a one-call page's bare Query, the service's /healthz and FastAPI alone, each
    # the CPU of its own process.
    assert floor.requests == 4
    assert floor.bare_call_ms > 0
    assert floor.stack_ms > 0
    assert floor.service_ms > 0
    least = floor.summary()
    assert least["least_one_call_ratio_stack"] > 1
    assert least["least_one_call_ratio_service"] > 1


def test_the_ab_comparison_serves_each_side_from_its_own_checkout(
    dynamo_endpoint: str, tmp_path: Path
) -> None:
    root = Path(__file__).resolve().parents[2]
    base = tmp_path / "base"
    shutil.copytree(root / "app", base / "app", ignore=shutil.ignore_patterns("__pycache__"))
    marker = tmp_path / "imported-from-base"
    init = base / "app" / "__init__.py"
    init.write_text(f"{init.read_text()}\nopen({str(marker)!r}, 'w').close()\n")
    work = tmp_path / "work"
    work.mkdir()
    figures = ab.compare(dynamo_endpoint, (base, root), work, operations=["top page"], n=3, warm=1)
    assert marker.exists()  # the base side's service ran the base checkout's app
    (page,) = figures
    assert (page.operation, page.requests) == ("top page", 3)
    assert page.base_cpu_ms > 0
    assert page.new_cpu_ms > 0
    low, high = page.interval or (0.0, 0.0)
    assert 0 < low <= high
    assert "top page" in page.line()
