"""The service for the harness's measurements of a process: the app ``create_app`` builds, served
by uvicorn as ``leaderboard serve`` serves it (``app.server.server_config`` and
``ServiceServer``; before, this took uvicorn's own httptools protocol and its WebSocket handling),
settings from the environment.
Two additions, outside the app: ``--record FILE`` keeps every DynamoDB call the
service makes (its parameters, by request id) and writes them at shutdown, for the bare replay;
``--stats FILE`` writes at shutdown how many API keys and rate-limit buckets the service holds.

``python -m bench.harness.served --port 8123 [--record calls.json] [--stats stats.json]``
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.configuration import get_settings
from app.logging import configure_logging
from app.main import create_app
from app.server import ServiceServer, server_config


class Recorder:
    """Each call's operation and parameters (a shallow copy: the service builds them afresh for
    every call), its request id and its start and end; written out only at shutdown, so the cost
    while serving is an append per call."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def install(self, client: Any) -> None:
        client.meta.events.register("before-parameter-build.dynamodb", self._started)
        client.meta.events.register("after-call.dynamodb", self._ended)

    def _started(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        request_id = structlog.contextvars.get_contextvars().get("request_id")
        call = {"request": request_id, "operation": model.name, "params": dict(params)}
        call["start"] = time.perf_counter()
        context["bench_record"] = call
        self.calls.append(call)

    def _ended(self, context: dict[str, Any], **_: Any) -> None:
        call = context.get("bench_record")
        if call is not None:
            call["end"] = time.perf_counter()


def _write_json(path: str, value: Any) -> None:
    """At shutdown only: blocking the loop then delays nothing."""
    with open(path, "w") as out:
        json.dump(value, out, default=str)


def wrap(
    app: Any, recorder: Recorder | None, stats_path: str | None, record_path: str | None
) -> ASGIApp:
    """The app, with the recorder installed on its client once started, and the files written
    when shutdown begins (uvicorn ends the process by the signal it caught, after the lifespan)."""

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def sent(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete" and recorder is not None:
                recorder.install(app.state.runtime.client)
            await send(message)

        async def received() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown" and recorder is not None and record_path:
                _write_json(record_path, recorder.calls)
            if message["type"] == "lifespan.shutdown" and stats_path:
                state = app.state.leaderboard
                stats = {
                    "api_keys_remembered": state.keys.remembered,
                    "read_rate_buckets": len(state.read_limits),
                    "write_rate_buckets": len(state.write_limits),
                    "calls_recorded": 0 if recorder is None else len(recorder.calls),
                }
                _write_json(stats_path, stats)
            return message

        await app(scope, received, sent)

    return served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--record")
    parser.add_argument("--stats")
    args = parser.parse_args()
    settings = get_settings()
    configure_logging(json=True)
    recorder = Recorder() if args.record else None
    config = server_config(
        wrap(create_app(settings), recorder, args.stats, args.record),
        host=args.host,
        port=args.port,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        shutdown_grace_s=settings.shutdown_grace_seconds,
        keep_alive_s=settings.keep_alive_seconds,
    )
    ServiceServer(config).run()


if __name__ == "__main__":
    main()
