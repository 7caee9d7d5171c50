"""`leaderboard serve` in a subprocess on a free loopback port, for the tests that drive the service
from outside as a user would (the browser tests and their screenshots, the locust smoke test)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from app.local.embedded import free_port, stop_process

ROOT = Path(__file__).resolve().parents[1]


class ServiceExited(RuntimeError):
    """The service stopped, or never got ready; the message ends with its log's tail."""


def clean_environment(*prefixes: str) -> dict[str, str]:
    """This process's environment without the service's settings (and any other ``prefixes``), so
    what is started here picks up no configuration meant for something else."""
    dropped = ("LEADERBOARD_", *prefixes)
    return {k: v for k, v in os.environ.items() if not k.startswith(dropped)}


def tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _wait_ready(
    process: subprocess.Popen[bytes], base_url: str, log: Path, timeout_s: float
) -> bool:
    """True once /healthz and then /readyz answer 200; False if the service exited first."""
    deadline = time.monotonic() + timeout_s
    # trust_env=False: a proxy from the environment must not sit between us and loopback.
    with httpx.Client(base_url=base_url, timeout=2.0, trust_env=False) as http:
        for path in ("/healthz", "/readyz"):
            while True:
                if process.poll() is not None:
                    return False
                try:
                    if http.get(path).status_code == 200:
                        break
                except httpx.TransportError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise ServiceExited(
                        f"{path} did not answer 200 within {timeout_s:g} s:\n{tail(log)}"
                    )
                time.sleep(0.2)
    return True


@contextmanager
def serve(
    directory: Path, environment: Mapping[str, str], *options: str, ready_timeout_s: float
) -> Iterator[str]:
    """`leaderboard serve` on 127.0.0.1 with ``options`` and exactly ``environment``; its URL
    once /readyz answers. Its output goes to a log in ``directory``."""
    for attempt in range(1, 4):
        # The probe frees its port before the service binds it, and other suites on this machine
        # take ports too: if another process got there first, try another port.
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        log = directory / f"service-{attempt}.log"
        command = [sys.executable, "-m", "app.cli", "serve", *options, "--host", "127.0.0.1"]
        with log.open("wb") as output:
            process = subprocess.Popen(
                [*command, "--port", str(port)],
                cwd=ROOT,
                env=dict(environment),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        try:
            if _wait_ready(process, base_url, log, ready_timeout_s):
                yield base_url
                return
        finally:
            # The service stops its moto child on SIGTERM; after a kill the kernel signals it.
            stop_process(process, grace_s=15)
        if "address already in use" not in log.read_text(errors="replace").lower():
            raise ServiceExited(
                f"the service exited ({process.returncode}) before it was ready:\n{tail(log)}"
            )
    raise ServiceExited("the service found no free port in 3 tries")
