"""``GET /console`` and ``GET /console/{asset}``: the console's page and its static files, under
the API's own domain (docs/spec.md §13).

The page, its script and style sheet and the vendored chart library (``static/vendor``) hold
no data and need no key: the page asks for the tenant's key, keeps it in the tab's session
storage, and reads everything through the public API routes with it, so it sees exactly what
that key may see. Every answer carries a strict Content-Security-Policy (scripts, styles and
requests to this origin only) and the page writes tenant text with ``textContent`` only.

Standard library only: no database, no layer; ``haki serve`` answers ``/console`` with the
same :func:`answer`.
"""

import base64
import json
import mimetypes
from pathlib import Path
from typing import Any

STATIC = Path(__file__).resolve().parent / "static"
PREFIX = "/console"
#: The only files served, by the name after ``/console/``.
FILES: dict[str, str] = {
    "": "index.html", "index.html": "index.html", "console.js": "console.js",
    "console.css": "console.css", "uPlot.iife.min.js": "vendor/uPlot.iife.min.js",
    "uPlot.min.css": "vendor/uPlot.min.css", "favicon.svg": "favicon.svg",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def answer(method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body for ``method`` on ``path`` (``/console`` or below)."""
    name = path[len(PREFIX):].removeprefix("/") if path.startswith(PREFIX) else None
    if method not in ("GET", "HEAD"):
        return _error(405, "method_not_allowed", "the console is read with GET",
                      {"Allow": "GET, HEAD"})
    if path == PREFIX:
        # Relative, so that the stage in front of the path (``/prod/console``) is kept: the
        # page's own links are relative to ``…/console/``.
        return 301, {"Location": "console/", **SECURITY_HEADERS}, b""
    file = FILES.get(name) if name is not None else None
    if file is None:
        return _error(404, "not_found", "no such console file")
    kind = mimetypes.guess_type(file)[0] or "application/octet-stream"
    body = (STATIC / file).read_bytes()
    return 200, {"Content-Type": f"{kind}; charset=utf-8", **SECURITY_HEADERS}, body


def _error(status: int, code: str, message: str,
           extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, {"Content-Type": "application/json", **SECURITY_HEADERS, **(extra or {})}, body


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """API Gateway proxy integration of ``/console`` and ``/console/{asset}``."""
    status, headers, body = answer(str(event.get("httpMethod") or ""),
                                   str(event.get("path") or ""))
    text = not headers["Content-Type"].startswith(("image/", "application/octet-stream"))
    return {"statusCode": status, "headers": headers,
            "body": body.decode() if text else base64.b64encode(body).decode(),
            "isBase64Encoded": not text}
