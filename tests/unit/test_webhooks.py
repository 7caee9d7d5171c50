"""The webhook rules with no I/O: the retry schedule and when an event is given up, which URLs and
addresses a delivery may reach (IPv4, IPv6, IPv4-mapped; names checked by what they resolve to),
production's stricter rules, and a deliverer that survives its store failing."""

from __future__ import annotations

import asyncio
import ipaddress
from datetime import UTC, datetime

import pytest

from app.domain.events import BOARD_CLOSED, Event
from app.domain.webhooks import (
    GIVE_UP_AFTER_MS,
    Attempt,
    IpAddress,
    Webhook,
    address_problem,
    kept,
    next_attempt_ms,
    target_of,
)
from app.errors import InvalidInput, Unavailable
from app.services.webhooks import WebhookAsk, WebhookPolicy, Webhooks
from app.services.webhooks._targets import pinned, target_refusal
from tests.fakes import MemoryStores

T0 = 1_800_000_000_000


def test_the_retry_schedule_then_every_hour() -> None:
    waits = [
        (next_attempt_ms(failed_attempts=k, now_ms=T0, created_at_ms=T0) or 0) - T0
        for k in range(1, 10)
    ]
    assert [w // 1000 for w in waits] == [10, 30, 60, 300, 900, 1800, 3600, 3600, 3600]


def test_the_last_try_is_at_the_end_of_24_hours_then_none() -> None:
    end = T0 + GIVE_UP_AFTER_MS
    assert next_attempt_ms(failed_attempts=9, now_ms=end - 60_000, created_at_ms=T0) == end
    assert next_attempt_ms(failed_attempts=10, now_ms=end, created_at_ms=T0) is None


def test_an_event_keeps_its_latest_20_attempts() -> None:
    attempts: list[Attempt] = []
    for i in range(25):
        attempts = kept(attempts, Attempt(i, "error", 1))
    assert [a.at_ms for a in attempts] == list(range(5, 25))


@pytest.mark.parametrize(
    ("address", "said"),
    [
        ("10.0.0.1", "a private address"),
        ("172.16.5.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("169.254.169.254", "a link-local address"),
        ("0.0.0.0", "an unspecified address"),  # noqa: S104 - an address refused, not bound
        ("224.0.0.251", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("100.64.0.1", "not a public address"),
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("::", "an unspecified address"),
        ("fe80::1", "a link-local address"),
        ("fc00::1", "a private address"),
        ("ff02::1", "a multicast address"),
        ("::ffff:10.0.0.1", "a private address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("::ffff:169.254.169.254", "a link-local address"),
    ],
)
def test_addresses_a_delivery_may_not_reach(address: str, said: str) -> None:
    assert address_problem(ipaddress.ip_address(address), production=True) == said


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"])
def test_public_addresses_are_reachable(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address), production=True) is None


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "::1", "::ffff:127.0.0.1", "172.18.0.5", "192.168.1.20", "fc00::1", "fe80::1"],
)
def test_loopback_and_private_addresses_are_reachable_outside_production_only(
    address: str,
) -> None:
    assert address_problem(ipaddress.ip_address(address), production=False) is None
    assert address_problem(ipaddress.ip_address(address), production=True) is not None


@pytest.mark.parametrize("address", ["0.0.0.0", "224.0.0.251", "::"])  # noqa: S104
def test_no_receiver_is_at_an_unspecified_or_multicast_address_anywhere(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address), production=False) is not None


@pytest.mark.parametrize(
    ("url", "production", "said"),
    [
        ("http://hooks.example.com/x", True, "must be an https URL in production"),
        ("file:///etc/passwd", False, "must be an http or https URL"),
        ("gopher://example.com/", False, "must be an http or https URL"),
        ("https:///nohost", False, "has no host"),
        ("https://a:b@example.com/", False, "must not carry a user name or password"),
        ("https://example.com:99999/", False, "is not a URL"),
    ],
)
def test_urls_that_are_no_webhook(url: str, production: bool, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        target_of(url, production=production)


def _resolving(*addresses: str) -> object:
    async def resolver(host: str, port: int) -> list[IpAddress]:
        return [ipaddress.ip_address(a) for a in addresses]

    return resolver


async def test_a_name_is_refused_if_any_of_its_addresses_is() -> None:
    target = target_of("https://hooks.example.com/x", production=True)
    resolver = _resolving("93.184.215.14", "10.0.0.7")
    refused = await target_refusal(target, production=True, resolver=resolver)  # type: ignore[arg-type]
    assert refused == (
        "the host hooks.example.com resolves to 10.0.0.7, a private address, which a webhook "
        "may not reach"
    )
    fine = _resolving("93.184.215.14")
    assert await target_refusal(target, production=True, resolver=fine) is None  # type: ignore[arg-type]


async def test_a_name_that_does_not_resolve_is_refused() -> None:
    async def nowhere(host: str, port: int) -> list[IpAddress]:
        raise OSError("no such host")

    target = target_of("https://gone.example.com/x", production=True)
    refused = await target_refusal(target, production=True, resolver=nowhere)
    assert refused == "the host gone.example.com does not resolve"


async def test_production_refuses_loopback_and_plain_http() -> None:
    hooks = Webhooks(
        MemoryStores().stores,
        WebhookPolicy(production=True, cursor_secret=b"c" * 32),
        resolver=_resolving("127.0.0.1"),  # type: ignore[arg-type]
    )
    now = datetime.now(UTC)
    for url in ("https://127.0.0.1/x", "https://localhost/x", "http://hooks.example.com/x"):
        with pytest.raises(InvalidInput) as refused:
            await hooks.set(WebhookAsk("trivia", url, "s" * 16, now))
        assert refused.value.errors[0]["field"] == "url"


async def test_a_webhook_and_its_ask_never_show_their_secret() -> None:
    secret = "a-secret-never-shown"
    assert secret not in repr(Webhook("trivia", "https://x.example/", secret, 0))
    assert secret not in repr(WebhookAsk("trivia", "https://x.example/", secret, datetime.now(UTC)))


async def test_a_deliverer_survives_its_store_failing() -> None:
    fakes = MemoryStores()
    failures = [Unavailable("DynamoDB did not answer"), RuntimeError("a bug")]
    looked = asyncio.Event()
    real = fakes.outbox.due_events

    async def due_events(*, now_ms: int, limit: int) -> list[object]:
        if failures:
            raise failures.pop(0)
        looked.set()
        return list(await real(now_ms=now_ms, limit=limit))

    fakes.outbox.due_events = due_events  # type: ignore[method-assign,assignment]
    hooks = Webhooks(
        fakes.stores, WebhookPolicy(production=False, cursor_secret=b"c" * 32, poll_s=0.01)
    )
    made_ms = int(datetime.now(UTC).timestamp() * 1000) - 1000
    await fakes.outbox.add_event(Event.of("trivia", BOARD_CLOSED, {}, created_at_ms=made_ms))
    running = asyncio.create_task(hooks.deliver_forever())
    await asyncio.wait_for(looked.wait(), timeout=5)
    await asyncio.sleep(0.05)
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    assert running.cancelled()
    (stored,) = fakes.outbox.stored.values()
    assert stored.attempts[0].outcome == "no-webhook"


def test_a_request_is_pinned_to_the_address_checked() -> None:
    request = pinned("https://Hooks.Example.com:8443/x?y=1", ipaddress.ip_address("2606:2800::1"))
    assert str(request.url) == "https://[2606:2800::1]:8443/x?y=1"
    assert request.headers == {"Host": "hooks.example.com:8443"}
    assert request.extensions == {"sni_hostname": "hooks.example.com"}
    plain = pinned("http://hooks.example.com/x", ipaddress.ip_address("93.184.215.14"))
    assert str(plain.url) == "http://93.184.215.14/x"
    assert plain.extensions == {}
    literal = pinned("https://93.184.215.14/x", ipaddress.ip_address("93.184.215.14"))
    assert (str(literal.url), literal.headers) == ("https://93.184.215.14/x", {})


async def test_a_url_read_two_ways_is_refused_or_checked_as_the_client_reads_it() -> None:
    with pytest.raises(ValueError, match="user name or password"):
        target_of("http://127.0.0.1\\@evil.example/", production=False)
    target = target_of("https://evil.example#@127.0.0.1/", production=True)
    assert target.host == "evil.example"  # as the HTTP client reads it, and checked as that
    resolver = _resolving("10.0.0.1")
    refused = await target_refusal(target, production=True, resolver=resolver)  # type: ignore[arg-type]
    assert refused is not None
    assert "evil.example resolves to 10.0.0.1" in refused
