"""The HTTP error contract: validation errors classified into the stable codes, bearer
parsing, and the code read back from a proxy result."""

import json

from haki.errors import BudgetExceeded, MissingScope, ValidationFailed
from haki.validation import classify_validation
from haki_aws.auth import bearer_token
from haki_aws.errors import as_proxy_result, error_code, error_response


def _err(kind: str, *loc: object, **ctx: object) -> dict[str, object]:
    return {"type": kind, "loc": loc, "msg": f"{kind} message", "ctx": ctx}


def test_missing_or_empty_scope_is_missing_scope_even_with_other_errors() -> None:
    error = classify_validation([
        _err("missing", "body", "subject_id"),
        _err("string_too_short", "body", "project_id"),
        _err("greater_than", "body", "budget_tokens"),
    ])
    assert isinstance(error, MissingScope)
    assert "field 'subject_id' is required" in error.message and "'project_id'" in error.message
    assert "budget" not in error.message  # the scope problem is the one reported


def test_scope_in_query_string_is_missing_scope() -> None:
    assert isinstance(classify_validation([_err("missing", "query", "project_id")]), MissingScope)


def test_scope_too_long_or_wrong_type_is_a_validation_error() -> None:
    for kind in ("string_too_long", "string_type"):
        assert isinstance(classify_validation([_err(kind, "body", "project_id")]), ValidationFailed)


def test_any_budget_problem_is_budget_exceeded() -> None:
    for kind in ("greater_than", "less_than_equal", "int_type", "missing"):
        error = classify_validation([_err(kind, "body", "budget_tokens")])
        assert isinstance(error, BudgetExceeded), kind
        assert error.status == 422


def test_malformed_json_unknown_field_and_bad_uuid_say_what_is_wrong() -> None:
    assert "not valid JSON" in classify_validation(
        [_err("json_invalid", "body", 3, error="Expecting value")]).message
    assert classify_validation(
        [_err("extra_forbidden", "body", "colour")]).message == "unknown field 'colour'"
    assert classify_validation(
        [_err("uuid_parsing", "path", "trace_id")]).message == "trace_id must be a UUID"
    assert classify_validation([_err("missing", "body")]).message == (
        "a JSON request body is required")
    assert classify_validation([_err("model_attributes_type", "body")]).message == (
        "the request body must be a JSON object")


def test_error_response_has_the_contract_shape_and_nothing_else() -> None:
    result = as_proxy_result(error_response(503, "service_unavailable", "retry"))
    assert result["statusCode"] == 503
    assert result["headers"]["Content-Type"] == "application/json"
    assert json.loads(result["body"]) == {
        "error": {"code": "service_unavailable", "message": "retry"}}
    assert error_code(result) == "service_unavailable"
    assert error_code({"statusCode": 200, "body": "{}"}) is None
    assert error_code({"statusCode": 502, "body": "not json"}) == "internal_error"


def test_bearer_token_parsing() -> None:
    assert bearer_token({"Authorization": "Bearer hk_abc"}) == "hk_abc"
    assert bearer_token({"authorization": "bearer   hk_abc  "}) == "hk_abc"
    assert bearer_token({"AUTHORIZATION": "Basic dXNlcjpwYXNz"}) is None
    assert bearer_token({"Authorization": "Bearer "}) is None
    assert bearer_token({}) is None
    assert bearer_token(None) is None
