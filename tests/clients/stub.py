"""A scripted HTTP server on loopback for the client tests: it answers each request with the
next reply of its script (status, headers, body, delay) and records what it received.
Used where the real service cannot be made to fail on demand (503, 429, slow answers)."""

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Scripted:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw: bytes | None = None


@dataclass
class Stub:
    url: str
    script: list[Scripted]
    #: (method, path, headers, body, monotonic time) of every request received.
    requests: list[tuple[str, str, dict[str, str], bytes, float]] = field(default_factory=list)


@contextmanager
def stub_server(script: list[Scripted]) -> Iterator[Stub]:
    stub = Stub("", list(script))

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            stub.requests.append((self.command, self.path, dict(self.headers.items()), body,
                                  time.monotonic()))
            reply = stub.script.pop(0) if stub.script else Scripted(500, {"error": {
                "code": "internal_error", "message": "stub script exhausted"}})
            time.sleep(reply.delay_s)
            payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout): what the test wanted

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    """A loopback URL nobody listens on (connection refused)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
