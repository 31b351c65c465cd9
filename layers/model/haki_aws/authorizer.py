"""The API's REQUEST authorizer: one credential, the tenant's ``hk_`` key, at the edge.

API Gateway calls it with the request's ``Authorization`` header (its identity source) and
caches the answer for that header's value (``haki_infra.api``). A live key is allowed on every
route of the stage, with the project's usage key as ``usageIdentifierKey`` (the RestApi's
``apiKeySource`` is ``AUTHORIZER``), so the usage plan's throttle and quota apply per project
without the caller holding a second key. A missing, malformed, unknown or revoked key is
denied (the edge answers 401 ``unauthorized``); a database that cannot be reached is an
authorizer failure (503 ``service_unavailable``), never an allow.

The functions still check the key themselves, in the transaction that sets the row-level
security scope (``haki_aws.gateway``): a key revoked within the cache's TTL is refused there.
"""

import time
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import (
    APIGatewayAuthorizerRequestEvent,
    APIGatewayAuthorizerResponse,
)

from haki.db import Database
from haki.errors import Unauthorized
from haki.keys import usage_key
from haki_aws.auth import authenticate_event
from haki_aws.observability import OK, record_request

#: The principal of a denied request.
ANONYMOUS = "anonymous"
ENDPOINT = "authorizer"


def authorize(db: Database, event: Mapping[str, Any]) -> dict[str, Any]:
    """The authorizer's answer to one REQUEST event: an IAM policy allowing or denying the
    whole stage (the answer is cached per key, for every route)."""
    started = time.perf_counter()
    arn = APIGatewayAuthorizerRequestEvent(dict(event)).parsed_arn
    try:
        identity = authenticate_event(db, event)
    except Unauthorized as exc:
        response = APIGatewayAuthorizerResponse(
            ANONYMOUS, arn.region, arn.aws_account_id, arn.api_id, arn.stage,
            partition=arn.partition)
        response.deny_all_routes()
        record_request(ENDPOINT, exc.code, (time.perf_counter() - started) * 1000)
        return response.asdict()
    response = APIGatewayAuthorizerResponse(
        str(identity.key_id), arn.region, arn.aws_account_id, arn.api_id, arn.stage,
        context={"org_id": identity.org_id, "project_id": identity.project_id},
        usage_identifier_key=usage_key(identity.project_id), partition=arn.partition)
    response.allow_all_routes()
    record_request(ENDPOINT, OK, (time.perf_counter() - started) * 1000)
    return response.asdict()
