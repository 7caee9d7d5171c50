"""Submitting a score: reserve the Idempotency-Key, fan out to the boards, store the outcome.

The reservation and the per-board reads go out together; then one transaction per board (with
jittered, bounded retries on cancellation); then, optionally, the ranks; then the stored outcome.
A retry of a request that was cut short finds, on each row it already wrote, the request's id and
what it found there, and reports that instead of writing again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import uuid
from dataclasses import dataclass, replace
from typing import Any

import structlog

from app.domain.clock import from_ms
from app.domain.keys import RankKey
from app.domain.models import (
    BoardOutcome,
    CounterDelta,
    Entry,
    LastWrite,
    Standing,
    StandingWrite,
    SubmitOutcome,
)
from app.domain.periods import Board, Period
from app.domain.ranks import ExactRank
from app.errors import (
    BoardBeingSeeded,
    ConditionFailed,
    IdempotencyKeyReused,
    InvalidInput,
    LeaderboardError,
    RequestInFlight,
    TransactionCancelled,
    Unavailable,
)
from app.services.fanout import all_or_none
from app.services.policies import SubmitPolicy
from app.services.ports import (
    COMPLETED,
    ERASED,
    Lease,
    LeaseStore,
    RankReader,
    RequestRecord,
    RequestStore,
    StandingStore,
)
from app.services.rank import RankQuery, rank_of
from app.services.registry import BoardRegistrar

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Submission:
    player_id: str
    score: int
    game: str
    variant: str
    achieved_at_ms: int | None = None
    display_name: str | None = None
    country: str | None = None
    context_json: str | None = None
    rank_delta: bool = True


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


async def submit_score(
    *,
    requests: RequestStore,
    standings: StandingStore,
    leases: LeaseStore,
    ranks: RankReader,
    registrar: BoardRegistrar,
    policy: SubmitPolicy,
    client: str,
    idempotency_key: str,
    request_hash: str,
    submission: Submission,
    now_ms: int,
) -> SubmitResult:
    """Submit one score to every board of its period set, exactly once per Idempotency-Key.

    Round trips: the reservation and every board's row and lease read together; then every board's
    transaction with the erasure pointer and the board registration; then, with ``rank_delta``, the
    ranks; then the stored outcome (docs/architecture.md walks through each call)."""
    achieved_ms = _checked_achieved_at(submission, policy, now_ms)
    key = RankKey(submission.score, achieved_ms, submission.player_id)
    key.encode()  # refuses anything the index could not order
    moment = from_ms(achieved_ms)
    boards = [
        Board(submission.game, submission.variant, Period.containing(kind, moment))
        for kind in policy.periods
    ]
    record_id = f"idem#{client}#{idempotency_key}"
    owner = uuid.uuid4().hex
    expires_at = (now_ms + int(policy.idempotency_ttl.total_seconds() * 1000)) // 1000
    reserve = requests.reserve_request(
        record_id,
        request_hash=request_hash,
        owner=owner,
        deadline_ms=now_ms + int(policy.in_progress_for.total_seconds() * 1000),
        now_ms=now_ms,
        expires_at=expires_at,
    )
    player = submission.player_id
    reserved, read = await asyncio.gather(
        reserve,
        _first_reads(standings, leases, boards, player),
        return_exceptions=True,
    )
    # When the first round fails, the key is this request's (or may be: a failed reservation can
    # have landed): free it, so the retry the 503 asks for is served instead of told to wait.
    if isinstance(reserved, BaseException):
        await _release_quietly(requests, record_id, owner)
        raise reserved
    if isinstance(read, BaseException):
        if reserved is None:
            await _release_quietly(requests, record_id, owner)
        raise read
    if reserved is not None:
        return _answer_from_record(reserved, request_hash=request_hash, now_ms=now_ms)
    rows, board_leases = read

    # What a row remembers of the request that last wrote it: this key and this body, so a retry of
    # this request is recognised and the same body under another key is a new submission.
    request_id = hashlib.sha256(f"{record_id}|{request_hash}".encode()).hexdigest()[:32]
    writer = _BoardWriter(standings, ranks, policy, submission, key, request_id, owner, now_ms)
    try:
        _refuse_seeded_boards(boards, board_leases, now_ms)
        written: list[Any] = await all_or_none(
            all_or_none(*(writer.apply(b, row) for b, row in zip(boards, rows, strict=True))),
            requests.note_request(submission.player_id, record_id, expires_at=expires_at),
            _register_quietly(registrar, boards),
        )
        outcomes: list[_Applied] = written[0]
        if submission.rank_delta:
            outcomes = list(await all_or_none(*(writer.with_ranks(o) for o in outcomes)))
    except LeaderboardError:
        await _release_quietly(requests, record_id, owner)
        raise
    outcome = SubmitOutcome(submission.player_id, [o.outcome for o in outcomes])
    try:
        await requests.complete_request(
            record_id, owner=owner, response_json=outcome_json(outcome), expires_at=expires_at
        )
    except ConditionFailed:
        # Taken over meanwhile (this request outlived its in-progress deadline), or the player was
        # erased: the boards are written; the record is not this request's to fill any more.
        log.warning("outcome_not_stored", record="taken over or erased")
    return SubmitResult(outcome, replayed=False)


def _answer_from_record(found: RequestRecord, *, request_hash: str, now_ms: int) -> SubmitResult:
    """A reservation refused: replay the stored outcome, or say why not."""
    if found.status == ERASED:
        raise IdempotencyKeyReused(
            "this Idempotency-Key belonged to a player who was erased; use a new key"
        )
    if found.status == COMPLETED and found.request_hash == request_hash and found.response_json:
        return SubmitResult(outcome_from_json(found.response_json), replayed=True)
    if found.request_hash and found.request_hash != request_hash:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was used with a different request; use a new key"
        )
    wait_s = max(1, -(-(found.deadline_ms - now_ms) // 1000))
    raise RequestInFlight(
        "a request with this Idempotency-Key is still being processed; retry later",
        retry_after=wait_s,
    )


async def _first_reads(
    standings: StandingStore, leases: LeaseStore, boards: list[Board], player: str
) -> tuple[list[Standing | None], list[Lease | None]]:
    """The player's row on each board and each board's seeding lease, all at once."""
    found: list[Any] = await all_or_none(
        *(standings.read_standing(b.board_id, player) for b in boards),
        *(leases.read_lease(b.board_id) for b in boards),
    )
    return found[: len(boards)], found[len(boards) :]


async def _register_quietly(registrar: BoardRegistrar, boards: list[Board]) -> None:
    """Make the boards findable by the closed-period snapshot job (a conditional put the first time
    this process sees a board). The scores do not depend on it: a failure is logged, and the next
    submission to the board tries again."""
    try:
        await registrar.ensure_all(boards)
    except LeaderboardError as exc:
        log.warning("board_registration_failed", detail=exc.detail)


async def _release_quietly(requests: RequestStore, record_id: str, owner: str) -> None:
    """Free this request's key if DynamoDB lets us now; if not, its in-progress deadline will, and
    the client hears of the failure that brought us here, not of this one."""
    try:
        await requests.release_request(record_id, owner=owner)
    except LeaderboardError as exc:
        log.warning("key_not_released", reason=type(exc).__name__)


def _refuse_seeded_boards(boards: list[Board], leases: list[Lease | None], now_ms: int) -> None:
    """A seeding lease holds a board: refuse before anything is written. The seeder waits out the
    submissions that read no lease before it writes, and rebuilds the counters when done."""
    for board, lease in zip(boards, leases, strict=True):
        if lease is not None and lease.is_live(now_ms / 1000):
            raise BoardBeingSeeded(
                f"board {board.board_id} is being seeded; retry shortly",
                retry_after=max(1, min(60, lease.expires_at - now_ms // 1000)),
            )


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


@dataclass(frozen=True)
class _Applied:
    outcome: BoardOutcome
    key: RankKey
    previous_key: RankKey | None


class _BoardWriter:
    def __init__(
        self,
        standings: StandingStore,
        ranks: RankReader,
        policy: SubmitPolicy,
        submission: Submission,
        key: RankKey,
        request_id: str,
        owner: str,
        now_ms: int,
    ) -> None:
        self._standings = standings
        self._ranks = ranks
        self._policy = policy
        self._submission = submission
        self._key = key
        self._request_id = request_id
        self._owner = owner
        self._now_ms = now_ms

    async def apply(self, board: Board, standing: Standing | None) -> _Applied:
        """Write one board, re-reading and retrying (bounded, jittered) when cancelled."""
        board_id = board.board_id
        for attempt in range(self._policy.max_attempts):
            if attempt:
                delay = min(self._policy.backoff_cap_s, self._policy.backoff_base_s * 2**attempt)
                await asyncio.sleep(random.uniform(0, delay))
                standing = await self._standings.read_standing(board_id, self._submission.player_id)
            done = self._already_applied(board, standing)
            if done is not None:
                return done
            write, applied = self._plan(board, standing)
            try:
                await self._standings.write_standing(
                    write, token=self._token(board_id, standing, attempt)
                )
            except TransactionCancelled as cancelled:
                log.info(
                    "transaction_cancelled",
                    board=board_id,
                    attempt=attempt + 1,
                    reason=cancelled.kind,
                )
            else:
                return applied
        raise Unavailable(
            f"board {board_id} is too contended right now; retry with the same Idempotency-Key",
            retry_after=1,
        )

    def _token(self, board_id: str, standing: Standing | None, attempt: int) -> str:
        """The same owner, board, state read and attempt: the same call, which DynamoDB applies
        once however often botocore resends it. A retry after a re-read is a new request even when
        the state read is unchanged (its counter shard differs), and so is a takeover (new owner)."""
        state = "none" if standing is None else f"{standing.version}"
        digest = hashlib.sha256(f"{self._owner}|{board_id}|{state}|{attempt}".encode()).hexdigest()
        return digest[:36]

    def _already_applied(self, board: Board, standing: Standing | None) -> _Applied | None:
        if standing is None or standing.last_write is None:
            return None
        if standing.last_write.request_id != self._request_id:
            return None
        last = standing.last_write
        return _Applied(
            BoardOutcome(
                board.board_id,
                board.period.display,
                standing.entry.score,
                last.previous_best,
                last.improved,
            ),
            standing.entry.key,
            # The key before an improvement is gone from the row, so its rank cannot be asked.
            None if last.improved else standing.entry.key,
        )

    def _plan(self, board: Board, standing: Standing | None) -> tuple[StandingWrite, _Applied]:
        layout = self._policy.layout
        sub = self._submission
        new = self._key
        expires = board.period.expires_at(self._policy.retention)
        expires_s = None if expires is None else int(expires.timestamp())
        if standing is None:
            improved, previous_best, key = True, None, new
            counters: tuple[CounterDelta, ...] = (CounterDelta(*layout.fine_of(new.score), 1),)
            entry = Entry(new, sub.display_name, sub.country, self._now_ms)
        else:
            old = standing.entry
            previous_best = old.score
            improved = new.order < old.key.order
            last_played = max(self._now_ms, old.last_played_at_ms or 0)
            if improved:
                key = new
                counters = (
                    CounterDelta(*layout.fine_of(old.score), -1),
                    CounterDelta(*layout.fine_of(new.score), 1),
                )
                entry = Entry(
                    new,
                    sub.display_name if sub.display_name is not None else old.display_name,
                    sub.country if sub.country is not None else old.country,
                    last_played,
                )
            else:
                key, counters = old.key, ()
                entry = replace(old, last_played_at_ms=last_played)
        row = Standing(
            board_id=board.board_id,
            entry=entry,
            version=(standing.version + 1) if standing else 1,
            last_write=LastWrite(self._request_id, previous_best, improved),
            expires_at=expires_s,
        )
        write = StandingWrite(
            board_id=board.board_id,
            standing=row,
            expected_version=None if standing is None else standing.version,
            counters=counters,
            context_json=sub.context_json if improved else None,
            expires_at=expires_s,
        )
        outcome = BoardOutcome(
            board.board_id, board.period.display, key.score, previous_best, improved
        )
        return write, _Applied(outcome, key, None if standing is None else standing.entry.key)

    async def with_ranks(self, applied: _Applied) -> _Applied:
        """Add rankBefore/rankAfter where they are exact; leave them out where they are not."""
        board_id = applied.outcome.board_id
        cap, layout = self._policy.rank_cap, self._policy.layout
        after_q = rank_of(self._ranks, layout, RankQuery(board_id, applied.key), cap=cap)
        if applied.previous_key is None or applied.previous_key == applied.key:
            after = await after_q
            before = after if applied.previous_key is not None else None
        else:
            before_q = rank_of(
                self._ranks,
                layout,
                RankQuery(board_id, applied.previous_key, counted_at=applied.key),
                cap=cap,
            )
            after, before = await asyncio.gather(after_q, before_q)
        outcome = replace(
            applied.outcome,
            rank_after=after.rank if isinstance(after, ExactRank) else None,
            rank_before=before.rank if isinstance(before, ExactRank) else None,
        )
        return replace(applied, outcome=outcome)


def outcome_json(outcome: SubmitOutcome) -> str:
    """The outcome as stored on the idempotency record (and read by erasure: ``playerId``). The
    stored form is the response body as first served, so a replay answers the same bytes' worth."""
    boards = []
    for board in outcome.boards:
        stored: dict[str, Any] = {
            "leaderboardId": board.board_id,
            "period": board.period,
            "best": board.best,
            "previousBest": board.previous_best,
            "improved": board.improved,
        }
        if board.rank_before is not None:
            stored["rankBefore"] = board.rank_before
        if board.rank_after is not None:
            stored["rankAfter"] = board.rank_after
        boards.append(stored)
    return json.dumps({"playerId": outcome.player_id, "boards": boards}, separators=(",", ":"))


def outcome_from_json(text: str) -> SubmitOutcome:
    stored = json.loads(text)
    return SubmitOutcome(
        stored["playerId"],
        [
            BoardOutcome(
                board_id=board["leaderboardId"],
                period=board["period"],
                best=board["best"],
                previous_best=board["previousBest"],
                improved=board["improved"],
                rank_before=board.get("rankBefore"),
                rank_after=board.get("rankAfter"),
            )
            for board in stored["boards"]
        ],
    )
