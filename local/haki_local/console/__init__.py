"""The trace console: a read-only web page that ``haki serve`` serves next to the API, on the
same loopback port, outside ``/v1`` (:mod:`haki_local.server` routes ``/console`` and every
path under it to :meth:`Console.handle`).

* ``GET /console/`` and its static files (``static/``: one HTML page, one script, one style
  sheet; no build step, no framework) need no key and hold no data.
* ``GET /console/api/calls`` (the project's recent context calls) and
  ``GET /console/api/calls/{trace_id}?subject_id=…`` (one call: its packet, rendered as the
  SDKs render it, every decision, the current text of each candidate, the score weights) need
  ``Authorization: Bearer`` **the dev key** (``.haki/dev-key``, printed by ``haki serve``):
  any other key, even a valid one, is refused. The page reads the key from its URL fragment
  (never sent to the server) or asks for it, and keeps it in the tab's session storage.

Every answer carries a strict Content-Security-Policy (scripts and styles from this origin
only) and the page writes memory texts with ``textContent`` only: memory is tenant data and
may hold markup.
"""

import hmac
import json
import mimetypes
import re
import threading
from collections.abc import Mapping
from dataclasses import asdict
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from uuid import UUID

from starlette.responses import Response

from haki.assembler.config import RetrievalConfig
from haki.assembler.render import render_packet
from haki.assembler.trace import load_trace
from haki.db import Database, Role, database_url
from haki.db.connection import acting_for
from haki.errors import HakiError, TraceNotFound, Unauthorized, ValidationFailed
from haki.keys import KeyIdentity, authenticate
from haki.settings import Settings
from haki_aws.errors import error_body
from haki_local.baselines import SeedConfig
from haki_local.console.reads import candidate_texts, recent_calls

PREFIX = "/console"
STATIC = Path(__file__).resolve().parent / "static"
#: The only files served from ``static/``.
FILES = {"": "index.html", "index.html": "index.html", "console.js": "console.js",
         "console.css": "console.css"}
DEV_KEY_FILE = "dev-key"
_CALL = re.compile(r"^/api/calls/([^/]+)$")
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class ConsoleError(HakiError):
    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(message)
        self.code, self.status = code, status


class Console:
    """Answers the requests of ``/console`` and of the paths under it."""

    def __init__(self, settings: Settings, db: Database | None = None) -> None:
        self._settings = settings
        self._db = db
        self._lock = threading.Lock()
        config = RetrievalConfig.from_settings(settings)
        # How scores are made, for the page to draw each as its stacked components: the fused
        # list's reciprocal-rank fusion (and the comparison formula's weights, for traces of
        # calls ranked by ``haki eval``'s baseline).
        seed = SeedConfig()
        self._ranking = {
            "preset": "fused", "rrf_k": config.rrf_k,
            "rrf_weight_vector": config.rrf_weight_vector,
            "rrf_weight_text": config.rrf_weight_text,
            "weights": {"similarity": seed.weight_similarity,
                        "text_rank": seed.weight_text, "recency": seed.weight_recency}}

    def handle(self, path: str, query: str, headers: Mapping[str, str]) -> Response:
        """The answer to a GET of ``path`` (``/console`` or below) with ``query`` (the server
        refuses every other method: the console is read-only)."""
        path = path[len(PREFIX):]
        if path == "":
            return Response(b"", HTTPStatus.MOVED_PERMANENTLY,
                            {"Location": PREFIX + "/", **SECURITY_HEADERS})
        try:
            if path.startswith("/api/"):
                with self._lock:  # one database handle per worker process
                    return self._json(self._api(path, parse_qs(query), headers))
            return self._static(path[1:])
        except HakiError as error:
            return self._error(error)

    # ------------------------------------------------------------------ static

    def _static(self, name: str) -> Response:
        file = FILES.get(name)
        if file is None:
            raise ConsoleError("not_found", 404, f"no console file {name!r}")
        kind = mimetypes.guess_type(file)[0] or "application/octet-stream"
        return Response((STATIC / file).read_bytes(), HTTPStatus.OK,
                        {"Content-Type": f"{kind}; charset=utf-8", **SECURITY_HEADERS})

    # ------------------------------------------------------------------ API

    def _database(self) -> Database:
        if self._db is None:
            self._db = Database(database_url(self._settings, Role.APP))
        return self._db

    def _identity(self, headers: Mapping[str, str]) -> KeyIdentity:
        """The dev key's identity; any other key is refused."""
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        key = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        path = self._settings.data_dir / DEV_KEY_FILE
        dev = path.read_text(encoding="utf-8").strip() if path.is_file() else ""
        if not key:
            raise Unauthorized("the console needs the dev key printed by haki serve")
        if not dev or not hmac.compare_digest(key.encode(), dev.encode()):
            raise ConsoleError("forbidden", 403,
                               "the console serves the dev key only (.haki/dev-key)")
        return authenticate(self._database(), key)

    def _api(self, path: str, query: dict[str, list[str]],
             headers: Mapping[str, str]) -> dict[str, Any]:
        identity = self._identity(headers)
        # Row-level security shows the key's project only to a transaction acting for it.
        with acting_for(identity.key_hash):
            return self._read(identity.project_id, path, query)

    def _read(self, project_id: str, path: str, query: dict[str, list[str]]) -> dict[str, Any]:
        db = self._database()
        if path == "/api/calls":
            limit = _integer(query.get("limit", ["50"])[-1], "limit")
            return {"project_id": project_id, "calls": [
                _jsonable(asdict(call)) for call in recent_calls(db, project_id, limit)]}
        match = _CALL.match(path)
        if match is None:
            raise ConsoleError("not_found", 404, f"no console route {path}")
        subject_id = query.get("subject_id", [""])[-1]
        try:
            trace_id = UUID(match.group(1))
        except ValueError:
            raise TraceNotFound("no trace with this id in this scope") from None
        trace = load_trace(db, project_id=project_id, subject_id=subject_id, trace_id=trace_id)
        texts = candidate_texts(
            db, project_id=project_id, subject_id=subject_id,
            fact_ids=[d.fact_id for d in trace.decisions if d.fact_id is not None],
            event_ids=[d.event_id for d in trace.decisions if d.event_id is not None])
        return {"project_id": project_id, "ranking": self._ranking,
                "trace": trace.model_dump(mode="json"),
                "rendered": render_packet(trace.packet),
                "texts": {str(k): v for k, v in texts.items()}}

    # ------------------------------------------------------------------ answers

    @staticmethod
    def _json(body: dict[str, Any]) -> Response:
        return Response(json.dumps(body, ensure_ascii=False).encode("utf-8"), HTTPStatus.OK,
                        {"Content-Type": "application/json", **SECURITY_HEADERS})

    @staticmethod
    def _error(error: HakiError) -> Response:
        headers = {"Content-Type": "application/json", **SECURITY_HEADERS}
        return Response(error_body(error.code, error.message).encode(), error.status, headers)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def _integer(text: str, name: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise ValidationFailed(f"{name} must be a positive integer")
    return int(text)


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else str(v) if isinstance(v, UUID)
                else v) for k, v in row.items()}
