"""The stack passes cdk-nag's AWS Solutions rules with every exception written down, CDK reports
no problem of its own, and the app command in cdk.json synthesises what these tests check."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.infra.synthesis import (
    ACCOUNT,
    CDK_JSON,
    REGION,
    Annotations,
    Match,
    Synthesized,
    Validations,
    deploy_context,
)

NAG = "AwsSolutions"


def nag_report(synthesized: Synthesized) -> dict[str, Any]:
    report = json.loads((synthesized.outdir / "validation-report.json").read_text())
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == NAG]
    return dict(plugin)


def acknowledged_in_code(synthesized: Synthesized) -> dict[str, str]:
    """Every cdk-nag acknowledgment the stack makes: rule -> reason."""
    found: dict[str, str] = {}
    for construct in synthesized.stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found |= {k: v for k, v in entry.data.items() if k.startswith(f"{NAG}::")}
    return found


def test_cdk_nag_ran_and_found_nothing_unacknowledged(synthesized: Synthesized) -> None:
    plugin = nag_report(synthesized)
    assert plugin["conclusion"] == "success"
    assert plugin.get("violations", []) == []


def test_every_acknowledged_finding_has_a_reason(synthesized: Synthesized) -> None:
    suppressed = nag_report(synthesized)["suppressedViolations"]
    assert suppressed  # the stack does make exceptions; each must say why
    for finding in suppressed:
        assert len(finding["reason"].split()) >= 8, finding["ruleName"]


def test_no_acknowledgment_is_left_over(synthesized: Synthesized) -> None:
    """An acknowledgment that matches no finding any more would silently accept the next one."""
    used = {f["acknowledgedId"] for f in nag_report(synthesized)["suppressedViolations"]}
    assert set(acknowledged_in_code(synthesized)) == used


def test_cdk_reports_no_error_or_warning(synthesized: Synthesized) -> None:
    annotations = Annotations.from_stack(synthesized.stack)
    assert annotations.find_error("*", Match.any_value()) == []
    assert annotations.find_warning("*", Match.any_value()) == []


def test_the_service_url_is_https(synthesized: Synthesized) -> None:
    url = synthesized.document["Outputs"]["ServiceUrl"]["Value"]
    assert url["Fn::Join"][1][0] == "https://"


def test_cdk_json_s_app_command_synthesises_the_template_under_test(
    synthesized: Synthesized, tmp_path: Path
) -> None:
    """Run the app as the CDK CLI runs it (from infra/, with its outdir, context and target in
    the environment), with no CLI, no credentials and no network."""
    settings = json.loads(CDK_JSON.read_text())
    env = {
        **os.environ,
        "CDK_OUTDIR": str(tmp_path),
        "CDK_CONTEXT_JSON": json.dumps(deploy_context()),
        "CDK_DEFAULT_ACCOUNT": ACCOUNT,
        "CDK_DEFAULT_REGION": REGION,
    }
    subprocess.run(
        shlex.split(settings["app"]), cwd=CDK_JSON.parent, env=env, check=True, timeout=300
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    stacks = [a for a in manifest["artifacts"].values() if a["type"] == "aws:cloudformation:stack"]
    assert [s["environment"] for s in stacks] == [f"aws://{ACCOUNT}/{REGION}"]
    assert json.loads((tmp_path / "Leaderboard.template.json").read_text()) == synthesized.document
