"""The HTTP error contract, in one place: ``{"error": {"code", "message"}}`` with the stable
codes of the API (docs/spec.md §5).

Domain errors (:class:`haki.errors.HakiError`) carry their code and status. Request validation
errors (Pydantic, raised by the Powertools resolver) are classified by the core's
:func:`haki.validation.classify_validation`, the same function the CLI uses. Anything
unexpected is a 500 ``internal_error`` with a generic message; the exception goes to the log,
never to the caller.
"""

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)

from haki.errors import HakiError, ServiceUnavailable
from haki.validation import classify_validation
from haki_aws.observability import logger

CONTENT_TYPE = "application/json"
INTERNAL_MESSAGE = "internal error; the request id is in the response headers"
#: Where the OpenAPI document defines the error body (``haki openapi`` adds the schema).
ERROR_SCHEMA_REF = "#/components/schemas/Error"


def error_body(code: str, message: str) -> str:
    return json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False)


def error_response(status: int, code: str, message: str) -> Response[str]:
    """The resolver response of an error (logged without a stack trace)."""
    log = logger.warning if status < HTTPStatus.INTERNAL_SERVER_ERROR else logger.error
    log("request failed", extra={"error_code": code, "status": status})
    return Response(status_code=status, content_type=CONTENT_TYPE, body=error_body(code, message))


def unsupported_media_type() -> Response[str]:
    return error_response(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "validation_error",
                          "the request body must be JSON (Content-Type: application/json)")


def domain_response(error: HakiError) -> Response[str]:
    return error_response(error.status, error.code, error.message)


def internal_error() -> Response[str]:
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


def as_proxy_result(response: Response[str]) -> dict[str, Any]:
    """A resolver response as the raw API Gateway proxy result (for checks before routing)."""
    return {
        "statusCode": response.status_code,
        "headers": {"Content-Type": CONTENT_TYPE},
        "body": response.body,
        "isBase64Encoded": False,
    }


def responses(success: HTTPStatus, *errors: type[HakiError]) -> dict[int, Any]:
    """The OpenAPI ``responses`` of a route decorator: its success status (described with the
    route's return type) and the domain errors the route answers besides those every route
    may answer, which ``haki openapi`` adds (401, 403, 413, 415, 422, 500, 503)."""
    documented: dict[int, Any] = {int(success): {"description": success.phrase}}
    for error in errors:
        first = (error.__doc__ or "").split("\n\n")[0]
        summary = " ".join(first.split()).replace("``", "`").rstrip(".")
        entry = documented.setdefault(error.status, {
            "description": "",
            "content": {CONTENT_TYPE: {"schema": {"$ref": ERROR_SCHEMA_REF}}},
        })
        entry["description"] = "; ".join(
            part for part in (entry["description"], f"{error.code}: {summary}") if part)
    return documented


def register_error_handlers(app: APIGatewayRestResolver) -> None:
    """Map every failure on ``app``'s routes to the contract."""

    def _validation(exc: RequestValidationError) -> Response[str]:
        return domain_response(classify_validation(exc.errors()))

    def _content_type(exc: RequestUnsupportedContentType) -> Response[str]:
        return unsupported_media_type()

    def _domain(exc: HakiError) -> Response[str]:
        if exc.status >= HTTPStatus.INTERNAL_SERVER_ERROR and not isinstance(
            exc, ServiceUnavailable
        ):
            logger.exception("internal failure")
            return internal_error()
        return domain_response(exc)

    def _unexpected(exc: Exception) -> Response[str]:
        logger.exception("unexpected failure")
        return internal_error()

    def _not_found(exc: Exception) -> Response[str]:
        return error_response(HTTPStatus.NOT_FOUND, "not_found", "no such route")

    # Registered by call rather than as decorators: Powertools leaves the registering methods
    # unannotated, which would erase the handlers' types.
    app.exception_handler(RequestValidationError)(_validation)
    app.exception_handler(RequestUnsupportedContentType)(_content_type)
    app.exception_handler(HakiError)(_domain)
    app.exception_handler(Exception)(_unexpected)
    app.not_found(_not_found)
