"""``docs/openapi.json`` is what the handlers generate: regenerate with ``haki openapi``."""

import json
import re

from haki.errors import HakiError
from haki_aws.routes import ROUTES
from haki_local.openapi import OPENAPI_PATH, build_openapi, render


def test_committed_openapi_document_is_up_to_date() -> None:
    assert OPENAPI_PATH.read_text(encoding="utf-8") == render(build_openapi()), (
        "docs/openapi.json is out of date: run `haki openapi`")


def test_document_has_every_route_the_bearer_scheme_and_the_error_contract() -> None:
    document = build_openapi()
    assert {(method.upper(), path) for path, methods in document["paths"].items()
            for method in methods} == {(r.method, r.path) for r in ROUTES}
    assert document["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    context = document["paths"]["/v1/context"]["post"]
    assert {"200", "401", "403", "413", "422", "503"} <= set(context["responses"])
    assert context["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}


def _codes(operation: dict, status: str) -> str:
    return operation["responses"][status]["description"]


def test_each_route_lists_its_success_status_and_its_own_error_codes() -> None:
    paths = build_openapi()["paths"]
    events, facts = paths["/v1/events"]["post"], paths["/v1/facts"]["post"]
    assert "201" in events["responses"] and "200" not in events["responses"]
    assert events["responses"]["201"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/EventsResponse"}
    assert "idempotency_conflict" in _codes(events, "409")
    assert "1 MiB (1048576 bytes)" in _codes(events, "413")
    assert "256 KiB" in _codes(paths["/v1/context"]["post"], "413")
    assert "unknown_reference" in _codes(facts, "422")
    assert "missing_scope" in _codes(facts, "422")  # the common codes stay beside the route's
    assert {"stale_supersedes", "fact_in_open_conflict"} <= set(
        _codes(facts, "409").replace(":", " ").split())
    status = paths["/v1/facts/{fact_id}/status"]["post"]
    assert "fact_not_found" in _codes(status, "404")
    assert "illegal_status_transition" in _codes(status, "422")
    resolve = paths["/v1/conflicts/{conflict_id}/resolve"]["post"]
    assert "conflict_not_found" in _codes(resolve, "404")
    assert "conflict_not_open" in _codes(resolve, "409")
    assert "fact_not_found" in _codes(paths["/v1/forget"]["post"], "404")
    assert "trace_not_found" in _codes(paths["/v1/inspect/{trace_id}"]["get"], "404")
    assert "budget_exceeded" in _codes(paths["/v1/context"]["post"], "422")
    # Both methods of /v1/facts, from two functions, in one path item.
    assert set(paths["/v1/facts"]) == {"get", "post"}
    for methods in paths.values():
        for method, operation in methods.items():
            assert ("413" in operation["responses"]) == (method == "post")


#: Domain errors of the admin CLI only: no route answers them.
ADMIN_ONLY = {"project_of_another_org"}


def test_every_domain_error_of_the_api_is_documented_on_some_route() -> None:
    text = json.dumps(build_openapi())
    for error in _api_errors(HakiError):
        if error.code in ADMIN_ONLY:
            continue
        assert f"{error.code}:" in text or f"{error.code} " in text, error.code


def _api_errors(base: type) -> set[type]:
    """Every 4xx/503 domain error class a route can answer (the 5xx internals never are, nor
    the admin CLI's own)."""
    found = set()
    for sub in base.__subclasses__():
        found |= _api_errors(sub)
        if (sub.status < 500 or sub.status == 503) and sub.api:
            found.add(sub)
    return found


#: The request model of each operation with a body, to check its example against.
def _request_models() -> dict[str, type]:
    from haki.calls.models import FeedbackRequest
    from haki.memory.api import (
        EventsRequest,
        FactsRequest,
        FactStatusRequest,
        ForgetRequest,
        ResolveRequest,
    )
    from haki.models import ContextRequest

    return {model.__name__: model for model in (ContextRequest, EventsRequest, FactsRequest,
                                                 FactStatusRequest, ResolveRequest,
                                                 ForgetRequest, FeedbackRequest)}


def test_every_operation_is_named_tagged_and_requires_the_bearer_key() -> None:
    """...but the health checks, which need no key (``Route.public``)."""
    public = {(r.method.lower(), r.path) for r in ROUTES if r.public}
    document = build_openapi()
    schemes = document["components"]["securitySchemes"]
    declared_tags = {tag["name"] for tag in document["tags"]}
    names = []
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            where = f"{method.upper()} {path}"
            name = operation.get("operationId", "")
            # Readable: camelCase words, no generated path or method suffix.
            assert re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", name), (where, name)
            assert "_" not in name and "v1" not in name.lower(), (where, name)
            names.append(name)
            (tag,) = operation.get("tags", [None])
            assert tag in declared_tags, where
            if (method, path) in public:
                assert operation["security"] == [], where
                assert set(operation["responses"]) == {"200", "500", "503"}, where
                continue
            assert operation.get("security"), where
            for requirement in operation["security"]:
                (scheme,) = requirement
                assert schemes[scheme] == {**schemes[scheme], "type": "http",
                                           "scheme": "bearer"}, where
    assert len(names) == len(set(names)) == len(ROUTES)


def test_every_request_body_has_an_example_its_model_accepts() -> None:
    models = _request_models()
    for path, methods in build_openapi()["paths"].items():
        for method, operation in methods.items():
            if "requestBody" not in operation:
                continue
            content = operation["requestBody"]["content"]["application/json"]
            model = models[content["schema"]["$ref"].rsplit("/", 1)[-1]]
            assert "example" in content, f"{method.upper()} {path}"
            model.model_validate(content["example"])
