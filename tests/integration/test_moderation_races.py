"""Moderation racing the writes around it, each race run at a chosen point, deterministically
(decision 0036): a submission landing at each point of a hide (before the record: the API tests;
between the record and the sweep; read before the record and written after the sweep, on a row
there and on a new one), a restore racing a reconcile (at its listing read and between its
passes), a void racing an improvement. After each, every board's counters count exactly its
visible rows, and every visible player's rank is exact."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from app.domain.definitions import BoardDefinition
from app.domain.moderation import Action
from app.domain.periods import Board, Period, PeriodKind
from app.domain.submission import Submission
from app.services.operations import ModerateAsk, Operations
from app.services.operations._moderation import sweep_again
from app.services.ports import Stores
from app.services.submissions import Submissions
from tests.api.test_moderation import SCORES, board_ids, fill, top
from tests.conftest import Service
from tests.support import assert_counts_agree, now_ms, operations, submit

DEFINITION = BoardDefinition()


class Hooked:
    """A port whose first call of ``method`` runs ``before`` first (a race, at that point)."""

    def __init__(self, inner: object, method: str, before: Callable[[], Awaitable[None]]) -> None:
        self._inner, self._method, self._before = inner, method, before
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._inner, name)
        if name != self._method or self.fired:
            return target

        async def hooked(*args: Any, **kwargs: Any) -> Any:
            self.fired = True
            await self._before()
            return await target(*args, **kwargs)

        return hooked


def hooked(stores: Stores, port: str, method: str, before: Callable[[], Awaitable[None]]) -> Stores:
    return replace(stores, **{port: cast("Any", Hooked(getattr(stores, port), method, before))})


def ask(player: str, action: Action | None = Action.HIDE) -> ModerateAsk:
    return ModerateAsk(player, "trivia", action, "race", "ops", datetime.now(UTC))


@pytest.fixture
async def ops(service: Service) -> AsyncIterator[Callable[..., Operations]]:
    """``Operations`` over stores of a test's making; their later passes stopped at the end."""
    made: list[Operations] = []

    def make(stores: Stores, **policies: Any) -> Operations:
        made.append(operations(service.runtime, stores=stores, **policies))
        return made[-1]

    yield make
    for each in made:
        await each.close()


async def assert_shows(service: Service, expected: list[str], variant: str = "classic") -> None:
    for period in ("alltime", "day", "week"):
        page = await top(service.http, period, variant)
        assert [e["playerId"] for e in page["entries"]] == expected, period
        assert page["playerCount"] == len(expected)
        for place, player in enumerate(expected, start=1):
            found = await service.http.get(
                f"/v1/leaderboards/trivia/{variant}/{period}/players/{player}"
            )
            assert found.json()["rank"]["rank"] == place


async def test_a_submission_between_the_record_and_the_sweep_is_written_hidden(
    service: Service, ops: Callable[..., Operations]
) -> None:
    at = now_ms() - 60_000
    await fill(service.http, SCORES, at)
    answers = []

    async def lands() -> None:
        answers.append(await submit(service.http, player="bob", score=950, achieved_ms=at + 50))

    stores = hooked(service.runtime.stores, "moderation", "rows_in_game", lands)
    await ops(stores).moderate(ask("bob"))
    assert answers[0].status_code == 200, answers[0].text
    assert {b["best"] for b in answers[0].json()["boards"]} == {950}
    await assert_shows(service, ["ann", "cat", "dan", "eve"])
    await assert_counts_agree(service.runtime, *board_ids(at))
    restored = await ops(service.runtime.stores).restore(ask("bob", None))
    assert restored.rows == 3
    await assert_shows(service, ["bob", "ann", "cat", "dan", "eve"])
    await assert_counts_agree(service.runtime, *board_ids(at))


def _submissions(service: Service, stores: Stores) -> Submissions:
    runtime = service.runtime
    return Submissions(
        stores, runtime.policies.submit, runtime.definitions, runtime.leaderboard.ranking
    )


async def _paused_submission(
    service: Service, variant: str, score: int, at_ms: int
) -> tuple[asyncio.Task[Any], asyncio.Event, asyncio.Event]:
    """A submission of bob's that has read its state and waits, before its transaction, for
    ``go``; ``reached`` is set once it waits."""
    reached, go = asyncio.Event(), asyncio.Event()

    async def wait() -> None:
        reached.set()
        await go.wait()

    stores = hooked(service.runtime.stores, "submissions", "commit_submission", wait)
    submission = Submission("bob", score, "trivia", variant, achieved_at_ms=at_ms)
    task = asyncio.ensure_future(
        _submissions(service, stores).submit(
            submission,
            client="trivia-server",
            idempotency_key=uuid.uuid4().hex,
            fields={"playerId": "bob", "score": score, "variant": variant},
            now_ms=now_ms(),
        )
    )
    await asyncio.wait_for(reached.wait(), 10)
    return task, reached, go


async def test_a_submission_read_before_the_record_and_written_after_the_sweep(
    service: Service, ops: Callable[..., Operations]
) -> None:
    at = now_ms() - 60_000
    await fill(service.http, SCORES, at)
    task, _, go = await _paused_submission(service, "classic", 950, at + 50)
    await ops(service.runtime.stores).moderate(ask("bob"))
    go.set()
    result = await task
    assert {b.best for b in result.outcome.boards} == {950}
    # Its transaction was conditioned on the rows the sweep changed: read again, written hidden.
    await assert_shows(service, ["ann", "cat", "dan", "eve"])
    await assert_counts_agree(service.runtime, *board_ids(at))


async def test_a_new_row_written_after_the_sweep_is_hidden_by_the_later_pass(
    service: Service, ops: Callable[..., Operations]
) -> None:
    at = now_ms() - 60_000
    await fill(service.http, SCORES, at)
    task, _, go = await _paused_submission(service, "blitz", 7, at + 50)
    record = await ops(service.runtime.stores).moderate(ask("bob"))
    go.set()
    await task
    # No row was there for the sweep to hide, nor for the submission's condition to see: the
    # one window the decision leaves, which the later pass (or the reconciler) closes.
    assert [e["playerId"] for e in (await top(service.http, "alltime", "blitz"))["entries"]] == [
        "bob"
    ]
    await assert_counts_agree(service.runtime, *board_ids(at, "blitz"))
    layout = service.runtime.policies.layout
    hidden = await sweep_again(service.runtime.stores, layout, record, datetime.now(UTC))
    assert hidden == 3
    await assert_shows(service, [], variant="blitz")
    await assert_shows(service, ["ann", "cat", "dan", "eve"])
    await assert_counts_agree(service.runtime, *board_ids(at), *board_ids(at, "blitz"))


async def test_a_restore_after_the_reconciler_read_the_listing_is_not_undone(
    service: Service, ops: Callable[..., Operations]
) -> None:
    at = now_ms() - 60_000
    await fill(service.http, SCORES, at)
    await ops(service.runtime.stores).moderate(ask("bob"))
    board = Board("trivia", "classic", Period(PeriodKind.ALLTIME))

    async def restores() -> None:
        await ops(service.runtime.stores).restore(ask("bob", None))

    stores = hooked(service.runtime.stores, "moderation", "read_row", restores)
    report = await ops(stores).reconcile(board, DEFINITION, apply=True)
    # The reconciler met bob visible (restored), after reading him in the listing: its hide
    # checks the record in the same transaction, and finds it gone.
    assert report.moderated_rows == 0
    assert report.differences == []
    await assert_shows(service, ["ann", "bob", "cat", "dan", "eve"])
    await assert_counts_agree(service.runtime, *board_ids(at))


async def test_a_restore_between_the_reconciler_s_passes(
    service: Service, ops: Callable[..., Operations]
) -> None:
    at = now_ms() - 60_000
    await fill(service.http, SCORES, at)
    await ops(service.runtime.stores).moderate(ask("bob"))
    board = Board("trivia", "classic", Period(PeriodKind.ALLTIME))

    async def restores() -> None:
        await ops(service.runtime.stores).restore(ask("bob", None))

    stores = hooked(service.runtime.stores, "counters", "read_counters", restores)
    report = await ops(stores).reconcile(board, DEFINITION, apply=True)
    assert report.repaired == []  # the passes disagree where bob came back: nothing repaired
    again = await ops(service.runtime.stores).reconcile(board, DEFINITION, apply=False)
    assert again.differences == []
    await assert_shows(service, ["ann", "bob", "cat", "dan", "eve"])
    await assert_counts_agree(service.runtime, *board_ids(at))


async def test_a_void_racing_an_improvement(
    service: Service, ops: Callable[..., Operations]
) -> None:
    at = now_ms() - 60_000
    await fill(service.http, SCORES, at)
    board = Board("trivia", "classic", Period(PeriodKind.ALLTIME))

    async def improves() -> None:
        improved = await submit(service.http, player="bob", score=950, achieved_ms=at + 50)
        assert improved.status_code == 200

    stores = hooked(service.runtime.stores, "standings", "delete_standing", improves)
    voided = await ops(stores).void(board, DEFINITION, ask("bob", None))
    # The delete was conditioned on the row it read; read again, it took the improved entry
    # with the counters it is in.
    assert voided.score == 950
    page = await top(service.http, "alltime")
    assert [e["playerId"] for e in page["entries"]] == ["ann", "cat", "dan", "eve"]
    assert page["playerCount"] == 4
    await assert_counts_agree(service.runtime, *board_ids(at))
    day = await top(service.http, "day")
    assert [e["playerId"] for e in day["entries"]][:2] == ["bob", "ann"]


async def test_the_task_that_hid_the_player_runs_the_later_pass_itself(
    service: Service, ops: Callable[..., Operations]
) -> None:
    at = now_ms() - 60_000
    await fill(service.http, SCORES, at)
    task, _, go = await _paused_submission(service, "blitz", 7, at + 50)
    await ops(service.runtime.stores, sweep_again_s=1.0).moderate(ask("bob"))
    go.set()
    await task
    assert (await top(service.http, "alltime", "blitz"))["playerCount"] == 1
    moderation = service.runtime.stores.moderation
    for _ in range(100):  # due a second after the hide: on a busy machine, a little later
        await asyncio.sleep(0.1)
        found = await moderation.moderation_of("bob", "trivia")
        assert found is not None
        if found.sweep_again_ms is None:  # cleared once the pass is done
            break
    await assert_shows(service, [], variant="blitz")
    await assert_counts_agree(service.runtime, *board_ids(at, "blitz"))
