"""Accepting a cdk-nag finding where the rule does not fit, with the reason written beside it (the
tests check that every acknowledgment has a reason and still matches a finding)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import Construct


def acknowledge(scope: Construct, rule: str, reason: str) -> None:
    """Accept one cdk-nag finding on ``scope`` (and what it contains), with the reason."""
    Validations.of(scope).acknowledge(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))
