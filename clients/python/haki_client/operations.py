"""The API's operations as data: what the clients send and what they read back.

Adding a route to the clients is one :class:`Operation` here (the drift test then requires it
to match ``docs/openapi.json``: method, path, query parameters, request and response schemas)
plus one short method on each client.
"""

from dataclasses import dataclass, field

from pydantic import BaseModel

from haki_client.models import (
    CallDetail,
    CallFeedback,
    CallPage,
    ConflictPage,
    ContextRequest,
    ContextResponse,
    EvalSet,
    EventPage,
    EventsRequest,
    EventsResponse,
    FactPage,
    FactsRequest,
    FactsResponse,
    FactStatusRequest,
    FactStatusResponse,
    FeedbackRequest,
    ForgetRequest,
    ForgetResponse,
    Health,
    InspectResponse,
    ResolveRequest,
    ResolveResponse,
    StatsOverview,
    StatsSeries,
    SubjectPage,
)


@dataclass(frozen=True)
class Operation:
    method: str
    #: Path with ``{name}`` placeholders, as in the OpenAPI document.
    path: str
    response: type[BaseModel]
    #: Model of the JSON body, ``None`` for a request without one.
    request: type[BaseModel] | None = None
    #: Query-string parameters the operation takes.
    query: tuple[str, ...] = field(default=())
    #: Safe to send again when the first attempt may have reached the service (a read
    #: timeout, a dropped connection, 502 / 504). Connection failures, 429 and 503 are
    #: retried for every operation: the service did no work.
    idempotent: bool = True

    def path_parameters(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{"))


CONTEXT = Operation("POST", "/v1/context", ContextResponse, request=ContextRequest)
INSPECT = Operation("GET", "/v1/inspect/{trace_id}", InspectResponse,
                    query=("project_id", "subject_id"))
STATS_OVERVIEW = Operation("GET", "/v1/stats/overview", StatsOverview,
                           query=("project_id", "subject_id"))
# The console's reads of past calls, usage over time, and a subject's episodes.
LIST_CALLS = Operation("GET", "/v1/calls", CallPage, query=(
    "project_id", "subject_id", "q", "status", "warning", "empty_reason", "purpose", "feedback",
    "since", "until", "cursor", "limit"))
CALL = Operation("GET", "/v1/calls/{trace_id}", CallDetail, query=("project_id", "subject_id"))
# A repeat from the same source replaces the feedback: safe to send again.
FEEDBACK = Operation("POST", "/v1/calls/{trace_id}/feedback", CallFeedback,
                     request=FeedbackRequest)
# The calls with feedback as a labelled set (haki eval's format).
EVAL_SET = Operation("GET", "/v1/eval-set", EvalSet,
                     query=("project_id", "since", "until", "limit"))
STATS_SERIES = Operation("GET", "/v1/stats/series", StatsSeries,
                         query=("project_id", "subject_id", "days", "granularity"))
LIST_EVENTS = Operation("GET", "/v1/events", EventPage,
                        query=("project_id", "subject_id", "thread_id", "cursor", "limit"))
LIST_SUBJECTS = Operation("GET", "/v1/subjects", SubjectPage,
                          query=("project_id", "cursor", "limit"))

# The writes. Events are idempotent because the client gives every event an idempotency key
# (haki_client.client): a replay returns the stored id. The others may have run when an
# attempt times out, so only failures where nothing was done are retried.
WRITE_EVENTS = Operation("POST", "/v1/events", EventsResponse, request=EventsRequest)
WRITE_FACTS = Operation("POST", "/v1/facts", FactsResponse, request=FactsRequest,
                        idempotent=False)
LIST_FACTS = Operation("GET", "/v1/facts", FactPage,
                       query=("project_id", "subject_id", "status", "predicate", "cursor",
                              "limit"))
SET_FACT_STATUS = Operation("POST", "/v1/facts/{fact_id}/status", FactStatusResponse,
                            request=FactStatusRequest, idempotent=False)
LIST_CONFLICTS = Operation("GET", "/v1/conflicts", ConflictPage,
                           query=("project_id", "subject_id", "status", "cursor", "limit"))
RESOLVE_CONFLICT = Operation("POST", "/v1/conflicts/{conflict_id}/resolve", ResolveResponse,
                             request=ResolveRequest, idempotent=False)
FORGET = Operation("POST", "/v1/forget", ForgetResponse, request=ForgetRequest,
                   idempotent=False)

# The health checks (no key needed; the client sends its own anyway, unread).
HEALTH = Operation("GET", "/v1/health", Health)
READY = Operation("GET", "/v1/health/ready", Health)

#: Every operation of the API; the drift test requires one per path and method of the document.
OPERATIONS: tuple[Operation, ...] = (
    CONTEXT, INSPECT, STATS_OVERVIEW, WRITE_EVENTS, WRITE_FACTS, LIST_FACTS, SET_FACT_STATUS,
    LIST_CONFLICTS, RESOLVE_CONFLICT, FORGET, LIST_CALLS, CALL, STATS_SERIES, LIST_EVENTS,
    LIST_SUBJECTS, HEALTH, READY, FEEDBACK, EVAL_SET,
)
