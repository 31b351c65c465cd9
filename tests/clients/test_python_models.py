"""The Python SDK's models and operations against the committed ``docs/openapi.json``.

The models (``haki_client/models.py``) are generated from the document by
``clients/python/generate_models.py``, and the document is generated from the handlers
(``haki openapi``, itself checked against the code by ``tests/unit/test_openapi.py``): a change
of the API fails here until the models are generated again and the operations follow.
"""

import importlib.util
import inspect
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from haki_client import models
from haki_client.operations import OPERATIONS

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
SCHEMAS: dict[str, type[BaseModel]] = {
    name: model for name, model in inspect.getmembers(models, inspect.isclass)
    if issubclass(model, BaseModel) and model.__module__ == models.__name__}

#: Keys that do not change what a client reads or sends: documentation, and the bounds the
#: service checks itself (it answers them with its own error codes; see generate_models.py).
_IGNORED = {"title", "description", "additionalProperties", "minLength", "maxLength", "pattern",
            "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems"}


def generator() -> ModuleType:
    path = ROOT / "clients" / "python" / "generate_models.py"
    spec = importlib.util.spec_from_file_location("generate_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_models_are_what_the_generator_makes_of_the_document():
    committed = (ROOT / "clients" / "python" / "haki_client" / "models.py").read_text(
        encoding="utf-8")
    assert generator().generate(OPENAPI) == committed, (
        "docs/openapi.json changed: run `python clients/python/generate_models.py`")
    assert committed.startswith("# Generated from docs/openapi.json")


def test_responses_take_fields_of_a_newer_service_and_requests_refuse_unknown_ones():
    answer = models.ContextResponse.model_validate({
        "packet": {"facts": [], "episodes": [], "warnings": [], "status": "ok",
                   "empty_reason": "no_memory", "later": 1},
        "token_count": 0, "trace_id": "3fdb9157-2449-4afe-a59b-5c5b0c621f5a", "later": {}})
    assert answer.packet.is_empty and answer.served and answer.block is None
    with pytest.raises(ValidationError, match="colour"):
        models.EventIn.model_validate({"subject_id": "s", "kind": "k", "colour": "red"})
    with pytest.raises(ValidationError, match="frozen"):
        answer.token_count = 3  # type: ignore[misc]


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


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": sorted([schema, {"type": "null"}], key=json.dumps)}


def test_models_match_the_document():
    theirs = json.loads(json.dumps(OPENAPI["components"]["schemas"]))
    # A field the document may leave out without a default (ContextResponse.block, a default
    # made by a factory) reads as None in Python.
    for schema in theirs.values():
        for field, spec in schema.get("properties", {}).items():
            if field not in schema.get("required", []) and "default" not in spec \
                    and "anyOf" not in spec:
                schema["properties"][field] = _or_null(spec)
    # The deliberate difference: a fail-open client returns an empty packet without a trace
    # (ContextResponse.served is False), so the SDK's trace_id may be null.
    response = theirs["ContextResponse"]["properties"]
    response["trace_id"] = _or_null(response["trace_id"])
    ours = sdk_schemas()
    for name in SCHEMAS:
        assert normal(ours[name], ours) == normal(theirs[name], theirs), name


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
