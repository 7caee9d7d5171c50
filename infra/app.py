"""The CDK app: the one stack, checked by cdk-nag's AWS Solutions rules at every synthesis.

cd infra && npx aws-cdk@2 deploy -c certificateArn=ARN -c imageTag=TAG   (docs/deploy.md)
"""

from __future__ import annotations

import os

from aws_cdk import App, Environment, Validations
from cdk_nag import AwsSolutionsChecks

from infra.leaderboard_stack import DeployConfig, LeaderboardStack


def build(app: App, env: Environment | None = None) -> LeaderboardStack:
    """The stack in ``app``, from the app's context, with the checks registered."""
    stack = LeaderboardStack(
        app,
        "Leaderboard",
        config=DeployConfig.from_context(app.node),
        env=env,
        description="Leaderboard service: DynamoDB tables, ECS Fargate behind an HTTPS ALB",
    )
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack


def target_environment() -> Environment:
    """The account and region the CLI's credentials point at, which it passes as
    CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION. The stack needs both: the load balancer's log
    delivery is granted per region."""
    account = os.environ.get("CDK_DEFAULT_ACCOUNT")
    region = os.environ.get("CDK_DEFAULT_REGION")
    if not account or not region:
        raise SystemExit(
            "no target account and region: run cdk with AWS credentials (and a region), or set "
            "CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION to synthesise without them"
        )
    return Environment(account=account, region=region)


if __name__ == "__main__":
    application = App()
    build(application, target_environment())
    application.synth()
