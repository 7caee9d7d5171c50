"""The service as a process of its own on loopback (``bench.harness.served``), and what Linux says
about a process: CPU seconds used and resident set (``/proc``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from app.local.embedded import free_port, stop_process
from app.settings import Settings

_TICKS = os.sysconf("SC_CLK_TCK")
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of the process so far (all its threads), to the nanosecond: the
    process's CPU-time clock (``clock_getcpuclockid``); ``/proc``'s 10 ms ticks where there is
    none."""
    clock = ctypes.c_int()
    if _LIBC.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
        try:
            return time.clock_gettime(clock.value)
        except OSError:
            pass  # the process is gone, or its clock cannot be read: ticks, or the error
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def memory_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` (resident now) and ``VmHWM`` (the peak resident so far), in KiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            out[name] = int(value.split()[0])
    return out


def environment(settings: Settings) -> dict[str, str]:
    """``settings`` as the service reads them from its environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}
    for name, dumped in settings.model_dump(mode="json").items():
        if dumped is None:
            continue
        # Secrets dump masked: the service gets the real value.
        value = (
            getattr(settings, name).get_secret_value()
            if name.endswith(("secret", "key"))
            else dumped
        )
        env[f"LEADERBOARD_{name.upper()}"] = (
            json.dumps(value) if isinstance(value, list | dict) else str(value)
        )
    return env


def wait_until_answering(
    url: str, process: subprocess.Popen[bytes], *, log_path: Path, timeout_s: float = 60
) -> None:
    """Until a GET of ``url`` (on loopback) is answered 2xx; ``RuntimeError`` if ``process`` exits
    first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the process exited: see {log_path}")
        try:
            # Our own URL: http on loopback.
            with urllib.request.urlopen(url, timeout=2):  # noqa: S310
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout_s:g} s")


@dataclass
class ServedService:
    """``with ServedService(settings, workdir) as served: served.url, served.pid``."""

    settings: Settings
    workdir: Path
    record: bool = False
    name: str = "service"
    tree: Path | None = None
    """The checkout whose ``app`` is served (``python -m`` puts its working directory first on the
    path); by default the one this runs from."""

    def __post_init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self.record_path = self.workdir / f"{self.name}-calls.json"
        self.stats_path = self.workdir / f"{self.name}-stats.json"
        self.log_path = self.workdir / f"{self.name}.log"

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("not started")
        return self._process.pid

    def start(self) -> ServedService:
        command = [sys.executable, "-m", "bench.harness.served", "--port", str(self.port)]
        command += ["--stats", str(self.stats_path)]
        if self.record:
            command += ["--record", str(self.record_path)]
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment(self.settings),
                cwd=self.tree,
            )
        try:
            wait_until_answering(f"{self.url}/readyz", self._process, log_path=self.log_path)
        except RuntimeError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process, grace_s=60)

    def stats(self) -> dict[str, int]:
        stats: dict[str, int] = json.loads(self.stats_path.read_text())
        return stats

    def __enter__(self) -> ServedService:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
