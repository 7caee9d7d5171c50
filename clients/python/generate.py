"""Regenerate ``leaderboard_client/models.py`` (TypedDicts) from the service's ``docs/openapi.json``.

Run from anywhere: ``python3 clients/python/generate.py``. It runs the pinned datamodel-code-generator
in a throwaway environment through the repo's ``tools/uv.py`` (so nothing goes into the repo's venv),
then formats the file with ruff.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCHEMA = ROOT / "docs" / "openapi.json"
OUTPUT = HERE / "leaderboard_client" / "models.py"
GENERATOR = "datamodel-code-generator==0.89.0"
OPTIONS = [
    "--input-file-type",
    "openapi",
    "--output-model-type",
    "typing.TypedDict",
    "--target-python-version",
    "3.11",
    "--use-standard-collections",
    "--use-union-operator",
    "--enum-field-as-literal",
    "all",
    "--use-schema-description",
    "--no-use-closed-typed-dict",
    "--disable-timestamp",
    "--use-double-quotes",
    "--no-formatters",
]
HEADER = '''"""The API's schemas as TypedDicts: what ``docs/openapi.json`` says each body holds.

Generated: do not edit. Regenerate with ``python3 clients/python/generate.py``, which runs
``datamodel-codegen --input docs/openapi.json {options}``
({generator}), then ``ruff format``.
"""
'''


def ruff() -> str:
    venv = ROOT / ".venv" / "bin" / "ruff"
    found = str(venv) if venv.exists() else shutil.which("ruff")
    if found is None:
        sys.exit("ruff is needed to format the generated file (the repo's .venv or PATH)")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output", type=Path, default=OUTPUT, help="where (default: models.py)")
    output: Path = parser.parse_args(argv).output.resolve()
    header = HEADER.format(options=" ".join(OPTIONS), generator=GENERATOR)
    command = [
        sys.executable,
        str(ROOT / "tools" / "uv.py"),
        "tool",
        "run",
        "--from",
        GENERATOR,
        "datamodel-codegen",
        "--input",
        str(SCHEMA),
        *OPTIONS,
        "--custom-file-header",
        header,
        "--output",
        str(output),
    ]
    subprocess.run(command, check=True)
    # The repo's ruff settings, wherever the file is written.
    settings = ["--config", str(ROOT / "pyproject.toml")]
    subprocess.run([ruff(), "check", *settings, "--fix", "--quiet", str(output)], check=True)
    subprocess.run([ruff(), "format", *settings, "--quiet", str(output)], check=True)
    print(f"wrote {output}")  # noqa: T201


if __name__ == "__main__":
    main()
