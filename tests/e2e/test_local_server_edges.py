"""The local server's own edges over real sockets: a known path with the wrong method, bad
``Content-Length`` headers, and the loopback-only default."""

import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from tests.e2e.conftest import Client, Server, haki_env


def _raw(server: Server, request: bytes) -> bytes:
    url = urlsplit(server.url)
    with socket.create_connection((url.hostname, url.port), timeout=30) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_wrong_method_on_a_known_path_is_405_with_allow(client: Client, server: Server) -> None:
    reply = client.request("GET", "/v1/context", key=server.key)
    assert reply.status == 405
    assert reply.headers["Allow"] == "POST"
    assert reply.json["error"]["code"] == "method_not_allowed"


def test_negative_or_garbage_content_length_is_400_and_never_hangs(server: Server) -> None:
    for length in (b"-5", b"12abc", b"\xc2\xb2"):
        response = _raw(server, b"POST /v1/context HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Type: application/json\r\nContent-Length: " + length
                        + b"\r\n\r\n{}")
        head, _, body = response.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 400") or head.startswith(b"HTTP/1.1 400"), head
        assert b'"validation_error"' in body


def test_a_non_loopback_host_is_refused_without_allow_remote(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "haki_local.cli", "serve", "--host", "0.0.0.0", "--port", "0"],
        env=haki_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr and "--allow-remote" in done.stderr
