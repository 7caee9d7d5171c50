"""Game servers' scores: every board of a score's period set written exactly once per
Idempotency-Key, in one transaction (``_submit``), with the process's memory of keys in flight,
leases seen, boards registered and board admission."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from app import telemetry
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.storage_keys import record_sort_key
from app.domain.submission import Submission
from app.errors import (
    BoardBusy,
    Conflict,
    Contended,
    LeaderboardError,
    PlayerBanned,
    RequestInFlight,
    Throttled,
    Unavailable,
)
from app.services.memory import Recent
from app.services.policies import SubmitPolicy
from app.services.ports import Stores
from app.services.ranking import Ranking
from app.services.registry import BoardRegistrar
from app.services.rules.held import Definitions
from app.services.submissions._ask import (
    CohortGuessedWrong,
    Placed,
    SubmitAsk,
    remember,
    seated,
)
from app.services.submissions._plan import check_bounds, checked_achieved_at
from app.services.submissions._submit import (
    GuessedWrong,
    SubmitResult,
    request_fingerprint,
    write_submission,
)
from app.services.submissions.admission import BoardAdmission
from app.services.submissions.in_flight import IdempotencyKeysInFlight, SeenLeases

_PLACEMENTS_KEPT = 50_000
"""Placements a task remembers (a few hundred bytes each): its players' of the live periods."""

_COHORT_GUESSES = 8
"""Writes a submission that places its player tries, each after another placement took the seat
it read (each its own full write, with its own retries)."""


class Submissions:
    """Game servers' scores: each submission written once per Idempotency-Key, with the task's
    memory of the keys it is working on, the leases it read lately, the boards it registered and
    how many submissions each board has in flight."""

    def __init__(
        self, stores: Stores, policy: SubmitPolicy, definitions: Definitions, ranking: Ranking
    ) -> None:
        self._stores = stores
        self._policy = policy
        self._definitions = definitions
        self._ranking = ranking
        self._keys_in_flight = IdempotencyKeysInFlight(hold_s=policy.in_flight_s)
        self._seen_leases = SeenLeases(ttl_s=policy.lease_cache_s)
        self._registrar = BoardRegistrar(stores.registry)
        self._placed: Placed = Recent(max_entries=_PLACEMENTS_KEPT)
        self._admission = BoardAdmission(
            per_shard=policy.board_in_flight_per_shard, wait_s=policy.board_wait_s
        )

    async def submit(
        self,
        submission: Submission,
        *,
        client: str,
        idempotency_key: str,
        fields: dict[str, Any],
        now_ms: int,
    ) -> SubmitResult:
        """Submit one round's result for ``client``; ``fields`` is the request as sent (unset
        fields absent), which a reuse of the key must match."""
        try:
            result = await self._submit(
                submission,
                record_sort_key(client, idempotency_key),
                request_fingerprint(client, fields),
                now_ms,
            )
        except LeaderboardError as refused:
            telemetry.submission_answered(refusal(refused))
            raise
        telemetry.submission_answered(
            "replayed"
            if result.replayed
            else "written"
            if any(board.improved for board in result.outcome.boards)
            else "unchanged"
        )
        return result

    async def _submit(
        self, submission: Submission, record_id: str, request_hash: str, now_ms: int
    ) -> SubmitResult:
        achieved_ms = checked_achieved_at(submission, self._policy, now_ms)
        game, variant = submission.game, submission.variant
        definitions = self._definitions
        confirm: Callable[[], Awaitable[BoardDefinition]] | None = None
        if definitions.holds(game, variant) or definitions.default.bounded:
            definition = await definitions.for_submitting(game, variant)
        else:
            # Not held on this task: the default is the likely answer; its read goes out beside
            # the submission's first read instead of before it (where the boards are known). It
            # has no bounds, so a score is never refused on the guess.
            definition = definitions.default
            confirm = functools.partial(definitions.for_submitting, game, variant)
        check_bounds(submission, definition)
        ask = SubmitAsk(submission, definition, achieved_ms, record_id, request_hash, now_ms)
        RankKey(submission.score, achieved_ms, submission.player_id, definition.order).encode()
        with self._keys_in_flight.claim(record_id):
            if confirm is not None:
                try:
                    return await self._write(ask, confirm)
                except GuessedWrong as wrong:
                    # Raised before anything is written: the variant's own bounds judge it now.
                    check_bounds(submission, wrong.definition)
                    ask = replace(ask, definition=wrong.definition)
            return await self._write(ask)

    async def _write(
        self,
        ask: SubmitAsk,
        confirm: Callable[[], Awaitable[BoardDefinition]] | None = None,
    ) -> SubmitResult:
        if ask.definition.cohort_size is None:
            return await self._write_boards(ask, confirm)
        if confirm is not None:  # the cohorts are read by the definition: know it first
            confirmed = await confirm()
            if confirmed != ask.definition:
                raise GuessedWrong(confirmed)
        settle, entrants = self._policy.max_lateness, self._stores.entrants
        seated_ask = await seated(entrants, ask, settle=settle, known=self._placed)
        for _ in range(_COHORT_GUESSES):
            try:
                written = await self._write_boards(seated_ask)
            except CohortGuessedWrong as wrong:
                # A seat taken meanwhile, a league record moved, or a placement remembered and
                # gone (erased): nothing was written. Plan again from what is stored.
                for board in ask.periods:
                    self._placed.forget((ask.submission.player_id, board.board_id))
                if wrong.cohorts is None:
                    seated_ask = await seated(entrants, ask, settle=settle)
                else:
                    seated_ask = replace(seated_ask, cohorts=dict(wrong.cohorts))
            else:
                if not written.replayed:  # a replay's places were not checked: not known
                    remember(self._placed, seated_ask)
                return written
        raise Contended(
            "the board's placements are too contended right now; retry with the same "
            "Idempotency-Key",
            retry_after=1,
        )

    async def _write_boards(
        self,
        ask: SubmitAsk,
        confirm: Callable[[], Awaitable[BoardDefinition]] | None = None,
    ) -> SubmitResult:
        boards = ask.periods
        if not self._registrar.knows(boards):
            # A task registers a board before it first reads its lease: a ranking change that
            # finds none of a variant's boards registered knows no task can be writing (decision
            # 0031). A guessed definition is confirmed first: no board of a variant that does not
            # have it (or of one that is refused) is registered.
            if confirm is not None:
                confirmed, confirm = await confirm(), None
                if confirmed != ask.definition:
                    raise GuessedWrong(confirmed)
            await self._registrar.ensure_all(boards, definition=ask.definition)
        board_ids = [board.board_id for board in ask.boards]
        async with self._admission.admitted(board_ids, shards=ask.definition.shards):
            return await write_submission(
                self._stores, self._policy, self._ranking, self._seen_leases, ask, confirm
            )


REFUSALS: tuple[tuple[type[LeaderboardError], str], ...] = (
    (PlayerBanned, "banned"),
    (RequestInFlight, "in_flight"),
    (BoardBusy, "board_busy"),
    (Throttled, "throttled"),
    (Conflict, "held"),  # a seed, an erasure or a definition change holds the board
    (Contended, "contended"),
    (Unavailable, "unavailable"),
)
"""A refused submission's outcome by its error, the first that matches; any other is
``invalid``."""


def refusal(error: LeaderboardError) -> str:
    """A refused submission's outcome, as ``telemetry.SUBMISSIONS`` counts it."""
    return next((outcome for kind, outcome in REFUSALS if isinstance(error, kind)), "invalid")


__all__ = ["REFUSALS", "Submissions", "SubmitResult", "refusal"]
