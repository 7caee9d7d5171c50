"""How /metrics names a refused submission's outcome (``leaderboard_submissions_total``): each
refusal the use case raises has its own, and nothing new falls into ``invalid`` unnoticed."""

from __future__ import annotations

import pytest

from app import telemetry
from app.errors import (
    BoardBeingSeeded,
    BoardBusy,
    Contended,
    IdempotencyKeyReused,
    InvalidInput,
    LeaderboardError,
    PlayerBeingErased,
    RequestInFlight,
    Throttled,
    Unavailable,
)
from app.services.submissions import refusal


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (RequestInFlight("in flight"), "in_flight"),
        (BoardBusy("busy", retry_after=1), "board_busy"),
        (Throttled("throttled"), "throttled"),
        (Contended("contended", retry_after=1), "contended"),
        (Unavailable("down"), "unavailable"),
        (BoardBeingSeeded("seeding"), "held"),
        (PlayerBeingErased("erasing"), "held"),
        (InvalidInput("bad"), "invalid"),
        (IdempotencyKeyReused("reused"), "invalid"),
    ],
)
def test_each_refusal_has_its_outcome(error: LeaderboardError, outcome: str) -> None:
    assert refusal(error) == outcome
    assert outcome in telemetry.SUBMISSION_OUTCOMES
