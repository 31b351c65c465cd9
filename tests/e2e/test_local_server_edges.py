"""The edges of ``haki serve`` over real HTTP: what the server refuses before a handler runs
(an unknown path, a known path with another method, a body over API Gateway's limit, a bad
``Content-Length``) and what the handler refuses (a body that is not JSON) — every one in the
JSON error contract, never HTML — the loopback-only default, and connections whose request
head trickles in (or never comes) closed within a bound."""

import http.client
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from haki_local.server import HEADER_TIMEOUT_S, MAX_PAYLOAD_BYTES
from tests.e2e.conftest import Client, Server, haki_env


def _contract_error(status: int, content_type: str | None, body: bytes) -> tuple[int, str]:
    """(status, code) of an answer that must be the error contract's JSON."""
    assert content_type == "application/json", body[:200]
    error = json.loads(body)
    assert set(error) == {"error"} and set(error["error"]) == {"code", "message"}
    return status, error["error"]["code"]


def _send(server: Server, path: str, headers: dict[str, str | bytes]) -> tuple[int, str]:
    """A POST whose headers (``Content-Length`` included) are sent as given, with a
    two-byte body."""
    url = urlsplit(server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        conn.putrequest("POST", path, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders(b"{}")
        reply = conn.getresponse()
        return _contract_error(reply.status, reply.headers["Content-Type"], reply.read())
    finally:
        conn.close()


def test_unknown_path_and_wrong_method_are_json(client: Client, server: Server) -> None:
    missing = client.request("GET", "/v1/nothing-here", key=server.key)
    assert (missing.status, missing.json["error"]["code"]) == (404, "not_found")
    assert missing.headers["Content-Type"] == "application/json"
    wrong = client.request("GET", "/v1/context", key=server.key)
    assert (wrong.status, wrong.json["error"]["code"]) == (405, "method_not_allowed")
    assert wrong.headers["Allow"] == "POST"
    other = client.request("DELETE", "/v1/facts", key=server.key)
    assert other.status == 405 and {"GET", "POST"} <= set(other.headers["Allow"].split(", "))


def test_a_body_that_is_not_json_is_refused_by_the_handler_in_json(
        client: Client, server: Server) -> None:
    reply = client.request("POST", "/v1/events", key=server.key, raw=b'{"events": [')
    assert (reply.status, reply.json["error"]["code"]) == (422, "validation_error")


def test_a_body_over_api_gateways_limit_is_413(server: Server) -> None:
    announced = {"Content-Type": "application/json", "Authorization": f"Bearer {server.key}",
                 "Content-Length": str(MAX_PAYLOAD_BYTES + 1)}
    assert _send(server, "/v1/events", announced) == (413, "payload_too_large")


def test_negative_or_garbage_content_length_is_400_and_never_hangs(server: Server) -> None:
    for length in ("-5", "12abc", b"\xc2\xb2"):
        assert _send(server, "/v1/context", {"Content-Length": length}) == (
            400, "validation_error"), length


def test_a_non_loopback_host_is_refused_without_allow_remote(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "haki_local.cli", "serve", "--host", "0.0.0.0", "--port", "0"],
        env=haki_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr and "--allow-remote" in done.stderr


def test_a_header_trickle_and_a_silent_connection_are_closed_by_the_server(
        client: Client, server: Server) -> None:
    """One connection sends a header line every half second and never ends its head; another
    sends nothing. The server closes both once :data:`HEADER_TIMEOUT_S` is past."""
    url = urlsplit(server.url)
    trickle = socket.create_connection((url.hostname, url.port), timeout=0.5)
    silent = socket.create_connection((url.hostname, url.port), timeout=0.5)
    started = time.monotonic()
    closed: dict[str, float] = {}
    try:
        trickle.sendall(b"GET /v1/facts HTTP/1.1\r\nHost: local\r\n")
        while len(closed) < 2 and time.monotonic() - started < HEADER_TIMEOUT_S + 15:
            for name, sock in (("trickle", trickle), ("silent", silent)):
                if name in closed:
                    continue
                try:
                    if name == "trickle":
                        sock.sendall(b"X-Trickle: 1\r\n")
                    if sock.recv(4096) == b"":  # the server closed it
                        closed[name] = time.monotonic() - started
                except TimeoutError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    closed[name] = time.monotonic() - started
    finally:
        trickle.close()
        silent.close()
    assert set(closed) == {"trickle", "silent"}, closed
    assert all(HEADER_TIMEOUT_S - 1 <= after <= HEADER_TIMEOUT_S + 5
               for after in closed.values()), closed
    # The server still answers a client that sends its request at once.
    reply = client.request("GET", "/v1/nothing-here", key=server.key)
    assert reply.status == 404


def test_the_health_checks_answer_without_a_key(client: Client) -> None:
    live = client.request("GET", "/v1/health")
    assert (live.status, live.json) == (200, {"status": "ok"})
    ready = client.request("GET", "/v1/health/ready")
    assert (ready.status, ready.json) == (200, {"status": "ready"})
    refused = client.request("DELETE", "/v1/health")
    assert (refused.status, refused.json["error"]["code"]) == (405, "method_not_allowed")
