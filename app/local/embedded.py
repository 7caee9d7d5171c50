"""The embedded backend: moto's DynamoDB server as a child process on a free loopback port, used
when no endpoint is configured outside production, and by the tests (moto speaks DynamoDB's wire
protocol, so the real adapter runs against it). The child is tied to this process: it is stopped
on exit, on Ctrl-C, on a crash, and (through ``PR_SET_PDEATHSIG``) even if this process is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from types import TracebackType

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child, between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes], *, grace_s: float) -> None:
    """SIGTERM, ``grace_s`` to exit, then SIGKILL (and as long again to be reaped); nothing for a
    process already gone."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace_s)


class EmbeddedDynamo:
    """``with EmbeddedDynamo() as endpoint: ...``, or ``start()`` and ``stop()``."""

    def __init__(self, host: str = "127.0.0.1", *, start_timeout: float = 30.0) -> None:
        self.host = host
        self.port = 0
        self._timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self) -> str:
        if importlib.util.find_spec("moto") is None:
            raise RuntimeError(
                "the embedded backend needs moto, which this install lacks: install the project "
                "with its `local` dependency group (`python3 tools/uv.py sync --frozen`), or set LEADERBOARD_DYNAMODB_ENDPOINT"
            )
        for _ in range(3):  # another process may take the free port before moto binds it
            self.port = free_port(self.host)
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app.local.moto_runner",
                    "-H",
                    self.host,
                    "-p",
                    str(self.port),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
                env={**os.environ, "MOTO_CALL_RESET_API": "false"},
            )
            if self._wait_ready():
                return self.endpoint
            self.stop()
        raise RuntimeError("the embedded DynamoDB (moto_server) did not start")

    def _wait_ready(self) -> bool:
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                return False
            try:
                # The URL is ours: http on loopback, built from host and port above.
                with urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1):  # noqa: S310
                    return True
            except (urllib.error.URLError, OSError):
                time.sleep(0.05)
        return False

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process, grace_s=5)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
