"""``GET /v1/inspect/{trace_id}``: a past context call and every decision it took.

An unknown trace id and one of another scope get the same 404, so nothing tells a caller
whether another tenant's trace exists.
"""

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.utilities.typing import LambdaContext

from haki.assembler.trace import load_trace, parse_trace_id
from haki.db import Role
from haki.errors import TraceNotFound
from haki.models import InspectResponse
from haki_aws import gateway
from haki_aws.auth import key_scope
from haki_aws.database import reader_database, runtime_database
from haki_aws.errors import responses
from haki_aws.observability import api_entry, log_scope, traced
from haki_aws.params import ScopeQuery

app = gateway.api_resolver()
db = runtime_database(Role.APP)
#: The read replica when the stack has one (haki:read_replica); the writer answers otherwise,
#: and for a trace the replica does not hold yet.
reader = reader_database(Role.APP)


@app.get("/v1/inspect/<trace_id>", summary="The packet and decision trace of a context call",
         responses=responses(HTTPStatus.OK, TraceNotFound))
@traced
def get_inspect(
    trace_id: Annotated[str, Path(description="trace_id returned by POST /v1/context; any "
                                             "other text is an unknown trace (404)")],
    project_id: ScopeQuery,
    subject_id: ScopeQuery,
) -> InspectResponse:
    scope = key_scope(app, project_id)
    trace = parse_trace_id(trace_id)
    log_scope(scope, subject_id, trace_id=str(trace))
    return load_trace(db, project_id=scope, subject_id=subject_id, trace_id=trace,
                      reader=reader)


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)
