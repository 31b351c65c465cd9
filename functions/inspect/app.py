"""``GET /v1/inspect/{trace_id}``: a past context call and every decision it took.

An unknown trace id and one of another scope get the same 404, so nothing tells a caller
whether another tenant's trace exists.
"""

from typing import Annotated, Any
from uuid import UUID

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from haki.assembler.trace import load_trace
from haki.db import Role
from haki.models import SCOPE_MAX_CHARS, InspectResponse
from haki_aws import gateway
from haki_aws.auth import key_scope
from haki_aws.database import runtime_database
from haki_aws.errors import register_error_handlers
from haki_aws.observability import api_entry, logger, tracer

app = APIGatewayRestResolver(enable_validation=True)
register_error_handlers(app)
db = runtime_database(Role.APP)

ScopeParam = Annotated[str, Query(min_length=1, max_length=SCOPE_MAX_CHARS)]


@app.get("/v1/inspect/<trace_id>", summary="The packet and decision trace of a context call")
@tracer.capture_method
def get_inspect(
    trace_id: Annotated[UUID, Path(description="trace_id returned by POST /v1/context")],
    project_id: ScopeParam,
    subject_id: ScopeParam,
) -> InspectResponse:
    scope = key_scope(app, project_id)
    logger.append_keys(project_id=scope, subject_id=subject_id, trace_id=str(trace_id))
    return load_trace(db, project_id=scope, subject_id=subject_id, trace_id=trace_id)


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)
