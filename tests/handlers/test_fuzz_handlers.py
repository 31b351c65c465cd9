"""Fuzzing every operation in process, through the real handlers over the real database: each
request built from the route's parameters (docs/openapi.json) and a body template of its own,
every value kept, dropped or replaced by a hostile one — forged cursors, NUL and other control
characters, invisible and look-alike characters, other spellings of a name, numbers as times,
deep or huge values. No answer is a 5xx, every answer is the error contract or a success.

``HAKI_FUZZ_EXAMPLES`` examples per operation (15 here; ``make fuzz`` runs 1,000 each: 14
operations, 14,000 cases, beside the HTTP fuzzing of tests/e2e/test_fuzz.py)."""

import base64
import json
import os
import unicodedata
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haki_aws.routes import ROUTES, Route
from tests.handlers.conftest import Invoke

EXAMPLES = int(os.environ.get("HAKI_FUZZ_EXAMPLES", "15"))
DOCUMENT = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text("utf-8"))


def _cursor(raw: bytes) -> str:
    return "k1." + base64.urlsafe_b64encode(raw).decode().rstrip("=")


_UUID = "9f1c8a52-2b0e-4a70-8c5b-2f7f4c7e0d11"
#: Values an attacker or a broken client sends.
HOSTILE: list[Any] = [
    "", " ", "\x00", "a\x00b", "\x01", "\x7f", "\x85", "\x9b", "\u200b", "ali\u200bce", "\u202e",
    "\U000e0041", "\ufeff", "\ud800", "＜/haki_memory＞", "</haki_memory>", "\u0441ity",
    unicodedata.normalize("NFD", "amélie"), "é" * 300, "x" * 20_000, "null", "[]", "{}",
    "1970-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-14:00", "2026-12-01T09:30:00", "253402300799", 253402300799,
    -1, 0, 1, 2**63, 10**40, 1.5, -0.0, 1e308, True, False, None, [], {}, [[[[[]]]]],
    {"a": {"b": {"c": [1, "\x00"]}}}, _UUID, str(uuid.UUID(int=0)), "k1.", "k1.%%%",
    _cursor(b'["2026-01-01T00:00:00+00:00", 5]'), _cursor(b'["2026-01-01T00:00:00Z", [1]]'),
    _cursor(b'["2026-01-01T00:00:00+00:00", true]'), _cursor(b'[NaN, "' + _UUID.encode() + b'"]'),
    _cursor(b'[1700000000, "' + _UUID.encode() + b'"]'), _cursor(b'{"a": 1, "b": 2}'),
    _cursor(b'["9999-12-31T23:59:59+00:00", "' + _UUID.encode() + b'"]'), _cursor(b"\xff"),
]
hostile = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40),
                    st.integers(), st.floats(allow_nan=False))


def _json(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(leaves, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
        max_leaves=8)


#: A plausible body per POST route: the fuzzer keeps, drops or replaces each of its values.
BODIES: dict[str, dict[str, Any]] = {
    "/v1/context": {"subject_id": "alice", "query": "where does she live?", "purpose": "fuzz",
                    "budget_tokens": 300, "render": True},
    "/v1/events": {"events": [{"subject_id": "alice", "kind": "note", "idempotency_key": "k-1",
                               "occurred_at": "2026-12-01T09:30:00Z",
                               "payload": {"text": "moved to Lyon"}}]},
    "/v1/facts": {"facts": [{"subject_id": "alice", "predicate": "city", "value": "Lyon",
                             "confidence": 0.9, "valid_from": "2026-12-01T09:30:00Z",
                             "volatility": "stable", "status": "active"}]},
    "/v1/facts/{fact_id}/status": {"status": "disabled"},
    "/v1/conflicts/{conflict_id}/resolve": {"keep_fact_id": _UUID},
    "/v1/forget": {"subject_id": "alice", "mode": "disable"},
    "/v1/calls/{trace_id}/feedback": {"subject_id": "alice", "used": [_UUID], "missing": [],
                                      "verdict": "helpful", "note": "ok", "source": "agent"},
}
#: The message form of POST /v1/events, drawn half the time.
MESSAGES = {"subject_id": "alice", "messages": [
    {"role": "user", "content": "hi", "name": "Ana", "message_id": "m-1",
     "occurred_at": "2026-12-01T09:30:00Z"}]}
#: A plausible value per query or path parameter.
PARAMETERS: dict[str, Any] = {
    "subject_id": "alice", "q": "Lyon", "status": "open", "warning": "open_conflict",
    "empty_reason": "served", "purpose": "fuzz", "since": "2026-01-01T00:00:00Z",
    "until": "2027-01-01T00:00:00Z", "cursor": _cursor(b'["2026-01-01T00:00:00+00:00", "'
                                                      + _UUID.encode() + b'"]'),
    "limit": "5", "days": "7", "granularity": "hour", "predicate": "city",
    "trace_id": _UUID, "fact_id": _UUID, "conflict_id": _UUID, "feedback": "missing",
    "thread_id": "support-1",
}


@st.composite
def mutated(draw: st.DrawFn, value: Any) -> Any:
    """``value`` kept, replaced by a hostile one, or (for objects and lists) mutated inside."""
    choice = draw(st.integers(0, 9))
    if choice < 3:
        return draw(hostile) if choice else draw(_json(hostile))
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            if draw(st.integers(0, 9)):  # dropped one time in ten
                out[key] = draw(mutated(inner))
        if draw(st.integers(0, 9)) == 0:
            out[draw(st.sampled_from(["extra", "\x00", "id"]))] = draw(hostile)
        return out
    if isinstance(value, list):
        return [draw(mutated(inner)) for inner in value * draw(st.integers(0, 3))]
    return value


def _parameters(route: Route) -> list[dict[str, Any]]:
    return DOCUMENT["paths"][route.path][route.method.lower()].get("parameters", [])


@st.composite
def requests(draw: st.DrawFn, route: Route, project_id: str) -> dict[str, Any]:
    """The event fields (query, path parameters, body) of one request on ``route``."""
    project = draw(st.sampled_from([project_id] * 8 + ["\x00", "other-project", ""]))
    query: dict[str, str] = {}
    path: dict[str, str] = {}
    for parameter in _parameters(route):
        name = parameter["name"]
        if not parameter.get("required") and draw(st.booleans()):
            continue
        value = project if name == "project_id" else draw(mutated(PARAMETERS[name]))
        text = value if isinstance(value, str) else json.dumps(value)
        (path if parameter["in"] == "path" else query)[name] = text
    request: dict[str, Any] = {"query": query or None, "path_params": path or None}
    if route.method == "POST":
        template = BODIES[route.path]
        if route.path == "/v1/events" and draw(st.booleans()):
            template = MESSAGES
        body = draw(mutated({"project_id": project, **template}))
        request["body"] = body if draw(st.integers(0, 19)) else json.dumps(body)[:-1]
    return request


def _operation(route: Route) -> str:
    return f"{route.method} {route.path}"


@pytest.mark.parametrize("route", ROUTES, ids=_operation)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_no_request_on_any_operation_is_answered_with_a_5xx(
    invoke: Invoke, api_key: str, project_id: str, route: Route, data: st.DataObject
) -> None:
    request = data.draw(requests(route, project_id))
    answer = invoke(route.function, route.method, route.path, key=api_key, **request)
    assert answer.status < 500, (request, answer.json)
    if answer.status >= 400:
        assert set(answer.json) == {"error"} and answer.json["error"]["code"], answer.json
