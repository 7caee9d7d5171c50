"""How a running ``leaderboard serve`` tells the CLI where its embedded backend is (on a new free
port each start, for as long as the service lives): a small JSON file of its own, written once the
backend is up (and again once the service listens, with where), that an operator command with no
endpoint configured uses while its writer is alive. Each ``serve`` has its own file, beside the
others, named after its process (``embedded-<pid>.json``), so that two at once never share one.
The files are the user's own: in a directory only they can enter, and refused if anyone else could
have written them.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class EmbeddedState:
    endpoint: str
    scores_table: str
    snapshots_table: str
    pid: int
    """The ``leaderboard serve`` process whose backend this is."""
    service: str | None = None
    """Where that service listens (``http://127.0.0.1:8000``), once it does."""

    @property
    def port(self) -> int | None:
        """The port the service listens on, once it does."""
        if self.service is None:
            return None
        port = self.service.rsplit(":", 1)[-1]
        return int(port) if port.isdigit() else None

    def describe(self) -> str:
        """The service in a few words, for the operator: where it listens, and its process."""
        if self.service is None:  # starting, or started by uvicorn itself
            return f"`leaderboard serve` (pid {self.pid}, where it listens not recorded yet)"
        return f"`leaderboard serve` at {self.service} (pid {self.pid})"


def default_state_file() -> Path:
    """``$XDG_RUNTIME_DIR/leaderboard/embedded.json``, else in a per-user directory of the
    temporary directory."""
    runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
    if runtime_dir:
        return Path(runtime_dir) / "leaderboard" / "embedded.json"
    return Path(tempfile.gettempdir()) / f"leaderboard-{os.getuid()}" / "embedded.json"


def serve_state_file(base: Path, pid: int) -> Path:
    """The state file of the ``serve`` of process ``pid``: beside ``base``, named after it
    (``embedded.json`` gives ``embedded-<pid>.json``)."""
    return base.with_name(f"{base.stem}-{pid}{base.suffix}")


def write_state(path: Path, state: EmbeddedState) -> None:
    """Write the file whole (a reader never sees half of it), readable by its owner only."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private(path.parent)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".embedded-")
    try:
        with os.fdopen(descriptor, "w") as handle:
            json.dump(asdict(state), handle)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def remove_state(path: Path, *, pid: int) -> None:
    """Remove the file if it is still ``pid``'s: a second ``serve`` started meanwhile owns it."""
    found = _read(path)
    if found is not None and found.pid == pid:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def live_states(base: Path) -> list[EmbeddedState]:
    """Every ``leaderboard serve`` still running whose file is beside ``base`` (its own, named
    after its process, or ``base`` itself, as a ``serve`` of an earlier version named it), by
    process id; the files of those that have gone are removed (a killed ``serve`` cannot
    remove its own)."""
    if not base.parent.exists():
        return []
    _check_private(base.parent)
    found = []
    for path in sorted(base.parent.glob(f"{base.stem}*{base.suffix}")):
        state = _read(path)
        if state is None:
            continue
        if _alive(state.pid):
            found.append(state)
        else:
            remove_state(path, pid=state.pid)
    return sorted(found, key=lambda state: state.pid)


def read_live_state(path: Path) -> EmbeddedState | None:
    """The embedded backend of a ``leaderboard serve`` that is still running, if the file names
    one; ``None`` when there is no file, or its process has gone (a killed ``serve`` cannot
    remove it)."""
    found = _read(path)
    if found is None or not _alive(found.pid):
        return None
    return found


class UntrustedStateFile(Exception):
    """The state file (or its directory) could have been written by another user."""


def _read(path: Path) -> EmbeddedState | None:
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    _check_private(path.parent)
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedStateFile(f"{path} could have been written by another user: remove it")
    try:
        values = json.loads(path.read_text())
        return EmbeddedState(
            endpoint=str(values["endpoint"]),
            scores_table=str(values["scores_table"]),
            snapshots_table=str(values["snapshots_table"]),
            pid=int(values["pid"]),
            service=None if values.get("service") is None else str(values["service"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # half-written by a crash, or from another version: as good as none


def _check_private(directory: Path) -> None:
    info = directory.stat()
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedStateFile(
            f"{directory} could have been written by another user: remove it, or set "
            "LEADERBOARD_STATE_FILE to a path of your own"
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process has the id now: not our serve
    return True
