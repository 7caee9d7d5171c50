"""A hypothesis state machine: submissions, reads and erasures against an in-memory model of the
rule; the board order, ranks, playerCount and counters must always agree."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AsyncExitStack
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from app.store.dynamo import DynamoStore, open_client
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, Service, make_settings, serve
from tests.support import counter_total, now_ms, submit

BOARD = "trivia#classic#alltime"
PLAYERS = st.sampled_from([f"p{i}" for i in range(6)])


class BoardMachine(RuleBasedStateMachine):
    endpoint = ""

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.stack = AsyncExitStack()
        self.base = now_ms() - 600_000
        self.model: dict[str, tuple[int, int]] = {}
        tables = TableNames(f"model-{uuid.uuid4().hex[:8]}", f"model-snap-{uuid.uuid4().hex[:8]}")
        self.service: Service = self.run(self._open(tables))

    def run(self, coroutine: Any) -> Any:
        return self.runner.run(coroutine)

    async def _open(self, tables: TableNames) -> Service:
        client = await self.stack.enter_async_context(
            open_client(endpoint=self.endpoint, region="us-east-1", dummy_credentials=True)
        )
        self.store = DynamoStore(client, tables)
        await self.store.create_tables()
        self.tables = tables
        settings_ = make_settings(self.endpoint, tables, periods=["alltime"])
        return await self.stack.enter_async_context(serve(settings_))

    def teardown(self) -> None:
        async def close() -> None:
            for name in (self.tables.scores, self.tables.snapshots):
                await self.store.client.delete_table(TableName=name)
            await self.stack.aclose()

        self.run(close())
        self.runner.close()

    def order(self) -> list[str]:
        return sorted(self.model, key=lambda p: (-self.model[p][0], self.model[p][1], p))

    @rule(player=PLAYERS, score=st.integers(0, 30), offset=st.integers(0, 3))
    def submit_score(self, player: str, score: int, offset: int) -> None:
        achieved = self.base + offset
        response = self.run(
            submit(self.service.http, player=player, score=score, achieved_ms=achieved)
        )
        assert response.status_code == 200, response.text
        board = response.json()["boards"][0]
        old = self.model.get(player)
        better = old is None or (-score, achieved) < (-old[0], old[1])
        assert board["improved"] == better
        assert board["previousBest"] == (None if old is None else old[0])
        if better:
            self.model[player] = (score, achieved)
        assert board["best"] == self.model[player][0]
        assert board["rankAfter"] == self.order().index(player) + 1

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
        assert response.json()["removed"]["boards"] == (1 if player in self.model else 0)
        self.model.pop(player, None)

    @invariant()
    def board_agrees_with_the_model(self) -> None:
        page = self.run(self.service.http.get("/v1/leaderboards/trivia/classic/alltime?limit=100"))
        body = page.json()
        assert [e["playerId"] for e in body["entries"]] == self.order()
        assert [e["rank"] for e in body["entries"]] == list(range(1, len(self.model) + 1))
        assert [e["score"] for e in body["entries"]] == [self.model[p][0] for p in self.order()]
        assert body["playerCount"] == len(self.model)
        assert self.run(counter_total(self.store, BOARD)) == (len(self.model), len(self.model))


def test_the_service_agrees_with_a_model_of_the_rule(dynamo_endpoint: str) -> None:
    BoardMachine.endpoint = dynamo_endpoint
    run_state_machine_as_test(  # type: ignore[no-untyped-call]
        BoardMachine,
        settings=settings(
            max_examples=6,
            stateful_step_count=10,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
