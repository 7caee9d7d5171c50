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
from dataclasses import dataclass, replace
from typing import Any

import structlog

from app import telemetry
from app.domain.clock import from_ms
from app.domain.definitions import BoardDefinition, Move, TotalTooLarge, move
from app.domain.keys import RankKey
from app.domain.models import (
    Standing,
    SubmitOutcome,
)
from app.domain.periods import Board, Period
from app.domain.ranks import ExactRank, Rank, RankQuery
from app.domain.shards import player_partition
from app.domain.storage_keys import record_sort_key
from app.domain.submission import PlannedWrite, Submission, plan_board_write
from app.domain.ties import SlotTies
from app.errors import (
    BoardBeingSeeded,
    Contended,
    CountsIncomplete,
    IdempotencyKeyReused,
    InvalidInput,
    PlayerBeingErased,
    Throttled,
    TransactionCancelled,
)
from app.services.policies import RANKING_CHANGE_HOLDER, SubmitPolicy, lets_through
from app.services.ports import (
    RankReader,
    RequestRecord,
    SlotAddress,
    SubmissionState,
    SubmissionStore,
    SubmissionWrite,
)
from app.services.ranking.ranks import rank_many
from app.services.registry import BoardRegistrar
from app.services.submissions.admission import BoardAdmission
from app.services.submissions.in_flight import KeysInFlight, SeenLeases
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


class _GuessedWrong(Exception):
    """The definition a submission started under was a guess, and the read says otherwise."""

    def __init__(self, definition: BoardDefinition) -> None:
        super().__init__("the variant's definition is not the one guessed")
        self.definition = definition


async def submit_score(
    *,
    submissions: SubmissionStore,
    ranks: RankReader,
    registrar: BoardRegistrar,
    in_flight: KeysInFlight,
    leases: SeenLeases,
    policy: SubmitPolicy,
    definition: BoardDefinition,
    client: str,
    idempotency_key: str,
    request_hash: str,
    submission: Submission,
    now_ms: int,
    confirm: Callable[[], Awaitable[BoardDefinition]] | None = None,
    admission: BoardAdmission | None = None,
) -> SubmitResult:
    """Submit one score: three round trips with ``rankDelta``, two without
    (docs/architecture.md walks through every call).

    1. one read of everything the submission decides on (``SubmissionStore.read_submission``):
       the idempotency record, the player's row and the seeding lease of each board, the
       player's erasure mark. A replay, a key reused with another body, a board being seeded, a
       player being erased are answered from it;
    2. with ``rankDelta``, the ranks before and after the move on each board, from the counters
       as they stand (the player's own move is known, so nothing waits for the write);
    3. one transaction (``commit_submission``): the completed record with the response it
       answers, the pointer from the player to it, every board's row conditioned on the version
       read, and their counters. A cancelled transaction (a conflict, or a row changed since it
       was read) is re-read and retried with jittered backoff, bounded; a concurrent request with
       the same key that lands first is replayed. A transaction DynamoDB cancels for throughput
       is not contention: it is answered at once (503, throttled), as is any other throttled
       call.

    All of it lands or none of it does: a request cut short leaves nothing reserved and no board
    written without the others, so its retry is served at once (a replay, if the cut transaction
    landed after all). Within one process, a second request with a key whose first is still
    running is a 409, answered without a call.

    ``confirm``: reads the variant's definition, where this process holds
    none; ``definition`` is then a guess (the default), the read goes out beside the first round
    trip's, and a wrong guess costs one more round trip before anything is written."""
    achieved_ms = _checked_achieved_at(submission, policy, now_ms)
    key = RankKey(submission.score, achieved_ms, submission.player_id, definition.order)
    key.encode()  # refuses anything the index could not order (in either order)
    moment = from_ms(achieved_ms)
    record_id = record_sort_key(client, idempotency_key)

    def writer(rules: BoardDefinition) -> _Writer:
        return _Writer(
            submissions=submissions,
            ranks=ranks,
            registrar=registrar,
            leases=leases,
            policy=policy,
            definition=rules,
            submission=submission,
            achieved_ms=achieved_ms,
            boards=[
                Board(submission.game, submission.variant, Period.containing(kind, moment))
                for kind in rules.periods
            ],
            record_id=record_id,
            request_hash=request_hash,
            now_ms=now_ms,
        )

    async def run(
        rules: BoardDefinition, confirm: Callable[[], Awaitable[BoardDefinition]] | None = None
    ) -> SubmitResult:
        write = writer(rules)
        if admission is None:
            return await write.run(confirm=confirm)
        async with admission.admitted(write.board_ids, shards=rules.shards):
            return await write.run(confirm=confirm)

    with in_flight.claim(record_id):
        if confirm is not None:
            try:
                return await run(definition, confirm)
            except _GuessedWrong as wrong:
                definition = wrong.definition
        return await run(definition)


class _Writer:
    def __init__(
        self,
        *,
        submissions: SubmissionStore,
        ranks: RankReader,
        registrar: BoardRegistrar,
        leases: SeenLeases,
        policy: SubmitPolicy,
        definition: BoardDefinition,
        submission: Submission,
        achieved_ms: int,
        boards: list[Board],
        record_id: str,
        request_hash: str,
        now_ms: int,
    ) -> None:
        self._submissions = submissions
        self._ranks = ranks
        self._registrar = registrar
        self._leases = leases
        self._policy = policy
        self._definition = definition
        self._submission = submission
        self._achieved_ms = achieved_ms
        self._boards = boards
        self._record_id = record_id
        self._request_hash = request_hash
        self._now_ms = now_ms
        # One per request: a resend of the same call (botocore's, after a lost response) is the
        # same request to DynamoDB; another request with the same key never is.
        self._nonce = uuid.uuid4().hex
        # Where the player's row is on each board: the board itself, or on a sharded board the
        # partition their id hashes to (``app.domain.shards``).
        self._rows = {
            board.board_id: player_partition(
                board.board_id, submission.player_id, definition.shards
            )
            for board in boards
        }
        self._expires_at = (now_ms + int(policy.idempotency_ttl.total_seconds() * 1000)) // 1000
        # Where the submitted score lands on each board: its slot's tie grain is read with the
        # state (where the board's value is the submitted score: every board but a running sum).
        submitted = RankKey(submission.score, achieved_ms, submission.player_id, definition.order)
        self._grain_slots = [self._slot(board, submitted) for board in boards]

    @property
    def board_ids(self) -> list[str]:
        return [board.board_id for board in self._boards]

    async def run(
        self, *, confirm: Callable[[], Awaitable[BoardDefinition]] | None = None
    ) -> SubmitResult:
        """``confirm``: the definition this writer's was guessed for, read beside the first read;
        ``_GuessedWrong`` (before anything is written) where it differs."""
        board_ids = [board.board_id for board in self._boards]
        row_ids = list(self._rows.values())
        player = self._submission.player_id
        if not self._registrar.knows(self._boards):
            # A task registers a board before it first reads its lease: a ranking change that
            # finds none of a variant's boards registered knows no task can be writing (decision
            # 0031). A guessed definition is confirmed first: no board of a variant that does not
            # have it (or of one that is refused) is registered.
            if confirm is not None:
                confirmed, confirm = await confirm(), None
                if confirmed != self._definition:
                    raise _GuessedWrong(confirmed)
            await self._registrar.ensure_all(self._boards, retention=self._definition.retention)
        for attempt in range(self._policy.max_attempts):
            await wait_before(
                attempt, base_s=self._policy.backoff_base_s, cap_s=self._policy.backoff_cap_s
            )
            unknown = self._leases.unknown(board_ids)
            reading = self._submissions.read_submission(
                self._record_id,
                player,
                row_ids,
                lease_board_ids=unknown,
                grain_slots=self._grain_slots,
            )
            if confirm is None:
                state = await reading
            else:
                state, confirmed = await asyncio.gather(reading, confirm())
                confirm = None
                if confirmed != self._definition:
                    raise _GuessedWrong(confirmed)
            for board_id in unknown:
                self._leases.remember(board_id, state.leases[board_id])
            replayed = self._answer_from_record(state.record)
            if replayed is not None:
                telemetry.idempotent("replayed")
                return replayed
            self._refuse_held(state)
            rows = {
                board.board_id: state.rows[self._rows[board.board_id]] for board in self._boards
            }
            moves = [(board, self._move(board, rows[board.board_id])) for board in self._boards]
            grains = await self._grains(state, moves)
            planned = [
                self._plan(board, rows[board.board_id], m, grains.get(self._slot(board, m.key)))
                for board, m in moves
            ]
            if self._submission.rank_delta:
                planned = await self._with_ranks(planned)
            outcome = SubmitOutcome(player, [p.outcome for p in planned])
            write = SubmissionWrite(
                record_id=self._record_id,
                request_hash=self._request_hash,
                response_json=outcome.to_json(),
                expires_at=self._expires_at,
                player_id=player,
                boards=tuple(p.write for p in planned),
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
            return SubmitResult(outcome, replayed=False)
        raise Contended(
            "the boards are too contended right now; retry with the same Idempotency-Key",
            retry_after=1,
        )

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
        return (self._rows[board.board_id], *self._policy.layout.fine_of(key.score))

    async def _grains(
        self, state: SubmissionState, moves: list[tuple[Board, Move]]
    ) -> Mapping[SlotAddress, SlotTies]:
        """The tie grains (and cuts) of the slots the moves land in: read with the state, except where the
        move lands elsewhere than the submitted score (a ``sum`` board's new total): one more call
        for those. A player who does not move keeps their row's grain and needs none."""
        asked = set(self._grain_slots)
        missing = [
            slot
            for board, m in moves
            if m.changed and (slot := self._slot(board, m.key)) not in asked
        ]
        if not missing:
            return state.grains
        return {**state.grains, **(await self._submissions.read_grains(missing))}

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
            retention=self._definition.retention,
        )

    async def _with_ranks(self, planned: list[PlannedWrite]) -> list[PlannedWrite]:
        """Add rankBefore/rankAfter where they are exact; leave them out where they are not.
        Asked before the write, of the counters as they stand: after the move the player is at
        ``key``; before it, at ``previous_key`` (nowhere, for a new player)."""
        queries: list[RankQuery] = []
        strong, shards = self._definition.places_fall, self._definition.shards
        for p in planned:
            board_id = p.outcome.board_id
            if p.previous_key is None:
                queries.append(
                    RankQuery(board_id, p.key, on_board=False, tie_mark=p.tie_mark, shards=shards)
                )
            elif p.previous_key == p.key:
                queries.append(
                    RankQuery(
                        board_id,
                        p.key,
                        tie_mark=p.previous_tie_mark,
                        strong=strong,
                        shards=shards,
                    )
                )
            else:
                queries.append(
                    RankQuery(
                        board_id,
                        p.key,
                        counted_at=p.previous_key,
                        tie_mark=p.tie_mark,
                        counted_mark=p.previous_tie_mark,
                        strong=strong,
                        shards=shards,
                    )
                )
                queries.append(
                    RankQuery(
                        board_id,
                        p.previous_key,
                        tie_mark=p.previous_tie_mark,
                        strong=strong,
                        shards=shards,
                    )
                )
        try:
            ranks = await rank_many(
                self._ranks, self._policy.layout, queries, cap=self._policy.rank_cap
            )
        except CountsIncomplete:
            return planned  # a board's counters are part-written: no rank is known, so none is said
        except Throttled as throttled:
            # The rank reads of a hot board met its limits: the score matters more than the ranks
            # around it, so it is written all the same, and no rank is said.
            telemetry.rank_delta_skipped("throttled")
            log.info("rank_delta_skipped", reason="throttled", detail=throttled.detail)
            return planned
        found = iter(ranks)
        ranked = []
        for p in planned:
            after = next(found)
            if p.previous_key is None:
                before: Rank | None = None
            elif p.previous_key == p.key:
                before = after
            else:
                before = next(found)
            ranked.append(
                replace(
                    p,
                    outcome=replace(
                        p.outcome, rank_after=_exact(after), rank_before=_exact(before)
                    ),
                )
            )
        return ranked


def _exact(rank: Rank | None) -> int | None:
    return rank.rank if isinstance(rank, ExactRank) else None


def _checked_achieved_at(submission: Submission, policy: SubmitPolicy, now_ms: int) -> int:
    if submission.achieved_at_ms is None:
        return now_ms
    ahead = submission.achieved_at_ms - now_ms
    if ahead > policy.future_skew.total_seconds() * 1000:
        raise InvalidInput(
            f"achievedAt is {ahead / 1000:.1f} s ahead of the server's clock "
            f"(at most {policy.future_skew.total_seconds():g} s allowed)",
            errors=[{"field": "achievedAt", "message": "in the future"}],
        )
    if -ahead > policy.max_lateness.total_seconds() * 1000:
        raise InvalidInput(
            f"achievedAt is older than the allowed lateness of {policy.max_lateness.total_seconds():g} s",
            errors=[{"field": "achievedAt", "message": "too old"}],
        )
    return submission.achieved_at_ms
