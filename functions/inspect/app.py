"""``GET /v1/inspect/{trace_id}``: a past context call and every decision it took;
``GET /v1/calls`` and ``GET /v1/calls/{trace_id}``: the project's calls as the console lists
and draws them; ``POST /v1/calls/{trace_id}/feedback``: what the answer used, and what was
missing; ``GET /v1/eval-set``: the calls with feedback as a labelled set.

An unknown trace id and one of another scope get the same 404, so nothing tells a caller
whether another tenant's trace exists.
"""

from http import HTTPStatus
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.utilities.typing import LambdaContext

from haki.assembler.config import RetrievalConfig
from haki.assembler.trace import load_trace, parse_trace_id
from haki.calls import CallDetail, CallListRequest, CallPage, call_detail, list_calls
from haki.calls.evalset import (
    DEFAULT_EXPORT_CALLS,
    MAX_EXPORT_CALLS,
    EvalSet,
    EvalSetRequest,
    export_eval_set,
)
from haki.calls.feedback import give_feedback
from haki.calls.models import MAX_LABEL_CHARS, MAX_SEARCH_CHARS, FeedbackRequest
from haki.db import Role
from haki.errors import InvalidFeedbackIds, TraceNotFound
from haki.memory.api import DEFAULT_PAGE
from haki.models import CallFeedback, EmptyReason, InspectResponse, Status
from haki.settings import get_settings
from haki.validation import parse
from haki_aws import gateway
from haki_aws.auth import key_scope, request_scope
from haki_aws.database import reader_database, runtime_database
from haki_aws.errors import responses
from haki_aws.observability import api_entry, log_scope, traced
from haki_aws.params import CursorQuery, OptionalScopeQuery, PageLimitQuery

app = gateway.api_resolver()
db = runtime_database(Role.APP)
#: The read replica when the stack has one (haki:read_replica); the writer answers otherwise,
#: and for a trace the replica does not hold yet.
reader = reader_database(Role.APP)
config = RetrievalConfig.from_settings(get_settings())

_TRACE_ID = Annotated[str, Path(description="trace_id returned by POST /v1/context; any other "
                                            "text is an unknown trace (404)")]
_LABEL = Annotated[str | None, Query(min_length=1, max_length=MAX_LABEL_CHARS)]
_INSTANT = Annotated[str | None, Query(
    description="RFC 3339 with a time zone (not a number), e.g. 2026-12-01T00:00:00Z")]


@app.get("/v1/inspect/<trace_id>", summary="The packet and decision trace of a context call",
         responses=responses(HTTPStatus.OK, TraceNotFound))
@traced
def get_inspect(
    trace_id: _TRACE_ID,
    project_id: OptionalScopeQuery = None,
    subject_id: OptionalScopeQuery = None,
) -> InspectResponse:
    scope = key_scope(app, project_id)
    trace = parse_trace_id(trace_id)
    log_scope(scope, subject_id, trace_id=str(trace))
    return load_trace(db, project_id=scope, subject_id=subject_id, trace_id=trace,
                      reader=reader)


@app.get("/v1/calls", summary="The project's context calls, newest first, searched and filtered")
@traced
def get_calls(
    project_id: OptionalScopeQuery = None,
    subject_id: OptionalScopeQuery = None,
    q: Annotated[str | None, Query(
        min_length=1, max_length=MAX_SEARCH_CHARS,
        description="text the query or the subject id contains (any case)")] = None,
    status: Status | None = None,
    warning: Annotated[str | None, Query(
        min_length=1, max_length=MAX_LABEL_CHARS,
        description="code of a warning the packet carries, e.g. open_conflict")] = None,
    empty_reason: Annotated[EmptyReason | Literal["served"] | None, Query(
        description="why the packet was empty; served: calls whose packet was not")] = None,
    purpose: _LABEL = None,
    feedback: Annotated[Literal["any", "missing"] | None, Query(
        description="any: calls with feedback; missing: calls whose feedback names memory "
                    "that should have been served")] = None,
    since: _INSTANT = None,
    until: _INSTANT = None,
    cursor: CursorQuery = None,
    limit: PageLimitQuery = DEFAULT_PAGE,
) -> CallPage:
    scope = request_scope(app, project_id, subject_id)
    request = parse(CallListRequest, {
        "project_id": project_id, "subject_id": subject_id, "q": q, "status": status,
        "warning": warning, "empty_reason": empty_reason, "purpose": purpose,
        "feedback": feedback, "since": since, "until": until, "cursor": cursor, "limit": limit})
    return list_calls(reader or db, scope, request)


@app.get("/v1/calls/<trace_id>",
         summary="A context call as the console draws it: trace, candidate texts, block",
         responses=responses(HTTPStatus.OK, TraceNotFound))
@traced
def get_call(trace_id: _TRACE_ID, project_id: OptionalScopeQuery = None,
             subject_id: OptionalScopeQuery = None) -> CallDetail:
    scope = key_scope(app, project_id)
    trace = parse_trace_id(trace_id)
    log_scope(scope, subject_id, trace_id=str(trace))
    return call_detail(db, project_id=scope, subject_id=subject_id, trace_id=trace,
                       config=config, reader=reader)


@app.post("/v1/calls/<trace_id>/feedback",
          summary="Tell which served items the answer used and which memory was missing",
          responses=responses(HTTPStatus.OK, TraceNotFound, InvalidFeedbackIds))
@traced
def post_feedback(trace_id: _TRACE_ID, request: FeedbackRequest) -> CallFeedback:
    scope = key_scope(app, request.project_id)
    trace = parse_trace_id(trace_id)
    # Never the note (tenant content), nor the ids: the scope and the call.
    log_scope(scope, request.subject_id, trace_id=str(trace))
    return give_feedback(db, scope, trace, request)


@app.get("/v1/eval-set",
         summary="The project's calls with feedback as a labelled set that haki eval reads")
@traced
def get_eval_set(
    project_id: OptionalScopeQuery = None,
    since: _INSTANT = None,
    until: _INSTANT = None,
    limit: Annotated[int, Query(ge=1, le=MAX_EXPORT_CALLS,
                                description="calls at most (the newest of the window)")]
    = DEFAULT_EXPORT_CALLS,
) -> EvalSet:
    scope = request_scope(app, project_id, None)
    request = parse(EvalSetRequest, {"project_id": scope, "since": since, "until": until,
                                     "limit": limit})
    return export_eval_set(reader or db, scope, request)


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)
