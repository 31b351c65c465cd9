"""Inputs an attacker or a broken client sends: each gets a 4xx with a stable code, never a
500 (the audit's reproductions, through the real handlers)."""

import base64
import json
import time
import uuid
from typing import Any

import pytest

from haki_aws.routes import BATCH_BODY_BYTES
from tests.handlers.conftest import Invoke

CONTEXT = "/v1/context"
INSPECT = "/v1/inspect/{trace_id}"
STATS = "/v1/stats/overview"


def _context_body(project_id: str, **extra: object) -> dict[str, object]:
    return {"project_id": project_id, "subject_id": "alice", "query": "q", **extra}


def test_text_plain_without_a_body_is_unsupported_media_type(
    invoke: Invoke, api_key: str
) -> None:
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=None,
                    headers={"Content-Type": "text/plain"})
    assert answer.status == 415
    assert answer.json["error"]["code"] == "validation_error"


def test_a_body_nested_thousands_deep_is_refused(invoke: Invoke, api_key: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    answer = invoke("context", "POST", CONTEXT, key=api_key,
                    body='{"project_id": "p", "subject_id": "s", "query": "q", "x": ' + deep + "}")
    assert answer.status == 422
    assert answer.json["error"]["code"] == "validation_error"
    assert "nested" in answer.json["error"]["message"]


def test_an_integer_of_five_thousand_digits_is_refused_before_parsing(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    """Python will not convert it (and long conversions are quadratic): the body is refused as
    malformed, whatever field holds it."""
    text = json.dumps(_context_body(project_id))[:-1] + ', "budget_tokens": ' + "9" * 5000 + "}"
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=text)
    assert answer.status == 422
    assert answer.json["error"]["code"] == "validation_error"
    assert "30 digits" in answer.json["error"]["message"]


@pytest.mark.parametrize("function", ["inspect", "stats"])
def test_a_nul_in_a_query_parameter_is_a_validation_error(
    invoke: Invoke, api_key: str, project_id: str, function: str
) -> None:
    query = {"project_id": project_id, "subject_id": "a\x00b"}
    if function == "inspect":
        answer = invoke("inspect", "GET", INSPECT, key=api_key,
                        path_params={"trace_id": str(uuid.uuid4())}, query=query)
    else:
        answer = invoke("stats", "GET", STATS, key=api_key, query=query)
    assert answer.status == 422
    assert answer.json["error"]["code"] == "validation_error"


def test_a_body_that_is_not_utf8_is_a_validation_error(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    """API Gateway hands such a body over base64-encoded (the fuzzer's find: it was a 500)."""
    event_body = base64.b64encode(b'?\xd7\xb6\xff').decode()
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=event_body,
                    base64_encoded=True)
    assert answer.status == 422
    assert answer.json["error"]["code"] == "validation_error"


def test_a_mebibyte_unterminated_string_of_escaped_quotes_is_refused_at_once(
    invoke: Invoke, api_key: str
) -> None:
    """The body of the largest route, all of it one unterminated string of ``\\"`` pairs:
    parsed in one pass and refused (it once held a worker for minutes)."""
    body = '{"project_id": "p", "events": [{"a": "' + '\\"' * ((BATCH_BODY_BYTES - 60) // 2)
    started = time.perf_counter()
    answer = invoke("ingest", "POST", "/v1/events", key=api_key, body=body)
    assert time.perf_counter() - started < 1.0
    assert (answer.status, answer.json["error"]["code"]) == (422, "validation_error")
    assert "Unterminated string" in answer.json["error"]["message"]


def _cursor(raw: bytes) -> str:
    return "k1." + base64.urlsafe_b64encode(raw).decode().rstrip("=")


#: Forged cursors: right prefix, wrong data (each of them was a 500 on some listing).
FORGED_CURSORS = [
    _cursor(b'["2026-01-01T00:00:00+00:00", 5.5]'),
    _cursor(b'["2026-01-01T00:00:00+00:00", ["a"]]'),
    _cursor(b'["2026-01-01T00:00:00+00:00", true]'),
    _cursor(b'["2026-01-01T00:00:00+00:00", NaN]'),
    _cursor(b'["2026-01-01T00:00:00+00:00", null]'),
    _cursor(b'["2026-01-01T00:00:00+00:00", {"a": 1}]'),
    _cursor(b'[NaN, "9f1c8a52-2b0e-4a70-8c5b-2f7f4c7e0d11"]'),
    _cursor(b'[1700000000, "9f1c8a52-2b0e-4a70-8c5b-2f7f4c7e0d11"]'),
    _cursor(b'["0001-01-01T00:00:00+01:00", "9f1c8a52-2b0e-4a70-8c5b-2f7f4c7e0d11"]'),
    _cursor(b'["2026-01-01T00:00:00", "9f1c8a52-2b0e-4a70-8c5b-2f7f4c7e0d11"]'),
    _cursor(b'["2026-01-01T00:00:00+00:00", "9f1c8a52", "x"]'),
    _cursor(b'{"a": 1, "b": 2}'),
    _cursor(b'"ab"'),
    _cursor(b"\xff\xfe"),
    "k1.%%%%",
    "k1.é",
    "k1.a",
]
LISTINGS = [("memory", "/v1/facts"), ("memory", "/v1/events"), ("memory", "/v1/conflicts"),
            ("inspect", "/v1/calls")]


@pytest.mark.parametrize(("function", "path"), LISTINGS)
def test_a_forged_cursor_is_a_validation_error_on_every_listing(
    invoke: Invoke, api_key: str, project_id: str, function: str, path: str
) -> None:
    for cursor in FORGED_CURSORS:
        answer = invoke(function, "GET", path, key=api_key, query={
            "project_id": project_id, "subject_id": "alice", "cursor": cursor})
        assert (answer.status, answer.json["error"]["code"]) == (422, "validation_error"), cursor
        assert "cursor" in answer.json["error"]["message"]


#: Every text parameter of every GET route, and the function serving it.
TEXT_PARAMETERS = [
    ("inspect", "/v1/calls", name) for name in ("q", "warning", "purpose", "subject_id",
                                                 "since", "until", "cursor")
] + [("memory", "/v1/facts", name) for name in ("subject_id", "predicate", "cursor")] + [
    ("memory", path, name) for path in ("/v1/events", "/v1/conflicts")
    for name in ("subject_id", "cursor")
] + [("stats", path, "subject_id") for path in ("/v1/stats/overview", "/v1/stats/series")]


@pytest.mark.parametrize(("function", "path", "name"), TEXT_PARAMETERS)
@pytest.mark.parametrize("text", ["a\x00b", "\x00"])
def test_a_nul_in_any_query_parameter_is_a_validation_error(
    invoke: Invoke, api_key: str, project_id: str, function: str, path: str, name: str,
    text: str,
) -> None:
    """PostgreSQL text cannot hold NUL: it is refused before any statement sees it."""
    query = {"project_id": project_id, "subject_id": "alice", name: text}
    answer = invoke(function, "GET", path, key=api_key, query=query)
    assert (answer.status, answer.json["error"]["code"]) == (422, "validation_error")
    assert name in answer.json["error"]["message"]


def _with_nul(body: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    """``body`` with a NUL inside the string at ``path`` (the last part a key: the NUL goes
    into the key's value; ``"<key>"``: into a key of that object)."""
    copy = json.loads(json.dumps(body))
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if last == "<key>":
        parent["a\x00b"] = 1
    else:
        parent[last] = "a\x00" + str(parent[last])
    return copy


_EVENT = {"subject_id": "alice", "kind": "note", "idempotency_key": "k1",
          "payload": {"text": "hello"}}
_MESSAGE = {"role": "user", "content": "hi", "name": "Ana", "message_id": "m1"}
_FACT = {"subject_id": "alice", "predicate": "city", "value": {"name": "Lyon"}}
#: (function, route, body, where the NUL goes) for every text field of every write body.
NUL_BODIES = [
    *(("ingest", "/v1/events", {"events": [_EVENT]}, ("events", 0, field))
      for field in ("subject_id", "kind", "idempotency_key")),
    ("ingest", "/v1/events", {"events": [_EVENT]}, ("events", 0, "payload", "text")),
    ("ingest", "/v1/events", {"events": [_EVENT]}, ("events", 0, "payload", "<key>")),
    ("ingest", "/v1/events", {"subject_id": "alice", "messages": [_MESSAGE]}, ("subject_id",)),
    *(("ingest", "/v1/events", {"subject_id": "alice", "messages": [_MESSAGE]},
       ("messages", 0, field)) for field in ("content", "name", "message_id")),
    *(("ingest", "/v1/facts", {"facts": [_FACT]}, ("facts", 0, field))
      for field in ("subject_id", "predicate")),
    ("ingest", "/v1/facts", {"facts": [_FACT]}, ("facts", 0, "value", "name")),
    ("ingest", "/v1/facts", {"facts": [_FACT]}, ("facts", 0, "value", "<key>")),
    ("memory", "/v1/forget", {"subject_id": "alice", "mode": "disable"}, ("subject_id",)),
    ("context", CONTEXT, {"subject_id": "alice", "query": "q"}, ("subject_id",)),
]


@pytest.mark.parametrize(("function", "path", "body", "where"), NUL_BODIES)
def test_a_nul_in_any_text_of_a_body_is_a_validation_error(
    invoke: Invoke, api_key: str, project_id: str, function: str, path: str,
    body: dict[str, Any], where: tuple[str | int, ...],
) -> None:
    answer = invoke(function, "POST", path, key=api_key,
                    body=_with_nul({"project_id": project_id, **body}, where))
    assert answer.status == 422, answer.json
    assert answer.json["error"]["code"] in ("validation_error", "missing_scope")


@pytest.mark.parametrize("content_type", ["APPLICATION/JSON", "Application/Json; charset=UTF-8",
                                          "application/JSON;charset=utf-8"])
def test_a_json_media_type_in_any_case_is_json(
    invoke: Invoke, api_key: str, project_id: str, content_type: str
) -> None:
    """Media types are case-insensitive (RFC 9110): any spelling of application/json, with its
    parameters, is a JSON body; another type is still 415."""
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=_context_body(project_id),
                    headers={"Content-Type": content_type})
    assert answer.status == 200, answer.json
    refused = invoke("context", "POST", CONTEXT, key=api_key, body=_context_body(project_id),
                     headers={"Content-Type": "TEXT/PLAIN"})
    assert refused.status == 415


def test_a_body_holding_a_lone_surrogate_is_a_validation_error(
    invoke: Invoke, api_key: str
) -> None:
    """No UTF-8 body holds one, but an event built by hand may: measured, then refused as
    malformed (the in-process fuzzer's find: it was a 500)."""
    answer = invoke("memory", "POST", "/v1/forget", key=api_key, body="\ud800")
    assert (answer.status, answer.json["error"]["code"]) == (422, "validation_error")


@pytest.mark.parametrize(("function", "method", "resource", "query"), [
    ("memory", "GET", "/v1/subjects", {"subjectid": "alice"}),
    ("memory", "GET", "/v1/subjects", {"": "false"}),
    ("memory", "GET", "/v1/facts", {"subject_id": "alice", "statuss": "active"}),
    ("memory", "GET", "/v1/events", {"subject_id": "alice", "thread": "t-1"}),
    ("inspect", "GET", "/v1/calls", {"subject": "alice"}),
])
def test_a_query_parameter_the_route_does_not_take_is_refused(
        invoke: Invoke, api_key: str, function: str, method: str, resource: str,
        query: dict[str, str]) -> None:
    """A misspelt filter is a client mistake, named in the answer, not a filter ignored."""
    refused = invoke(function, method, resource, key=api_key, query=query)
    assert (refused.status, refused.json["error"]["code"]) == (422, "validation_error")
    unknown = next(name for name in query if name not in ("subject_id",))
    assert f"unknown query parameter(s) {unknown!r}" in refused.json["error"]["message"]


def test_the_query_parameters_a_route_declares_pass(invoke: Invoke, api_key: str) -> None:
    answered = invoke("memory", "GET", "/v1/events", key=api_key,
                      query={"subject_id": "alice", "thread_id": "t-1", "limit": "2"})
    assert answered.status == 200, answered.json
    answered = invoke("memory", "GET", "/v1/subjects", key=api_key, query={"limit": "1"})
    assert answered.status == 200, answered.json
