"""The API's operations as data: what the clients send and what they read back.

Adding a route to the clients is one :class:`Operation` here (the drift test then requires it
to match ``docs/openapi.json``: method, path, query parameters, request and response schemas)
plus one short method on each client.
"""

from dataclasses import dataclass, field

from pydantic import BaseModel

from haki_client.models import (
    ContextRequest,
    ContextResponse,
    InspectResponse,
    StatsOverview,
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

#: Every operation of the API; the drift test requires one per path and method of the document.
OPERATIONS: tuple[Operation, ...] = (CONTEXT, INSPECT, STATS_OVERVIEW)
