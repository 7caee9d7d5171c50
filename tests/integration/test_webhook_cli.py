"""``leaderboard webhooks set|show|remove|deliveries`` on the embedded backend, in this process
(tests/commands.py), beside the service on the same tables: each does what its endpoint does,
and prints its body; the secret comes from stdin or a named variable, and is never printed."""

from __future__ import annotations

import io

import pytest

from app.domain.events import BOARD_CLOSED, Event
from app.store.tables import TableNames
from tests.commands import leaderboard, one_json_line, tables_environment
from tests.conftest import Service
from tests.support import now_ms

SECRET = "whsec-from-stdin-0123456789"
HOOK = "http://127.0.0.1:9/hooks/leaderboard"


async def test_the_webhook_commands(
    service: Service,
    dynamo_endpoint: str,
    table_names: TableNames,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environment = tables_environment(dynamo_endpoint, table_names, HOOK_SECRET=SECRET + "-env")
    monkeypatch.setattr("sys.stdin", io.StringIO(SECRET + "\n"))
    said = await leaderboard(
        "webhooks", "set", "trivia", "--url", HOOK, "--json", environment=environment
    )
    assert set(one_json_line(said)) == {"url", "secretSet", "updatedAt"}
    assert SECRET not in said.stdout + said.stderr
    stored = await service.runtime.stores.webhooks.webhook_of("trivia")
    assert stored is not None
    assert stored.secret == SECRET
    from_env = await leaderboard(
        "webhooks",
        "set",
        "trivia",
        "--url",
        HOOK,
        "--secret-env",
        "HOOK_SECRET",
        "--json",
        environment=environment,
    )
    assert one_json_line(from_env)["url"] == HOOK
    stored = await service.runtime.stores.webhooks.webhook_of("trivia")
    assert stored is not None
    assert stored.secret == SECRET + "-env"
    shown = one_json_line(
        await leaderboard("webhooks", "show", "trivia", "--json", environment=environment)
    )
    http = await service.http.get(
        "/v1/games/trivia/webhook", headers={"Authorization": "Bearer test-admin-key"}
    )
    assert shown == http.json()

    outbox, at = service.runtime.stores.outbox, now_ms()
    made = [Event.of("trivia", BOARD_CLOSED, {"n": i}, created_at_ms=at + i) for i in range(3)]
    for event in made:
        await outbox.add_event(event)
    listed = one_json_line(
        await leaderboard(
            "webhooks", "deliveries", "trivia", "--limit", "2", "--json", environment=environment
        )
    )
    assert [d["id"] for d in listed["deliveries"]] == [made[2].id, made[1].id]
    assert listed["nextCursor"] is None

    assert (
        await leaderboard("webhooks", "remove", "trivia", environment=environment)
    ).returncode == 0
    gone = await leaderboard("webhooks", "show", "trivia", environment=environment)
    assert gone.returncode == 2
    assert "has no webhook" in gone.stderr


async def test_a_refused_secret_is_not_printed(
    service: Service, dynamo_endpoint: str, table_names: TableNames
) -> None:
    environment = tables_environment(dynamo_endpoint, table_names, HOOK_SECRET="too-short")
    ran = await leaderboard(
        "webhooks",
        "set",
        "trivia",
        "--url",
        HOOK,
        "--secret-env",
        "HOOK_SECRET",
        environment=environment,
    )
    assert ran.returncode == 2
    assert "secret: must be 16 to 256 characters" in ran.stderr
    assert "too-short" not in ran.stdout + ran.stderr
    unset = await leaderboard(
        "webhooks",
        "set",
        "trivia",
        "--url",
        HOOK,
        "--secret-env",
        "NOT_SET",
        environment=environment,
    )
    assert unset.returncode == 2
    assert "NOT_SET is not set" in unset.stderr
