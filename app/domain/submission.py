"""A submission, and what it writes on one board: the row, the counter changes, the answer.

Pure: ``plan_board_write`` takes what the submission read (the player's row, the move by the
board's rules, the crowded slot's grain and cuts) and returns the write and the outcome;
``app.services.submissions._submit`` reads, plans every board, and commits them in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.domain.buckets import BucketLayout
from app.domain.calendar import Lasting, board_expiry_s
from app.domain.definitions import Move
from app.domain.keys import RankKey
from app.domain.models import BoardOutcome, CounterDelta, Entry, Standing, StandingWrite
from app.domain.periods import Board
from app.domain.ties import SlotTies, TiePlace


@dataclass(frozen=True)
class Submission:
    """A round's result for one player, as the API took it (``achieved_at_ms``: ``None`` is now)."""

    player_id: str
    score: int
    game: str
    variant: str
    achieved_at_ms: int | None = None
    display_name: str | None = None
    country: str | None = None
    context_json: str | None = None
    metadata_json: str | None = None
    rank_delta: bool = True


@dataclass(frozen=True)
class PlannedWrite:
    """What a submission writes on one board (``write``) and answers for it (``outcome``)."""

    write: StandingWrite
    outcome: BoardOutcome
    key: RankKey
    """Where the player stands on the board after the submission."""
    previous_key: RankKey | None
    """Where they stood before it (``None``: not on the board)."""
    tie_mark: int | None = None
    """The tie mark ``key`` is counted at (a crowded slot's), if any."""
    previous_tie_mark: int | None = None
    previous_counted: bool = True
    """Whether the board counts the player at ``previous_key`` now: not where their row was
    hidden (a moderated player's, decision 0036)."""

    @property
    def hidden(self) -> bool:
        """The row is written hidden: it enters no counter."""
        return self.write.standing.hidden


def plan_board_write(
    board: Board,
    standing: Standing | None,
    moved: Move,
    ties: SlotTies | None,
    *,
    submission: Submission,
    layout: BucketLayout,
    now_ms: int,
    definition: Lasting,
    partition: str | None = None,
) -> PlannedWrite:
    """What a submission writes on one board, and what it answers for it: the player's row (``standing``,
    ``None`` where they have none) moved as ``moved`` says, the counters it leaves and enters, in
    the tie counters too where the slot it lands in is crowded (``ties``: its grain and cuts).
    ``partition``: where the row is, on a sharded board (``app.domain.shards``); the board itself
    otherwise."""
    sub = submission
    row_id = board.board_id if partition is None else partition
    previous = None if standing is None else standing.entry.key
    expires_s = board_expiry_s(board, definition)
    counters: tuple[CounterDelta, ...] = ()
    tie_mark = None if standing is None else standing.tie_mark
    if moved.changed:
        added = None if ties is None else TiePlace.of(moved.key, ties.mark_of(moved.key))
        counters = (CounterDelta(*layout.slot_of(moved.key.score), 1, added),)
        tie_mark = None if added is None else added.mark
    if standing is not None and not moved.changed:
        # The entry stays, with its name, metadata and context: only the row's bookkeeping moves.
        row = replace(
            standing,
            version=standing.version + 1,
            expires_at=expires_s,
            last_played_at_ms=max(now_ms, standing.last_played_at_ms or 0),
        )
    else:
        display_name, country, last_played = sub.display_name, sub.country, now_ms
        if standing is not None:
            old = standing.entry
            removed = None if standing.tie_mark is None else TiePlace.of(old.key, standing.tie_mark)
            counters = (CounterDelta(*layout.slot_of(old.score), -1, removed), *counters)
            # A name or a country the submission leaves out stays.
            display_name = old.display_name if display_name is None else display_name
            country = old.country if country is None else country
            last_played = max(now_ms, standing.last_played_at_ms or 0)
        # Metadata and context describe the round that set the entry: they go with it.
        row = Standing(
            row_id,
            Entry(moved.key, display_name, country, sub.metadata_json),
            version=1 if standing is None else standing.version + 1,
            expires_at=expires_s,
            tie_mark=tie_mark,
            last_played_at_ms=last_played,
            context_json=sub.context_json,
        )
    write = StandingWrite(
        board_id=row_id,
        standing=row,
        expected_version=None if standing is None else standing.version,
        counters=counters,
        expires_at=expires_s,
        moved=standing is None or moved.changed,
    )
    outcome = BoardOutcome(
        board.board_id,
        board.period.display,
        moved.key.score,
        None if previous is None else previous.score,
        moved.changed,
    )
    return PlannedWrite(
        write,
        outcome,
        moved.key,
        previous,
        tie_mark,
        None if standing is None else standing.tie_mark,
    )


def moderated_write(
    planned: PlannedWrite,
    standing: Standing | None,
    *,
    hide: bool,
    layout: BucketLayout,
    ties: SlotTies | None,
    now_ms: int,
) -> PlannedWrite:
    """``planned`` (made as if every row were visible) as a moderated player's submission writes
    it (decision 0036). ``hide`` (the player's record, read with the row, says hidden): the row is
    written hidden, into no counter, and leaves the counters it was in if it was visible. Not
    ``hide`` and the row was hidden (a restore under way): it comes back, into the counters of
    its new place (``ties``: its slot's grain, where crowded) as a new entry does."""
    was_hidden = standing is not None and standing.hidden
    if not hide and not was_hidden:
        return planned
    write, row = planned.write, planned.write.standing
    if hide:
        counters: tuple[CounterDelta, ...] = ()
        if standing is not None and not was_hidden:
            old = standing.entry.key
            removed = None if standing.tie_mark is None else TiePlace.of(old, standing.tie_mark)
            counters = (CounterDelta(*layout.slot_of(old.score), -1, removed),)
        since = standing.hidden_since_ms if standing is not None and was_hidden else now_ms
        hidden = replace(row, tie_mark=None, hidden_since_ms=since)
        # A row newly hidden is put whole: its index entry goes.
        moved = write.moved or not was_hidden
        return replace(
            planned,
            write=replace(write, standing=hidden, counters=counters, moved=moved),
            tie_mark=None,
            previous_counted=not was_hidden,
        )
    key = planned.key
    added = None if ties is None else TiePlace.of(key, ties.mark_of(key))
    shown = replace(row, tie_mark=None if added is None else added.mark, hidden_since_ms=None)
    return replace(
        planned,
        write=replace(
            write,
            standing=shown,
            counters=(CounterDelta(*layout.slot_of(key.score), 1, added),),
            moved=True,
        ),
        tie_mark=shown.tie_mark,
        previous_counted=False,
    )
