"""Reading the container files as Docker and Compose read them, without either engine: the
Dockerfile's instructions (continuations joined, comments dropped) and compose's resolved model
(``docker-compose config``, from the tools group)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
COMPOSE_FILE = REPO / "compose.yaml"


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        instruction, _, arguments = line.partition(" ")
        instructions.append((instruction.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a continued instruction"
    return instructions


def stages(path: Path = DOCKERFILE) -> list[list[tuple[str, str]]]:
    """The instructions of each stage, FROM first."""
    result: list[list[tuple[str, str]]] = []
    for instruction, arguments in dockerfile_instructions(path):
        if instruction == "FROM":
            result.append([])
        assert result, f"{instruction} before the first FROM"
        result[-1].append((instruction, arguments))
    return result


def exec_form(arguments: str) -> list[str]:
    """A JSON-array (exec form) argument list; anything else is a shell form and fails."""
    parsed = json.loads(arguments)
    assert isinstance(parsed, list), arguments
    assert all(isinstance(part, str) for part in parsed), arguments
    return parsed


def environment(stage: list[tuple[str, str]]) -> dict[str, str]:
    values: dict[str, str] = {}
    for instruction, arguments in stage:
        if instruction == "ENV":
            for pair in shlex.split(arguments):
                name, _, value = pair.partition("=")
                values[name] = value
    return values


def uv_sync_flags() -> list[list[str]]:
    """The arguments of every ``uv sync`` the image runs."""
    found = []
    for instruction, arguments in dockerfile_instructions():
        if instruction == "RUN" and "uv sync" in arguments:
            words = shlex.split(arguments.split("uv sync", 1)[1].split("&&")[0])
            found.append(words)
    return found


def docker_compose() -> str | None:
    return shutil.which("docker-compose")


def compose_model(*profiles: str) -> dict[str, Any]:
    """compose.yaml as Compose resolves it (anchors merged, defaults filled in)."""
    command = [docker_compose() or "docker-compose", "-f", str(COMPOSE_FILE)]
    for profile in profiles:
        command += ["--profile", profile]
    result = subprocess.run(
        [*command, "config", "--format", "json"], capture_output=True, text=True, check=True
    )
    model: dict[str, Any] = json.loads(result.stdout)
    return model
