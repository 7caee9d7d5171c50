"""What CI, the README and the docs tell a reader to run works on a fresh machine: every uv they
run is the pinned one ``tools/uv.py`` fetches, never a uv installed by hand (``python3 -m uv``, a
bare ``uv run``), which a fresh machine does not have (CI was once red there before any test ran,
and green here only because a uv module happened to be installed)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HAND_INSTALLED_UV = re.compile(
    r"(?<![\w./-])(?:python3?\s+-m\s+uv\b|uv\s+(?:run|sync|pip|build|lock|add|tool)\b)"
)
"""A uv that only a machine with uv installed by hand has; ``tools/uv.py run`` does not match
(``uv.py`` is not ``uv`` followed by a space)."""


def _read_by_people() -> list[Path]:
    """What a reader is told to run: CI's scripts, the README, the docs and the clients' READMEs.
    Decision records and experiment logs are history, never edited: they say what was run then."""
    docs = [
        path
        for path in (REPO / "docs").rglob("*")
        if path.suffix in {".md", ".json"}
        and "decisions" not in path.parts
        and "experiments" not in path.parts
    ]
    return [
        *sorted((REPO / ".ci").iterdir()),
        REPO / "README.md",
        *sorted(docs),
        *sorted((REPO / "clients").rglob("README.md")),
        *sorted((REPO / "bench").rglob("*.py")),
    ]


def test_nothing_runs_a_uv_that_the_project_does_not_install() -> None:
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in _read_by_people()
        if path.is_file() and "node_modules" not in path.parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if HAND_INSTALLED_UV.search(line)
    ]
    assert found == [], "run uv as `python3 tools/uv.py ...`:\n" + "\n".join(found)


def test_the_pattern_tells_the_two_apart() -> None:
    assert HAND_INSTALLED_UV.search("run() { python3 -m uv run --frozen; }")
    assert HAND_INSTALLED_UV.search("`uv run python -m bench.rank_sim`")
    assert HAND_INSTALLED_UV.search("cd clients/python && uv build --wheel")
    assert not HAND_INSTALLED_UV.search("python3 tools/uv.py run --frozen --all-groups pytest")
    assert not HAND_INSTALLED_UV.search("python3 ../../tools/uv.py build --wheel")
