"""The local API Gateway: HTTP requests become REST proxy events for the real handlers.

Routes come from :data:`haki_aws.routes.ROUTES`, the table the CDK stack builds the REST API from,
and each is served by ``functions/<name>/app.py:handler``, imported in process: local and
deployed runs execute the same code. Like a Lambda container, each handler module serves one
request at a time (its database connection and resolver are not shared between requests), so
dispatch is serialised within a process; ``haki_local.workers`` runs several processes on one
socket to serve requests in parallel. The handlers' EMF metric lines (stdout) are dropped:
there is no CloudWatch here; their JSON logs go to the console.
"""

import base64
import contextlib
import io
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import import_module
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from haki_aws.errors import CONTENT_TYPE, error_body
from haki_aws.routes import ROUTES, Route

#: API Gateway's own payload limit; the handlers apply the contract's smaller one.
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
STAGE = "local"

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


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


def _pattern(route: Route) -> re.Pattern[str]:
    parts = re.split(r"(\{[a-z_]+\})", route.path)
    regex = "".join(
        f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts
    )
    return re.compile(f"^{regex}$")


def load_handlers(routes: tuple[Route, ...] = ROUTES) -> dict[str, Handler]:
    """``functions/<name>/app.py:handler`` of every routed function."""
    return {r.function: import_module(f"functions.{r.function}.app").handler for r in routes}


class LocalGateway:
    """Matches a request to a route, builds its proxy event and calls the handler."""

    def __init__(self, handlers: Mapping[str, Handler], routes: tuple[Route, ...] = ROUTES):
        self._routes = [(route, _pattern(route)) for route in routes]
        self._handlers = handlers
        self._lock = threading.Lock()

    def dispatch(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes
    ) -> Reply:
        url = urlsplit(target)
        path = url.path.rstrip("/") or "/"
        request_id = str(uuid.uuid4())
        allowed: list[str] = []
        for route, pattern in self._routes:
            match = pattern.match(path)
            if match and route.method == method:
                event = proxy_event(route, path, url.query, headers, body, match.groupdict(),
                                    request_id)
                context = LambdaContext(f"haki-{route.function}", request_id)
                with self._lock, contextlib.redirect_stdout(io.StringIO()):
                    result = self._handlers[route.function](event, context)
                return _reply(result, request_id)
            if match:
                allowed.append(route.method)
        headers_out = {"Content-Type": CONTENT_TYPE, "x-amzn-RequestId": request_id}
        if allowed:
            return Reply(
                HTTPStatus.METHOD_NOT_ALLOWED, {**headers_out, "Allow": ", ".join(allowed)},
                error_body("method_not_allowed",
                           f"{method} is not allowed on {path}; use {', '.join(allowed)}").encode())
        return Reply(HTTPStatus.NOT_FOUND, headers_out,
                     error_body("not_found", f"no route for {method} {path}").encode())


def proxy_event(
    route: Route,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    path_params: Mapping[str, str],
    request_id: str,
) -> dict[str, Any]:
    """An API Gateway REST (v1) proxy event, as the deployed integration sends it."""
    multi_query = parse_qs(query, keep_blank_values=True)
    try:
        text: str | None = body.decode("utf-8") if body else None
        is_base64 = False
    except UnicodeDecodeError:
        text, is_base64 = base64.b64encode(body).decode("ascii"), True
    return {
        "resource": route.path,
        "path": path,
        "httpMethod": route.method,
        "headers": dict(headers) or None,
        "multiValueHeaders": {k: [v] for k, v in headers.items()} or None,
        "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "pathParameters": {k: unquote(v) for k, v in path_params.items()} or None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": route.path,
            "httpMethod": route.method,
            "path": f"/{STAGE}{path}",
            "stage": STAGE,
            "requestId": request_id,
            "requestTimeEpoch": int(time.time() * 1000),
            "identity": {"sourceIp": "127.0.0.1"},
        },
        "body": text,
        "isBase64Encoded": is_base64,
    }


def _reply(result: Mapping[str, Any], request_id: str) -> Reply:
    headers = {k: str(v) for k, v in (result.get("headers") or {}).items()}
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers[name] = ", ".join(str(v) for v in values)
    headers["x-amzn-RequestId"] = request_id
    # Which worker process served it (``haki_local.workers``): local runs only.
    headers["X-Haki-Worker"] = str(os.getpid())
    body = result.get("body") or ""
    payload = base64.b64decode(body) if result.get("isBase64Encoded") else body.encode("utf-8")
    return Reply(int(result["statusCode"]), headers, payload)


def _content_length(header: str | None) -> int | None:
    """The body length a request announces: 0 when absent, ``None`` when not a plain
    non-negative integer (a negative length would make the server read until the client
    closes)."""
    if header is None or header.strip() == "":
        return 0
    text = header.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 12 else None


def _refused(status: HTTPStatus, message: str) -> Reply:
    """A request refused before it reaches the gateway (what API Gateway itself would do)."""
    return Reply(status, {"Content-Type": CONTENT_TYPE},
                 error_body("validation_error", message).encode())


#: A local page mounted beside the API (the trace console): it answers the requests of its
#: own paths and returns ``None`` for every other, which the gateway then serves.
Mount = Callable[[str, str, Mapping[str, str]], Reply | None]


def serve_on(sock: socket.socket, gateway: LocalGateway,
             mounts: tuple[Mount, ...] = ()) -> ThreadingHTTPServer:
    """An HTTP server accepting from an already listening ``sock`` (a worker's)."""
    server = ThreadingHTTPServer(sock.getsockname(), _request_handler(gateway, mounts),
                                 bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.daemon_threads = True
    return server


def _request_handler(gateway: LocalGateway,
                     mounts: tuple[Mount, ...] = ()) -> type[BaseHTTPRequestHandler]:
    """The request handler class feeding ``mounts``, then ``gateway``."""

    class RequestHandler(BaseHTTPRequestHandler):
        server_version = "haki-local"
        # A buffered writer, flushed once a response is complete (``handle_one_request``), so
        # the status line, headers and body leave in one send; Nagle off, as the standard
        # library advises for a buffered writer: a body larger than the buffer goes at once.
        wbufsize = -1
        disable_nagle_algorithm = True

        def _serve(self) -> None:
            length = _content_length(self.headers.get("Content-Length"))
            if length is None:
                reply = _refused(HTTPStatus.BAD_REQUEST, "invalid Content-Length header")
                self.close_connection = True
            elif length > MAX_PAYLOAD_BYTES:
                reply = _refused(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload too large")
                self.close_connection = True
            else:
                body = self.rfile.read(length) if length else b""
                headers = dict(self.headers.items())
                reply = next((r for mount in mounts
                              if (r := mount(self.command, self.path, headers)) is not None),
                             None) or gateway.dispatch(self.command, self.path, headers, body)
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply.body)

        def __getattr__(self, name: str) -> Any:
            """Every method (``do_GET``, ``do_TRACE``, ``do_QUERY``…) reaches the gateway, which
            answers 405 + Allow on a known path — the standard library would answer one it has
            no ``do_`` for with an HTML 501."""
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            """Access log lines are left to the handlers' structured logs."""

    return RequestHandler
