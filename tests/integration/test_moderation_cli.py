"""``leaderboard moderate hide|ban|restore|list|log`` and ``leaderboard void`` on the embedded
backend, in this process (tests/commands.py), beside the service on the same tables: each does
what its endpoint does, and prints its body."""

from __future__ import annotations

from typing import Any

from app.domain.moderation import Action, Logged, Moderation, ModerationEvent
from app.store.tables import TableNames
from tests.api.test_moderation import SCORES, fill, top
from tests.commands import leaderboard, one_json_line, tables_environment
from tests.conftest import Service
from tests.support import now_ms, submit


async def test_the_moderation_commands(
    service: Service, dynamo_endpoint: str, table_names: TableNames
) -> None:
    environment = tables_environment(dynamo_endpoint, table_names)

    async def run(*args: str) -> Any:
        return one_json_line(await leaderboard(*args, "--json", environment=environment))

    http, at = service.http, now_ms() - 60_000
    await fill(http, SCORES, at)
    hidden = await run("moderate", "hide", "trivia", "bob", "--reason", "aimbot", "--by", "mia")
    assert {k: hidden[k] for k in ("playerId", "game", "action", "reason")} == {
        "playerId": "bob",
        "game": "trivia",
        "action": "hide",
        "reason": "aimbot",
    }
    assert [e["playerId"] for e in (await top(http, "alltime"))["entries"]] == [
        "ann",
        "cat",
        "dan",
        "eve",
    ]
    banned = await run("moderate", "ban", "trivia", "cat", "--reason", "bot")
    assert banned["action"] == "ban"
    assert (await submit(http, player="cat", score=1, achieved_ms=at)).status_code == 403
    listed = await run("moderate", "list", "trivia")
    assert [(p["playerId"], p["action"]) for p in listed["players"]] == [
        ("bob", "hide"),
        ("cat", "ban"),
    ]
    restored = await run("moderate", "restore", "trivia", "bob")
    assert restored == {"playerId": "bob", "game": "trivia", "rowsRestored": 3}
    voided = await run("void", "trivia#classic#alltime", "dan", "--reason", "impossible")
    assert voided["voided"]["playerId"] == "dan"
    assert [e["playerId"] for e in (await top(http, "alltime"))["entries"]] == [
        "ann",
        "bob",
        "eve",
    ]
    log = await run("moderate", "log", "trivia")
    assert [(e["action"], e["playerId"], e["by"]) for e in log["events"]] == [
        ("void", "dan", "cli"),
        ("restore", "bob", "cli"),
        ("ban", "cat", "cli"),
        ("hide", "bob", "mia"),
    ]
    assert len((await run("moderate", "log", "trivia", "--limit", "2"))["events"]) == 2
    missing = await leaderboard("moderate", "restore", "trivia", "nobody", environment=environment)
    assert missing.returncode == 2
    assert "not moderated" in missing.stderr
    no_reason = await leaderboard("moderate", "hide", "trivia", "bob", environment=environment)
    assert no_reason.returncode == 2
    assert "--reason" in no_reason.stderr
    # A record with no sweep behind it: the reconciler says what it would hide, and hides it.
    record = Moderation("eve", "trivia", Action.HIDE, "late", now_ms(), "ops")
    event = ModerationEvent("trivia", now_ms(), "e1", Logged.HIDE, "eve", "late", "ops")
    await service.runtime.stores.moderation.put_moderation(record, event)
    dry = await leaderboard("reconcile", "trivia#classic#alltime", environment=environment)
    assert dry.returncode == 0, dry.stderr
    assert "1 visible rows of moderated players (use --apply to hide them)" in dry.stdout
    applied = await run("reconcile", "trivia#classic#alltime", "--apply")
    assert applied["moderatedRows"] == 1
    assert [e["playerId"] for e in (await top(http, "alltime"))["entries"]] == ["ann", "bob"]
