"""``POST /v1/context`` through its Lambda handler: auth, tenancy, the error contract,
observability, and a packet whose trace ``inspect`` returns."""

import io
import json
from typing import Any

import pytest

import functions.context.app as context_app
from haki.db import Database
from haki.errors import HakiError
from haki.models import ContextRequest, FactRecord
from haki.validation import parse
from haki_aws.observability import logger, subject_ref
from tests.handlers.conftest import FakeLambdaContext, Invoke, api_event

CONTEXT = "/v1/context"


def _body(project_id: str, **extra: Any) -> dict[str, Any]:
    return {"project_id": project_id, "subject_id": "alice", "query": "Where does she live?",
            **extra}


def test_context_serves_facts_and_inspect_returns_the_same_packet(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    answer = invoke("context", "POST", CONTEXT, key=api_key,
                    body=_body(project_id, purpose="reply"))
    assert answer.status == 200
    packet = answer.json["packet"]
    assert {f["predicate"] for f in packet["facts"]} <= {f.predicate for f in seeded}
    assert packet["facts"] and packet["status"] == "ok"
    inspected = invoke("inspect", "GET", "/v1/inspect/{trace_id}", key=api_key,
                       path_params={"trace_id": answer.json["trace_id"]},
                       query={"project_id": project_id, "subject_id": "alice"})
    assert inspected.status == 200
    assert inspected.json["packet"] == packet
    assert inspected.json["token_count"] == answer.json["token_count"]
    included = {d["fact_id"] for d in inspected.json["decisions"] if d["action"] == "included"}
    assert included == {f["id"] for f in packet["facts"]}


def test_the_block_is_returned_only_when_asked(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    plain = invoke("context", "POST", CONTEXT, key=api_key, body=_body(project_id, purpose="r"))
    assert plain.status == 200 and set(plain.json) == {"packet", "token_count", "trace_id"}
    unasked = invoke("context", "POST", CONTEXT, key=api_key,
                     body=_body(project_id, purpose="r", render=False))
    assert unasked.status == 200 and "block" not in unasked.json

    asked = invoke("context", "POST", CONTEXT, key=api_key,
                   body=_body(project_id, purpose="r", render=True))
    assert asked.status == 200
    block = asked.json["block"]
    lines = block.split("\n")
    assert lines[0] == "<haki_memory>" and lines[-1] == "</haki_memory>"
    served = [f["predicate"] for f in asked.json["packet"]["facts"]]
    wanted = {"preferred_language": "preferred language: French",
              "lives_in": "lives in: city: Lyon",
              "employer": "employer: Boulangerie Dupont"}
    assert served and [line.split(" (since")[0] for line in lines[1:-1]] == [
        f"[f{i}] {wanted[p]}" for i, p in enumerate(served, start=1)]
    # The budget bounds the block, not the items: token_count is its estimate.
    assert asked.json["token_count"] == len(block) // 4


def test_an_empty_packet_renders_as_an_empty_block(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    answer = invoke("context", "POST", CONTEXT, key=api_key,
                    body={**_body(project_id, purpose="r"), "subject_id": "nobody",
                          "render": True})
    assert answer.status == 200 and answer.json["packet"]["facts"] == []
    assert answer.json["block"] == ""


def test_missing_purpose_is_a_degraded_packet_not_an_error(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=_body(project_id))
    assert answer.status == 200 and answer.json["packet"]["status"] == "degraded"
    assert any(w.startswith("missing_purpose") for w in answer.json["packet"]["warnings"])


def test_a_call_without_project_id_is_served_in_the_keys_project(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    """A key is bound to one project: the body may leave ``project_id`` out."""
    body = {k: v for k, v in _body(project_id, purpose="reply").items() if k != "project_id"}
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=body)
    assert answer.status == 200, answer.json
    assert answer.json["packet"]["facts"]
    inspected = invoke("inspect", "GET", "/v1/inspect/{trace_id}", key=api_key,
                       path_params={"trace_id": answer.json["trace_id"]}, query={})
    assert inspected.status == 200, inspected.json
    assert (inspected.json["project_id"], inspected.json["subject_id"]) == (project_id, "alice")
    assert inspected.json["packet"] == answer.json["packet"]


@pytest.mark.parametrize(("body", "code"), [
    ({"project_id": "", "subject_id": "alice", "query": "q"}, "missing_scope"),
    ("PROJECT", "missing_scope"),  # placeholder: project given, subject missing
    ({"budget_tokens": 0}, "budget_exceeded"),
    ({"budget_tokens": -5}, "budget_exceeded"),
    ({"budget_tokens": "900"}, "budget_exceeded"),
    ({"budget_tokens": 1.5}, "budget_exceeded"),
    ({"budget_tokens": 10**9}, "budget_exceeded"),
    ({"query": ""}, "validation_error"),
    ({"query": 42}, "validation_error"),
    ({"colour": "blue"}, "validation_error"),
    ({"purpose": "x" * 129}, "validation_error"),
    ({"render": "true"}, "validation_error"),
    ({"render": 1}, "validation_error"),
])
def test_invalid_requests_get_422_with_a_stable_code(
    invoke: Invoke, api_key: str, project_id: str, body: Any, code: str
) -> None:
    if body == "PROJECT":
        payload: dict[str, Any] = {"project_id": project_id, "query": "q"}
    elif "project_id" in body or "subject_id" in body:
        payload = body
    else:
        payload = {**_body(project_id), **body}
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=payload)
    assert answer.status == 422
    assert answer.json["error"]["code"] == code
    assert set(answer.json) == {"error"} and set(answer.json["error"]) == {"code", "message"}
    # The CLI validates through the same core function: same code, same message.
    with pytest.raises(HakiError) as cli:
        parse(ContextRequest, payload)
    assert {"code": cli.value.code, "message": cli.value.message} == answer.json["error"]


@pytest.mark.parametrize(("raw", "fragment"), [
    ('{"project_id": ', "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
    (None, "request body is required"),
])
def test_malformed_bodies_get_a_clear_message(
    invoke: Invoke, api_key: str, raw: str | None, fragment: str
) -> None:
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=raw)
    assert answer.status == 422 and answer.json["error"]["code"] == "validation_error"
    assert fragment in answer.json["error"]["message"]


def test_oversized_body_is_413_and_non_json_is_415(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    huge = invoke("context", "POST", CONTEXT, key=api_key,
                  body=_body(project_id, query="x" * (300 * 1024)))
    assert huge.status == 413 and huge.json["error"]["code"] == "payload_too_large"
    form = invoke("context", "POST", CONTEXT, key=api_key, body="project_id=p",
                  headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert form.status == 415 and form.json["error"]["code"] == "validation_error"


def test_authentication_comes_before_validation(invoke: Invoke) -> None:
    for key in (None, "hk_" + "A" * 43, "not-a-key"):
        answer = invoke("context", "POST", CONTEXT, key=key, body="{broken")
        assert answer.status == 401 and answer.json["error"]["code"] == "unauthorized"


def test_another_project_in_the_body_is_403_and_nothing_is_written(
    invoke: Invoke, api_key: str, project_id: str, handler_db: Database
) -> None:
    answer = invoke("context", "POST", CONTEXT, key=api_key, body=_body(project_id + "-b"))
    assert answer.status == 403 and answer.json["error"]["code"] == "forbidden_scope"
    assert project_id + "-b" not in answer.json["error"]["message"]
    with handler_db.transaction(project_id + "-b") as conn:
        assert conn.execute("SELECT count(*) FROM context_calls").fetchone() == (0,)


def test_database_outage_is_503_without_details(
    api_key: str, project_id: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    dead = Database(f"postgresql://haki_app@/haki?host={tmp_path}")
    monkeypatch.setattr(context_app, "db", dead)
    result = context_app.handler(api_event("POST", CONTEXT, key=api_key, body=_body(project_id)),
                                 FakeLambdaContext())
    assert result["statusCode"] == 503
    assert json.loads(result["body"])["error"]["code"] == "service_unavailable"
    assert str(tmp_path) not in result["body"]


def test_unexpected_failure_is_a_500_without_a_stack_trace(
    handler_db: Database, api_key: str, project_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret internals at /srv/app.py line 3")

    monkeypatch.setattr(context_app, "assemble", broken)
    result = context_app.handler(api_event("POST", CONTEXT, key=api_key, body=_body(project_id)),
                                 FakeLambdaContext())
    assert result["statusCode"] == 500
    error = json.loads(result["body"])["error"]
    assert error["code"] == "internal_error"
    assert "secret" not in result["body"] and "Traceback" not in result["body"]


def test_logs_carry_scope_and_trace_id_and_metrics_are_emitted(
    handler_db: Database, api_key: str, project_id: str, seeded: list[FactRecord],
    capsys: pytest.CaptureFixture[str],
) -> None:
    logs = io.StringIO()
    previous = logger.registered_handler.setStream(logs)
    try:
        capsys.readouterr()
        result = context_app.handler(
            api_event("POST", CONTEXT, key=api_key, body=_body(project_id, purpose="p")),
            FakeLambdaContext())
    finally:
        logger.registered_handler.setStream(previous)
    trace_id = json.loads(result["body"])["trace_id"]
    printed = logs.getvalue() + capsys.readouterr().out
    lines = [json.loads(line) for line in printed.splitlines() if line.startswith("{")]
    served = [line for line in lines if line.get("message") == "context served"]
    assert served and served[0]["trace_id"] == trace_id
    assert served[0]["project_id"] == project_id
    # The subject by digest (HAKI_LOG_SUBJECT_IDS defaults to hashed), the same on every line.
    assert served[0]["subject"] == subject_ref(project_id, "alice") != "alice"
    assert len(served[0]["subject"]) == 16 and "alice" not in json.dumps(lines)
    assert served[0]["correlation_id"] == "req-123"
    assert api_key not in json.dumps(lines)
    emf = [line for line in lines if "_aws" in line]
    assert emf, "no EMF metrics blob"
    names = {m["Name"] for d in emf[-1]["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert {"Latency", "CandidatesConsidered", "FactsServed", "EmptyPackets",
            "QueryCacheHits"} <= names
    assert emf[-1]["outcome"] == "ok" and emf[-1]["endpoint"] == "POST /v1/context"
