"""What ships in the image, checked without Docker: the runtime install (from pyproject.toml and
uv.lock, with the Dockerfile's own uv flags) carries no embedded backend, CDK or load tools; the
image runs as a non-root user, in exec form, and refuses to start the embedded backend; compose
wires DynamoDB Local, the table bootstrap, the service and Locust together. Needs no infra group."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from typing import Any

import pytest
from pydantic import ValidationError

from app.settings import Settings
from tests.infra.containers import (
    DOCKERFILE,
    REPO,
    compose_model,
    dockerfile_instructions,
    environment,
    exec_form,
    stages,
    uv_sync_flags,
)

NOT_AT_RUNTIME = frozenset(
    {"moto", "aws-cdk-lib", "constructs", "cdk-nag", "jsii", "locust", "gevent", "pytest"}
)
"""The embedded backend, the CDK app, the load generator and the tests: never in the image."""

GROUP_SELECTION = frozenset(
    {"--group", "--only-group", "--all-groups", "--extra", "--all-extras", "--dev", "--only-dev"}
)


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def locked_runtime_closure() -> set[str]:
    """Every package the project's own dependencies pull in, by uv.lock (extras followed)."""
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    packages = {p["name"]: p for p in lock["package"]}
    pending = [
        (d["name"], tuple(d.get("extra", []))) for d in packages["leaderboard"]["dependencies"]
    ]
    seen: set[tuple[str, tuple[str, ...]]] = set()
    while pending:
        name, extras = pending.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        package = packages[name]
        wanted = list(package.get("dependencies", []))
        for extra in extras:
            wanted += package.get("optional-dependencies", {}).get(extra, [])
        pending += [(d["name"], tuple(d.get("extra", []))) for d in wanted]
    return {name for name, _ in seen}


def test_runtime_dependencies_hold_no_backend_cdk_or_load_tool() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = {_name(r) for r in project["dependencies"]}
    assert names, "no runtime dependencies read"
    assert not names & NOT_AT_RUNTIME
    assert not project.get("optional-dependencies"), "an extra could bring them back"


def test_nothing_the_runtime_dependencies_pull_in_is_one_of_them() -> None:
    closure = locked_runtime_closure()
    assert {"fastapi", "uvicorn", "aioboto3", "botocore"} <= closure
    assert not closure & NOT_AT_RUNTIME
    # They are locked, in groups: what keeps them out is the selection, not their absence.
    locked = {p["name"] for p in tomllib.loads((REPO / "uv.lock").read_text())["package"]}
    assert {"moto", "aws-cdk-lib", "locust"} <= locked


def test_the_image_installs_the_lock_without_dev_or_default_groups() -> None:
    syncs = uv_sync_flags()
    assert len(syncs) == 2, syncs  # dependencies alone (a cached layer), then the project
    for flags in syncs:
        assert {"--frozen", "--no-dev", "--no-default-groups"} <= set(flags), flags
        assert not {f.split("=")[0] for f in flags} & GROUP_SELECTION, flags
    assert "--no-install-project" in syncs[0]
    assert "--no-editable" in syncs[1]


def test_uv_with_the_image_s_flags_installs_none_of_them() -> None:
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv is None:
        pytest.skip("no uv executable (run the tests through `python3 tools/uv.py run`)")
    selection = [f for f in uv_sync_flags()[0] if f != "--no-install-project"]

    def exported(*flags: str) -> set[str]:
        result = subprocess.run(
            [uv, "export", "--no-hashes", "--no-emit-project", "--no-header", *flags],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return {
            _name(line)
            for line in result.stdout.splitlines()
            if line.strip() and not line.lstrip().startswith(("#", "-"))
        }

    image = exported(*selection)
    assert {"fastapi", "uvicorn", "aioboto3"} <= image
    assert not image & NOT_AT_RUNTIME
    # The same export with every group does carry them: the flags are what keeps them out.
    assert {"moto", "aws-cdk-lib", "locust"} <= exported("--frozen", "--all-groups")


def test_the_runtime_stage_is_slim_and_builds_nothing() -> None:
    build, runtime = stages()
    assert build[0][1].startswith("python:3.11-slim")
    assert runtime[0][1].startswith("python:3.11-slim")
    runs = " ".join(arguments for instruction, arguments in runtime if instruction == "RUN")
    for tool in ("apt-get install", "gcc", "build-essential", "pip install", "uv "):
        assert tool not in runs
    copies = [arguments for instruction, arguments in runtime if instruction == "COPY"]
    assert copies == ["--from=build /app/.venv /app/.venv"]


def test_the_image_runs_as_a_non_root_user() -> None:
    runtime = stages()[-1]
    users = [arguments for instruction, arguments in runtime if instruction == "USER"]
    assert users, "no USER in the runtime stage"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert user == "10001" or not user.isdigit()


def test_the_server_gets_signals_itself() -> None:
    """Exec form: no shell between Docker (or ECS) and the server to swallow SIGTERM."""
    runtime = dict(stages()[-1])
    assert exec_form(runtime["ENTRYPOINT"]) == ["leaderboard"]
    # All the container's interfaces: the load balancer and compose's network reach it from outside.
    serve = ["serve", "--host", "0.0.0.0", "--port", "8000"]  # noqa: S104
    assert exec_form(runtime["CMD"]) == serve


def test_the_health_check_asks_healthz_with_the_interpreter() -> None:
    (arguments,) = [a for i, a in stages()[-1] if i == "HEALTHCHECK"]
    command = exec_form(arguments.split(" CMD ", 1)[1])
    assert command[:2] == ["python", "-c"]
    assert "urllib.request" in command[2]
    assert "http://127.0.0.1:8000/healthz" in command[2]


def test_the_image_refuses_the_embedded_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    env = environment(stages()[-1])
    assert env["LEADERBOARD_ALLOW_EMBEDDED_BACKEND"] == "false"
    assert env["PYTHONUNBUFFERED"] == "1"
    for name in Settings.model_fields:
        monkeypatch.delenv(f"LEADERBOARD_{name.upper()}", raising=False)
    monkeypatch.setenv(
        "LEADERBOARD_ALLOW_EMBEDDED_BACKEND", env["LEADERBOARD_ALLOW_EMBEDDED_BACKEND"]
    )
    # Started with no endpoint (and not in production), the service says so and stops.
    with pytest.raises(ValidationError, match="LEADERBOARD_DYNAMODB_ENDPOINT"):
        Settings()


def test_the_build_context_is_exactly_what_the_dockerfile_uses() -> None:
    lines = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[0] == "*"  # an allowlist: nothing new slips into the context
    allowed = {line[1:] for line in lines if line.startswith("!")}
    used: set[str] = set()
    for instruction, arguments in dockerfile_instructions(DOCKERFILE):
        words = arguments.split()
        if instruction == "COPY" and not any(w.startswith("--from") for w in words):
            used |= {w for w in words[:-1] if not w.startswith("--")}
        used |= set(re.findall(r"type=bind,source=([^,\s]+)", arguments))
    assert allowed == used


# ---- compose -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return compose_model("load")


def _seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)s", duration)
    assert match, duration
    return float(match.group(1))


def test_dynamodb_local_is_the_public_image_with_a_health_check(compose: dict[str, Any]) -> None:
    local = compose["services"]["dynamodb-local"]
    assert local["image"].startswith("amazon/dynamodb-local:")
    assert local["healthcheck"]["test"][0] in {"CMD", "CMD-SHELL"}
    # Reachable from the host only on loopback.
    assert {p["host_ip"] for p in local.get("ports", [])} <= {"127.0.0.1"}


def test_the_bootstrap_creates_the_tables_with_the_service_s_own_command(
    compose: dict[str, Any],
) -> None:
    bootstrap = compose["services"]["create-tables"]
    service = compose["services"]["leaderboard"]
    assert bootstrap["image"] == service["image"]
    assert bootstrap["command"] == ["create-tables"]
    assert bootstrap["environment"]["LEADERBOARD_DYNAMODB_ENDPOINT"] == "http://dynamodb-local:8000"
    assert bootstrap["depends_on"]["dynamodb-local"]["condition"] == "service_healthy"
    for name in ("LEADERBOARD_SCORES_TABLE", "LEADERBOARD_SNAPSHOTS_TABLE", "LEADERBOARD_REGION"):
        assert bootstrap["environment"][name] == service["environment"][name]


def test_the_service_waits_for_dynamodb_and_the_tables(compose: dict[str, Any]) -> None:
    service = compose["services"]["leaderboard"]
    assert {name: d["condition"] for name, d in service["depends_on"].items()} == {
        "dynamodb-local": "service_healthy",
        "create-tables": "service_completed_successfully",
    }
    grace = float(service["environment"]["LEADERBOARD_SHUTDOWN_GRACE_SECONDS"])
    assert _seconds(service["stop_grace_period"]) > grace
    assert {p["host_ip"] for p in service["ports"]} == {"127.0.0.1"}


def test_the_service_s_configuration_passes_its_own_checks(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in Settings.model_fields:
        monkeypatch.delenv(f"LEADERBOARD_{name.upper()}", raising=False)
    for name, value in compose["services"]["leaderboard"]["environment"].items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.dynamodb_endpoint == "http://dynamodb-local:8000"
    assert not settings.uses_embedded_backend
    assert settings.dev_api_key is None  # refused with an endpoint: a key entry instead
    (entry,) = settings.api_keys
    assert set(entry.scopes) == {"submit:*", "admin"}


def test_locust_runs_under_its_profile_with_the_key_the_service_accepts(
    compose: dict[str, Any],
) -> None:
    assert "locust" not in compose_model()["services"]  # not started by a plain `up`
    locust = compose["services"]["locust"]
    assert locust["profiles"] == ["load"]
    (mount,) = locust["volumes"]
    assert mount["source"] == str(REPO / "locustfile.py")
    assert mount["target"] == locust["environment"]["LOCUST_LOCUSTFILE"]
    assert locust["environment"]["LOCUST_HOST"] == "http://leaderboard:8000"
    assert locust["depends_on"]["leaderboard"]["condition"] == "service_healthy"
    key = locust["environment"]["LEADERBOARD_API_KEY"]
    entries = json.loads(compose["services"]["leaderboard"]["environment"]["LEADERBOARD_API_KEYS"])
    assert [e["sha256"] for e in entries] == [hashlib.sha256(key.encode()).hexdigest()]
