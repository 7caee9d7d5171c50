"""The README's first command needs nothing but Python: run by an interpreter that has no pip at
all (stricter than PEP 668's system Pythons, which refuse to install into themselves), it still
gets the pinned uv and runs the service's command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_first_command_runs_on_an_interpreter_without_pip(tmp_path: Path) -> None:
    first = re.search(
        r"```sh\n(.+? python3 tools/uv\.py run --frozen leaderboard serve)\n```",
        (REPO / "README.md").read_text(),
    )
    assert first is not None, "the README's first command is no longer tools/uv.py's"
    venv.EnvBuilder(with_pip=False).create(tmp_path / "bare")
    python = tmp_path / "bare" / ("Scripts" if sys.platform == "win32" else "bin") / "python"
    no_pip = subprocess.run(
        [python, "-I", "-m", "pip", "--version"], capture_output=True, text=True, check=False
    )
    assert no_pip.returncode != 0  # there is no pip to install anything with
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_"))}
    # As the README's command, but asking for the version instead of serving until stopped.
    ran = subprocess.run(
        [python, "-I", "tools/uv.py", "run", "--frozen", "leaderboard", "--version"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert re.fullmatch(r"leaderboard \d+\.\d+\.\d+\S*\n", ran.stdout)
