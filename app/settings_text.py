"""How settings are spelled in the environment where a value is more than a word: a JSON list,
and a browser origin (``app.settings`` reads them)."""

from __future__ import annotations

import json
import re

ORIGIN = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?")
"""A browser origin as CORS compares it: scheme, host and port, no path."""


def json_list(text: str, *, expected: str = "a JSON list") -> object:
    """``text`` decoded, or a ``ValueError`` that says where it stops being JSON and never quotes
    it (the value may be a secret)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not valid JSON ({exc.msg} at character {exc.pos}): give {expected}"
        ) from None
