"""Where the docs or the README give a setting's default, it is the default in ``app/settings.py``.

A default is recognised in these forms only, each next to the variable's name in backquotes:
``LEADERBOARD_X`` (20), (10 s), (default 20); ``LEADERBOARD_X``, 2 by default; ``LEADERBOARD_X``
... 11 s by default, in the same sentence; by default ``LEADERBOARD_X``, 30; a table with
``default`` and ``setting`` columns (docs/limits-and-failures.md's); and the generated settings
table (docs/configuration.md's). A figure in another form is not checked: write it in one of these.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.bootstrap import redefine_policy
from app.configuration import unknown_settings
from app.settings import Settings
from tools.settings_table import TABLE_START

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

NUMBER = r"(?P<number>\d[\d,]*(?:\.\d+)?)(?:\s*(?P<unit>ms|s|min|h|KiB|MiB|bytes|days?|/s)\b)?"
UNITS = {None: 1, "s": 1, "/s": 1, "ms": 0.001, "min": 60, "h": 3600, "KiB": 1024}
UNITS |= {"MiB": 1024 * 1024, "bytes": 1, "day": 1, "days": 1}
VARIABLE = r"`LEADERBOARD_(?P<name>[A-Z_]+)`"
FORMS = [
    # `LEADERBOARD_X` (20), (10 s), (default 20); not (0: no limit), which says what 0 means.
    re.compile(VARIABLE + r"\s*\((?:default\s+)?" + NUMBER + r"\s*[),;]"),
    # `LEADERBOARD_X`, 2 by default; `LEADERBOARD_X` to set it: 11 s by default.
    re.compile(VARIABLE + r"[^.`|]{0,40}?[\s,:(]" + NUMBER + r"\s+by default"),
    # by default `LEADERBOARD_X`, 30
    re.compile(r"by default " + VARIABLE + r",\s*" + NUMBER),
]

DERIVED: dict[str, Callable[[], float]] = {
    # Unset, a ranking change's grace is the request deadline plus the lease cache's time.
    "DEFINITION_CHANGE_GRACE_SECONDS": lambda: redefine_policy(Settings()).grace_s,
}
"""Settings whose default is none, with what the service then takes."""


def _value(number: str, unit: str | None) -> float:
    return float(number.replace(",", "")) * UNITS[unit]


def _default(name: str) -> float | None:
    """The setting's default as a number; ``None`` if it has none (a list, a name, a secret)."""
    if name in DERIVED:
        return DERIVED[name]()
    info = Settings.model_fields[name.lower()]
    value = info.get_default(call_default_factory=True)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _in_prose(text: str) -> Iterator[tuple[int, str, float]]:
    for form in FORMS:
        for found in form.finditer(text):
            yield (
                _line(text, found.start()),
                found["name"],
                _value(found["number"], found["unit"]),
            )


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip().strip("|").split("|")]


def _in_tables(text: str) -> Iterator[tuple[int, str, float]]:
    """A table with ``default`` and ``setting`` columns: the first figure of a row's default
    against the first variable of its setting."""
    lines = text.splitlines()
    columns: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.startswith("|"):
            columns = {}
            continue
        cells = _cells(line)
        if not columns:
            columns = {cell: i for i, cell in enumerate(cells)}
            continue
        if {"default", "setting"} - columns.keys() or len(cells) != len(columns):
            continue
        variable = re.match(VARIABLE, cells[columns["setting"]])
        figure = re.match(NUMBER, cells[columns["default"]])
        if variable and figure:
            yield number, variable["name"], _value(figure["number"], figure["unit"])


def _in_generated_table(text: str) -> Iterator[tuple[int, str, float]]:
    """The generated settings table (docs/configuration.md's): | `NAME` | `default` | ... |"""
    for found in re.finditer(r"^\| `(?P<name>[A-Z_]+)` \| `" + NUMBER + r"` \|", text, re.M):
        yield _line(text, found.start()), found["name"], _value(found["number"], found["unit"])


def _another_programs(name: str) -> bool:
    """The load test's variables (``LEADERBOARD_LOAD_*``) and the like, which are no settings."""
    return name.lower() not in Settings.model_fields and not unknown_settings(
        {f"LEADERBOARD_{name}": ""}
    )


def documented_defaults(page: Path) -> list[tuple[str, str, float]]:
    """``(where, SETTING, figure)`` for each default of a setting ``page`` gives."""
    text = page.read_text()
    found = [*_in_prose(text), *_in_tables(text)]
    if TABLE_START in text:
        found += _in_generated_table(text)
    return [
        (f"{page.name}:{line}", name, figure)
        for line, name, figure in sorted(found)
        if not _another_programs(name)
    ]


ALL = [found for page in PAGES for found in documented_defaults(page)]


def test_the_docs_give_defaults_in_the_recognised_forms() -> None:
    named = {name for _, name, _ in ALL}
    # The forms stay in use, so that the test below checks something.
    assert {"TRANSACT_MAX_ATTEMPTS", "REQUEST_DEADLINE_SECONDS", "LEASE_CACHE_SECONDS"} <= named
    assert len(ALL) >= 20, ALL
    # The generated table is read where it now lives.
    assert any(where.startswith("configuration.md:") for where, _, _ in ALL)


@pytest.mark.parametrize(("where", "name", "figure"), ALL, ids=[where for where, _, _ in ALL])
def test_each_documented_default_is_the_settings_default(
    where: str, name: str, figure: float
) -> None:
    assert name.lower() in Settings.model_fields, f"{where}: LEADERBOARD_{name} is no setting"
    default = _default(name)
    assert default is not None, f"{where}: LEADERBOARD_{name} has no numeric default"
    assert figure == pytest.approx(default), (
        f"{where}: LEADERBOARD_{name} is documented as {figure:g} by default; "
        f"app/settings.py says {default:g}"
    )


def test_a_wrong_default_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "limits.md"
    page.write_text(
        "| limit | default | setting | over it |\n| --- | --- | --- | --- |\n"
        "| attempts | 12, with backoff | `LEADERBOARD_TRANSACT_MAX_ATTEMPTS` | 503 |\n\n"
        "The deadline, `LEADERBOARD_REQUEST_DEADLINE_SECONDS` (12 s), and\n"
        "`LEADERBOARD_COUNTER_SHARDS`, 4 by default.\n"
    )
    found = documented_defaults(page)
    assert found == [
        ("limits.md:3", "TRANSACT_MAX_ATTEMPTS", 12.0),
        ("limits.md:5", "REQUEST_DEADLINE_SECONDS", 12.0),
        ("limits.md:6", "COUNTER_SHARDS", 4.0),
    ]
    assert all(figure != _default(name) for _, name, figure in found)
