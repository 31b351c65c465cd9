"""The HTTP error contract, in one place: ``{"error": {"code", "message"}}`` with the stable
codes of SPEC §5.

Domain errors (:class:`haki.errors.HakiError`) carry their code and status. Request validation
errors (Pydantic, raised by the Powertools resolver) are classified: a missing or empty
``project_id`` / ``subject_id`` is ``missing_scope``, a bad ``budget_tokens`` is
``budget_exceeded``, anything else (malformed JSON, wrong types, unknown fields, bad UUIDs) is
``validation_error`` — all 422. Anything unexpected is a 500 ``internal_error`` with a generic
message; the exception goes to the log, never to the caller.
"""

import json
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from haki.errors import (
    BudgetExceeded,
    HakiError,
    MissingScope,
    ServiceUnavailable,
    ValidationFailed,
)
from haki_aws.observability import logger

CONTENT_TYPE = "application/json"
SCOPE_FIELDS = frozenset({"project_id", "subject_id"})
INTERNAL_MESSAGE = "internal error; the request id is in the response headers"
#: Error types that mean "this scope field is absent" (empty counts as absent).
_ABSENT = frozenset({"missing", "string_too_short"})


def error_body(code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False)


def _field(loc: Sequence[Any]) -> str:
    """``("body", "budget_tokens")`` → ``budget_tokens``; the location kind is dropped."""
    parts = [str(p) for p in loc[1:]] if loc and loc[0] in ("body", "query", "path") else loc
    return ".".join(str(p) for p in parts) or "body"


def _describe(error: Mapping[str, Any]) -> str:
    kind = error.get("type", "")
    loc = tuple(error.get("loc", ()))
    if kind == "json_invalid":
        detail = (error.get("ctx") or {}).get("error", "malformed")
        return f"the request body is not valid JSON ({detail})"
    if kind == "extra_forbidden":
        return f"unknown field {_field(loc)!r}"
    if kind == "missing":
        if tuple(loc) == ("body",):
            return "a JSON request body is required"
        return f"{_field(loc)} is required"
    if kind == "uuid_parsing" or kind == "uuid_type":
        return f"{_field(loc)} must be a UUID"
    if kind == "model_attributes_type" and loc[:1] == ("body",):
        return "the request body must be a JSON object"
    return f"{_field(loc)}: {error.get('msg', 'invalid value')}"


def classify_validation(errors: Sequence[Mapping[str, Any]]) -> HakiError:
    """The domain error for a list of Pydantic errors: scope first, then budget, then the rest."""
    absent_scope = sorted(
        {
            str(e["loc"][-1])
            for e in errors
            if e.get("type") in _ABSENT and e.get("loc") and str(e["loc"][-1]) in SCOPE_FIELDS
        }
    )
    if absent_scope:
        return MissingScope(
            f"{' and '.join(absent_scope)} must be given (1 to 128 characters): "
            "every call names its scope"
        )
    if any(e.get("loc") and str(e["loc"][-1]) == "budget_tokens" for e in errors):
        return BudgetExceeded("budget_tokens must be a positive integer (at most 100000)")
    message = "; ".join(dict.fromkeys(_describe(e) for e in errors)) or "invalid request"
    return ValidationFailed(message)


def error_response(status: int, code: str, message: str) -> Response:
    """The resolver response of an error (logged without a stack trace)."""
    log = logger.warning if status < HTTPStatus.INTERNAL_SERVER_ERROR else logger.error
    log("request failed", extra={"error_code": code, "status": status})
    return Response(status_code=status, content_type=CONTENT_TYPE, body=error_body(code, message))


def domain_response(error: HakiError) -> Response:
    return error_response(error.status, error.code, error.message)


def internal_error() -> Response:
    """A 500 that says nothing about the cause (the log has it)."""
    return error_response(HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error", INTERNAL_MESSAGE)


def error_code(result: Mapping[str, Any]) -> str | None:
    """The contract error code of a proxy result; ``None`` for a success."""
    if result.get("statusCode", 500) < HTTPStatus.BAD_REQUEST:
        return None
    try:
        return str(json.loads(result["body"])["error"]["code"])
    except (KeyError, TypeError, ValueError):
        return "internal_error"


def as_proxy_result(response: Response) -> dict[str, Any]:
    """A resolver response as the raw API Gateway proxy result (for checks before routing)."""
    return {
        "statusCode": response.status_code,
        "headers": {"Content-Type": CONTENT_TYPE},
        "body": response.body,
        "isBase64Encoded": False,
    }


def register_error_handlers(app: APIGatewayRestResolver) -> None:
    """Map every failure on ``app``'s routes to the contract."""

    @app.exception_handler(RequestValidationError)
    def _validation(exc: RequestValidationError) -> Response:
        return domain_response(classify_validation(exc.errors()))

    @app.exception_handler(HakiError)
    def _domain(exc: HakiError) -> Response:
        if exc.status >= HTTPStatus.INTERNAL_SERVER_ERROR and not isinstance(
            exc, ServiceUnavailable
        ):
            logger.exception("internal failure")
            return internal_error()
        return domain_response(exc)

    @app.exception_handler(Exception)
    def _unexpected(exc: Exception) -> Response:
        logger.exception("unexpected failure")
        return internal_error()

    @app.not_found
    def _not_found(exc: Exception) -> Response:
        return error_response(HTTPStatus.NOT_FOUND, "not_found", "no such route")
