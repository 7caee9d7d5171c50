"""The VPC the load balancer and the tasks live in: public subnets for the load balancer,
private ones for the tasks, free gateway endpoints for DynamoDB and S3, and flow logs."""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs


class Network:
    """The VPC, added to ``stack`` itself (leaderboard_stack.py says why)."""

    def __init__(self, stack: Stack, *, nat_gateways: int) -> None:
        flow_logs = logs.LogGroup(
            stack,
            "FlowLogs",
            retention=logs.RetentionDays.TWO_WEEKS,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.vpc = ec2.Vpc(
            stack,
            "Vpc",
            max_azs=2,
            # One NAT gateway by default: the tasks reach ECR, CloudWatch Logs and Secrets Manager
            # through it (DynamoDB and S3 through free gateway endpoints); -c natGateways=2 keeps
            # that path up when its zone is down, for another NAT gateway's hourly price.
            nat_gateways=nat_gateways,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="tasks", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=22
                ),
            ],
            gateway_endpoints={
                # DynamoDB traffic never crosses the NAT gateway (no per-GB charge, no hop).
                "DynamoDb": ec2.GatewayVpcEndpointOptions(
                    service=ec2.GatewayVpcEndpointAwsService.DYNAMODB
                ),
                # Image layers come from S3.
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
            },
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.ALL,
                )
            },
        )
