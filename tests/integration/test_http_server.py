"""The server as `leaderboard serve` runs it (uvloop, httptools), on 127.0.0.1, spoken to over raw
sockets: a request uvicorn cannot parse gets a problem document, not uvicorn's text/plain 400."""

from __future__ import annotations

import gc
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from app.local.embedded import free_port
from app.server import ServiceServer, server_config


async def hello(scope: Scope, receive: Receive, send: Send) -> None:
    assert scope["type"] == "http"
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


def _config(port: int) -> uvicorn.Config:
    config = server_config(
        hello,
        host="127.0.0.1",
        port=port,
        forwarded_allow_ips="127.0.0.1",
        shutdown_grace_s=1,
        keep_alive_s=5,
    )
    config.lifespan = "off"
    return config


@pytest.fixture(scope="module")
def address() -> Iterator[tuple[str, int]]:
    port = free_port()
    # The 400 comes before any application code: a small app is enough.
    server = uvicorn.Server(_config(port))
    thread = threading.Thread(
        target=server.run, daemon=True
    )  # no signal handlers off the main thread
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield ("127.0.0.1", port)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def exchange(address: tuple[str, int], request: bytes) -> bytes:
    """Send ``request`` raw and read until the server closes the connection (or 5 s pass)."""
    with socket.create_connection(address, timeout=5) as connection:
        connection.sendall(request)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    return received


def parse(response: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n", id="a NUL in a header"),
        pytest.param(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n", id="length -5"),
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n", id="length 1x"),
        pytest.param(b"NOT A REQUEST\r\n\r\n", id="a broken request line"),
        pytest.param(b"GET /\xff HTTP/1.1\r\nHost: x\r\n\r\n", id="a path that is not ASCII"),
        pytest.param(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", id="HTTP/2 prior knowledge"),
    ],
)
def test_a_request_uvicorn_cannot_parse_gets_a_problem_document(
    address: tuple[str, int], request_bytes: bytes
) -> None:
    status, headers, body = parse(exchange(address, request_bytes))
    assert status == 400
    assert headers["content-type"] == "application/problem+json"
    assert int(headers["content-length"]) == len(body)
    assert headers["connection"] == "close"
    problem = json.loads(body)
    assert problem["status"] == 400
    assert problem["type"] == "/problems/bad-request"
    assert "not valid HTTP/1.1" in problem["detail"]


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", id="plain"),
        pytest.param(
            b"GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade, close\r\nUpgrade: websocket\r\n"
            b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
            id="a WebSocket upgrade, served as a plain request",
        ),
    ],
)
def test_a_valid_request_on_the_same_server_is_served_by_the_app(
    address: tuple[str, int], request_bytes: bytes
) -> None:
    status, _, body = parse(exchange(address, request_bytes))
    assert (status, body) == (200, b"ok")


def test_the_service_server_freezes_what_start_up_made_and_says_where_it_listens() -> None:
    """A full garbage-collector pass over start-up's objects stalled the loop for about 70 ms
    (decision 0023): once started, the server freezes them out of the collector's passes."""
    assert gc.get_freeze_count() == 0
    port = free_port()
    announced: list[list[str]] = []
    server = ServiceServer(_config(port), announce=announced.append)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not announced:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        assert announced == [[f"http://127.0.0.1:{port}"]]
        assert gc.get_freeze_count() > 10_000  # the test process's modules, at least
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        gc.unfreeze()  # the test process goes on making and dropping apps
