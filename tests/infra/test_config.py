"""Deployment options from CDK context, and the optional WAF (-c waf=true): a per-address rate
rule on reads in front of the load balancer, absent unless asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.infra.synthesis import App, DeployConfig, Match, Synthesized, deploy_context, synthesize


@pytest.fixture(scope="module")
def with_waf(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(
        Path(tmp_path_factory.mktemp("cdk.out.waf")), waf="true", wafRequestsPer5Minutes="3000"
    )


def config(**context: object) -> DeployConfig:
    return DeployConfig.from_context(App(context=context).node)


def test_context_values_arrive_as_the_cli_gives_them() -> None:
    parsed = config(**deploy_context(waf="false", minTasks="3", domainName="scores.example.com"))
    assert parsed.waf is False
    assert parsed.min_tasks == 3
    assert parsed.domain_name == "scores.example.com"
    assert config(**deploy_context(waf="true")).waf is True
    assert config(**deploy_context()).waf is False


@pytest.mark.parametrize("missing", ["certificateArn", "imageTag"])
def test_a_deployment_without_its_required_values_says_which(missing: str) -> None:
    context = deploy_context()
    del context[missing]
    with pytest.raises(ValueError, match=f"-c {missing}="):
        config(**context)


def test_there_is_no_web_acl_unless_asked_for(synthesized: Synthesized) -> None:
    assert not synthesized.of_type("AWS::WAFv2::WebACL")
    assert not synthesized.of_type("AWS::WAFv2::WebACLAssociation")


def test_the_web_acl_limits_reads_per_address(with_waf: Synthesized) -> None:
    with_waf.template.has_resource_properties(
        "AWS::WAFv2::WebACL",
        {
            "Scope": "REGIONAL",
            "DefaultAction": {"Allow": {}},
            "Rules": [
                Match.object_like(
                    {
                        "Action": {"Block": {}},
                        "Statement": {
                            "RateBasedStatement": Match.object_like(
                                {
                                    "AggregateKeyType": "IP",
                                    "Limit": 3000,
                                    "ScopeDownStatement": {
                                        "ByteMatchStatement": Match.object_like(
                                            {
                                                "FieldToMatch": {"Method": {}},
                                                "SearchString": "GET",
                                                "PositionalConstraint": "EXACTLY",
                                            }
                                        )
                                    },
                                }
                            )
                        },
                    }
                )
            ],
        },
    )


def test_the_web_acl_guards_the_load_balancer(with_waf: Synthesized) -> None:
    acl_id, _ = with_waf.one("AWS::WAFv2::WebACL")
    balancer_id, _ = with_waf.one("AWS::ElasticLoadBalancingV2::LoadBalancer")
    with_waf.template.has_resource_properties(
        "AWS::WAFv2::WebACLAssociation",
        {"ResourceArn": {"Ref": balancer_id}, "WebACLArn": {"Fn::GetAtt": [acl_id, "Arn"]}},
    )
