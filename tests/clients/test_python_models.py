"""The Python SDK's models and operations against the committed ``docs/openapi.json``.

The SDK is written by hand and the document is generated from the handlers (``haki openapi``,
itself checked against the code by ``tests/handlers``), so any change of the API shows up here
as a failing comparison until the SDK follows.
"""

import json
from pathlib import Path
from typing import Any

from pydantic.json_schema import models_json_schema

from haki_client.models import SCHEMAS
from haki_client.operations import OPERATIONS

OPENAPI = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text(encoding="utf-8"))

#: Keys that do not change what a client reads or sends: documentation, and the bounds the
#: service checks itself (it answers them with its own error codes; see haki_client.models).
_IGNORED = {"title", "description", "additionalProperties", "minLength", "maxLength", "pattern",
            "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems"}


def normal(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with references inlined, ignored keys dropped and lists in a fixed order."""
    if "$ref" in schema:
        return normal(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _IGNORED or (key == "default" and value is None):
            continue
        if key == "properties":
            out[key] = {name: normal(sub, defs) for name, sub in value.items()}
        elif key == "items":
            out[key] = normal(value, defs)
        elif key in ("anyOf", "oneOf", "allOf"):
            out[key] = sorted((normal(sub, defs) for sub in value), key=json.dumps)
        elif key == "required":
            out[key] = sorted(value)
        else:
            out[key] = value
    return out


def sdk_schemas() -> dict[str, Any]:
    _, top = models_json_schema([(model, "validation") for model in SCHEMAS.values()],
                                ref_template="#/components/schemas/{model}")
    return top["$defs"]


def test_every_schema_of_the_document_has_a_model_and_no_other():
    assert set(SCHEMAS) == set(OPENAPI["components"]["schemas"])


def test_models_match_the_document():
    ours, theirs = sdk_schemas(), OPENAPI["components"]["schemas"]
    expected = {name: normal(theirs[name], theirs) for name in SCHEMAS}
    # The one deliberate difference: a fail-open client returns an empty packet without a
    # trace (ContextResponse.served is False), so the SDK's trace_id may be null.
    trace_id = expected["ContextResponse"]["properties"]["trace_id"]
    expected["ContextResponse"]["properties"]["trace_id"] = {
        "anyOf": sorted([trace_id, {"type": "null"}], key=json.dumps)}
    for name in SCHEMAS:
        assert normal(ours[name], ours) == expected[name], name


def _ref_name(content: dict[str, Any]) -> str:
    return content["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]


def test_every_operation_of_the_document_is_an_operation_of_the_sdk():
    document = [(method.upper(), path, spec) for path, methods in OPENAPI["paths"].items()
                for method, spec in methods.items()]
    assert sorted((m, p) for m, p, _ in document) == sorted(
        (op.method, op.path) for op in OPERATIONS)
    by_route = {(op.method, op.path): op for op in OPERATIONS}
    for method, path, spec in document:
        op = by_route[(method, path)]
        success = next(spec["responses"][code] for code in sorted(spec["responses"])
                       if code.startswith("2"))
        assert SCHEMAS[_ref_name(success["content"])] is op.response, path
        body = spec.get("requestBody")
        assert (SCHEMAS[_ref_name(body["content"])] if body else None) is op.request, path
        parameters = spec.get("parameters", [])
        assert sorted(p["name"] for p in parameters if p["in"] == "query") == sorted(op.query)
        assert sorted(p["name"] for p in parameters if p["in"] == "path") == sorted(
            op.path_parameters())
