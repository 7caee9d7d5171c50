"""How deeply a JSON text nests, measured without parsing it.

``json.loads`` recurses once per array or object and fails with ``RecursionError`` near 1,000
levels (a 2 KB body), and serialising a parsed value fails far sooner (pydantic stops at a few
hundred), so a client's JSON is measured first and refused past ``MAX_JSON_DEPTH``: nothing that
recurses ever sees it.
"""

from __future__ import annotations

import re

MAX_JSON_DEPTH = 32
"""Arrays and objects inside one another, the outermost counted: ``{"context": {"a": [1]}}`` is 3."""

_SPECIAL = re.compile(r'["\\\[\]{}]')


def nests_deeper_than(document: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``document`` opens more than ``limit`` arrays and objects inside one another.

    One pass over the quotes, backslashes and brackets (brackets inside strings do not count); a
    malformed document is measured as far as its brackets go, and the parser refuses it anyway.
    Bytes are read as UTF-8, whose multi-byte characters never hold a quote or a bracket."""
    text = document.decode("utf-8", errors="replace") if isinstance(document, bytes) else document
    if text.count("[") + text.count("{") <= limit:
        return False  # the common case, without a scan
    depth = 0
    in_string = False
    escaped = -1  # the index of the character a backslash in a string escapes
    for found in _SPECIAL.finditer(text):
        at = found.start()
        if at == escaped:
            continue
        char = text[at]
        if in_string:
            if char == "\\":
                escaped = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth = max(0, depth - 1)
    return False
