"""Loading the settings from the environment: checked at start-up, with every wrong variable named
at once (never its value), and the ``LEADERBOARD_`` variables that name no setting found."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import ClassVar

from pydantic import ValidationError
from pydantic_settings import SettingsError

from app.settings import Settings


class CommandSettings(Settings):
    """The settings of an operator command (``leaderboard keys``, ``seed``, ...): it hands out no
    page cursor, so production needs no cursor secret for it."""

    issues_cursors: ClassVar[bool] = False


OTHER_PROGRAMS_VARIABLES = frozenset({"URL", "API_KEY", "GAME", "VARIANT"})
"""``LEADERBOARD_`` variables that are no setting of the service but are read by other programs
beside it: the clients' examples and the load test (``URL``, ``API_KEY``, ``GAME``, ``VARIANT``),
besides the load test's ``LOAD_*`` and the test suite's ``TEST_*``."""


def unknown_settings(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """Each ``LEADERBOARD_`` variable of ``environ`` that names no setting, with the setting whose
    name is closest to it, if one is close (``difflib``): pydantic ignores them, so a misspelled
    setting would otherwise leave its default in force without a word."""
    settings = [name.upper() for name in Settings.model_fields]
    unknown = []
    for variable in sorted(environ):
        name = variable.upper().removeprefix("LEADERBOARD_")
        if (
            not variable.upper().startswith("LEADERBOARD_")
            or name in settings
            or name in OTHER_PROGRAMS_VARIABLES
            or name.startswith(("LOAD_", "TEST_"))
        ):
            continue
        closest = difflib.get_close_matches(name, settings, n=1)
        unknown.append((variable, f"LEADERBOARD_{closest[0]}" if closest else None))
    return unknown


class ConfigurationError(ValueError):
    """The environment holds settings the service cannot start with. The message names each
    variable and what is wrong with it, never a value: any of them may be a secret."""


_PARSING_FAILED = re.compile(r'error parsing value for field "(\w+)"')


def load_settings(kind: type[Settings] = Settings) -> Settings:
    """The settings from the environment; ``ConfigurationError`` (without the values) if they are
    not ones the service starts with (``kind``: ``CommandSettings`` for a `leaderboard` command other than `serve`)."""
    try:
        return kind()
    except ValidationError as exc:
        message = describe_errors(exc)
    except SettingsError as exc:  # a list or object setting without NoDecode, not JSON
        found = _PARSING_FAILED.search(str(exc))
        message = f"LEADERBOARD_{found[1].upper()}: not valid JSON" if found else str(exc)
    # Raised outside the handler, so that the error carries no context: pydantic's exception
    # holds the input, secrets and all, and a traceback printer would show it.
    raise ConfigurationError(message)


def describe_errors(exc: ValidationError) -> str:
    """Each problem as ``VARIABLE: what is wrong``, without its input, context or help link."""
    lines = []
    for error in exc.errors(include_url=False, include_context=False, include_input=False):
        message = error["msg"].removeprefix("Value error, ")
        where = error["loc"]
        if where:
            variable = f"LEADERBOARD_{str(where[0]).upper()}"
            inside = ".".join(str(part) for part in where[1:])
            lines.append(f"{variable}{f' ({inside})' if inside else ''}: {message}")
        else:
            lines.append(message)
    return "; ".join(lines)


@lru_cache
def get_settings() -> Settings:
    return load_settings()
