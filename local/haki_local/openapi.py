"""The public OpenAPI document, generated from the handlers' resolvers.

Each function's resolver describes its own route (Pydantic request and response models);
the three are merged into one document, completed with what the resolvers do not know: the
bearer-key security scheme and the error contract (``{"error": {"code", "message"}}``) with
the statuses each route can answer. ``haki openapi`` writes it to ``docs/openapi.json``; a
test fails when the committed file is out of date.
"""

import json
from importlib import import_module
from pathlib import Path
from typing import Any

from haki import __version__
from haki.settings import SOURCE_ROOT
from haki_aws.routes import ROUTES

OPENAPI_PATH = SOURCE_ROOT / "docs" / "openapi.json"
TITLE = "Haki context assembler API"

_ERROR_SCHEMA = {
    "type": "object",
    "title": "Error",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "stable error code"},
                "message": {"type": "string", "description": "human-readable, safe to show"},
            },
        }
    },
}
_ERRORS = {
    "401": "unauthorized: missing, unknown or revoked API key",
    "403": "forbidden_scope: the project is not the API key's",
    "404": "trace_not_found (inspect) or not_found (no such route)",
    "413": "validation_error: request body over 256 KiB",
    "415": "validation_error: request body is not JSON",
    "422": "missing_scope, budget_exceeded or validation_error",
    "500": "internal_error",
    "503": "service_unavailable: the memory store cannot be reached",
}
_NOT_FOR = {
    "GET": {"413", "415"},
    "POST": {"404"},
}


def build_openapi() -> dict[str, Any]:
    """The merged document of every routed function."""
    document: dict[str, Any] = {}
    for route in ROUTES:
        app = import_module(f"functions.{route.function}.app").app
        part = json.loads(app.get_openapi_json_schema(title=TITLE, version=__version__))
        if not document:
            document = part
            continue
        document["paths"].update(part["paths"])
        document.setdefault("components", {}).setdefault("schemas", {}).update(
            part.get("components", {}).get("schemas", {}))
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for generic in ("HTTPValidationError", "ValidationError", "ResponseValidationError"):
        schemas.pop(generic, None)
    schemas["Error"] = _ERROR_SCHEMA
    document["components"]["securitySchemes"] = {
        "apiKey": {"type": "http", "scheme": "bearer", "description": "hk_... API key"}
    }
    document["security"] = [{"apiKey": []}]
    for methods in document["paths"].values():
        for method, operation in methods.items():
            for status, description in _ERRORS.items():
                if status in _NOT_FOR.get(method.upper(), set()):
                    continue
                operation["responses"][status] = {
                    "description": description,
                    "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Error"}}},
                }
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
