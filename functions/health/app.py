"""``GET /v1/health`` (liveness) and ``GET /v1/health/ready`` (readiness: one round trip to
the database), for load balancers, uptime monitors and deploy checks.

No key: API Gateway runs no authorizer on these routes and meters no usage key. Its own
function, with a reserved concurrency of its own, so unauthenticated probes never take the
tenant functions' concurrency or their connections to the proxy; a flood of them is throttled
here (a 503) while the API serves on.
"""

from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from haki import health
from haki.db import Role
from haki_aws import gateway
from haki_aws.database import runtime_database
from haki_aws.errors import responses
from haki_aws.observability import api_entry

app = gateway.api_resolver()
db = runtime_database(Role.APP)


@app.get("/v1/health", summary="Liveness: the API answers (no key)",
         responses=responses(HTTPStatus.OK))
def get_health() -> health.Health:
    return health.live()


@app.get("/v1/health/ready", summary="Readiness: the API reaches its database (no key)",
         responses=responses(HTTPStatus.OK))
def get_ready() -> health.Health:
    return health.ready(db)


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve_public(app, event, context)
