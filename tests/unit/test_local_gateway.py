"""The local API Gateway adapter: route matching from the shared route table and the shape
of the REST proxy events it builds (no database, handlers stubbed)."""

import http.client
import json
import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from haki_aws.routes import ROUTES
from haki_local.server import LocalGateway, serve_on


def _recording_gateway() -> tuple[LocalGateway, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        seen.append(event)
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
                "multiValueHeaders": {"X-Extra": ["a", "b"]}, "body": "{}"}

    return LocalGateway({r.function: handler for r in ROUTES}), seen


def test_path_parameters_query_string_and_body_reach_the_event() -> None:
    gateway, seen = _recording_gateway()
    reply = gateway.dispatch(
        "GET", "/v1/inspect/abc%20d?project_id=p&subject_id=s&subject_id=t",
        {"Authorization": "Bearer k"}, b"")
    assert reply.status == 200 and reply.headers["X-Extra"] == "a, b"
    assert reply.headers["x-amzn-RequestId"]
    event = seen[0]
    assert event["resource"] == "/v1/inspect/{trace_id}"
    assert event["httpMethod"] == "GET"
    assert event["pathParameters"] == {"trace_id": "abc d"}
    assert event["queryStringParameters"] == {"project_id": "p", "subject_id": "t"}
    assert event["multiValueQueryStringParameters"]["subject_id"] == ["s", "t"]
    assert event["headers"]["Authorization"] == "Bearer k"
    assert event["body"] is None and event["isBase64Encoded"] is False
    assert event["requestContext"]["requestId"] == reply.headers["x-amzn-RequestId"]


def _concrete(path: str) -> str:
    return re.sub(r"\{[a-z_]+\}", "x", path)


def test_every_route_of_the_table_is_served_and_unknown_paths_are_404() -> None:
    gateway, seen = _recording_gateway()
    for route in ROUTES:
        assert gateway.dispatch(route.method, _concrete(route.path), {}, b"{}").status == 200
    assert [e["resource"] for e in seen] == [r.path for r in ROUTES]
    missing = gateway.dispatch("GET", "/v1/nothing-here", {}, b"")
    assert missing.status == 404
    assert json.loads(missing.body)["error"]["code"] == "not_found"


def test_a_known_path_with_another_method_is_405_with_allow() -> None:
    gateway, seen = _recording_gateway()
    wrong = gateway.dispatch("GET", "/v1/context", {}, b"")
    assert wrong.status == 405 and wrong.headers["Allow"] == "POST"
    assert json.loads(wrong.body)["error"]["code"] == "method_not_allowed"
    for route in ROUTES:
        other = "DELETE"
        reply = gateway.dispatch(other, _concrete(route.path), {}, b"")
        assert reply.status == 405, route
        assert route.method in reply.headers["Allow"].split(", ")
    assert seen == []


def test_non_utf8_body_is_passed_base64_encoded() -> None:
    gateway, seen = _recording_gateway()
    gateway.dispatch("POST", "/v1/context", {}, b"\xff\xfe")
    assert seen[0]["isBase64Encoded"] is True and seen[0]["body"] == "//4="


@pytest.fixture
def served() -> Iterator[tuple[str, int]]:
    """The local HTTP server on a loopback port, over handlers answering a body of the size
    the request's ``size`` field asks for."""

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        size = json.loads(event["body"])["size"]
        return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
                "body": json.dumps({"pad": "x" * size})}

    sock = socket.create_server(("127.0.0.1", 0))
    server = serve_on(sock, LocalGateway({r.function: handler for r in ROUTES}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()
    finally:
        server.shutdown()
        server.server_close()


def test_a_response_leaves_in_one_send(served: tuple[str, int]) -> None:
    """Status line, headers and body in one segment: the first read holds the whole reply
    (written in two sends, the body could wait on the client's delayed ACK)."""
    body = json.dumps({"size": 2000}).encode()
    with socket.create_connection(served) as client:
        client.sendall(b"POST /v1/context HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                       b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        first = client.recv(1 << 16)
    head, _, rest = first.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
    assert head.startswith(b"HTTP/1.0 200") or head.startswith(b"HTTP/1.1 200")
    assert len(rest) == length and json.loads(rest)["pad"] == "x" * 2000


def test_keep_alive_serves_small_and_large_bodies_whole(served: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*served)
    try:
        for size in (10, 3_000_000, 10):
            conn.request("POST", "/v1/context", body=json.dumps({"size": size}),
                         headers={"Content-Type": "application/json"})
            reply = conn.getresponse()
            assert reply.status == 200
            assert len(json.loads(reply.read())["pad"]) == size
    finally:
        conn.close()
