"""The edge every API function shares: its resolver, and the checks it runs before routing.

Order: authenticate (401 before anything else), bound the body size (the route's
``max_body_bytes`` in :data:`haki_aws.routes.ROUTES`: 256 KiB, 1 MiB for the batch writes;
413 ``payload_too_large`` beyond), require a JSON content type on requests that carry or
expect a body, then hand the event to the Powertools resolver, which parses the body within
bounds (``haki.validation.loads_json``), validates and routes. The request latency is
recorded for every outcome.
"""

import base64
import binascii
import time
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.utilities.typing import LambdaContext

from haki.db import Database
from haki.db.connection import acting_for, request_deadline
from haki.errors import HakiError, PayloadTooLarge, ValidationFailed
from haki.validation import loads_json
from haki_aws.auth import IDENTITY, authenticate_event
from haki_aws.errors import (
    as_proxy_result,
    domain_response,
    error_code,
    internal_error,
    register_error_handlers,
    unsupported_media_type,
)
from haki_aws.observability import OK, logger, record_request
from haki_aws.routes import BODY_BYTES, route_of

#: Methods whose requests carry a JSON body.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def api_resolver() -> APIGatewayRestResolver:
    """The resolver of an API function: request validation on, bodies parsed within the
    contract's bounds, a query parameter the route does not take refused, every failure
    mapped to the error contract."""
    app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=loads_json)
    register_error_handlers(app)
    app.use(middlewares=[_refuse_unknown_query_parameters])
    return app


def _refuse_unknown_query_parameters(current: APIGatewayRestResolver,
                                     next_middleware: Callable[..., Any]) -> Any:
    """Middleware: a query parameter the route does not declare is refused, since a misspelt
    filter (``?subjectid=``) would otherwise be ignored and the call answered for something
    else. The declared names are the matched route's own, as request validation reads them."""
    route = current.context.get("_route")
    allowed = frozenset(p.alias for p in route.dependant.query_params) if route else frozenset()
    unknown = sorted(set(current.current_event.query_string_parameters or {}) - allowed)
    if unknown:
        takes = ", ".join(sorted(allowed)) or "none"
        raise ValidationFailed(
            f"unknown query parameter(s) {', '.join(map(repr, unknown))}; "
            f"this route takes: {takes}")
    return next_middleware(current)


def _body_bytes(event: Mapping[str, Any]) -> int:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        return len(body) * 3 // 4
    # A lone surrogate (no UTF-8 body holds one; an event built by hand may) is measured, then
    # refused by the parser like any malformed body.
    return len(body.encode("utf-8", "surrogatepass"))


def _content_type(event: Mapping[str, Any]) -> str:
    headers: Mapping[str, str] = event.get("headers") or {}
    for name, value in headers.items():
        if name.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower()
    return ""


def _media_type_lowered(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The event with the media type of its Content-Type in lower case (its parameters kept):
    media types are case-insensitive (RFC 9110), and the resolver compares them as written,
    so ``APPLICATION/JSON; charset=UTF-8`` is JSON like ``application/json``."""
    def lowered(value: str) -> str:
        media, sep, parameters = value.partition(";")
        return media.strip().lower() + sep + parameters

    changed = dict(event)
    for field, shape in (("headers", lowered),
                         ("multiValueHeaders", lambda values: [lowered(v) for v in values])):
        headers = event.get(field)
        if headers:
            changed[field] = {name: shape(value) if name.lower() == "content-type" else value
                              for name, value in headers.items()}
    return changed


def body_limit(event: Mapping[str, Any]) -> int:
    """The largest body the event's route accepts (an unknown route: the default; the
    resolver answers it 404)."""
    route = route_of(event.get("httpMethod"), event.get("resource"))
    return route.max_body_bytes if route is not None else BODY_BYTES


def _refusal(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The error response of a request refused before routing, if any."""
    size, limit = _body_bytes(event), body_limit(event)
    if size > limit:
        return as_proxy_result(domain_response(PayloadTooLarge(
            f"the request body is {size} bytes; the limit of this route is {limit}")))
    expects_body = size > 0 or event.get("httpMethod") in _BODY_METHODS
    if expects_body and _content_type(event) not in ("", "application/json"):
        return as_proxy_result(unsupported_media_type())
    if event.get("isBase64Encoded") and not _utf8(event.get("body") or ""):
        return as_proxy_result(domain_response(ValidationFailed(
            "the request body is not valid JSON (it is not UTF-8 text)")))
    return None


def _utf8(base64_body: str) -> bool:
    """Whether a base64-encoded body (API Gateway's form for bytes that are not UTF-8 text)
    decodes to UTF-8 after all."""
    try:
        base64.b64decode(base64_body, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return True


def resolve(
    app: APIGatewayRestResolver, db: Database, event: Mapping[str, Any], context: LambdaContext
) -> dict[str, Any]:
    """Authenticate, pre-check and route one API Gateway REST proxy event, every database
    wait of it bounded by the function's remaining time."""
    return _timed(event, context, lambda: _resolve(app, db, event, context))


def resolve_public(
    app: APIGatewayRestResolver, event: Mapping[str, Any], context: LambdaContext
) -> dict[str, Any]:
    """Route one event of a public route (``Route.public``: the health checks), which reads
    nothing of a tenant: no key, no body."""
    return _timed(event, context, lambda: app.resolve(event, context))


def _timed(event: Mapping[str, Any], context: LambdaContext,
           resolved: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``resolved()``, every database wait of it bounded by the function's remaining time,
    its latency and outcome recorded."""
    started = time.perf_counter()
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    with request_deadline(remaining() if callable(remaining) else None):
        result = resolved()
    endpoint = f"{event.get('httpMethod')} {event.get('resource')}"
    record_request(endpoint, error_code(result) or OK, (time.perf_counter() - started) * 1000)
    return result


def _resolve(
    app: APIGatewayRestResolver, db: Database, event: Mapping[str, Any], context: LambdaContext
) -> dict[str, Any]:
    try:
        identity = authenticate_event(db, event)
    except HakiError as exc:
        return as_proxy_result(domain_response(exc))
    except Exception:
        logger.exception("authentication failed unexpectedly")
        return as_proxy_result(internal_error())
    logger.append_keys(org_id=identity.org_id, key_id=str(identity.key_id))
    refusal = _refusal(event)
    if refusal is not None:
        return refusal
    app.append_context(  # type: ignore[no-untyped-call]  # Powertools leaves it unannotated
        **{IDENTITY: identity})
    # Every tenant transaction of the request is bound to this key (row-level security follows
    # the key, ``haki_tenant``): a route that named another project would see nothing.
    with acting_for(identity.key_hash):
        return app.resolve(_media_type_lowered(event), context)
