"""What a submission writes on one board, planned without I/O: the row, the counters it leaves and
enters (tie counters and cuts included), and the answer."""

from __future__ import annotations

from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition, move
from app.domain.models import Entry, Standing
from app.domain.periods import Board
from app.domain.submission import PlannedWrite, Submission, plan_board_write
from app.domain.ties import SlotTies, TiePlace, tie_mark

LAYOUT = BucketLayout()
BOARD = Board.from_id("trivia#classic#alltime")
NOW = 1_800_000_000_000
DEFINITION = BoardDefinition()


def _plan(
    standing: Standing | None, score: int, at: int, ties: SlotTies | None = None
) -> PlannedWrite:
    submission = Submission("ada", score, "trivia", "classic", at, display_name="Ada")
    moved = move(
        DEFINITION,
        None if standing is None else standing.entry.key,
        score=score,
        achieved_at_ms=at,
        player_id="ada",
    )
    return plan_board_write(
        BOARD,
        standing,
        moved,
        ties,
        submission=submission,
        layout=LAYOUT,
        now_ms=NOW,
        definition=BoardDefinition(),
    )


def test_a_new_player_enters_one_slot_and_its_tie_counters_where_crowded() -> None:
    plain = _plan(None, 500, NOW - 10)
    (delta,) = plain.write.counters
    assert (delta.delta, delta.tie) == (1, None)
    assert (plain.write.expected_version, plain.write.standing.version) == (None, 1)
    assert (plain.outcome.improved, plain.previous_key) == (True, None)

    key = plain.key
    chunk = TiePlace.of(key, 0).b_sort_key
    cut = _plan(None, 500, NOW - 10, SlotTies(0, {chunk: 16}))
    (delta,) = cut.write.counters
    assert delta.tie == TiePlace.of(key, tie_mark(0, 16))
    assert delta.tie is not None
    assert delta.tie.c_sort_key is not None
    assert cut.write.standing.tie_mark == tie_mark(0, 16)


def test_an_improvement_leaves_where_the_row_is_counted_and_enters_the_new_place() -> None:
    first = _plan(None, 500, NOW - 10)
    mark = tie_mark(3, 20)
    standing = Standing(BOARD.board_id, first.write.standing.entry, version=4, tie_mark=mark)
    better = _plan(standing, 900, NOW - 5)
    left, entered = better.write.counters
    assert (left.delta, left.tie) == (-1, TiePlace.of(first.key, mark))
    assert (entered.delta, entered.tie) == (1, None)
    assert (better.write.expected_version, better.write.standing.version) == (4, 5)
    assert better.write.standing.tie_mark is None  # counted in no tie counters where it lands
    assert (better.previous_key, better.previous_tie_mark) == (first.key, mark)


def test_a_worse_score_changes_only_when_the_player_last_played() -> None:
    entry = Entry(_plan(None, 500, NOW - 10).key, "Ada", None, '{"car":"mk2"}')
    standing = Standing(
        BOARD.board_id,
        entry,
        version=2,
        tie_mark=0,
        last_played_at_ms=NOW - 60_000,
        context_json='{"round":1}',
    )
    worse = _plan(standing, 100, NOW - 5)
    assert worse.write.counters == ()
    assert not worse.write.moved  # no put of the row: the index entry stays as it is
    assert worse.write.standing.entry == entry  # its metadata included
    assert worse.write.standing.last_played_at_ms == NOW
    assert worse.write.standing.context_json == '{"round":1}'
    assert (worse.write.standing.version, worse.write.standing.tie_mark) == (3, 0)
    assert worse.outcome.improved is False
