"""Hypothesis state machines: submissions, reads and erasures against an in-memory model of the
board's rule, for each order and operator a board may be defined with; the board order, ranks,
playerCount and counters must always agree. The second machine submits through injected DynamoDB
faults (conflicts, throttles, lost responses after commit) and retries a 503 with the same
Idempotency-Key, as a client would: each board must still agree (a ``sum`` adds exactly once). The
third runs through every fault of the faithful run at once, RankIndex lagging: what is read
strongly agrees exactly, and ranks read within the lag agree within the bound docs/ranking.md
states."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from contextlib import AsyncExitStack
from dataclasses import replace
from typing import Any, ClassVar

import httpx
import pytest
from botocore.retries.standard import ExponentialBackoff
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from app.bootstrap import open_runtime
from app.domain.clock import from_ms
from app.domain.periods import Board, Period, PeriodKind
from app.domain.shards import partition_ids
from app.store.tables import TableNames
from app.telemetry import REGISTRY
from tests.conftest import ADMIN_KEY, Service, make_settings, serve
from tests.faults import (
    MODERATE,
    Faithful,
    Faults,
    conflict_on_row,
    fail_first,
    faithful,
    install,
    throttled,
)
from tests.support import counter_total, now_ms, submit

BOARD = "trivia#classic#alltime"
PLAYERS = st.sampled_from([f"p{i}" for i in range(6)])
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
RULES = list(itertools.product(["desc", "asc"], ["best", "latest", "sum"]))


class Model:
    """What a board of ``order`` and ``operator`` holds, written from docs/boards.md's
    words, not from the service's code: each player's (value, time it was reached)."""

    def __init__(self, order: str, operator: str) -> None:
        self.order_by, self.operator = order, operator
        self.values: dict[str, tuple[int, int]] = {}

    def submit(self, player: str, score: int, achieved: int) -> bool:
        """Apply a submission; whether it changed the player's value (or put them on)."""
        old = self.values.get(player)
        if old is None:
            self.values[player] = (score, achieved)
            return True
        if self.operator == "best":
            sign = 1 if self.order_by == "asc" else -1
            changed = (sign * score, achieved) < (sign * old[0], old[1])
            new = (score, achieved)
        elif self.operator == "latest":
            changed, new = achieved > old[1], (score, achieved)
        else:  # a total reached by this increment; its time never goes back
            changed, new = score != 0, (old[0] + score, max(old[1], achieved))
        if changed:
            self.values[player] = new
        return changed

    def ranked(self) -> list[str]:
        sign = 1 if self.order_by == "asc" else -1
        return sorted(self.values, key=lambda p: (sign * self.values[p][0], self.values[p][1], p))

    def __contains__(self, player: str) -> bool:
        return player in self.values

    def __len__(self) -> int:
        return len(self.values)

    def pop(self, player: str) -> None:
        self.values.pop(player, None)

    def value(self, player: str) -> int:
        return self.values[player][0]


class BoardMachine(RuleBasedStateMachine):
    endpoint = ""
    periods: ClassVar[list[str]] = ["alltime"]
    board_rules: ClassVar[tuple[str, str]] = ("desc", "best")
    shards: ClassVar[int] = 1
    settings_given: ClassVar[dict[str, object]] = {}

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.stack = AsyncExitStack()
        self.base = now_ms() - 600_000
        self.model = Model(*self.board_rules)
        tables = TableNames(f"model-{uuid.uuid4().hex[:8]}", f"model-snap-{uuid.uuid4().hex[:8]}")
        self.service: Service = self.run(self._open(tables))

    def run(self, coroutine: Any) -> Any:
        return self.runner.run(coroutine)

    async def _open(self, tables: TableNames) -> Service:
        settings_ = make_settings(
            self.endpoint, tables, periods=self.periods, **self.settings_given
        )
        self.runtime = await self.stack.enter_async_context(
            open_runtime(settings_, create_tables=True)
        )
        self.tables = tables
        service: Service = await self.stack.enter_async_context(serve(settings_))
        order, operator = self.board_rules
        defined = await service.http.put(
            "/v1/games/trivia/variants/classic",
            json={
                "order": order,
                "operator": operator,
                "periods": self.periods,
                "shards": self.shards,
            },
            headers=ADMIN,
        )
        assert defined.status_code == 200, defined.text
        return service

    def teardown(self) -> None:
        async def close() -> None:
            try:
                for name in (self.tables.scores, self.tables.snapshots):
                    await self.runtime.client.delete_table(TableName=name)
            finally:  # the clients close even when dropping the tables fails
                await self.stack.aclose()

        self.run(close())
        self.runner.close()

    def order(self) -> list[str]:
        return self.model.ranked()

    @rule(player=PLAYERS, score=st.integers(0, 30), offset=st.integers(0, 3))
    def submit_score(self, player: str, score: int, offset: int) -> None:
        achieved = self.base + offset
        response = self.run(
            submit(self.service.http, player=player, score=score, achieved_ms=achieved)
        )
        assert response.status_code == 200, response.text
        self.accepted(response.json(), player, score, achieved)

    def accepted(
        self,
        document: dict[str, Any],
        player: str,
        score: int,
        achieved: int,
        asked_at: float | None = None,
        *,
        ranked: bool = True,
    ) -> None:
        """An accepted submission's outcome on every board, and the model after it (``asked_at``:
        when its request was sent, for machines whose ranks may trail it). ``ranked`` false: its
        rank reads were throttled, so it says no rank."""
        old = self.model.value(player) if player in self.model else None
        changed = self.model.submit(player, score, achieved)
        for board in document["boards"]:
            assert board["improved"] == changed
            assert board["previousBest"] == old
            assert board["best"] == self.model.value(player)
            if ranked:
                assert board["rankAfter"] == self.order().index(player) + 1
            else:
                assert board.get("rankAfter") is None

    @rule(player=PLAYERS)
    def read_rank(self, player: str) -> None:
        response = self.run(
            self.service.http.get(f"/v1/leaderboards/trivia/classic/alltime/players/{player}")
        )
        if player not in self.model:
            assert response.status_code == 404
            return
        rank = response.json()["rank"]
        assert rank["kind"] == "exact"
        assert rank["rank"] == self.order().index(player) + 1

    @rule(player=PLAYERS)
    def erase(self, player: str) -> None:
        response = self.run(
            self.service.http.delete(
                f"/v1/players/{player}", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
            )
        )
        assert response.status_code == 200, response.text
        removed = len(self.periods) if player in self.model else 0
        assert response.json()["removed"]["boards"] == removed
        self.model.pop(player)

    @invariant()
    def board_agrees_with_the_model(self) -> None:
        page = self.run(self.service.http.get("/v1/leaderboards/trivia/classic/alltime?limit=100"))
        body = page.json()
        assert [e["playerId"] for e in body["entries"]] == self.order()
        assert [e["rank"] for e in body["entries"]] == list(range(1, len(self.model) + 1))
        assert [e["score"] for e in body["entries"]] == [self.model.value(p) for p in self.order()]
        assert body["playerCount"] == len(self.model)
        assert self.run(counter_total(self.runtime, BOARD)) == (len(self.model), len(self.model))


def run_machine(
    machine: type[BoardMachine],
    endpoint: str,
    *,
    rules: tuple[str, str],
    examples: int,
    steps: int,
) -> None:
    # A subclass per run: the machine's class attributes are its configuration.
    configured = type(machine.__name__, (machine,), {"endpoint": endpoint, "board_rules": rules})
    run_state_machine_as_test(  # type: ignore[no-untyped-call]
        configured,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )


@pytest.mark.parametrize("rules", RULES, ids=["/".join(r) for r in RULES])
def test_the_service_agrees_with_a_model_of_the_rule(
    dynamo_endpoint: str, rules: tuple[str, str]
) -> None:
    run_machine(BoardMachine, dynamo_endpoint, rules=rules, examples=3, steps=10)


FAULTS = st.sampled_from(
    [
        # (what goes wrong, how often, the status the first attempt must get)
        ("conflict", "TransactWriteItems", 5, 200),  # retried by the service after a re-read
        ("throttle", "TransactWriteItems", 2, 200),  # retried by botocore
        ("throttle", "BatchGetItem", 2, 200),  # the first read (record, rows, leases)
        ("throttle", "TransactWriteItems", 1000, 503),  # past the retries
        ("throttle", "BatchGetItem", 1000, 503),
        ("throttle", "Query", 1000, 200),  # the rank reads: written all the same, no ranks
        ("lose", "TransactWriteItems", 2, 200),  # committed, response lost, resent with its token
        ("lose", "TransactWriteItems", 1000, 503),  # every response of a commit lost
        ("lose", "BatchGetItem", 1, 200),  # a read's response lost and resent
    ]
)


class FaultyBoardMachine(BoardMachine):
    """Every board of a submission (day, week, all-time) against the model, through faults."""

    periods: ClassVar[list[str]] = ["alltime", "day", "week"]

    def __init__(self) -> None:
        super().__init__()
        self.faults: Faults = install(self.service.runtime.client, self.endpoint)
        moment = from_ms(self.base)
        self.board_ids = [
            Board("trivia", "classic", Period.containing(PeriodKind(kind), moment)).board_id
            for kind in self.periods
        ]

    @rule(player=PLAYERS, score=st.integers(0, 30), offset=st.integers(0, 3), fault=FAULTS)
    def submit_through_a_fault(
        self, player: str, score: int, offset: int, fault: tuple[str, str, int, int]
    ) -> None:
        kind, operation, times, expected = fault
        if kind == "lose" and operation == "TransactWriteItems":
            self.faults.lose_responses = times
        elif kind == "lose":
            self.faults.lose[operation] = times
        else:
            make = conflict_on_row if kind == "conflict" else (lambda _: throttled())
            self.faults.rules.append(fail_first(operation, times, make))
        achieved = self.base + offset
        key = uuid.uuid4().hex
        http = self.service.http
        first = self.run(
            submit(http, player=player, score=score, achieved_ms=achieved, idempotency_key=key)
        )
        self.faults.rules.clear()
        self.faults.lose.clear()
        self.faults.lose_responses = 0
        assert first.status_code == expected, first.text
        if first.status_code == 503:
            assert int(first.headers["Retry-After"]) >= 1
            assert first.headers["content-type"].startswith("application/problem+json")
            # The client retries with the same key, as told: it completes, exactly once. Where
            # the first attempt's commit landed unseen (every response lost), the retry replays
            # it, and says so.
            first = self.run(
                submit(http, player=player, score=score, achieved_ms=achieved, idempotency_key=key)
            )
            assert first.status_code == 200, first.text
            landed = kind == "lose" and operation == "TransactWriteItems"
            assert ("Idempotent-Replayed" in first.headers) == landed
        unranked = (kind, operation, times) == ("throttle", "Query", 1000)
        self.accepted(first.json(), player, score, achieved, ranked=not unranked)

    @invariant()
    def every_board_agrees_with_the_model(self) -> None:
        order = self.order()
        for board_id in self.board_ids:
            page = self.run(self.runtime.stores.index.query_board(board_id, limit=100, start=None))
            assert [e.key.player_id for e in page.entries] == order
            assert [e.key.score for e in page.entries] == [self.model.value(p) for p in order]
            counted = self.run(counter_total(self.runtime, board_id))
            assert counted == (len(self.model), len(self.model))


@pytest.mark.parametrize("rules", RULES, ids=["/".join(r) for r in RULES])
def test_through_dynamodb_faults_every_board_agrees_with_the_model(
    dynamo_endpoint: str, rules: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # botocore's retries, as configured, without their waits (up to 1 s, then 2 s, at random):
    # what a retry does is under test here, not how long it waits first.
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda _self, _context: 0.0)
    run_machine(FaultyBoardMachine, dynamo_endpoint, rules=rules, examples=3, steps=10)


TIED = st.integers(0, 2)
READS_APART = 3
"""The reads a rank is built from, each at its own moment within the lag (docs/ranking.md)."""


class LaggingBoardMachine(BoardMachine):
    """The board through DynamoDB as it really answers (``tests.faults.MODERATE``: throttles,
    lost responses, held items, a lagging RankIndex and eventually consistent reads). A client
    retries a 409 or 503 with the same key. What is read strongly agrees with the model exactly:
    each outcome's ``improved``, ``previousBest`` and ``best``, each erasure's report, and the
    board once it is read quietly. A rank read within the index's lag is within docs/ranking.md's
    bound: off by at most the number of other players whose entries moved within the lag."""

    periods: ClassVar[list[str]] = ["alltime", "day", "week"]

    def __init__(self) -> None:
        super().__init__()
        self.moves: list[tuple[float, str]] = []
        self.erasures: list[tuple[float, str]] = []
        self.tries = 0

    def moved(self, player: str) -> None:
        self.moves.append((time.monotonic(), player))

    def bound(self, player: str, asked_at: float) -> int:
        """How far a rank read by a request sent at ``asked_at`` may be off: each other player
        who moved (by the time their answer came) since one lag before it may be seen or missed
        by each of the three reads a rank is built from, read apart (the coarse counters, the fine
        counters, the index COUNT). The request's reads come after it was sent, however long it
        then took."""
        since = asked_at - faithful.profile.lag_s - 0.1
        others = len({p for t, p in self.moves if t >= since and p != player})
        # A player erased and back within the lag may still be counted at the erased place, once
        # (docs/ranking.md): the counters of a new player's rank are read eventually.
        returned = any(t >= since and p == player for t, p in self.erasures)
        return READS_APART * others + returned

    def retried(self, send: Any) -> httpx.Response:
        """``send`` until it is neither a 409 nor a 503; ``self.tries`` says how many it took."""
        for self.tries in range(1, 31):
            response: httpx.Response = self.run(send())
            if response.status_code not in (409, 503):
                return response
            time.sleep(min(1.0, float(response.headers.get("Retry-After", "1"))) / 10)
        return response

    @initialize(player=PLAYERS, score=TIED, offset=st.integers(0, 3))
    def first_round(self, player: str, score: int, offset: int) -> None:
        """Every run starts with a read within the lag, whatever else it draws: a submission and
        the submitter's rank read at once after it."""
        self.submit_score_then_read(player, score, offset, player)

    @rule(player=PLAYERS, score=TIED, offset=st.integers(0, 3), reader=PLAYERS)
    def submit_score_then_read(self, player: str, score: int, offset: int, reader: str) -> None:
        """A submission, and a player's rank read at once after it: within the lag (the
        submitter's own, where the reader is on no board). Scores are few, so players tie: the
        entries ahead in a player's own slot are counted on the index."""
        self.submit_score(player, score, offset)
        self.read_rank(reader if reader in self.model else player)

    @rule(player=PLAYERS, score=TIED, offset=st.integers(0, 3))
    def submit_score(self, player: str, score: int, offset: int) -> None:
        achieved = self.base + offset
        key = uuid.uuid4().hex
        asked_at = time.monotonic()
        response = self.retried(
            lambda: submit(
                self.service.http,
                player=player,
                score=score,
                achieved_ms=achieved,
                idempotency_key=key,
            )
        )
        assert response.status_code == 200, response.text
        self.accepted(response.json(), player, score, achieved, asked_at)

    def accepted(
        self,
        document: dict[str, Any],
        player: str,
        score: int,
        achieved: int,
        asked_at: float | None = None,
        *,
        ranked: bool = True,
    ) -> None:
        assert asked_at is not None
        assert ranked, "this machine's reads are not throttled"
        old = self.model.value(player) if player in self.model else None
        changed = self.model.submit(player, score, achieved)
        truth = self.order().index(player) + 1
        for board in document["boards"]:
            assert board["improved"] == changed
            assert board["previousBest"] == old
            assert board["best"] == self.model.value(player)
            if board.get("rankAfter") is not None:
                slack = self.bound(player, asked_at)
                assert abs(board["rankAfter"] - truth) <= slack, self.told(board, truth, slack)
        if changed:
            self.moved(player)

    @rule(player=PLAYERS)
    def read_rank(self, player: str) -> None:
        asked_at = time.monotonic()
        response = self.retried(
            lambda: self.service.http.get(
                f"/v1/leaderboards/trivia/classic/alltime/players/{player}"
            )
        )
        if player not in self.model:
            assert response.status_code == 404
            return
        rank = response.json()["rank"]
        truth = self.order().index(player) + 1
        slack = self.bound(player, asked_at)
        if rank["kind"] == "exact":
            assert abs(rank["rank"] - truth) <= slack, self.told(rank, truth, slack)
        else:
            low, high = rank["rankRange"]
            assert low - slack <= truth <= high + slack, self.told(rank, truth, slack)

    def told(self, answer: object, truth: int, slack: int) -> str:
        """What a failed bound says: the answer, the truth, and the model and moves behind them."""
        now = time.monotonic()
        moves = [(round(now - t, 2), p) for t, p in self.moves[-8:]]
        values = {p: self.model.values[p] for p in self.order()}
        return f"{answer} truth {truth} slack {slack}; model {values}; moves (s ago) {moves}"

    @rule(player=PLAYERS)
    def erase(self, player: str) -> None:
        response = self.retried(
            lambda: self.service.http.delete(
                f"/v1/players/{player}", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
            )
        )
        assert response.status_code == 200, response.text
        removed = len(self.periods) if player in self.model else 0
        if self.tries == 1:
            assert response.json()["removed"]["boards"] == removed
        else:  # each call reports what it removed: an attempt cut short may have removed some
            assert response.json()["removed"]["boards"] <= removed
        if player in self.model:
            self.moved(player)
            self.erasures.append((time.monotonic(), player))
        self.model.pop(player)

    @invariant()
    def board_agrees_with_the_model(self) -> None:
        with faithful.quietly():
            super().board_agrees_with_the_model()


@pytest.mark.parametrize(
    "rules", [("desc", "best"), ("asc", "latest"), ("desc", "sum")], ids=["best", "latest", "sum"]
)
def test_through_dynamodb_as_it_answers_the_board_agrees_with_the_model(
    dynamo_endpoint: str, rules: tuple[str, str], faithful_run: Faithful
) -> None:
    # A lag longer than a few steps of the machine, so that reads meet writes not yet indexed.
    faithful_run.use(replace(MODERATE, lag_s=2.0), endpoint=dynamo_endpoint)
    run_machine(LaggingBoardMachine, dynamo_endpoint, rules=rules, examples=3, steps=15)
    assert faithful_run.injected, "the run met none of DynamoDB's unkind answers"
    assert faithful_run.view is not None
    assert faithful_run.view.lagged_reads, "no read met the index behind its table"


MIRROR_AGE_S = 1.0


class MirroredBoardMachine(LaggingBoardMachine):
    """A sharded board whose ranks come from each task's mirror (at most ``MIRROR_AGE_S`` old, as
    deployed), through DynamoDB as it really answers, RankIndex lagging: a rank answered from a
    mirror is as of its moment, so each other player who moved since one lag before that moment
    may be seen or not; never further off, and the asking player always at their own last
    write."""

    periods: ClassVar[list[str]] = ["alltime"]
    shards: ClassVar[int] = 4
    settings_given: ClassVar[dict[str, object]] = {"hot_board_summary_seconds": MIRROR_AGE_S}

    def bound(self, player: str, asked_at: float) -> int:
        return super().bound(player, asked_at - MIRROR_AGE_S)

    @invariant()
    def board_agrees_with_the_model(self) -> None:
        """The board read whole past the task (its top page is the summary's, of a moment ago):
        every shard's index merged, and every shard's counters."""
        with faithful.quietly():
            partitions = partition_ids(BOARD, self.shards)
            entries = [
                entry
                for pid in partitions
                for entry in self.run(
                    self.runtime.stores.index.query_board(pid, limit=100, start=None)
                ).entries
            ]
            entries.sort(key=lambda e: e.key.encode())
            assert [e.key.player_id for e in entries] == self.order()
            assert [e.key.score for e in entries] == [self.model.value(p) for p in self.order()]
            counted = [self.run(counter_total(self.runtime, pid)) for pid in partitions]
            assert tuple(map(sum, zip(*counted, strict=True))) == (len(self.model),) * 2


@pytest.mark.parametrize("rules", [("desc", "best"), ("asc", "latest")], ids=["best", "latest"])
def test_ranks_from_a_mirror_stay_within_the_bound_through_dynamodb_as_it_answers(
    dynamo_endpoint: str, rules: tuple[str, str], faithful_run: Faithful
) -> None:
    faithful_run.use(replace(MODERATE, lag_s=2.0), endpoint=dynamo_endpoint)
    before = _ranks_from_mirrors()
    run_machine(MirroredBoardMachine, dynamo_endpoint, rules=rules, examples=2, steps=12)
    assert faithful_run.injected, "the run met none of DynamoDB's unkind answers"
    assert _ranks_from_mirrors() > before, "no rank came from a mirror"


def _ranks_from_mirrors() -> float:
    return REGISTRY.get_sample_value("leaderboard_ranks_from_mirror_total") or 0.0
