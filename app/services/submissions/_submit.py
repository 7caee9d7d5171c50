"""Submitting a score: every board of the score's period set, exactly once per Idempotency-Key, in
one transaction that lands whole or not at all (``submit_score``; docs/architecture.md walks
through every call).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from app import telemetry
from app.domain.calendar import board_expiry_s
from app.domain.definitions import BoardDefinition, Move, TotalTooLarge, move
from app.domain.keys import RankKey
from app.domain.models import (
    Standing,
    SubmitOutcome,
)
from app.domain.moderation import Action
from app.domain.periods import Board
from app.domain.shards import player_partition
from app.domain.submission import PlannedWrite, moderated_write, plan_board_write
from app.domain.ties import SlotTies
from app.errors import (
    BoardBeingSeeded,
    Conflict,
    Contended,
    IdempotencyKeyReused,
    InvalidInput,
    PlayerBanned,
    PlayerBeingErased,
    Throttled,
    TransactionCancelled,
)
from app.services.policies import RANKING_CHANGE_HOLDER, SubmitPolicy, lets_through
from app.services.ports import (
    EntryReads,
    EntryWrite,
    RequestRecord,
    SlotAddress,
    Stores,
    SubmissionState,
    SubmissionWrite,
)
from app.services.ranking import Ranking
from app.services.submissions._ask import CohortGuessedWrong, SubmitAsk, shards_of
from app.services.submissions._entries import entry_writes
from app.services.submissions._plan import with_ranks
from app.services.submissions.in_flight import SeenLeases
from app.services.work import wait_before

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SubmitResult:
    outcome: SubmitOutcome
    replayed: bool
    """The outcome is the one stored when the request was first served, replayed."""


def request_fingerprint(client: str, fields: dict[str, Any]) -> str:
    """A hash of the caller and the request as sent (unset fields absent), for key reuse checks."""
    canonical = json.dumps(
        {"client": client, "request": fields}, sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class GuessedWrong(Exception):
    """The definition a submission started under was a guess, and the read says otherwise."""

    def __init__(self, definition: BoardDefinition) -> None:
        super().__init__("the variant's definition is not the one guessed")
        self.definition = definition


async def write_submission(
    stores: Stores,
    policy: SubmitPolicy,
    ranking: Ranking,
    leases: SeenLeases,
    ask: SubmitAsk,
    confirm: Callable[[], Awaitable[BoardDefinition]] | None = None,
) -> SubmitResult:
    """Write one submission to every board of its period set, in three round trips with
    ``rankDelta`` (two without; docs/architecture.md walks through them): one read of all it
    decides on (record, rows, leases, erasure mark: a replay, a reused key, a held board or a
    player being erased is answered from it); the ranks before and after the move; one
    transaction, read again and retried when cancelled. All of it lands or none of it does.
    ``confirm``: ``ask.definition`` is a guess, its read goes out beside the first round trip,
    and ``GuessedWrong`` is raised before anything is written where it differs."""
    return await _Writer(stores, policy, ranking, leases, ask).run(confirm=confirm)


class _Writer:
    def __init__(
        self,
        stores: Stores,
        policy: SubmitPolicy,
        ranking: Ranking,
        leases: SeenLeases,
        ask: SubmitAsk,
    ) -> None:
        self._submissions = stores.submissions
        self._ranking = ranking
        self._leases = leases
        self._policy = policy
        self._definition = definition = ask.definition
        self._submission = submission = ask.submission
        self._achieved_ms = ask.achieved_ms
        self._boards = boards = ask.boards
        self._periods = ask.periods
        self._period_ids = [board.board_id for board in ask.periods]
        self._ask = ask
        league = definition.league
        self._tiers = () if league is None else league.ids
        self._cohorts = ask.cohorts
        self._record_id = ask.record_id
        self._request_hash = ask.request_hash
        self._now_ms = now_ms = ask.now_ms
        # One per request: a resend of the same call (botocore's, after a lost response) is the
        # same request to DynamoDB; another request with the same key never is.
        self._nonce = uuid.uuid4().hex
        # Where the player's row is on each board: the board itself, or on a sharded board the
        # partition their id hashes to (``app.domain.shards``).
        self._rows = {
            board.board_id: player_partition(
                board.board_id, submission.player_id, shards_of(board, definition)
            )
            for board in boards
        }
        self._expires_at = (now_ms + int(policy.idempotency_ttl.total_seconds() * 1000)) // 1000
        # Where the submitted score lands on each board: its slot's tie grain is read with the
        # state (where the board's value is the submitted score: every board but a running sum).
        submitted = RankKey(
            submission.score, ask.achieved_ms, submission.player_id, definition.order
        )
        self._grain_slots = [self._slot(board, submitted) for board in boards]
        # The period boards whose placement the submission reads and writes (decision 0039).
        self._entry_reads = EntryReads(
            tuple(board.board_id for board in ask.periods) if definition.gates_entry else (),
            self._tiers,
        )

    @property
    def board_ids(self) -> list[str]:
        return [board.board_id for board in self._boards]

    async def run(
        self, *, confirm: Callable[[], Awaitable[BoardDefinition]] | None = None
    ) -> SubmitResult:
        """``confirm``: the definition this writer's was guessed for, read beside the first read;
        ``GuessedWrong`` (before anything is written) where it differs. The caller has
        registered the boards (``BoardRegistrar``) before this first reads their leases."""
        row_ids = list(self._rows.values())
        player = self._submission.player_id
        for attempt in range(self._policy.max_attempts):
            await wait_before(
                attempt, base_s=self._policy.backoff_base_s, cap_s=self._policy.backoff_cap_s
            )
            # A cohort's board holds no lease: seeding and ranking changes hold period boards.
            unknown = self._leases.unknown(self._period_ids)
            reading = self._submissions.read_submission(
                self._record_id,
                player,
                row_ids,
                lease_board_ids=unknown,
                grain_slots=self._grain_slots,
                entries=self._entry_reads,
            )
            if confirm is None:
                state = await reading
            else:
                state, confirmed = await asyncio.gather(reading, confirm())
                confirm = None
                if confirmed != self._definition:
                    raise GuessedWrong(confirmed)
            for board_id in unknown:
                self._leases.remember(board_id, state.leases[board_id])
            replayed = self._answer_from_record(state.record)
            if replayed is not None:
                telemetry.idempotent("replayed")
                return replayed
            self._refuse_held(state)
            entries = entry_writes(
                self._definition,
                self._periods,
                state,
                player=player,
                token=self._nonce,
                tiers=self._ask.tiers,
            )
            self._check_cohorts(entries, state)
            rows = {
                board.board_id: state.rows[self._rows[board.board_id]] for board in self._boards
            }
            moves = [(board, self._move(board, rows[board.board_id])) for board in self._boards]
            hide = state.moderation is not None
            grains = await self._grains(state, moves, shown=self._shown(rows, hide=hide))
            planned = [
                self._moderated(
                    self._plan(
                        board, rows[board.board_id], m, grains.get(self._slot(board, m.key))
                    ),
                    rows[board.board_id],
                    hide=hide,
                    ties=grains.get(self._slot(board, m.key)),
                )
                for board, m in moves
            ]
            ranges: frozenset[str] = frozenset()
            if self._submission.rank_delta:
                planned, ranges = await with_ranks(self._ranking, self._definition, planned)
            # The answer names the period boards, as on any variant (a cohort's row is theirs).
            periods = {board.board_id for board in self._periods}
            outcome = SubmitOutcome(
                player, [p.outcome for p in planned if p.outcome.board_id in periods]
            )
            write = SubmissionWrite(
                record_id=self._record_id,
                request_hash=self._request_hash,
                response_json=outcome.to_json(),
                expires_at=self._expires_at,
                player_id=player,
                boards=tuple(p.write for p in planned),
                entries=entries,
                moderated=self._follows(
                    planned, hide=hide, shown=bool(self._shown(rows, hide=hide))
                ),
            )
            try:
                await self._submissions.commit_submission(
                    write, token=self._token(state, attempt), now_ms=self._now_ms
                )
            except TransactionCancelled as cancelled:
                telemetry.transaction_cancelled("submission", cancelled.kind)
                log.info("transaction_cancelled", attempt=attempt + 1, reason=cancelled.kind)
                continue
            except Throttled:
                telemetry.transaction_cancelled("submission", "throttled")
                raise
            written_hidden = {p.outcome.board_id for p in planned if p.hidden}
            telemetry.rows_moderated("written_hidden", len(written_hidden))
            self._tell_tie_builds(
                [(b, m) for b, m in moves if b.board_id not in written_hidden], grains, ranges
            )
            return SubmitResult(outcome, replayed=False)
        raise Contended(
            "the boards are too contended right now; retry with the same Idempotency-Key",
            retry_after=1,
        )

    def _check_cohorts(self, entries: tuple[EntryWrite, ...], state: SubmissionState) -> None:
        """``CohortGuessedWrong`` where a placement read (or to be made) is in another cohort
        than the one this writer was built to write to, or (in a league) the player's league
        record is not the one their tier was decided on."""
        if self._ask.tiers is not None:
            for board_id, entry in state.entries.items():
                # A new placement's tier is decided on the league record read (none where the
                # placement was remembered: it is gone since, so read it all again).
                decided = board_id in self._ask.leagues
                fresh = decided and entry.league == self._ask.leagues[board_id]
                if entry.placement is None and not fresh:
                    raise CohortGuessedWrong(None)
        if self._definition.cohort_size is None:
            return
        uncut = [e.placement.board_id for e in entries if e.placement.cohort_id is None]
        if uncut:
            raise Conflict(
                f"player {self._submission.player_id!r} was placed on board {uncut[0]} before "
                "its variant had cohorts: define a new variant for cohorts",
                retry_after=60,
            )
        read = {e.placement.board_id: e.placement.cohort_id or "" for e in entries}
        if read != dict(self._cohorts):
            raise CohortGuessedWrong(read)

    def _answer_from_record(self, found: RequestRecord | None) -> SubmitResult | None:
        """A live record holds the key: replay its outcome, or say why not. ``None``: no live
        record (none, or one past its expiry)."""
        if found is None or not found.is_live(self._now_ms // 1000):
            return None
        if found.request_hash != self._request_hash or not found.response_json:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used with a different request; use a new key"
            )
        return SubmitResult(SubmitOutcome.from_json(found.response_json), replayed=True)

    def _refuse_held(self, state: SubmissionState) -> None:
        """A seeding lease holds a board, or the player is being erased: refuse before anything is
        written. The seeder waits out the submissions that read no lease before it writes, and
        rebuilds the counters when done; the eraser refuses what reads its mark."""
        now_s = self._now_ms // 1000
        if state.moderation is Action.BAN:
            raise PlayerBanned(
                f"player {self._submission.player_id!r} is banned from game "
                f"{self._submission.game!r}; nothing was stored"
            )
        if state.erasing_until is not None and state.erasing_until > now_s:
            raise PlayerBeingErased(
                f"player {self._submission.player_id!r} is being erased; retry shortly",
                retry_after=min(60, state.erasing_until - now_s),
            )
        for board in self._boards:
            read = state.leases.get(board.board_id)
            lease = read if board.board_id in state.leases else self._leases.get(board.board_id)
            if lease is None or not lease.is_live(self._now_ms / 1000):
                continue
            if lets_through(lease.holder, self._definition):
                continue  # a ranking change already put, and this submission follows it
            why = (
                "held while its variant's order, operator or shards change"
                if lease.holder.startswith(RANKING_CHANGE_HOLDER)
                else "being seeded"
            )
            raise BoardBeingSeeded(
                f"board {board.board_id} is {why}; retry shortly",
                retry_after=min(60, lease.expires_at - now_s),
            )

    def _token(self, state: SubmissionState, attempt: int) -> str:
        """The same request, state read and attempt: the same call, which DynamoDB applies once
        however often botocore resends it; any other call is a new request."""
        versions = ",".join("-" if row is None else str(row.version) for row in state.rows.values())
        text = f"{self._record_id}|{self._nonce}|{versions}|{attempt}"
        return hashlib.sha256(text.encode()).hexdigest()[:36]

    def _move(self, board: Board, standing: Standing | None) -> Move:
        previous = None if standing is None else standing.entry.key
        try:
            return move(
                self._definition,
                previous,
                score=self._submission.score,
                achieved_at_ms=self._achieved_ms,
                player_id=self._submission.player_id,
            )
        except TotalTooLarge as exc:
            raise InvalidInput(
                f"board {board.board_id}: {exc}; nothing was written",
                errors=[{"field": "score", "message": "the total would reach the ceiling"}],
            ) from None

    def _slot(self, board: Board, key: RankKey) -> SlotAddress:
        return (self._rows[board.board_id], *self._policy.layout.slot_of(key.score))

    def _shown(self, rows: Mapping[str, Standing | None], *, hide: bool) -> set[str]:
        """The boards whose hidden row this submission shows again (a restore under way: the
        record is gone, the row not yet shown), counted as a new entry is."""
        if hide:
            return set()
        return {board_id for board_id, row in rows.items() if row is not None and row.hidden}

    @staticmethod
    def _follows(planned: list[PlannedWrite], *, hide: bool, shown: bool) -> bool | None:
        """What the transaction checks of the moderation record: that it is still there where a
        row is written hidden, still gone where a hidden row is shown (so a write never lands
        on the wrong side of a restore or a moderation); nothing for an ordinary submission."""
        if hide and any(p.hidden for p in planned):
            return True
        return False if shown else None

    def _moderated(
        self, planned: PlannedWrite, standing: Standing | None, *, hide: bool, ties: SlotTies | None
    ) -> PlannedWrite:
        return moderated_write(
            planned,
            standing,
            hide=hide,
            layout=self._policy.layout,
            ties=ties,
            now_ms=self._now_ms,
        )

    async def _grains(
        self, state: SubmissionState, moves: list[tuple[Board, Move]], *, shown: set[str]
    ) -> Mapping[SlotAddress, SlotTies]:
        """The tie grains (and cuts) of the slots the moves land in: read with the state, except where the
        move lands elsewhere than the submitted score (a ``sum`` board's new total): one more call
        for those. A player who does not move keeps their row's grain and needs none."""
        asked = set(self._grain_slots)
        missing = [
            slot
            for board, m in moves
            if (m.changed or board.board_id in shown)
            and (slot := self._slot(board, m.key)) not in asked
        ]
        if not missing:
            return state.grains
        return {**state.grains, **(await self._submissions.read_grains(missing))}

    def _tell_tie_builds(
        self,
        moves: list[tuple[Board, Move]],
        grains: Mapping[SlotAddress, SlotTies],
        ranges: frozenset[str],
    ) -> None:
        """Once written, what the task's tie builds need to build a crowded slot before anyone
        reads it (decision 0035), from what the submission knows already, with no call: a rank
        after the move that is a range (``rankDelta``) asks for the slot's build as a read's
        does; a new entry in a slot whose grain the submission read none of is counted there,
        and enough of them have the slot's counter looked at."""
        builds = self._ranking.builds
        for board, m in moves:
            partition = self._rows[board.board_id]
            expires_at = board_expiry_s(board, self._definition)
            if board.board_id in ranges:
                builds.wanted(partition, m.key, expires_at=expires_at)
            elif m.changed and self._slot(board, m.key) not in grains and not self._within(m):
                builds.landed(partition, m.key, expires_at=expires_at)

    def _within(self, moved: Move) -> bool:
        """The player moved inside the slot they were in: no entry more there."""
        layout = self._policy.layout
        return moved.previous is not None and (
            layout.slot_of(moved.previous.score) == layout.slot_of(moved.key.score)
        )

    def _plan(
        self, board: Board, standing: Standing | None, moved: Move, ties: SlotTies | None
    ) -> PlannedWrite:
        return plan_board_write(
            board,
            standing,
            moved,
            ties,
            partition=self._rows[board.board_id],
            submission=self._submission,
            layout=self._policy.layout,
            now_ms=self._now_ms,
            definition=self._definition,
        )
