"""The local API's adapter over real HTTP, with stub handlers (no database): the REST proxy
events it builds from requests, the responses it builds from the handlers' proxy results, and
the errors the server answers itself — always JSON in the error contract."""

import http.client
import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn

from haki_aws.routes import ROUTES
from haki_local.server import MAX_PAYLOAD_BYTES, ContractH11Protocol, create_app


@dataclass
class Served:
    address: tuple[str, int]
    #: (event, context) of every handler call, in order.
    seen: list[tuple[dict[str, Any], Any]] = field(default_factory=list)


def handler(served: Served, event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Records the call; a JSON body can ask for a reply of ``size`` characters or a crash."""
    served.seen.append((event, context))
    asked = json.loads(event["body"]) if event["body"] and not event["isBase64Encoded"] else {}
    if asked.get("crash"):
        raise RuntimeError("a handler bug, with a secret in its message")
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
            "multiValueHeaders": {"X-Extra": ["a", "b"]},
            "body": json.dumps({"pad": "x" * asked.get("size", 0)})}


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """The local API's app on a loopback port, in a thread, over recording stub handlers."""
    sock = socket.create_server(("127.0.0.1", 0))
    state = Served(sock.getsockname())
    handlers = {r.function: (lambda e, c: handler(state, e, c)) for r in ROUTES}
    server = uvicorn.Server(uvicorn.Config(
        create_app(handlers, body_timeout_s=2.0), http=ContractH11Protocol, ws="none",
        log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()  # connections wait in the socket's backlog until it serves them
    yield state
    server.should_exit = True
    thread.join()
    sock.close()


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def json(self) -> Any:
        assert self.headers["Content-Type"] == "application/json", self.body[:200]
        return json.loads(self.body)


def call(served: Served, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str | bytes] | None = None) -> Answer:
    """One request; ``headers`` are sent as given (``Content-Length`` too, if named there)."""
    conn = http.client.HTTPConnection(*served.address, timeout=60)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        headers = dict(headers or {})
        if body is not None and "Content-Length" not in headers:
            headers["Content-Length"] = str(len(body))
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        reply = conn.getresponse()
        return Answer(reply.status, reply.headers, reply.read())
    finally:
        conn.close()


def test_path_parameters_query_string_headers_and_body_reach_the_event(served: Served) -> None:
    before = len(served.seen)
    answer = call(served, "GET", "/v1/inspect/abc%20d?project_id=p&subject_id=s&subject_id=t"
                                 "&empty=", headers={"Authorization": "Bearer k"})
    assert answer.status == 200 and answer.headers["X-Extra"] == "a, b"
    (event, context), = served.seen[before:]
    assert event["resource"] == "/v1/inspect/{trace_id}" and event["httpMethod"] == "GET"
    assert event["path"] == "/v1/inspect/abc d"
    assert event["pathParameters"] == {"trace_id": "abc d"}
    assert event["queryStringParameters"] == {"project_id": "p", "subject_id": "t", "empty": ""}
    assert event["multiValueQueryStringParameters"]["subject_id"] == ["s", "t"]
    assert {k.lower(): v for k, v in event["headers"].items()}["authorization"] == "Bearer k"
    assert event["body"] is None and event["isBase64Encoded"] is False
    request_id = answer.headers["x-amzn-RequestId"]
    assert event["requestContext"]["requestId"] == request_id == context.aws_request_id
    assert event["requestContext"]["stage"] == "local"
    assert event["requestContext"]["identity"]["sourceIp"] == "127.0.0.1"
    assert context.function_name == "haki-inspect"
    assert context.get_remaining_time_in_millis() > 0


def test_a_json_body_arrives_as_text_and_a_non_utf8_one_base64_encoded(served: Served) -> None:
    before = len(served.seen)
    call(served, "POST", "/v1/facts", json.dumps({"size": 3}).encode())
    call(served, "POST", "/v1/context", b"\xff\xfe")
    (text, _), (binary, _) = served.seen[before:]
    assert text["body"] == '{"size": 3}' and text["isBase64Encoded"] is False
    assert binary["isBase64Encoded"] is True and binary["body"] == "//4="


def _concrete(path: str) -> str:
    return re.sub(r"\{[a-z_]+\}", "x", path)


def test_every_route_of_the_table_reaches_its_handler(served: Served) -> None:
    before = len(served.seen)
    for route in ROUTES:
        body = b"{}" if route.method == "POST" else None
        assert call(served, route.method, _concrete(route.path), body).status == 200, route
    events = [event for event, _ in served.seen[before:]]
    assert [(e["httpMethod"], e["resource"]) for e in events] == [
        (r.method, r.path) for r in ROUTES]
    assert [c.function_name for _, c in served.seen[before:]] == [
        f"haki-{r.function}" for r in ROUTES]


def test_unknown_paths_and_other_methods_are_refused_in_json(served: Served) -> None:
    before = len(served.seen)
    missing = call(served, "GET", "/v1/nothing-here")
    assert missing.status == 404 and missing.json["error"]["code"] == "not_found"
    wrong = call(served, "GET", "/v1/context")
    assert wrong.status == 405 and wrong.headers["Allow"] == "POST"
    assert wrong.json["error"]["code"] == "method_not_allowed"
    for route in ROUTES:
        for method in ("DELETE", "PUT", "TRACE", "QUERY"):
            refused = call(served, method, _concrete(route.path))
            assert refused.status == 405, (method, route)
            assert route.method in refused.headers["Allow"].split(", ")
            assert set(refused.json) == {"error"}
    assert served.seen[before:] == []


def test_large_bodies_pass_whole_both_ways_on_one_connection(served: Served) -> None:
    conn = http.client.HTTPConnection(*served.address, timeout=60)
    try:
        for size in (10, 3_000_000, 10):
            conn.request("POST", "/v1/context", body=json.dumps({"size": size, "n": "y" * size}),
                         headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            assert reply.status == 200
            assert len(json.loads(reply.read())["pad"]) == size
    finally:
        conn.close()


def test_a_body_over_api_gateways_limit_is_413_before_it_is_read(served: Served) -> None:
    before = len(served.seen)
    announced = call(served, "POST", "/v1/events", b"",
                     headers={"Content-Length": str(MAX_PAYLOAD_BYTES + 1)})
    assert announced.status == 413
    assert announced.json["error"]["code"] == "payload_too_large"
    assert served.seen[before:] == []


def test_a_bad_content_length_is_400_in_json(served: Served) -> None:
    for length in ("-5", "12abc", b"\xc2\xb2"):
        answer = call(served, "POST", "/v1/context", b"{}", headers={"Content-Length": length})
        assert answer.status == 400, length
        assert answer.json["error"]["code"] == "validation_error"


def test_a_body_that_stops_arriving_is_408_in_json(served: Served) -> None:
    before = len(served.seen)
    answer = call(served, "POST", "/v1/context", b'{"si', headers={"Content-Length": "100"})
    assert answer.status == 408 and answer.json["error"]["code"] == "request_timeout"
    assert served.seen[before:] == []


def test_a_handler_that_raises_is_a_bare_500_in_json(served: Served) -> None:
    answer = call(served, "POST", "/v1/context", json.dumps({"crash": True}).encode())
    assert answer.status == 500
    assert answer.json["error"]["code"] == "internal_error"
    assert b"secret" not in answer.body and b"Traceback" not in answer.body
