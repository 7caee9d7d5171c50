"""The `leaderboard` command run in this process, as `python -m app.cli` runs it in one of its own:
the same entry point (``app.cli.main``) with the same arguments and exactly the given environment,
its stdout and stderr captured, its exit status returned (argparse's exits included).

A process of its own costs each command about 2 s of imports (more on a busy machine); the tests
that are about the process itself (its start-up, its logging as configured from nothing, the
documented command lines as a shell runs them) keep running one: ``tests/integration/test_cli.py``,
``test_cli_json.py``, ``test_serve.py``, ``test_configuration_errors.py``.

Differences from a process of its own, none of which a test here relies on: the command's
loggers are not cached (a cached logger would keep the command's configuration and stderr for the
rest of the session; the test's own is set again afterwards), a warning is an error
(``filterwarnings``), the DynamoDB clients carry the tests' hook (``tests/conftest.py``: a request
DynamoDB would refuse fails the test), and an exception the command lets out fails the test with its
traceback rather than exiting 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from unittest import mock

import app.cli
from app.logging import configure_logging
from app.store.tables import TableNames


@dataclass(frozen=True)
class Ran:
    """What a command did: as ``subprocess.CompletedProcess`` says it."""

    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def command_environment(env: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without the service's settings, and ``env``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")} | dict(env)


def tables_environment(endpoint: str, tables: TableNames, **more: str) -> dict[str, str]:
    """``command_environment`` for commands on these tables of this DynamoDB, and ``more``."""
    return command_environment(
        {
            "LEADERBOARD_DYNAMODB_ENDPOINT": endpoint,
            "LEADERBOARD_SCORES_TABLE": tables.scores,
            "LEADERBOARD_SNAPSHOTS_TABLE": tables.snapshots,
            **more,
        }
    )


def one_json_line(ran: Ran) -> Any:
    """A command's ``--json`` output: it succeeded and printed one line of JSON."""
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count("\n") == 1, ran.stdout
    return json.loads(ran.stdout)


def leaderboard_in_process(*args: str, environment: Mapping[str, str]) -> Ran:
    """`leaderboard ARGS` with exactly ``environment``. Not inside a running event loop (the
    command runs its own): from a coroutine, ``await leaderboard(...)``."""
    out, err = io.StringIO(), io.StringIO()
    uncached = functools.partial(configure_logging, cache=False)
    try:
        with (
            _environment(environment),
            mock.patch.object(app.cli, "configure_logging", uncached),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(err),
        ):
            try:
                code = app.cli.main(list(args))
            except SystemExit as exit_:  # argparse: --help, or a usage error
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    finally:
        configure_logging(json=True, cache=False)  # as tests/conftest.py set it for the session
    return Ran(code, out.getvalue(), err.getvalue())


async def leaderboard(*args: str, environment: Mapping[str, str]) -> Ran:
    """`leaderboard ARGS` with exactly ``environment``, in a thread of this process (the command
    runs an event loop of its own)."""
    return await asyncio.to_thread(leaderboard_in_process, *args, environment=environment)
