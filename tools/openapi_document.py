"""The service's OpenAPI document, committed as ``docs/openapi.json`` so that a change to the
contract is a reviewed change: ``python -m tools.openapi_document --write docs/openapi.json``
writes it, ``tests/api/test_openapi_document.py`` fails while the two differ."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.main import create_app
from app.settings import Settings

COMMITTED = Path(__file__).resolve().parents[1] / "docs" / "openapi.json"


def document_text() -> str:
    """The document as the service serves it at ``/openapi.json``, formatted for review."""
    app = create_app(Settings(environment="development"))
    return json.dumps(app.openapi(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", type=Path, metavar="FILE")
    args = parser.parse_args(argv)
    if args.write is None:
        print(document_text(), end="")  # noqa: T201 - the command's output
    else:
        args.write.write_text(document_text())


if __name__ == "__main__":
    main()
