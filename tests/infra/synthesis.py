"""Synthesising the stack as a deployment would, and reading the template it gives.

The infra tests need the infra dependency group (aws-cdk-lib, cdk-nag), which the README's test
command installs with every other group
(``python3 tools/uv.py run --frozen --all-groups pytest``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import App, Environment, Validations
from aws_cdk.assertions import Annotations, Match, Template

from infra.app import build
from infra.leaderboard_stack import DeployConfig, LeaderboardStack
from infra.tasks import CONTAINER_NAME

__all__ = [
    "CONTAINER_NAME",
    "Annotations",
    "App",
    "DeployConfig",
    "Match",
    "Synthesized",
    "Validations",
    "synthesize",
]

REPO = Path(__file__).resolve().parents[2]
CDK_JSON = REPO / "infra" / "cdk.json"

ACCOUNT = "123456789012"
REGION = "us-east-1"
CERTIFICATE_ARN = f"arn:aws:acm:{REGION}:{ACCOUNT}:certificate/00000000-test"
IMAGE_TAG = "test-tag"


def deploy_context(**extra: object) -> dict[str, Any]:
    """What the CLI hands the app: cdk.json's context plus the -c values of docs/deploy.md."""
    context: dict[str, Any] = dict(json.loads(CDK_JSON.read_text())["context"])
    context.update(certificateArn=CERTIFICATE_ARN, imageTag=IMAGE_TAG)
    context.update(extra)
    return context


@dataclass(frozen=True)
class Synthesized:
    app: App
    stack: LeaderboardStack
    template: Template
    outdir: Path
    document: dict[str, Any]
    """The template as JSON, read once (every read through ``template`` crosses into Node.js)."""

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        resources: dict[str, dict[str, Any]] = self.document["Resources"]
        return resources

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}

    def one(self, resource_type: str) -> tuple[str, dict[str, Any]]:
        found = self.of_type(resource_type)
        assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
        return next(iter(found.items()))

    def logical_id(self, construct: Any) -> str:
        logical_id: str = self.stack.resolve(construct.node.default_child.logical_id)
        return logical_id

    def task_definition(self) -> dict[str, Any]:
        _, task = self.one("AWS::ECS::TaskDefinition")
        return dict(task["Properties"])

    def container(self) -> dict[str, Any]:
        (container,) = self.task_definition()["ContainerDefinitions"]
        return dict(container)


def synthesize(outdir: Path, **context: object) -> Synthesized:
    """The stack exactly as ``infra/app.py`` builds it, cdk-nag included, synthesised once: a
    finding nobody acknowledged fails here, before any test reads the template."""
    app = App(context=deploy_context(**context), outdir=str(outdir))
    stack = build(app, Environment(account=ACCOUNT, region=REGION))
    app.synth()
    template = Template.from_stack(stack)
    return Synthesized(
        app=app, stack=stack, template=template, outdir=outdir, document=dict(template.to_json())
    )


def ref_target(value: object) -> str:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` points at."""
    assert isinstance(value, Mapping), f"not a reference: {value!r}"
    if "Ref" in value:
        return str(value["Ref"])
    if "Fn::GetAtt" in value:
        return str(value["Fn::GetAtt"][0])
    raise AssertionError(f"not a Ref or GetAtt: {value!r}")


def references(value: object) -> set[str]:
    """Every logical id a value refers to, however deep in intrinsic functions."""
    if isinstance(value, Mapping):
        if set(value) == {"Ref"} or set(value) == {"Fn::GetAtt"}:
            return {ref_target(value)}
        return {r for item in value.values() for r in references(item)}
    if isinstance(value, list):
        return {r for item in value for r in references(item)}
    return set()


def listify(value: object) -> list[Any]:
    """IAM's "one or a list"."""
    return list(value) if isinstance(value, list) else [value]


def statements_of_role(synthesized: Synthesized, role_id: str) -> Iterator[dict[str, Any]]:
    """Every policy statement granted to the role: its inline policies, and every policy of the
    stack attached to it. A managed policy by ARN (an AWS one) cannot be read here, so it fails."""
    role = synthesized.resources[role_id]
    assert role["Type"] == "AWS::IAM::Role"
    assert not role["Properties"].get("ManagedPolicyArns"), f"{role_id} has managed policies"
    for policy in role["Properties"].get("Policies", []):
        yield from policy["PolicyDocument"]["Statement"]
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for policy in synthesized.of_type(kind).values():
            if role_id in {ref_target(r) for r in policy["Properties"].get("Roles", [])}:
                yield from policy["Properties"]["PolicyDocument"]["Statement"]
