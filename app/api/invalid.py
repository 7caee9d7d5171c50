"""pydantic's validation errors in the contract's words, for a 422's ``errors``: what the API's
problem handlers (``app.api.problems``) and the ``leaderboard`` command (which loads no web
framework) both say of bad input."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.api.patterns import RULES
from app.errors import InvalidInput


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(part) for part in loc if part not in ("body", "path", "query", "header"))


def _message(error: Mapping[str, Any]) -> str:
    """pydantic's message in the contract's words: a pattern's rule instead of its regex."""
    kind = error.get("type")
    if kind == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern", "")
        return RULES.get(str(pattern), "does not have the form the API document gives")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required"
    return str(error.get("msg", "")).removeprefix("Value error, ")


def validation_errors(errors: Any) -> list[dict[str, Any]]:
    """pydantic's errors as the problem's ``errors``: the field and what is wrong with it (no
    regexes, no help links, no input echoed), each once: a parameter two dependencies share (the
    board's path) is reported once."""
    said = {(_field(e.get("loc", ())), _message(e)): None for e in errors}
    return [{"field": field, "message": message} for field, message in said]


def invalid_input(errors: list[dict[str, Any]], *, whole: str) -> InvalidInput:
    """A 422 whose detail says every field's problem (``whole``: what a field-less one is of)."""
    said = dict.fromkeys(f"{e['field'] or whole}: {e['message']}" for e in errors)
    return InvalidInput("; ".join(said), errors=errors)
