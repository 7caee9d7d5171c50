"""The HTTP server as ``leaderboard serve`` runs it: uvicorn with uvloop and httptools, whose own
answer to a request it cannot parse is an RFC 9457 problem document like every other error. What
uvicorn answers itself, and what it still answers in its own words: docs/limits-and-failures.md.
"""

from __future__ import annotations

import gc
import json
import socket
from collections.abc import Callable

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.errors import PROBLEM_JSON, BadRequest

MALFORMED_REQUEST = (
    "the request is not valid HTTP/1.1 (a malformed request line or header, a NUL or control "
    "byte in a header, or a bad Content-Length); nothing was done"
)


def malformed_request_response(default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """The whole HTTP response to a request that could not be parsed: a 400 problem document,
    and the connection closed (what follows on it cannot be trusted to start a request)."""
    body = json.dumps(BadRequest(MALFORMED_REQUEST).problem()).encode()
    head = [STATUS_LINE[400]]
    for name, value in default_headers:
        head.extend([name, b": ", value, b"\r\n"])
    head.extend(
        [
            b"content-type: " + PROBLEM_JSON.encode() + b"\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
        ]
    )
    return b"".join([*head, body])


class ProblemHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, answering a request it cannot parse with a problem document.
    Also for ``uvicorn app.main:app --http app.server:ProblemHttpToolsProtocol``."""

    def send_400_response(self, msg: str) -> None:
        # ``msg`` is uvicorn's fixed "Invalid HTTP request received."; it says no more than ours.
        self.transport.write(malformed_request_response(self.server_state.default_headers))
        self.transport.close()


def server_config(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    forwarded_allow_ips: str,
    shutdown_grace_s: float,
    keep_alive_s: float,
) -> uvicorn.Config:
    """How ``leaderboard serve`` runs uvicorn."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        access_log=False,
        log_config=None,
        lifespan="on",
        # The client address (read limits) comes from X-Forwarded-For only behind these proxies.
        proxy_headers=True,
        forwarded_allow_ips=forwarded_allow_ips,
        # One worker per process: scale by adding processes (tasks). On SIGTERM uvicorn stops
        # accepting, lets in-flight requests finish for the grace, then closes.
        workers=1,
        # uvloop and httptools: less CPU a request than asyncio's loop and h11.
        loop="uvloop",
        http=ProblemHttpToolsProtocol,
        # No WebSockets: an upgrade request is served as the plain request it also is, instead
        # of uvicorn's empty 403 from its WebSocket handshake.
        ws="none",
        timeout_graceful_shutdown=int(shutdown_grace_s),
        timeout_keep_alive=int(keep_alive_s),
    )


def listening_urls(sockets: list[socket.socket]) -> list[str]:
    urls = []
    for sock in sockets:
        host, port = sock.getsockname()[:2]
        urls.append(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
    return urls


class ServiceServer(uvicorn.Server):
    """uvicorn's server as ``leaderboard serve`` runs it. Once started (the lifespan has opened
    the runtime, and the sockets listen), the objects start-up made are frozen out of the garbage
    collector's passes (``freeze_start_up_heap``), and ``announce`` is told where it listens
    (``serve`` leaves uvicorn's own logger, which would, unconfigured)."""

    def __init__(
        self, config: uvicorn.Config, *, announce: Callable[[list[str]], None] | None = None
    ) -> None:
        super().__init__(config)
        self._announce = announce

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            freeze_start_up_heap()
            if self._announce is not None:
                urls = listening_urls([s for server in self.servers for s in server.sockets])
                self._announce(urls)


def freeze_start_up_heap() -> None:
    """What start-up built (botocore's service model, the app, its schemas) lives as long as the
    process. Left to the collector, each full pass walks all of it, its CPU charged to whichever
    request was running; frozen, a full pass walks only what was made since (decision 0023).
    Start-up's garbage is collected first, not kept."""
    gc.collect()
    gc.freeze()
