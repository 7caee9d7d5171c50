"""A show at a tiny size (``bench/show.py``): a round with ``rankDelta`` on through the throttling
proxy, then every player reading their rank, each answer checked against the board. The full
run and its figures are in docs/benchmarks/runs/."""

from __future__ import annotations

import json
from typing import Any

from bench.show import (
    Phase,
    ReadAnswer,
    Show,
    Timeline,
    check_reads,
    run,
)

SUBMIT_FIELDS = {"shards", "phase", "offered", "within_deadline", "exact", "ranges", "wrong"}
READ_FIELDS = {"shards", "phase", "offered", "answered_within_5s", "exact", "ranges", "wrong"}
COMMON = {"throttled", "read_units_per_task_second", "read_units_per_rank_read", "rig"}


async def test_a_tiny_show_reports_its_shape_and_nothing_wrong(dynamo_endpoint: str) -> None:
    show = Show(scale=0.04, players=24, rate=12.0, read_spread_s=0.5)
    report: dict[str, Any] = json.loads(json.dumps(await run(dynamo_endpoint, show, [4])))

    assert isinstance(report["rig_saturated"], bool)
    submit, read = report["rounds"]
    assert submit.keys() >= SUBMIT_FIELDS | COMMON, submit.keys()
    assert read.keys() >= READ_FIELDS | COMMON, read.keys()
    assert (submit["phase"], read["phase"]) == ("submit", "read")
    for phase in (submit, read):
        assert phase["shards"] == 4
        assert phase["offered"] == 24
        assert phase["wrong"] == 0, phase["wrong_examples"]
    # Whatever the machine's load (which decides what comes in time, and whether a mirror
    # keeps up): something answered, and every 200 checked, as an exact rank or a range.
    assert submit["answered"] > 0, submit["answers"]
    assert read["answered"] > 0, read["answers"]
    assert read["exact"] + read["ranges"] == read["answered"], read


def test_a_rank_the_board_contradicts_is_wrong() -> None:
    """The check is not a formality: a rank off by one from a still board is wrong, and one
    that a player in flight at its moment could explain is not."""
    timeline = Timeline(
        before={"a": "1#a", "b": "3#b", "c": "5#c"},
        after={"a": "1#a", "b": "3#b", "c": "2#c"},
        moved={"c": (10.0, 11.0)},  # c moved ahead of b between 10 and 11
    )
    assert timeline.possible_ranks("b", "3#b", 12.0, 13.0) == (3, 3, 0)
    assert timeline.possible_ranks("b", "3#b", 10.5, 10.6) == (2, 3, 1)

    def phase_of(*answers: ReadAnswer) -> Phase:
        phase = Phase(shards=4, phase="read", reads="mirror", instances=2, scale=0.004)
        check_reads(phase, answers, timeline, round_end=11.0, summary_s=1.0)
        return phase

    right = phase_of(ReadAnswer("b", 12.0, 12.1, 12.0, 3, None))
    assert (right.exact, right.wrong) == (1, [])
    off = phase_of(ReadAnswer("b", 12.0, 12.1, 12.0, 2, None))
    assert len(off.wrong) == 1, off.wrong
    in_flight = phase_of(ReadAnswer("b", 10.5, 10.6, 10.5, 2, None))
    assert (in_flight.wrong, in_flight.as_of_before_end) == ([], 1)
    # One player moving may put an answer off by one place (the contract's), never by two.
    moving = phase_of(ReadAnswer("b", 10.5, 10.6, 10.5, 4, None))
    assert (moving.wrong, moving.off_by_moving) == ([], 1)
    too_far = phase_of(ReadAnswer("b", 10.5, 10.6, 10.5, 5, None))
    assert len(too_far.wrong) == 1, too_far.wrong
    outside = phase_of(ReadAnswer("b", 12.0, 12.1, 12.0, None, (4, 9)))
    assert (outside.ranges, len(outside.wrong)) == (1, 1)
