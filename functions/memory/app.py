"""The stored memory's routes that run SQL only (docs/spec.md §11): ``GET /v1/facts``,
``POST /v1/facts/{fact_id}/status``, ``GET /v1/conflicts``,
``POST /v1/conflicts/{conflict_id}/resolve``, ``POST /v1/forget``, ``GET /v1/events`` (a
subject's episodes) and ``GET /v1/subjects`` (the project's subjects).

They share a function because they share a profile: one short transaction each, no model,
small bodies, so a small function answers them (the writes that embed are
``functions/ingest``). An unknown fact or conflict id and one of another project get the same
404, so nothing tells a caller whether another tenant's memory exists.
"""

from collections.abc import Callable
from http import HTTPStatus
from typing import Annotated, Any, Literal, TypeVar
from uuid import UUID

from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from haki.db import Database, Role
from haki.errors import (
    ConflictFactNotActive,
    ConflictNotFound,
    ConflictNotOpen,
    FactNotFound,
    IllegalStatusTransition,
)
from haki.memory.api import (
    DEFAULT_PAGE,
    ConflictListRequest,
    ConflictPage,
    FactListRequest,
    FactPage,
    FactStatusRequest,
    FactStatusResponse,
    ForgetRequest,
    ForgetResponse,
    ResolveRequest,
    ResolveResponse,
)
from haki.memory.conflicts import list_conflicts, resolve
from haki.memory.episodes import EventListRequest, EventPage, list_events
from haki.memory.facts import list_facts, set_fact_status
from haki.memory.forget import forget
from haki.memory.subjects import SubjectListRequest, SubjectPage, list_subjects
from haki.models import FactStatus
from haki.validation import parse
from haki_aws import gateway
from haki_aws.auth import request_scope
from haki_aws.database import runtime_database
from haki_aws.errors import responses
from haki_aws.observability import api_entry, logger, traced
from haki_aws.params import (
    CursorQuery,
    OptionalScopeQuery,
    PageLimitQuery,
    PredicateQuery,
    ScopeQuery,
    ThreadQuery,
)

app = gateway.api_resolver()
db = runtime_database(Role.APP)

_FACT_ID = Annotated[UUID, Path(description="id of a fact of the key's project")]
_CONFLICT_ID = Annotated[UUID, Path(description="id of an open conflict set")]

Listing = TypeVar("Listing", bound=BaseModel)
Page = TypeVar("Page", bound=BaseModel)


def _listed(lister: Callable[[Database, str, Listing], Page], model: type[Listing],
            project_id: str | None, subject_id: str | None, query: dict[str, object]) -> Page:
    """A page of a listing: the key's project checked and put on the log lines with the
    subject, then the query validated as the listing's request (``model``)."""
    scope = request_scope(app, project_id, subject_id)
    return lister(db, scope, parse(model, {"project_id": project_id, **query}))


@app.get("/v1/facts", summary="A subject's facts of one status, oldest recorded first")
@traced
def get_facts(
    subject_id: ScopeQuery,
    project_id: OptionalScopeQuery = None,
    status: Annotated[FactStatus, Query(description="default: active")] = "active",
    predicate: PredicateQuery = None,
    cursor: CursorQuery = None,
    limit: PageLimitQuery = DEFAULT_PAGE,
) -> FactPage:
    return _listed(list_facts, FactListRequest, project_id, subject_id, {
        "subject_id": subject_id, "status": status, "predicate": predicate, "cursor": cursor,
        "limit": limit})


@app.get("/v1/events", summary="A subject's episodes (its events), newest first")
@traced
def get_events(
    subject_id: ScopeQuery,
    project_id: OptionalScopeQuery = None,
    thread_id: ThreadQuery = None,
    cursor: CursorQuery = None,
    limit: PageLimitQuery = DEFAULT_PAGE,
) -> EventPage:
    return _listed(list_events, EventListRequest, project_id, subject_id, {
        "subject_id": subject_id, "thread_id": thread_id, "cursor": cursor, "limit": limit})


@app.get("/v1/subjects", summary="The project's subjects (those holding facts or events), by id")
@traced
def get_subjects(
    project_id: OptionalScopeQuery = None,
    cursor: CursorQuery = None,
    limit: PageLimitQuery = DEFAULT_PAGE,
) -> SubjectPage:
    return _listed(list_subjects, SubjectListRequest, project_id, None, {
        "cursor": cursor, "limit": limit})


@app.post("/v1/facts/<fact_id>/status", summary="Move a fact along the lifecycle graph",
          responses=responses(HTTPStatus.OK, FactNotFound, IllegalStatusTransition))
@traced
def post_fact_status(fact_id: _FACT_ID, request: FactStatusRequest) -> FactStatusResponse:
    scope = request_scope(app, request.project_id, None, fact_id=str(fact_id))
    return set_fact_status(db, scope, fact_id, request)


@app.get("/v1/conflicts", summary="A subject's conflict sets, oldest first")
@traced
def get_conflicts(
    subject_id: ScopeQuery,
    project_id: OptionalScopeQuery = None,
    status: Annotated[Literal["open", "resolved"], Query(description="default: open")] = "open",
    cursor: CursorQuery = None,
    limit: PageLimitQuery = DEFAULT_PAGE,
) -> ConflictPage:
    return _listed(list_conflicts, ConflictListRequest, project_id, subject_id, {
        "subject_id": subject_id, "status": status, "cursor": cursor, "limit": limit})


@app.post("/v1/conflicts/<conflict_id>/resolve",
          summary="Keep one fact of an open conflict set, supersede the others",
          responses=responses(HTTPStatus.OK, ConflictNotFound, FactNotFound,
                              ConflictNotOpen, ConflictFactNotActive))
@traced
def post_resolve(conflict_id: _CONFLICT_ID, request: ResolveRequest) -> ResolveResponse:
    scope = request_scope(app, request.project_id, None, conflict_id=str(conflict_id))
    return resolve(db, scope, conflict_id, request)


@app.post("/v1/forget", summary="Disable or erase a subject's memory or one fact",
          responses=responses(HTTPStatus.OK, FactNotFound, IllegalStatusTransition))
@traced
def post_forget(request: ForgetRequest) -> ForgetResponse:
    # Not even the subject's digest: like the receipt, the log of an erasure says what was
    # erased (counts, receipt id), never whom it concerned.
    scope = request_scope(app, request.project_id, None)
    forgotten = forget(db, scope, request)
    logger.info("forgotten", extra={"target": forgotten.target, "mode": forgotten.mode,
                                    "counts": forgotten.counts,
                                    "receipt_id": str(forgotten.receipt_id)})
    return forgotten


@api_entry
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return gateway.resolve(app, db, event, context)
