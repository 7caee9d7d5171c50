"""The stack's source may be rearranged, but what it deploys may not move: every resource keeps
the logical id it is deployed under, and every module of infra/ stays within the repository's 450
lines. A changed logical id is, to CloudFormation, one resource deleted and another created: for
the tables, whose names are fixed and which are retained, the deployment fails on the name."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.infra.synthesis import Synthesized

INFRA = Path(__file__).resolve().parents[2] / "infra"
RESOURCES = Path(__file__).with_name("resources.txt")
MAX_MODULE_LINES = 450

EVERY_OPTION = {
    "waf": "true",
    "alarmEmail": "alarms@example.com",
    "keepPreviousRankIndex": "true",
    "domainName": "scores.example.com",
}
"""Context that turns on every option, so that the resources only an option adds are listed too."""

OPTIONAL = "optional"
HEADER = (
    "# Every resource the stack synthesises: logical id, type, and 'optional' where only a context\n"
    "# option adds it. Written by tests/infra/test_layout.py, which says how to rewrite it.\n"
)

Resources = set[tuple[str, str]]


def resources_of(document: Mapping[str, Any]) -> Resources:
    return {(logical_id, r["Type"]) for logical_id, r in document["Resources"].items()}


def render(default: Resources, every_option: Resources) -> str:
    missing = default - every_option
    assert not missing, f"turning options on removes {sorted(missing)}: list them some other way"
    lines = [
        f"{logical_id} {kind}" + ("" if (logical_id, kind) in default else f" {OPTIONAL}")
        for logical_id, kind in sorted(every_option)
    ]
    return HEADER + "\n".join(lines) + "\n"


def committed() -> tuple[Resources, Resources]:
    """The committed list: the default deployment's resources, and every option's."""
    default: Resources = set()
    every_option: Resources = set()
    for line in RESOURCES.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        logical_id, kind, *rest = line.split()
        every_option.add((logical_id, kind))
        if rest != [OPTIONAL]:
            assert not rest, f"{RESOURCES.name}: cannot read {line!r}"
            default.add((logical_id, kind))
    return default, every_option


@pytest.fixture(scope="module")
def with_every_option(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    from tests.infra.synthesis import synthesize

    return synthesize(tmp_path_factory.mktemp("cdk.out.every-option"), **EVERY_OPTION)


def test_every_resource_keeps_its_logical_id_and_type(
    synthesized: Synthesized, with_every_option: Synthesized
) -> None:
    """If this fails after a change meant to add, remove or rename resources (a rename replaces
    the resource on deploy), rewrite the list and review its diff:
    python3 tools/uv.py run --frozen --all-groups python -m tests.infra.test_layout > tests/infra/resources.txt
    """
    default, every_option = committed()
    assert resources_of(synthesized.document) == default
    assert resources_of(with_every_option.document) == every_option


def test_every_infra_module_is_at_most_450_lines() -> None:
    modules = sorted(INFRA.glob("*.py"))
    assert modules
    lines = {path.name: len(path.read_text().splitlines()) for path in modules}
    assert {name: n for name, n in lines.items() if n > MAX_MODULE_LINES} == {}


if __name__ == "__main__":
    # As conftest.py does, before aws_cdk is first imported.
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    os.environ.setdefault("JSII_DEPRECATED", "fail")
    from tests.infra.synthesis import synthesize

    with tempfile.TemporaryDirectory() as outdir:
        default = resources_of(synthesize(Path(outdir) / "default").document)
        every_option = resources_of(synthesize(Path(outdir) / "every", **EVERY_OPTION).document)
    sys.stdout.write(render(default, every_option))
