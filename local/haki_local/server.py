"""The local API: uvicorn + Starlette in front of the real Lambda handlers.

A request on a route of :data:`haki_aws.routes.ROUTES` (the table the CDK stack builds the REST
API from) becomes an API Gateway REST (v1) proxy event for ``functions/<name>/app.py:handler``,
imported in process, and the handler's proxy result becomes the response: local and deployed
runs execute the same code. The console (:mod:`haki_local.console`: the page of
``functions/console``) is served beside it, under ``/console``.

Like a Lambda container, a handler module serves one request at a time (its database
connection and resolver are module globals), so dispatch runs in a worker thread under one lock
per process; :func:`supervisor` runs several uvicorn worker processes on one listening socket
to serve requests in parallel. The handlers' EMF metric lines (stdout) are dropped: there is no
CloudWatch here; their JSON logs go to the console.

What the server refuses itself is answered in the error contract (``{"error": {"code",
"message"}}``), never as HTML or a trace: 404 ``not_found`` (no route), 405
``method_not_allowed`` with ``Allow`` (a known path, another method), 413 ``payload_too_large``
(over API Gateway's 10 MiB), 408 ``request_timeout`` (the body did not arrive within
:data:`BODY_TIMEOUT_S`), 400 ``validation_error`` (not valid HTTP: a bad ``Content-Length``,
headers over :data:`HEADER_BYTES`), 500 ``internal_error``. Idle keep-alive connections close
after :data:`KEEP_ALIVE_S`, and a connection whose request line and headers are not all in
within :data:`HEADER_TIMEOUT_S` (a header trickle) is closed.
"""

import asyncio
import base64
import contextlib
import io
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import h11
import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route as WebRoute
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.supervisors import Multiprocess

from haki.errors import HakiError, PayloadTooLarge
from haki_aws.errors import CONTENT_TYPE, INTERNAL_MESSAGE, error_body
from haki_aws.routes import EDGE_ERRORS, ROUTES, Route
from haki_local.console import PREFIX, Console

#: API Gateway's own payload limit; the handlers apply the contract's smaller ones.
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
#: How long a request body may take to arrive once its headers are in.
BODY_TIMEOUT_S = 30.0
#: How long an idle keep-alive connection stays open (uvicorn's ``timeout_keep_alive``).
KEEP_ALIVE_S = 5
#: How long a request line and its headers may take to arrive, from the connection's opening
#: or the previous response's end, however slowly their bytes trickle in.
HEADER_TIMEOUT_S = 10.0
#: Largest request line plus headers (h11's incomplete-event limit; API Gateway's is 10 KiB).
HEADER_BYTES = 16 * 1024
#: How long a stopping worker waits for the requests in flight.
SHUTDOWN_S = 20
STAGE = "local"
#: The account of the local method ARNs the authorizer sees.
ACCOUNT = "000000000000"

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@dataclass(frozen=True)
class LambdaContext:
    """The attributes of the Lambda context object the handlers (Powertools) read."""

    function_name: str
    aws_request_id: str
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:haki-local"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def load_handlers(routes: tuple[Route, ...] = ROUTES) -> dict[str, Handler]:
    """``functions/<name>/app.py:handler`` of every routed function."""
    return {r.function: import_module(f"functions.{r.function}.app").handler for r in routes}


def error_response(status: int, code: str, message: str,
                   headers: Mapping[str, str] | None = None) -> Response:
    return Response(error_body(code, message), status, headers, media_type=CONTENT_TYPE)


def proxy_event(route: Route, request: Request, body: bytes, request_id: str) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event, as the deployed integration sends it."""
    multi_headers = _grouped(request.headers.items())
    multi_query = _grouped(request.query_params.multi_items())
    try:
        text: str | None = body.decode("utf-8") if body else None
        is_base64 = False
    except UnicodeDecodeError:
        text, is_base64 = base64.b64encode(body).decode("ascii"), True
    path = request.url.path
    return {
        "resource": route.path,
        "path": path,
        "httpMethod": route.method,
        "headers": {k: v[-1] for k, v in multi_headers.items()} or None,
        "multiValueHeaders": multi_headers or None,
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": dict(request.path_params) or None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": route.path,
            "httpMethod": route.method,
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "requestId": request_id,
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": request.client.host if request.client else "127.0.0.1"},
        },
        "body": text,
        "isBase64Encoded": is_base64,
    }


def authorizer_event(event: Mapping[str, Any]) -> dict[str, Any]:
    """The REQUEST authorizer event API Gateway sends before a proxy event: the request
    without its body, and the method's ARN."""
    arn = (f"arn:aws:execute-api:{STAGE}:{ACCOUNT}:{STAGE}/{STAGE}/{event['httpMethod']}"
           f"{event['path']}")
    request = {k: v for k, v in event.items() if k not in ("body", "isBase64Encoded")}
    return {**request, "type": "REQUEST", "methodArn": arn}


def has_authorization(headers: Mapping[str, str] | None) -> bool:
    """Whether the authorizer's identity source, the Authorization header, is present: API
    Gateway refuses a request without it before calling the authorizer."""
    return any(name.lower() == "authorization" and value.strip()
               for name, value in (headers or {}).items())


def allows(answer: Mapping[str, Any]) -> bool:
    """Whether an authorizer's policy allows the call (an explicit deny wins)."""
    effects = {s.get("Effect") for s in answer.get("policyDocument", {}).get("Statement", [])}
    return "Allow" in effects and "Deny" not in effects


def edge_response(response_type: str) -> Response:
    """What the deployed gateway answers itself for ``response_type`` (``EDGE_ERRORS``)."""
    error = EDGE_ERRORS[response_type]
    return error_response(error.status, error.code, error.message or error.code)


def _grouped(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in pairs:
        grouped.setdefault(name, []).append(value)
    return grouped


def proxy_response(result: Mapping[str, Any], request_id: str) -> Response:
    """The HTTP response of a handler's proxy result."""
    headers = {k: str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(str(v) for v in values)
    headers["x-amzn-RequestId"] = request_id
    # Which worker process served it: local runs only.
    headers["X-Haki-Worker"] = str(os.getpid())
    body = result.get("body") or ""
    payload = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode("utf-8")
    return Response(payload, int(result["statusCode"]), headers)


async def read_body(request: Request, timeout_s: float) -> bytes:
    """The request body, refused over API Gateway's limit or when it is too slow to arrive."""
    too_large = PayloadTooLarge(f"the request body is over {MAX_PAYLOAD_BYTES} bytes")
    if int(request.headers.get("content-length") or 0) > MAX_PAYLOAD_BYTES:  # h11 checked it
        raise too_large
    body = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_PAYLOAD_BYTES:
                    raise too_large
    except TimeoutError:
        raise HTTPException(408, f"the request body did not arrive within {timeout_s:g} s"
                            ) from None
    return bytes(body)


#: Serves one request of a route (``routed``: the method is the route's; else only authorized).
Dispatch = Callable[[Route, Request, bool], Awaitable[Response]]


@dataclass(frozen=True)
class Resource:
    """The ASGI endpoint of one API Gateway resource path: each method of ``routes`` is
    dispatched to its handler, any other is a 405 (the route table's methods, not Starlette's
    GET and HEAD), once authorized like the deployed API's ``ANY`` method (a public path's
    without a key)."""

    path: str
    routes: Mapping[str, Route]
    dispatch: Dispatch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        route = self.routes.get(request.method)
        if route is None:
            public = all(r.public for r in self.routes.values())
            response = await self.dispatch(Route(request.method, self.path, "", public=public),
                                           request, False)
            if response.status_code < 400:
                raise HTTPException(405, headers={"Allow": ", ".join(self.routes)})
        else:
            response = await self.dispatch(route, request, True)
        await response(scope, receive, send)


def create_app(handlers: Mapping[str, Handler], console: Console | None = None,
               body_timeout_s: float = BODY_TIMEOUT_S,
               authorizer: Handler | None = None) -> Starlette:
    """The ASGI app serving ``handlers`` (by function name) on their routes, and ``console``.
    With an ``authorizer`` (``functions/authorizer``), every call but those of a public route
    (the health checks) passes it first, as on the deployed API: no Authorization header or a
    denied key is the edge's 401, a failing authorizer its 503, and an allowed call's event
    carries the authorizer's context."""
    lock = asyncio.Lock()

    def authorize_and_call(route: Route, event: dict[str, Any], request_id: str, routed: bool
                           ) -> dict[str, Any] | Response:
        if authorizer is not None and not route.public:
            refused = authorize(authorizer, event, request_id)
            if refused is not None:
                return refused
        if not routed:  # authorized: the caller learns the methods of the path (405)
            return Response(status_code=204)
        return _call(handlers[route.function], event,
                     LambdaContext(f"haki-{route.function}", request_id))

    async def dispatch(route: Route, request: Request, routed: bool) -> Response:
        body = await read_body(request, body_timeout_s)
        request_id = str(uuid.uuid4())
        event = proxy_event(route, request, body, request_id)
        async with lock:
            result = await run_in_threadpool(authorize_and_call, route, event, request_id,
                                             routed)
        if isinstance(result, Response):
            return result
        return proxy_response(result, request_id)

    routes = _api_routes(dispatch) + (_console_routes(console) if console is not None else [])

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if console is not None:
            console.close()

    return Starlette(routes=routes, lifespan=lifespan, exception_handlers={
        HakiError: _contract_error, HTTPException: _http_error, Exception: _internal_error})


def _api_routes(dispatch: Dispatch) -> list[WebRoute]:
    """One route per path of :data:`ROUTES`, dispatching each method of it."""
    resources: dict[str, dict[str, Route]] = {}
    for route in ROUTES:
        resources.setdefault(route.path, {})[route.method] = route
    return [WebRoute(path, Resource(path, methods, dispatch))
            for path, methods in resources.items()]


def _console_routes(console: Console) -> list[WebRoute]:
    async def console_page(request: Request) -> Response:
        return await run_in_threadpool(console.handle, request.method, request.url.path,
                                       request.headers)

    return [WebRoute(PREFIX, console_page), WebRoute(PREFIX + "/{rest:path}", console_page)]


def _call(handler: Handler, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """A handler's result; what it prints (EMF metric lines) is dropped."""
    with contextlib.redirect_stdout(io.StringIO()):
        return handler(event, context)


def authorize(authorizer: Handler, event: dict[str, Any], request_id: str) -> Response | None:
    """The edge's refusal of ``event`` (no Authorization header, a failing authorizer, a
    denied key), or None with the authorizer's context put in the event."""
    if not has_authorization(event["headers"]):
        return edge_response("UNAUTHORIZED")
    try:
        answer = _call(authorizer, authorizer_event(event),
                       LambdaContext("haki-authorizer", request_id))
    except Exception:
        return edge_response("AUTHORIZER_FAILURE")
    if not allows(answer):
        return edge_response("ACCESS_DENIED")
    event["requestContext"]["authorizer"] = {
        **answer.get("context", {}), "principalId": answer["principalId"]}
    return None


async def _contract_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HakiError)
    return error_response(error.status, error.code, error.message)


async def _http_error(request: Request, error: Exception) -> Response:
    """The server's own refusals: no route (404), a method no route of the path serves (405),
    a body too slow to arrive (408)."""
    assert isinstance(error, HTTPException)
    target = f"{request.method} {request.url.path}"
    if error.status_code == 404:
        return error_response(404, "not_found", f"no route for {target}")
    if error.status_code == 405:
        allowed = (error.headers or {}).get("Allow", "")
        return error_response(405, "method_not_allowed", f"{target} is not allowed; use {allowed}",
                              error.headers)
    if error.status_code == 408:
        return error_response(408, "request_timeout", error.detail)
    return error_response(error.status_code, "validation_error", error.detail, error.headers)


async def _internal_error(request: Request, error: Exception) -> Response:
    """A 500 that says nothing about the cause (uvicorn logs it)."""
    return error_response(500, "internal_error", INTERNAL_MESSAGE)


def local_app() -> Starlette:
    """uvicorn's factory, called in each worker process: the real handlers and the console,
    over the database of the worker's ``HAKI_DATABASE_URL`` (``haki serve`` sets it)."""
    return create_app(load_handlers(), Console(),
                      authorizer=import_module("functions.authorizer.app").handler)


class ContractH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering a request that is not valid HTTP in the error
    contract rather than in plain text, and closing a connection whose request head does not
    arrive within :data:`HEADER_TIMEOUT_S` (uvicorn's keep-alive timer stops at the first byte,
    so a client trickling header bytes would otherwise hold the connection without limit)."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]
        self._await_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(HEADER_TIMEOUT_S, self._head_overdue)

    def _head_overdue(self) -> None:
        """No complete request head since the timer started: the client is still on its
        request line or headers (h11 waits for a request, ``IDLE``)."""
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        body = error_body("validation_error", "invalid HTTP request (request line, headers "
                                              "or Content-Length)").encode()
        head = [(b"content-type", CONTENT_TYPE.encode()),
                (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=head), h11.Data(data=body),
                      h11.EndOfMessage()):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()


def supervisor(sock: socket.socket, workers: int) -> Multiprocess:
    """uvicorn's supervisor of ``workers`` fresh processes serving :func:`local_app` on
    ``sock`` (spawned, not forked: onnxruntime's threads and open connections do not survive
    a fork); it restarts a worker that dies. Its ``run()`` returns on SIGINT or SIGTERM."""
    config = uvicorn.Config(
        f"{__name__}:local_app", factory=True, workers=workers,
        http=f"{__name__}:ContractH11Protocol", ws="none", proxy_headers=False,
        access_log=False, log_level="warning", timeout_keep_alive=KEEP_ALIVE_S,
        h11_max_incomplete_event_size=HEADER_BYTES, timeout_graceful_shutdown=SHUTDOWN_S,
        # The supervisor restarts a worker that leaves its ping unanswered this long; importing
        # the handlers and loading the model can hold the interpreter for seconds.
        timeout_worker_healthcheck=30)
    return Multiprocess(config, sockets=[sock])
