"""Generate ``haki_client/models.py`` from ``docs/openapi.json`` (datamodel-code-generator).

    python clients/python/generate_models.py           # write the file
    python clients/python/generate_models.py --check   # exit 1 when it is out of date

The generator (a dev dependency of the SDK: ``pip install -e 'clients/python[dev]'``) reads
the document as the service writes it, with three changes, each a deliberate difference of
the SDK:

* Bounds (lengths, ranges, patterns) are left out: the service checks them and answers with
  its stable error code (``missing_scope``, ``budget_exceeded``, ``validation_error``), which
  the client raises as ``HakiError``. A client-side check would answer the same mistake with a
  different error.
* Responses do not forbid unknown fields (requests still do): a newer service may add a field
  to a response, and an older client must keep working.
* ``ContextResponse.trace_id`` may be null: a client created with ``fail_open=True`` returns
  an empty packet without a trace when the service cannot be reached.

The helpers the models carry (``ContextPacket.is_empty``, ``ContextResponse.served``) and the
models' common configuration live in ``haki_client/_base.py``, written by hand.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOCUMENT = HERE.parents[1] / "docs" / "openapi.json"
OUTPUT = HERE / "haki_client" / "models.py"

#: Keywords that bound a value the service checks itself.
BOUNDS = frozenset({"minLength", "maxLength", "pattern", "minimum", "maximum",
                    "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems"})
#: Models with a base class of their own (``haki_client._base``), for the helpers they carry.
BASES = {"ContextPacket": "haki_client._base.ContextPacketModel",
         "ContextResponse": "haki_client._base.ContextResponseModel"}
HEADER = ("# Generated from docs/openapi.json by clients/python/generate_models.py "
          "(datamodel-code-generator).\n# Do not edit: run that script again.")


def _refs(node: Any) -> set[str]:
    """Names of the components ``node`` refers to, directly."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[1]} if "$ref" in node else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(value) for value in node))
    return set()


def _reached(names: set[str], schemas: dict[str, Any]) -> set[str]:
    reached, stack = set(names), list(names)
    while stack:
        for name in _refs(schemas[stack.pop()]) - reached:
            reached.add(name)
            stack.append(name)
    return reached


def _trimmed(node: Any) -> Any:
    """``node`` without bounds, and without the titles of values that are not models (a
    title only names a class; a field's title would be noise in the generated code)."""
    if isinstance(node, dict):
        return {key: _trimmed(value) for key, value in node.items()
                if key not in BOUNDS and not (key == "title" and "properties" not in node)}
    if isinstance(node, list):
        return [_trimmed(value) for value in node]
    return node


def client_document(document: dict[str, Any]) -> dict[str, Any]:
    """The document the models are generated from: the service's, with the SDK's three
    differences (module docstring)."""
    document = _trimmed(document)
    schemas = document["components"]["schemas"]
    bodies = {name for methods in document["paths"].values() for spec in methods.values()
              for name in _refs(spec.get("requestBody", {}))}
    for name in set(schemas) - _reached(bodies, schemas):
        schemas[name].pop("additionalProperties", None)
    trace_id = schemas["ContextResponse"]["properties"]["trace_id"]
    schemas["ContextResponse"]["properties"]["trace_id"] = {
        "anyOf": [trace_id, {"type": "null"}]}
    return document


def generate(document: dict[str, Any]) -> str:
    from datamodel_code_generator import (
        DataModelType,
        Formatter,
        InputFileType,
        LiteralType,
        PythonVersion,
        generate,
    )

    code = generate(
        json.dumps(client_document(document)),
        input_file_type=InputFileType.OpenAPI,
        output_model_type=DataModelType.PydanticV2BaseModel,
        target_python_version=PythonVersion.PY_311,
        base_class="haki_client._base.Model",
        base_class_map=BASES,
        custom_file_header=HEADER,
        formatters=[Formatter.BUILTIN],
        enum_field_as_literal=LiteralType.All,
        use_annotated=True,
        use_union_operator=True,
        use_standard_collections=True,
        use_title_as_name=True,
        use_schema_description=True,
        use_field_description=True,
        collapse_root_models=True,
        strict_nullable=True,
        use_double_quotes=True,
        disable_timestamp=True,
    )
    assert isinstance(code, str)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the file is out of date")
    args = parser.parse_args(argv)
    code = generate(json.loads(DOCUMENT.read_text(encoding="utf-8")))
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.is_file() else ""
    if args.check:
        if current != code:
            print(f"{OUTPUT} is out of date: run `python {Path(__file__).name}`")
            return 1
        return 0
    if current != code:
        OUTPUT.write_text(code, encoding="utf-8")
    print(f"{'unchanged' if current == code else 'wrote'} {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
