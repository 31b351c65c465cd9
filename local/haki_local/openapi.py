"""The public OpenAPI document, generated from the handlers' resolvers.

Each function's resolver describes its own routes (Pydantic request and response models, the
success status, and the domain errors each route declares with ``haki_aws.errors.responses``);
the documents are merged into one, completed with what the resolvers do not know: the
bearer-key security scheme and the errors every route may answer (``{"error": {"code",
"message"}}``; a public route, without a key: 500 and 503 only), the 413 of each route with
its own body limit (``haki_aws.routes``), and what a client generator needs: a stable
``operationId`` and a tag per operation (:data:`OPERATIONS`), an example request body, and the
bearer scheme on every operation but the public ones. ``haki openapi`` writes it to
``docs/openapi.json``; a test fails when the committed file is out of date.
"""

import json
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from haki import __version__
from haki_aws.errors import CONTENT_TYPE, ERROR_SCHEMA_REF
from haki_aws.routes import ROUTES, Route
from haki_local.environment import SOURCE_ROOT

OPENAPI_PATH = SOURCE_ROOT / "docs" / "openapi.json"
TITLE = "Haki context assembler API"

_ERROR_SCHEMA = {
    "type": "object",
    "title": "Error",
    "required": ["error"],
    "properties": {"error": {"$ref": "#/components/schemas/ErrorDetail"}},
}
_ERROR_DETAIL_SCHEMA = {
    "type": "object",
    "title": "ErrorDetail",
    "required": ["code", "message"],
    "properties": {
        "code": {"type": "string", "description": "stable error code"},
        "message": {"type": "string", "description": "human-readable, safe to show"},
    },
}
#: What any route may answer, before or besides its own domain errors.
_EVERY_ROUTE = {
    "401": "unauthorized: missing, unknown or revoked API key",
    "403": "forbidden_scope: the project is not the API key's",
    "422": "missing_scope (project_id or subject_id absent or empty) or validation_error "
           "(malformed JSON, wrong type, unknown field, bad id; a batch names the record, "
           "e.g. facts[3])",
    "500": "internal_error",
    "503": "service_unavailable: the memory store cannot be reached",
}


@dataclass(frozen=True)
class Operation:
    #: Stable, generator-friendly name (camelCase): SDK method names derive from it.
    operation_id: str
    tag: str
    #: An example request body (POST), valid against the route's request model.
    example: dict[str, Any] | None = None


#: Tags, in the order a generated client or a reader lists them.
TAGS: dict[str, str] = {
    "context": "Assemble the memory for a model call, and explain it afterwards",
    "memory": "Write and read a subject's events and facts",
    "conflicts": "Contradicting facts, and settling them",
    "forget": "Disable or erase a subject's memory or one fact",
    "stats": "Usage figures of a project",
    "health": "Liveness and readiness, without a key",
}
_FACT_ID = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
#: Every route's operation, by (method, path) of ``haki_aws.routes.ROUTES``.
OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/v1/context"): Operation("getContext", "context", {
        "project_id": "acme-support", "subject_id": "user-42",
        "query": "Which language does the customer prefer?", "purpose": "support reply",
        "budget_tokens": 800}),
    ("GET", "/v1/inspect/{trace_id}"): Operation("inspectTrace", "context"),
    ("GET", "/v1/calls"): Operation("listCalls", "context"),
    ("GET", "/v1/calls/{trace_id}"): Operation("getCall", "context"),
    ("POST", "/v1/calls/{trace_id}/feedback"): Operation("giveFeedback", "context", {
        "project_id": "acme-support", "subject_id": "user-42", "used": [_FACT_ID],
        "missing": [], "verdict": "helpful", "source": "agent"}),
    ("GET", "/v1/eval-set"): Operation("exportEvalSet", "context"),
    ("GET", "/v1/stats/overview"): Operation("getStatsOverview", "stats"),
    ("GET", "/v1/stats/series"): Operation("getStatsSeries", "stats"),
    ("POST", "/v1/events"): Operation("writeEvents", "memory", {
        "project_id": "acme-support",
        "events": [{"subject_id": "user-42", "kind": "message",
                    "occurred_at": "2026-11-30T09:15:00Z",
                    "payload": {"role": "user", "text": "Je préfère qu'on me réponde en français."},
                    "idempotency_key": "chat-981:turn-3"}]}),
    ("POST", "/v1/facts"): Operation("writeFacts", "memory", {
        "project_id": "acme-support",
        "facts": [{"subject_id": "user-42", "predicate": "preferred_language",
                   "value": "French", "confidence": 0.9}]}),
    ("GET", "/v1/events"): Operation("listEvents", "memory"),
    ("GET", "/v1/facts"): Operation("listFacts", "memory"),
    ("GET", "/v1/subjects"): Operation("listSubjects", "memory"),
    ("POST", "/v1/facts/{fact_id}/status"): Operation("setFactStatus", "memory", {
        "project_id": "acme-support", "status": "disabled"}),
    ("GET", "/v1/conflicts"): Operation("listConflicts", "conflicts"),
    ("POST", "/v1/conflicts/{conflict_id}/resolve"): Operation("resolveConflict", "conflicts", {
        "project_id": "acme-support", "keep_fact_id": _FACT_ID}),
    ("POST", "/v1/forget"): Operation("forget", "forget", {
        "project_id": "acme-support", "subject_id": "user-42", "mode": "disable"}),
    ("GET", "/v1/health"): Operation("getHealth", "health"),
    ("GET", "/v1/health/ready"): Operation("getReadiness", "health"),
}
#: The security scheme every operation requires.
SECURITY_SCHEME = "apiKey"
_BODY_ROUTE = {
    "415": "validation_error: request body is not JSON",
}


def _body_limit(route: Route) -> str:
    size = route.max_body_bytes
    unit = f"{size // (1024 * 1024)} MiB" if size % (1024 * 1024) == 0 else f"{size // 1024} KiB"
    return f"payload_too_large: request body over {unit} ({size} bytes)"


#: What a public route (no key, no parameters) may answer besides its own.
_PUBLIC_ROUTE = {key: _EVERY_ROUTE[key] for key in ("500", "503")}


def _common_errors(route: Route) -> dict[str, str]:
    if route.public:
        return dict(_PUBLIC_ROUTE)
    if route.method == "GET":
        return dict(_EVERY_ROUTE)
    return {**_EVERY_ROUTE, "413": _body_limit(route), **_BODY_ROUTE}


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {CONTENT_TYPE: {"schema": {"$ref": ERROR_SCHEMA_REF}}}}


def _is_error_response(response: dict[str, Any]) -> bool:
    return response.get("content", {}).get(CONTENT_TYPE, {}).get("schema") == {
        "$ref": ERROR_SCHEMA_REF}


def _complete(operation: dict[str, Any], route: Route) -> None:
    """Name and tag the operation, require the bearer key (not on a public route), give its
    example body, and add the errors every route may answer to its own: a status the route
    already declares (e.g. its own 422 ``unknown_reference``) lists both."""
    described = OPERATIONS[(route.method, route.path)]
    operation["operationId"] = described.operation_id
    operation["tags"] = [described.tag]
    operation["security"] = [] if route.public else [{SECURITY_SCHEME: []}]
    if described.example is not None:
        operation["requestBody"]["content"][CONTENT_TYPE]["example"] = described.example
    responses = operation["responses"]
    if route.public:  # no parameters, no body: the resolver's generic 422 cannot happen
        responses.pop("422", None)
    for status, description in _common_errors(route).items():
        declared = responses.get(status)
        if declared is not None and _is_error_response(declared):
            description = f"{description}; {declared['description']}"
        responses[status] = _error_response(description)


def build_openapi() -> dict[str, Any]:
    """The merged document of every routed function."""
    document: dict[str, Any] = {}
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {}
    for route in ROUTES:
        app = import_module(f"functions.{route.function}.app").app
        part = json.loads(app.get_openapi_json_schema(title=TITLE, version=__version__))
        document = document or part
        operation = part["paths"][route.path][route.method.lower()]
        _complete(operation, route)
        paths.setdefault(route.path, {})[route.method.lower()] = operation
        schemas.update(part.get("components", {}).get("schemas", {}))
    for generic in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(generic, None)
    schemas["Error"] = _ERROR_SCHEMA
    schemas["ErrorDetail"] = _ERROR_DETAIL_SCHEMA
    document["paths"] = paths
    document["components"] = {
        "schemas": schemas,
        "securitySchemes": {
            SECURITY_SCHEME: {"type": "http", "scheme": "bearer", "bearerFormat": "hk_...",
                              "description": "the project's API key, the only credential: "
                                             "Authorization: Bearer hk_..."}},
    }
    document["security"] = [{SECURITY_SCHEME: []}]
    document["tags"] = [{"name": name, "description": text} for name, text in TAGS.items()]
    return document


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_openapi(path: Path = OPENAPI_PATH) -> bool:
    """Write the document; ``True`` when the file changed."""
    text = render(build_openapi())
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return True
