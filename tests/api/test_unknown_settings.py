"""The service's start-up (its lifespan) warns of a ``LEADERBOARD_`` variable that is no setting,
naming the setting it most resembles and never its value."""

from __future__ import annotations

import pytest
import structlog

from app.settings import Settings
from tests.conftest import serve

MARKER = "value-marker-5e2b"


async def test_start_up_names_a_misspelled_setting(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEADERBOARD_REQUEST_DEADLINE_SECOND", MARKER)
    with structlog.testing.capture_logs() as logs:
        async with serve(settings):
            pass
    (warning,) = [entry for entry in logs if entry["event"] == "unknown_setting"]
    assert warning["variable"] == "LEADERBOARD_REQUEST_DEADLINE_SECOND"
    assert warning["suggestion"] == "LEADERBOARD_REQUEST_DEADLINE_SECONDS"
    assert MARKER not in str(logs)
