"""How a command prints its result on stdout: for people (tables, prose, indented JSON) by
default, or, with ``--json``, as one line of JSON in the command's own shape (docs/operations.md
lists each), for scripts."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel


def print_json(document: dict[str, Any]) -> None:
    """``document`` as one line of JSON."""
    print(json.dumps(document, separators=(",", ":")), flush=True)


def as_json(model: BaseModel) -> dict[str, Any]:
    """A response model as the API writes it (camelCase names)."""
    return model.model_dump(by_alias=True, mode="json")


def print_model(model: BaseModel, *, one_line: bool) -> None:
    """A response model as the API writes it: indented, or (``--json``) on one line."""
    if one_line:
        print_json(as_json(model))
    else:
        print(model.model_dump_json(by_alias=True, indent=2), flush=True)
