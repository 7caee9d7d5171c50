"""The submission use case as the service holds it: ``submit_score`` over its ports, policy and
the process's memory of keys in flight, leases seen and boards registered."""

from __future__ import annotations

import functools
from typing import Any

from app import telemetry
from app.domain.submission import Submission
from app.errors import (
    BoardBusy,
    Conflict,
    Contended,
    LeaderboardError,
    RequestInFlight,
    Throttled,
    Unavailable,
)
from app.services.policies import SubmitPolicy
from app.services.ports import RankReader, SubmissionStore
from app.services.registry import BoardRegistrar
from app.services.rules.held import Definitions
from app.services.submissions._submit import SubmitResult, request_fingerprint, submit_score
from app.services.submissions.admission import BoardAdmission
from app.services.submissions.in_flight import KeysInFlight, SeenLeases


class Submissions:
    def __init__(
        self,
        *,
        store: SubmissionStore,
        ranks: RankReader,
        definitions: Definitions,
        registrar: BoardRegistrar,
        keys_in_flight: KeysInFlight,
        seen_leases: SeenLeases,
        policy: SubmitPolicy,
        admission: BoardAdmission | None = None,
    ) -> None:
        self._store = store
        self._ranks = ranks
        self._definitions = definitions
        self._registrar = registrar
        self._keys_in_flight = keys_in_flight
        self._seen_leases = seen_leases
        self._policy = policy
        self._admission = admission or BoardAdmission(per_shard=0, wait_s=0)

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
        game, variant = submission.game, submission.variant
        definitions = self._definitions
        if definitions.holds(game, variant):
            definition, confirm = await definitions.for_submitting(game, variant), None
        else:
            # Never seen on this task: the default is the likely answer; the read of the
            # definition goes out beside the submission's first read instead of before it.
            definition = definitions.default
            confirm = functools.partial(definitions.for_submitting, game, variant)
        try:
            result = await submit_score(
                submissions=self._store,
                ranks=self._ranks,
                registrar=self._registrar,
                in_flight=self._keys_in_flight,
                leases=self._seen_leases,
                policy=self._policy,
                definition=definition,
                client=client,
                idempotency_key=idempotency_key,
                request_hash=request_fingerprint(client, fields),
                submission=submission,
                now_ms=now_ms,
                confirm=confirm,
                admission=self._admission,
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


REFUSALS: tuple[tuple[type[LeaderboardError], str], ...] = (
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
