"""The file through which the operator commands find a running `leaderboard serve`."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.local.state_file import (
    EmbeddedState,
    UntrustedStateFile,
    read_live_state,
    remove_state,
    write_state,
)


def state(pid: int) -> EmbeddedState:
    return EmbeddedState("http://127.0.0.1:1", "scores", "snapshots", pid)


def test_the_file_is_private_and_read_back_while_its_process_lives(tmp_path: Path) -> None:
    path = tmp_path / "run" / "embedded.json"
    write_state(path, state(os.getpid()))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_live_state(path) == state(os.getpid())


def test_a_file_whose_process_is_gone_is_as_good_as_none(tmp_path: Path) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    path = tmp_path / "embedded.json"
    write_state(path, state(int(ended.stdout)))
    assert read_live_state(path) is None
    assert read_live_state(tmp_path / "missing.json") is None
    path.write_text("{half")
    assert read_live_state(path) is None


def test_a_serve_leaves_the_file_of_a_later_serve_in_place(tmp_path: Path) -> None:
    path = tmp_path / "embedded.json"
    write_state(path, state(os.getppid()))  # the later serve's
    remove_state(path, pid=os.getpid())
    assert path.exists()
    remove_state(path, pid=os.getppid())
    assert not path.exists()


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_file_others_could_have_written_is_refused(tmp_path: Path, what: str) -> None:
    path = tmp_path / "run" / "embedded.json"
    write_state(path, state(os.getpid()))
    (path if what == "file" else path.parent).chmod(0o666 if what == "file" else 0o777)
    with pytest.raises(UntrustedStateFile, match="another user"):
        read_live_state(path)
