"""``docs/openapi.json`` is what the handlers generate: regenerate with ``haki openapi``."""

from haki_local.openapi import OPENAPI_PATH, build_openapi, render


def test_committed_openapi_document_is_up_to_date() -> None:
    assert OPENAPI_PATH.read_text(encoding="utf-8") == render(build_openapi()), (
        "docs/openapi.json is out of date: run `haki openapi`")


def test_document_has_every_route_the_bearer_scheme_and_the_error_contract() -> None:
    document = build_openapi()
    assert set(document["paths"]) == {
        "/v1/context", "/v1/inspect/{trace_id}", "/v1/stats/overview"}
    assert document["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    context = document["paths"]["/v1/context"]["post"]
    assert {"200", "401", "403", "413", "422", "503"} <= set(context["responses"])
    assert context["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
