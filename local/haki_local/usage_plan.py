"""A project's usage key in the deployed API's usage plan, registered from the admin CLI
(``haki keys create --usage-plan-id``).

The deployed API meters each call under the usage key its authorizer names: ``hku_``, derived
from the project id (``haki.keys.usage_key``). API Gateway counts it only once an API key with
that value is in the usage plan. Registering is idempotent: an API key with the value is
reused (whatever its name), one is created otherwise (named after the project), and a key
already in the plan is left there. AWS credentials and region come from the usual places
(``AWS_PROFILE``, ``AWS_REGION``...); any AWS failure is one :class:`UsagePlanError`.
"""

from dataclasses import dataclass
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from haki.errors import HakiError
from haki.keys import usage_key


class UsagePlanError(HakiError):
    """API Gateway refused or could not be reached: nothing was registered."""

    code = "usage_plan_error"
    status = 502
    api = False


@dataclass(frozen=True)
class Registration:
    """Where the project's usage key stands in API Gateway after registering."""

    usage_plan_id: str
    api_key_id: str
    #: False when an API key with the project's usage key already existed.
    created: bool
    #: False when the key was in the plan already.
    added: bool
    #: An existing key may have been disabled on purpose: it stays so, and calls are refused.
    enabled: bool


def register_usage_key(usage_plan_id: str, project_id: str, client: Any = None) -> Registration:
    """Put ``project_id``'s usage key in the usage plan ``usage_plan_id``; ``client``: an
    ``apigateway`` client (the default one of the environment when omitted)."""
    value = usage_key(project_id)
    try:
        gateway = client or boto3.client("apigateway")
        gateway.get_usage_plan(usagePlanId=usage_plan_id)
        key = _api_key_with_value(gateway, value)
        created = key is None
        if key is None:
            key = gateway.create_api_key(
                name=project_id, value=value, enabled=True,
                description=f"Haki usage key of project {project_id}")
        added = _add_to_plan(gateway, usage_plan_id, key["id"])
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise UsagePlanError(
            f"API Gateway refused {exc.operation_name} for usage plan {usage_plan_id!r}: "
            f"{error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": ")) from None
    except BotoCoreError as exc:
        raise UsagePlanError(f"API Gateway could not be reached: {exc}") from None
    return Registration(usage_plan_id=usage_plan_id, api_key_id=key["id"], created=created,
                        added=added, enabled=bool(key.get("enabled", True)))


def _api_key_with_value(gateway: Any, value: str) -> dict[str, Any] | None:
    pages = gateway.get_paginator("get_api_keys").paginate(includeValues=True)
    for page in pages:
        for key in page.get("items", []):
            if key.get("value") == value:
                return dict(key)
    return None


def _add_to_plan(gateway: Any, usage_plan_id: str, key_id: str) -> bool:
    """Add the key to the plan; False when it was there already."""
    try:
        gateway.get_usage_plan_key(usagePlanId=usage_plan_id, keyId=key_id)
        return False
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NotFoundException":
            raise
    try:
        gateway.create_usage_plan_key(usagePlanId=usage_plan_id, keyId=key_id, keyType="API_KEY")
    except ClientError as exc:  # added by someone else meanwhile
        if exc.response.get("Error", {}).get("Code") != "ConflictException":
            raise
        return False
    return True
