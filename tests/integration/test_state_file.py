"""The files through which the operator commands find the running `leaderboard serve`s: one each."""

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
    live_states,
    read_live_state,
    remove_state,
    serve_state_file,
    write_state,
)


def state(pid: int, service: str | None = None) -> EmbeddedState:
    return EmbeddedState("http://127.0.0.1:1", "scores", "snapshots", pid, service)


def ended_pid() -> int:
    """The id of a process that has ended."""
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(ended.stdout)


def test_the_file_is_private_and_read_back_while_its_process_lives(tmp_path: Path) -> None:
    path = tmp_path / "run" / "embedded.json"
    write_state(path, state(os.getpid()))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_live_state(path) == state(os.getpid())


def test_a_file_whose_process_is_gone_is_as_good_as_none(tmp_path: Path) -> None:
    path = tmp_path / "embedded.json"
    write_state(path, state(ended_pid()))
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


def test_each_serve_has_a_file_of_its_own_and_every_running_one_is_found(tmp_path: Path) -> None:
    base = tmp_path / "run" / "embedded.json"
    this, parent, gone = os.getpid(), os.getppid(), ended_pid()
    write_state(serve_state_file(base, this), state(this, "http://127.0.0.1:8000"))
    write_state(serve_state_file(base, parent), state(parent))  # not listening yet
    write_state(serve_state_file(base, gone), state(gone, "http://127.0.0.1:8001"))
    assert serve_state_file(base, this).name == f"embedded-{this}.json"
    found = live_states(base)
    assert sorted(found, key=lambda s: s.pid) == sorted(
        [state(this, "http://127.0.0.1:8000"), state(parent)], key=lambda s: s.pid
    )
    assert {s.pid: s.port for s in found} == {this: 8000, parent: None}
    assert not serve_state_file(base, gone).exists()  # a killed serve's file is tidied away
    assert live_states(tmp_path / "nowhere" / "embedded.json") == []


def test_a_file_of_an_earlier_version_is_still_found(tmp_path: Path) -> None:
    base = tmp_path / "embedded.json"
    base.write_text(
        '{"endpoint": "http://127.0.0.1:1", "scores_table": "scores", '
        f'"snapshots_table": "snapshots", "pid": {os.getpid()}}}'
    )
    base.chmod(0o600)
    assert live_states(base) == [state(os.getpid())]
    assert "where it listens not recorded yet" in live_states(base)[0].describe()
