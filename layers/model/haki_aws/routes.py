"""The public route table: one source for the CDK REST API, the local HTTP server, the edge's
body limits and the OpenAPI document.

Each route names the Lambda function (a folder under ``functions/``) that serves it, so the
deployed API Gateway and the local adapter dispatch the same requests to the same handlers,
and the largest request body it accepts, which the edge enforces before parsing
(``haki_aws.gateway``; 413 ``payload_too_large`` beyond); and the answers the gateway gives
itself (:data:`EDGE_ERRORS`). Standard library only: the CDK app
reads it without the runtime's dependencies.
"""

from dataclasses import dataclass

#: Largest body of a route that carries no batch: every valid request fits, even a context
#: call whose 16,000 query characters are all written as escaped surrogate pairs (12 bytes
#: each, ~192 KB).
BODY_BYTES = 256 * 1024
#: Largest body of the batch write routes (100 records; ``haki.validation.MAX_BODY_BYTES``,
#: the largest body parsed at all, which a test keeps equal).
BATCH_BODY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Route:
    method: str
    #: API Gateway resource path; ``{name}`` marks a path parameter.
    path: str
    #: Folder under ``functions/`` whose ``app.handler`` serves the route.
    function: str
    #: Largest request body accepted, in bytes.
    max_body_bytes: int = BODY_BYTES
    #: Served without a key (no authorizer, no usage key): the health checks only, which read
    #: nothing of a tenant and say nothing of the deployment.
    public: bool = False


ROUTES: tuple[Route, ...] = (
    Route("POST", "/v1/context", "context"),
    Route("GET", "/v1/inspect/{trace_id}", "inspect"),
    # The console's reads of past calls (same function as inspect: same tables, same replica).
    Route("GET", "/v1/calls", "inspect"),
    Route("GET", "/v1/calls/{trace_id}", "inspect"),
    # Feedback on a call: what its answer used, what it missed (a short write of the calls).
    Route("POST", "/v1/calls/{trace_id}/feedback", "inspect"),
    # The calls with feedback as a labelled set (haki eval's format).
    Route("GET", "/v1/eval-set", "inspect"),
    Route("GET", "/v1/stats/overview", "stats"),
    Route("GET", "/v1/stats/series", "stats"),
    # Writes that embed (the model, a full vCPU): functions/ingest.
    Route("POST", "/v1/events", "ingest", BATCH_BODY_BYTES),
    Route("POST", "/v1/facts", "ingest", BATCH_BODY_BYTES),
    # Reads and lifecycle changes of stored memory, SQL only: functions/memory.
    Route("GET", "/v1/facts", "memory"),
    Route("POST", "/v1/facts/{fact_id}/status", "memory"),
    Route("GET", "/v1/conflicts", "memory"),
    Route("GET", "/v1/events", "memory"),
    Route("GET", "/v1/subjects", "memory"),
    Route("POST", "/v1/conflicts/{conflict_id}/resolve", "memory"),
    Route("POST", "/v1/forget", "memory"),
    # Liveness and readiness, without a key: functions/health.
    Route("GET", "/v1/health", "health", public=True),
    Route("GET", "/v1/health/ready", "health", public=True),
)


def route_of(method: str | None, path: str | None) -> Route | None:
    """The route of an API Gateway event (its ``httpMethod`` and ``resource``), if any."""
    for route in ROUTES:
        if route.method == method and route.path == path:
            return route
    return None


#: What a call without a live key is told, at the edge and by the functions alike.
KEY_REQUIRED = "a valid API key is required: Authorization: Bearer hk_..."
_RETRY = "the memory store is unavailable, retry shortly"


@dataclass(frozen=True)
class EdgeError:
    """An answer the gateway gives itself, in the service's ``{"error": {code, message}}``
    shape."""

    status: int
    code: str
    #: ``None`` keeps API Gateway's own message.
    message: str | None = None


#: The gateway's own answers, by API Gateway response type: the deployed API's gateway
#: responses (``haki_infra.api``), and what the local server answers for the same cases.
EDGE_ERRORS: dict[str, EdgeError] = {
    # No Authorization header: refused before the authorizer runs.
    "UNAUTHORIZED": EdgeError(401, "unauthorized", KEY_REQUIRED),
    # The authorizer's deny: a malformed, unknown or revoked key.
    "ACCESS_DENIED": EdgeError(401, "unauthorized", KEY_REQUIRED),
    # The authorizer failed (the key store unreachable): retry.
    "AUTHORIZER_FAILURE": EdgeError(503, "service_unavailable", _RETRY),
    "AUTHORIZER_CONFIGURATION_ERROR": EdgeError(503, "service_unavailable", _RETRY),
    "BAD_REQUEST_PARAMETERS": EdgeError(401, "unauthorized", KEY_REQUIRED),
    "THROTTLED": EdgeError(429, "throttled"),
    "QUOTA_EXCEEDED": EdgeError(429, "quota_exceeded"),
    # The project's usage key is not in a usage plan (docs/deploy.md, "Keys").
    "INVALID_API_KEY": EdgeError(
        403, "invalid_usage_key",
        "this project's usage key is not registered in a usage plan"),
    "MISSING_AUTHENTICATION_TOKEN": EdgeError(404, "not_found"),
    # API Gateway's own 10 MB ceiling; the functions refuse far smaller bodies the same way.
    "REQUEST_TOO_LARGE": EdgeError(
        413, "payload_too_large", "request body over API Gateway's 10 MB limit"),
    "DEFAULT_5XX": EdgeError(503, "service_unavailable"),
}
