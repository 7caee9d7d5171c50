"""Where a ``leaderboard serve`` on this machine keeps its embedded backend, and how the other
``leaderboard`` commands find it: the service's runtime on the embedded backend (recorded while
it runs), and the DynamoDB a command works on (``command_backend``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import structlog

from app.bootstrap import Runtime, open_runtime
from app.local.state_file import EmbeddedState
from app.settings import Settings

log = structlog.get_logger(__name__)


class NoBackend(Exception):
    """There is no DynamoDB to talk to: no endpoint is configured, and the caller may not start
    the embedded backend (it lives only as long as the process that starts it)."""


def embedded_state_file(settings: Settings) -> Path:
    """Where this process, a ``leaderboard serve``, records its embedded backend for the operator
    commands: a file of its own, beside any other ``serve``'s."""
    from app.local.state_file import serve_state_file

    return serve_state_file(_state_base(settings), os.getpid())


def _state_base(settings: Settings) -> Path:
    from app.local.state_file import default_state_file

    return settings.state_file or default_state_file()


def _record_embedded(settings: Settings, runtime: Runtime) -> Path | None:
    """Tell the operator commands where this process's embedded backend is; ``None`` if it
    cannot (the service runs on regardless)."""
    from app.local.state_file import EmbeddedState, UntrustedStateFile, write_state

    path = embedded_state_file(settings)
    if runtime.endpoint is None:  # pragma: no cover - the embedded backend always has one
        return None
    state = EmbeddedState(
        runtime.endpoint, runtime.tables.scores, runtime.tables.snapshots, os.getpid()
    )
    try:
        write_state(path, state)
    except (OSError, UntrustedStateFile) as exc:
        log.warning("embedded_backend_not_recorded", path=str(path), error=str(exc))
        return None
    return path


def record_service(settings: Settings, url: str) -> Path | None:
    """Add where the service listens (``url``) to this process's record of its embedded backend,
    so that an operator command can say which service it works on, and be pointed at one by its
    port; the record's path, or ``None`` when this process keeps none (not on the embedded
    backend, or it could not write one)."""
    from app.local.state_file import UntrustedStateFile, read_live_state, write_state

    path = embedded_state_file(settings)
    try:
        recorded = read_live_state(path)
        if recorded is None or recorded.pid != os.getpid():
            return None
        write_state(path, replace(recorded, service=url))
    except (OSError, UntrustedStateFile) as exc:
        log.warning("embedded_backend_not_recorded", path=str(path), error=str(exc))
        return None
    return path


@asynccontextmanager
async def open_service_runtime(settings: Settings) -> AsyncIterator[Runtime]:
    """The service's runtime: on the configured endpoint, or, with none outside production, on
    the embedded backend (moto's server as a child process, stopped when this exits), recorded
    for the operator commands while it runs (``embedded_state_file``)."""
    if not settings.uses_embedded_backend:
        async with open_runtime(settings) as runtime:
            yield runtime
        return
    from app.local.embedded import EmbeddedDynamo
    from app.local.state_file import remove_state

    embedded = EmbeddedDynamo()
    endpoint = await asyncio.to_thread(embedded.start)
    log.info("embedded_backend_started", endpoint=endpoint, pid=embedded.pid)
    try:
        async with open_runtime(settings, endpoint=endpoint, create_tables=True) as runtime:
            recorded = _record_embedded(settings, runtime)
            try:
                yield runtime
            finally:
                if recorded is not None:
                    remove_state(recorded, pid=os.getpid())
    finally:
        await asyncio.to_thread(embedded.stop)
        log.info("embedded_backend_stopped")


@dataclass(frozen=True)
class CommandBackend:
    """The DynamoDB a ``leaderboard`` command works on, and how it says so."""

    settings: Settings
    """The settings with the endpoint and the tables to work on."""
    where: str
    """The endpoint, how it was chosen, the service it belongs to and the tables, in words."""


def command_backend(
    settings: Settings, *, endpoint: str | None = None, serve: str | None = None
) -> CommandBackend:
    """What an operator command works on: ``endpoint`` (its ``--endpoint``), else the configured
    endpoint (or production's AWS), else the embedded backend of the one ``leaderboard serve``
    running on this machine, or of the one ``serve`` names (its port, address or process id);
    never an embedded backend of its own, whose data would vanish when the command ends.
    ``NoBackend`` says why there is none, or which ones there are to choose from."""
    tables = f"tables {settings.scores_table} and {settings.snapshots_table}"
    if endpoint is not None:
        if serve is not None:
            raise NoBackend("--endpoint and --serve each choose the DynamoDB to work on: give one")
        return CommandBackend(
            settings.model_copy(update={"dynamodb_endpoint": endpoint}),
            f"DynamoDB at {endpoint} (--endpoint), {tables}",
        )
    if serve is None and settings.dynamodb_endpoint is not None:
        return CommandBackend(
            settings,
            f"DynamoDB at {settings.dynamodb_endpoint} (LEADERBOARD_DYNAMODB_ENDPOINT), {tables}",
        )
    if settings.environment == "production":
        if serve is not None:
            raise NoBackend(
                "--serve chooses the embedded backend of a `leaderboard serve`, which production "
                "never uses: leave it out (or give --endpoint URL)"
            )
        return CommandBackend(
            settings,
            f"AWS DynamoDB in {settings.region} (LEADERBOARD_ENVIRONMENT=production), {tables}",
        )
    served = _running_serve(settings, serve)
    log.info("using_embedded_backend", endpoint=served.endpoint, serve_pid=served.pid)
    return CommandBackend(
        settings.model_copy(
            update={
                "dynamodb_endpoint": served.endpoint,
                "scores_table": served.scores_table,
                "snapshots_table": served.snapshots_table,
            }
        ),
        f"the embedded DynamoDB at {served.endpoint} of {served.describe()}, tables "
        f"{served.scores_table} and {served.snapshots_table}",
    )


def _running_serve(settings: Settings, serve: str | None) -> EmbeddedState:
    """The one running ``leaderboard serve`` (of those ``serve`` names, if given)."""
    from app.local.state_file import UntrustedStateFile, live_states

    base = _state_base(settings)
    try:
        running = live_states(base)
    except UntrustedStateFile as exc:
        raise NoBackend(str(exc)) from None
    chosen = [
        state
        for state in running
        if serve is None or serve in (str(state.port), str(state.pid), state.service)
    ]
    if len(chosen) == 1:
        return chosen[0]
    listed = "; ".join(f"{state.describe()}, DynamoDB at {state.endpoint}" for state in running)
    if len(chosen) > 1:
        raise NoBackend(
            f"{len(chosen)} `leaderboard serve`s run on this machine, each with its own "
            f"embedded DynamoDB: {listed}. Choose one with --serve PORT (or its pid), or "
            "--endpoint URL"
        )
    if running:  # none of them is the one named
        raise NoBackend(
            f"no `leaderboard serve` on this machine listens on port {serve} or has that pid; "
            f"running: {listed}. Give --serve one of their ports, or --endpoint URL"
        )
    raise NoBackend(
        "no DynamoDB to work on: start `leaderboard serve` (its embedded backend is found "
        f"through {base.parent} while it runs), or give --endpoint URL (or set "
        "LEADERBOARD_DYNAMODB_ENDPOINT)"
    )
