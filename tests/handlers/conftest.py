"""Handler tests: synthetic API Gateway REST proxy events into the real handlers, over the
test run's real database (runtime role) and the real embedder.

The handler modules keep their database handle in a module global (what a warm Lambda
container reuses); tests point it at the test database.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import functions.context.app as context_app
import functions.health.app as health_app
import functions.ingest.app as ingest_app
import functions.inspect.app as inspect_app
import functions.memory.app as memory_app
import functions.stats.app as stats_app
from haki.db import Database, Role
from haki.embedding import get_embedder
from haki.models import FactRecord
from haki_local.admin import create_key
from haki_local.documents import MemoryDocument
from haki_local.writer import MemoryWriter

MODULES = {"context": context_app, "inspect": inspect_app, "stats": stats_app,
           "ingest": ingest_app, "memory": memory_app, "health": health_app}


@dataclass(frozen=True)
class FakeLambdaContext:
    function_name: str = "haki-test"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:eu-west-3:123456789012:function:haki-test"
    aws_request_id: str = "test-request"


def api_event(
    method: str,
    resource: str,
    *,
    key: str | None,
    path_params: dict[str, str] | None = None,
    query: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    base64_encoded: bool = False,
) -> dict[str, Any]:
    """A REST (v1) proxy event; ``body`` is sent as given if a string, else as JSON
    (``base64_encoded``: the string is the base64 of bytes that are not UTF-8)."""
    path = resource
    for name, value in (path_params or {}).items():
        path = path.replace("{" + name + "}", value)
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    if key is not None:
        all_headers["Authorization"] = f"Bearer {key}"
    text = body if isinstance(body, str) or body is None else json.dumps(body)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": method,
        "headers": all_headers,
        "multiValueHeaders": {k: [v] for k, v in all_headers.items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: [v] for k, v in query.items()} if query else None,
        "pathParameters": path_params,
        "stageVariables": None,
        "requestContext": {"requestId": "req-123", "resourcePath": resource,
                           "httpMethod": method, "stage": "test"},
        "body": text,
        "isBase64Encoded": base64_encoded,
    }


#: The API's contract (the committed OpenAPI document).
_OPENAPI = json.loads((Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text(
    encoding="utf-8"))


def query_parameters(method: str, path: str) -> set[str]:
    """The query parameters route ``method path`` takes, as the API's contract lists them."""
    operation = _OPENAPI["paths"][path][method.lower()]
    return {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}


@dataclass(frozen=True)
class Answer:
    status: int
    json: Any


Invoke = Callable[..., Answer]


@pytest.fixture
def handler_db(db_urls: dict[Role, str], monkeypatch: pytest.MonkeyPatch,
               open_database: Callable[[str], Database]) -> Database:
    db = open_database(db_urls[Role.APP])
    for module in MODULES.values():
        monkeypatch.setattr(module, "db", db)
    return db


@pytest.fixture
def api_key(owner_db: Database, project_id: str) -> str:
    return create_key(owner_db, org_id="org-test", project_id=project_id, label="tests",
                      create_project=True).key


@pytest.fixture
def seeded(owner_db: Database, project_id: str) -> list[FactRecord]:
    """A few facts of subject ``alice`` in the test project."""
    facts = [
        FactRecord(project_id=project_id, subject_id="alice", predicate="preferred_language",
                   value="French"),
        FactRecord(project_id=project_id, subject_id="alice", predicate="lives_in",
                   value={"city": "Lyon"}),
        FactRecord(project_id=project_id, subject_id="alice", predicate="employer",
                   value="Boulangerie Dupont"),
    ]
    MemoryWriter(owner_db, get_embedder()).write(MemoryDocument(facts=facts))
    return facts


@pytest.fixture
def invoke(handler_db: Database) -> Invoke:
    """Call ``functions/<name>/app.py:handler`` with an event built by :func:`api_event`."""

    def call(function: str, method: str, resource: str, **event: Any) -> Answer:
        result = MODULES[function].handler(api_event(method, resource, **event),
                                           FakeLambdaContext())
        headers = {**(result.get("headers") or {}),
                   **{k: v[-1] for k, v in (result.get("multiValueHeaders") or {}).items()}}
        assert headers["Content-Type"].startswith("application/json")
        return Answer(result["statusCode"], json.loads(result["body"]))

    return call
