"""cdk-nag (v3) acknowledgements: one rule, one construct, one written reason."""

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Accept ``rule_id`` (e.g. ``AwsSolutions-IAM5[Resource::*]``) on ``scope`` and below."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
