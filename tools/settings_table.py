"""docs/configuration.md's table of settings, rendered from ``app.settings.Settings``: every
setting, its default, what it takes, what it does. ``python -m tools.settings_table --write
docs/configuration.md`` puts it between its markers; ``tests/unit/test_docs_against_code.py``
holds the two together."""

from __future__ import annotations

import argparse
import enum
import json
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic.fields import FieldInfo

from app.domain.periods import PeriodKind
from app.settings import Settings

TABLE_START = "<!-- settings table: python3 tools/uv.py run --frozen python -m tools.settings_table --write docs/configuration.md -->"
TABLE_END = "<!-- end of settings table -->"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
"""The page that holds the table, and ``--write``'s file when none is named."""


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, float):
        return f"`{value:g}`"
    if isinstance(value, list):
        return "`" + json.dumps([v.value if isinstance(v, enum.Enum) else v for v in value]) + "`"
    return f"`{value}`"


def _default(info: FieldInfo) -> str:
    extra = info.json_schema_extra
    if isinstance(extra, dict) and "shown_default" in extra:
        return str(extra["shown_default"])
    if info.default_factory is not None:
        return _shown(info.default_factory())  # type: ignore[call-arg]
    return _shown(info.default)


def _allowed(info: FieldInfo) -> str:
    """The values a setting takes, from its type and its bounds."""
    choices = get_args(info.annotation)
    if get_origin(info.annotation) is Literal:
        return ", ".join(f"`{c}`" for c in choices)
    if info.annotation == list[PeriodKind]:
        return ", ".join(f"`{kind.value}`" for kind in PeriodKind)
    if info.annotation is bool:
        return "`true`, `false`"
    bounds = []
    for bound in info.metadata:
        for name, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if hasattr(bound, name):
                value = getattr(bound, name)
                bounds.append(
                    f"{sign} {value:g}" if isinstance(value, float) else f"{sign} {value}"
                )
    return ", ".join(bounds)


def settings_table() -> str:
    """The configuration table: every setting, its default, what it takes, what it does."""
    lines = ["| variable | default | allowed | meaning |", "| --- | --- | --- | --- |"]
    for name, info in Settings.model_fields.items():
        lines.append(
            f"| `{name.upper()}` | {_default(info)} | {_allowed(info)} | {info.description} |"
        )
    return "\n".join(lines)


def with_settings_table(page: str) -> str:
    """``page`` with the text between the table's markers replaced by ``settings_table()``."""
    before, start, rest = page.partition(TABLE_START)
    _, end, after = rest.partition(TABLE_END)
    if not start or not end:
        raise ValueError(f"the page has no {TABLE_START} ... {TABLE_END} block")
    return f"{before}{TABLE_START}\n{settings_table()}\n{TABLE_END}{after}"


def main(argv: list[str] | None = None) -> None:
    """Print the table, or with ``--write [FILE]`` put it into FILE (by default
    docs/configuration.md) between its markers."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--write", type=Path, metavar="FILE", nargs="?", const=PAGE)
    args = parser.parse_args(argv)
    if args.write is None:
        print(settings_table())  # noqa: T201 - the command's output
        return
    args.write.write_text(with_settings_table(args.write.read_text()))


if __name__ == "__main__":
    main()
