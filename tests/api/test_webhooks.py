"""The webhook routes over HTTP on the embedded backend (DESIGN.md section 15): set, read, remove,
the deliveries page; admin keys only; a URL a delivery may not reach and a bad secret are 422s
that say why; and the secret is in no body and no log line, whatever the answer."""

from __future__ import annotations

import asyncio
import json

import pytest
from structlog.testing import capture_logs

from app.bootstrap import Runtime
from app.domain.events import BOARD_CLOSED, Event
from app.store.tables import TableNames
from tests.conftest import SUBMIT_KEY, Service, make_settings, serve
from tests.receivers import receiving
from tests.support import now_ms

ADMIN = {"Authorization": "Bearer test-admin-key"}
URL = "/v1/games/trivia/webhook"
SECRET = "whsec-0123456789abcdef-secret"
HOOK = "http://127.0.0.1:9/hooks/leaderboard"


async def test_set_show_and_remove_a_webhook(service: Service) -> None:
    http = service.http
    assert (await http.get(URL, headers=ADMIN)).status_code == 404
    with capture_logs() as logs:
        put = await http.put(URL, json={"url": HOOK, "secret": SECRET}, headers=ADMIN)
        assert put.status_code == 200, put.text
        shown = await http.get(URL, headers=ADMIN)
    assert put.json() == shown.json()
    assert set(put.json()) == {"url", "secretSet", "updatedAt"}
    assert put.json()["url"] == HOOK
    assert put.json()["secretSet"] is True
    assert SECRET not in put.text + shown.text + json.dumps(logs, default=str)
    replaced = await http.put(URL, json={"url": HOOK + "2", "secret": SECRET}, headers=ADMIN)
    assert replaced.json()["url"] == HOOK + "2"
    assert (await http.delete(URL, headers=ADMIN)).status_code == 204
    assert (await http.get(URL, headers=ADMIN)).status_code == 404
    gone = await http.delete(URL, headers=ADMIN)
    assert gone.status_code == 404
    assert gone.headers["content-type"] == "application/problem+json"


async def test_only_admin_keys_reach_the_webhook(service: Service) -> None:
    http, body = service.http, {"url": HOOK, "secret": SECRET}
    submitter = {"Authorization": f"Bearer {SUBMIT_KEY}"}
    for path in (URL, f"{URL}/deliveries"):
        assert (await http.get(path)).status_code == 401
        assert (await http.get(path, headers=submitter)).status_code == 403
    assert (await http.put(URL, json=body)).status_code == 401
    refused = await http.put(URL, json=body, headers=submitter)
    assert refused.status_code == 403
    assert SECRET not in refused.text
    assert (await http.delete(URL, headers=submitter)).status_code == 403


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("ftp://127.0.0.1/x", "must be an http or https URL"),
        ("http://0.0.0.0/hook", "an unspecified address"),
        ("http://224.0.0.1/hook", "a multicast address"),
        ("https://user:pw@127.0.0.1/hook", "must not carry a user name or password"),
        ("http://127.0.0.1/" + "x" * 2048, "at most 2048 characters"),
        ("http://no-such-host.invalid/hook", "does not resolve"),
    ],
)
async def test_a_url_a_delivery_may_not_reach_is_refused_saying_why(
    service: Service, url: str, said: str
) -> None:
    answer = await service.http.put(URL, json={"url": url, "secret": SECRET}, headers=ADMIN)
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["field"] == "url"
    assert said in answer.json()["errors"][0]["message"]
    assert SECRET not in answer.text
    assert (await service.http.get(URL, headers=ADMIN)).status_code == 404


@pytest.mark.parametrize(
    "url", ["http://10.1.2.3/hook", "http://172.18.0.5:8080/hook", "http://[fe80::1]/hook"]
)
async def test_a_private_address_is_a_receiver_outside_production(
    service: Service, url: str
) -> None:
    # A compose network's services, a laptop's: production refuses them (tests/unit/test_webhooks.py).
    answer = await service.http.put(URL, json={"url": url, "secret": SECRET}, headers=ADMIN)
    assert answer.status_code == 200, answer.text
    assert answer.json()["url"] == url


@pytest.mark.parametrize("secret", ["short-secret", "x" * 257, ""])
async def test_a_secret_of_the_wrong_length_is_refused_unquoted(
    service: Service, secret: str
) -> None:
    with capture_logs() as logs:
        answer = await service.http.put(URL, json={"url": HOOK, "secret": secret}, headers=ADMIN)
    assert answer.status_code == 422, answer.text
    assert [e["field"] for e in answer.json()["errors"]] == ["secret"]
    if secret:
        assert secret not in answer.text + json.dumps(logs, default=str)


async def test_a_body_that_is_no_webhook_is_refused(service: Service) -> None:
    http = service.http
    extra = await http.put(
        URL, json={"url": HOOK, "secret": SECRET, "events": ["x"]}, headers=ADMIN
    )
    assert extra.status_code == 422
    assert SECRET not in extra.text
    missing = await http.put(URL, json={"url": HOOK}, headers=ADMIN)
    assert missing.status_code == 422
    reserved = await http.put(
        "/v1/games/outbox/webhook", json={"url": HOOK, "secret": SECRET}, headers=ADMIN
    )
    assert reserved.status_code == 422


async def test_the_deliveries_page_newest_first_with_a_cursor(service: Service) -> None:
    http, outbox, at = service.http, service.runtime.stores.outbox, now_ms()
    made = []
    for i in range(3):
        event = Event.of("trivia", BOARD_CLOSED, {"n": i}, created_at_ms=at + i)
        await outbox.add_event(event)
        made.append(event)
    await outbox.add_event(Event.of("chess", BOARD_CLOSED, {}, created_at_ms=at))
    first = await http.get(f"{URL}/deliveries", params={"limit": 2}, headers=ADMIN)
    assert first.status_code == 200, first.text
    page = first.json()
    assert [d["id"] for d in page["deliveries"]] == [made[2].id, made[1].id]
    delivery = page["deliveries"][0]
    assert delivery["type"] == BOARD_CLOSED
    assert delivery["status"] == "pending"
    assert delivery["attempts"] == []
    assert delivery["nextAttemptAt"] is not None
    rest = await http.get(f"{URL}/deliveries", params={"cursor": page["nextCursor"]}, headers=ADMIN)
    assert [d["id"] for d in rest.json()["deliveries"]] == [made[0].id]
    assert rest.json()["nextCursor"] is None
    for limit in (0, 101):
        bad = await http.get(f"{URL}/deliveries", params={"limit": limit}, headers=ADMIN)
        assert bad.status_code == 422
    forged = await http.get(f"{URL}/deliveries", params={"cursor": "abc.def"}, headers=ADMIN)
    assert forged.status_code == 400


async def test_the_service_delivers_while_it_runs_and_stops_cleanly(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, webhook_poll_seconds=0.05)
    async with receiving() as receiver, serve(settings) as running:
        put = await running.http.put(
            URL, json={"url": receiver.url, "secret": SECRET}, headers=ADMIN
        )
        assert put.status_code == 200, put.text
        event = Event.of("trivia", BOARD_CLOSED, {"n": 1}, created_at_ms=now_ms() - 1)
        await running.runtime.stores.outbox.add_event(event)
        status = "pending"
        for _ in range(100):
            page = await running.http.get(f"{URL}/deliveries", headers=ADMIN)
            if (status := page.json()["deliveries"][0]["status"]) == "delivered":
                break
            await asyncio.sleep(0.05)
    assert status == "delivered"
    assert receiver.ids() == [event.id]
