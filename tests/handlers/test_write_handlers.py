"""The write routes' handlers (functions/ingest, functions/memory) on proxy events: success
statuses, the order of the edge's checks, the per-route body limits, query and path
parameters, the error mapping of the domain codes, and the write metrics. The rules
themselves are tested on the core (tests/integration/test_write_*) and over HTTP
(tests/e2e/test_write_api.py)."""

import json
import unicodedata
import uuid
from typing import Any

import pytest

from haki.db import Database
from haki.memory.api import MAX_EMBED_TOKENS
from haki_aws.routes import BATCH_BODY_BYTES, BODY_BYTES, ROUTES
from haki_local.admin import create_key
from tests.handlers.conftest import Answer, Invoke, query_parameters

WRITE_ROUTES = [r for r in ROUTES if r.function in ("ingest", "memory")]


def _path_params(path: str) -> dict[str, str] | None:
    if "{fact_id}" in path:
        return {"fact_id": str(uuid.uuid4())}
    if "{conflict_id}" in path:
        return {"conflict_id": str(uuid.uuid4())}
    return None


def _call(invoke: Invoke, method: str, path: str, key: str | None, **event: Any) -> Answer:
    function = next(r.function for r in ROUTES if (r.method, r.path) == (method, path))
    return invoke(function, method, path, key=key, **event)


def _code(answer: Answer) -> tuple[int, str]:
    return answer.status, answer.json["error"]["code"]


def test_every_write_route_answers_its_success_status(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    scope = {"project_id": project_id, "subject_id": "alice"}
    events = _call(invoke, "POST", "/v1/events", api_key, body={
        "project_id": project_id,
        "events": [{"subject_id": "alice", "kind": "note", "payload": {"text": "hello"}}]})
    assert events.status == 201 and events.json["events"][0]["deduplicated"] is False
    facts = _call(invoke, "POST", "/v1/facts", api_key, body={
        "project_id": project_id, "facts": [
            {"subject_id": "alice", "predicate": "city", "value": "Lyon",
             "source_event_ids": [events.json["events"][0]["id"]]},
            {"subject_id": "alice", "predicate": "city", "value": "Nantes"}]})
    assert facts.status == 201
    assert [f["outcome"] for f in facts.json["facts"]] == ["created", "conflict"]
    listed = _call(invoke, "GET", "/v1/facts", api_key, query={**scope, "limit": "1"})
    assert listed.status == 200 and len(listed.json["facts"]) == 1
    assert listed.json["next_cursor"]
    conflicts = _call(invoke, "GET", "/v1/conflicts", api_key, query=scope)
    assert conflicts.status == 200 and len(conflicts.json["conflicts"]) == 1
    conflict_id = conflicts.json["conflicts"][0]["id"]
    kept = facts.json["facts"][1]["id"]
    resolved = _call(invoke, "POST", "/v1/conflicts/{conflict_id}/resolve", api_key,
                     path_params={"conflict_id": conflict_id},
                     body={"project_id": project_id, "keep_fact_id": kept})
    assert resolved.status == 200 and resolved.json["kept_fact_id"] == kept
    status = _call(invoke, "POST", "/v1/facts/{fact_id}/status", api_key,
                   path_params={"fact_id": kept},
                   body={"project_id": project_id, "status": "disabled"})
    assert status.status == 200 and status.json["fact"]["status"] == "disabled"
    forgotten = _call(invoke, "POST", "/v1/forget", api_key,
                      body={"project_id": project_id, "subject_id": "alice", "mode": "delete"})
    assert forgotten.status == 200 and forgotten.json["counts"]["facts"] == 2
    assert forgotten.json["receipt_id"]


@pytest.mark.parametrize("route", WRITE_ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_the_key_is_checked_before_the_body_then_the_project(
    invoke: Invoke, api_key: str, project_id: str, route: Any
) -> None:
    event: dict[str, Any] = {"path_params": _path_params(route.path)}
    if route.method == "POST":
        event["body"] = "{not json"
    else:
        event["query"] = {"project_id": "x" * 500}
    assert _code(_call(invoke, route.method, route.path, None, **event)) == (401, "unauthorized")
    other = {"project_id": "someone-else", "subject_id": "alice"}
    if route.method == "POST":
        bodies = {
            "/v1/events": {"events": [{"subject_id": "a", "kind": "k"}]},
            "/v1/facts": {"facts": [{"subject_id": "a", "predicate": "p", "value": 1}]},
            "/v1/facts/{fact_id}/status": {"status": "active"},
            "/v1/conflicts/{conflict_id}/resolve": {"keep_fact_id": str(uuid.uuid4())},
            "/v1/forget": {"subject_id": "a", "mode": "delete"},
        }
        event = {**event, "body": {"project_id": "someone-else", **bodies[route.path]}}
    else:
        event = {**event, "query": {name: value for name, value in other.items()
                                    if name in query_parameters(route.method, route.path)}}
    assert _code(_call(invoke, route.method, route.path, api_key, **event)) == (
        403, "forbidden_scope")


def test_batch_routes_take_bodies_up_to_1_mib_the_others_256_kib(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    one = {"project_id": project_id,
           "events": [{"subject_id": "bob", "kind": "note", "payload": {"text": "short"}}]}
    # Whitespace makes a body large without giving the embedder any work.
    padded = json.dumps(one) + " " * (BODY_BYTES + 1024)
    assert _call(invoke, "POST", "/v1/events", api_key, body=padded).status == 201
    forget = json.dumps({"project_id": project_id, "subject_id": "bob", "mode": "disable"})
    refused = _call(invoke, "POST", "/v1/forget", api_key,
                    body=forget + " " * (BODY_BYTES + 1024))
    assert _code(refused) == (413, "payload_too_large")
    assert f"limit of this route is {BODY_BYTES}" in refused.json["error"]["message"]
    huge = _call(invoke, "POST", "/v1/facts", api_key,
                 body=json.dumps(one) + " " * BATCH_BODY_BYTES)
    assert _code(huge) == (413, "payload_too_large")
    assert f"limit of this route is {BATCH_BODY_BYTES}" in huge.json["error"]["message"]


def test_a_batch_over_the_token_budget_names_the_first_record_past_it(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    # ~512 model tokens each (the window): the budget holds 32 of them.
    long_text = "Bonjour, la facture de mai a été prélevée deux fois sur mon compte. " * 40
    per_record = 512
    first_past = MAX_EMBED_TOKENS // per_record
    body = {"project_id": project_id, "events": [
        {"subject_id": "carol", "kind": "m", "payload": {"text": f"{i} {long_text}"}}
        for i in range(first_past + 3)]}
    answer = _call(invoke, "POST", "/v1/events", api_key, body=body)
    assert _code(answer) == (413, "payload_too_large")
    assert answer.json["error"]["message"].startswith(f"events[{first_past}]: ")
    facts = {"project_id": project_id, "facts": [
        {"subject_id": "carol", "predicate": f"p{i}", "value": long_text[:1990]}
        for i in range(first_past + 3)]}
    assert _call(invoke, "POST", "/v1/facts", api_key, body=facts).json["error"][
        "message"].startswith("facts[")
    listed = _call(invoke, "GET", "/v1/facts", api_key,
                   query={"project_id": project_id, "subject_id": "carol"})
    assert listed.json["facts"] == []


@pytest.mark.parametrize(("path", "query", "expected"), [
    ("/v1/facts", {"limit": "500"}, (422, "validation_error")),
    ("/v1/facts", {"limit": "ten"}, (422, "validation_error")),
    ("/v1/facts", {"status": "forgotten"}, (422, "validation_error")),
    ("/v1/facts", {"cursor": "not-a-cursor"}, (422, "validation_error")),
    ("/v1/facts", {"predicate": "a\x01b"}, (422, "validation_error")),
    ("/v1/facts", {"subject_id": ""}, (422, "missing_scope")),
    ("/v1/conflicts", {"status": "closed"}, (422, "validation_error")),
    ("/v1/conflicts", {"limit": "0"}, (422, "validation_error")),
])
def test_listing_query_parameters_are_validated(
    invoke: Invoke, api_key: str, project_id: str, path: str, query: dict[str, str],
    expected: tuple[int, str],
) -> None:
    full = {"project_id": project_id, "subject_id": "alice", **query}
    assert _code(_call(invoke, "GET", path, api_key, query=full)) == expected


def test_path_ids_are_uuids_and_unknown_ones_are_404(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    for path, name, body, missing in [
        ("/v1/facts/{fact_id}/status", "fact_id", {"status": "disabled"}, "fact_not_found"),
        ("/v1/conflicts/{conflict_id}/resolve", "conflict_id",
         {"keep_fact_id": str(uuid.uuid4())}, "conflict_not_found"),
    ]:
        body = {"project_id": project_id, **body}
        bad = _call(invoke, "POST", path, api_key, path_params={name: "nope"}, body=body)
        assert _code(bad) == (422, "validation_error")
        assert f"{name} must be a UUID" in bad.json["error"]["message"]
        unknown = _call(invoke, "POST", path, api_key,
                        path_params={name: str(uuid.uuid4())}, body=body)
        assert _code(unknown) == (404, missing)


def test_writes_emit_one_count_per_outcome(
    invoke: Invoke, api_key: str, project_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def metrics() -> dict[str, Any]:
        lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()
                 if line.startswith('{"_aws"')]
        assert len(lines) == 1
        return lines[0]

    event = {"subject_id": "dan", "kind": "note", "payload": {"text": "x"},
             "idempotency_key": f"k-{uuid.uuid4()}"}
    capsys.readouterr()
    _call(invoke, "POST", "/v1/events", api_key, body={"project_id": project_id,
                                                        "events": [event]})
    first = metrics()
    assert (first["EventsStored"], first["EventsDeduplicated"]) == ([1.0], [0.0])
    assert first["endpoint"] == "POST /v1/events" and first["outcome"] == "ok"
    _call(invoke, "POST", "/v1/events", api_key, body={"project_id": project_id,
                                                        "events": [event]})
    assert metrics()["EventsDeduplicated"] == [1.0]
    _call(invoke, "POST", "/v1/facts", api_key, body={"project_id": project_id, "facts": [
        {"subject_id": "dan", "predicate": "pet", "value": "cat"},
        {"subject_id": "dan", "predicate": "pet", "value": "cat"}]})
    facts = metrics()
    assert (facts["FactsCreated"], facts["FactsReinforced"], facts["FactsConflicted"]) == (
        [1.0], [1.0], [0.0])
    _call(invoke, "POST", "/v1/facts", api_key, body={"project_id": project_id, "facts": [
        {"subject_id": "dan", "predicate": "pet", "value": "dog",
         "supersedes_id": str(uuid.uuid4())}]})
    failed = metrics()
    assert failed["outcome"] == "unknown_reference" and "FactsCreated" not in failed


#: Valid in their own offset, outside the accepted range once in UTC (year 0, year 10000), and
#: just outside it (before 1970).
POISONED_TIMES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00",
                  "1969-12-31T23:59:59.999999Z"]


@pytest.mark.parametrize("when", POISONED_TIMES)
@pytest.mark.parametrize(("path", "section", "record", "field"), [
    ("/v1/events", "events", {"kind": "note", "payload": {"text": "hi"}}, "occurred_at"),
    ("/v1/facts", "facts", {"predicate": "city", "value": "Lyon"}, "valid_from"),
    ("/v1/facts", "facts", {"predicate": "city", "value": "Lyon"}, "valid_to"),
])
def test_a_time_outside_the_accepted_range_is_422_naming_its_record_and_field(
    invoke: Invoke, api_key: str, project_id: str, owner_db: Database,
    path: str, section: str, record: dict[str, Any], field: str, when: str,
) -> None:
    fine = {"subject_id": "alice", **record}
    body = {"project_id": project_id,
            section: [fine, fine, {**fine, field: when}]}
    answer = _call(invoke, "POST", path, api_key, body=body)
    assert _code(answer) == (422, "validation_error")
    message = answer.json["error"]["message"]
    assert message.startswith(f"{section}[2]: field '{field}'")
    assert "1970-01-01T00:00:00Z" in message and "9999-12-31T23:59:59.999999Z" in message
    with owner_db.transaction() as conn:
        row = conn.execute(f"SELECT count(*) FROM {section} WHERE project_id = %s",
                           (project_id,)).fetchone()
    assert row == (0,)


def test_both_spellings_of_a_subject_reach_its_one_memory(
    invoke: Invoke, api_key: str, project_id: str
) -> None:
    """A subject written in NFC is listed and erased in NFD (the spelling a macOS keyboard
    or a decomposing client sends): one name, one identity, no receipt of zero counts."""
    nfc, nfd = "amélie", unicodedata.normalize("NFD", "amélie")
    written = _call(invoke, "POST", "/v1/facts", api_key, body={"project_id": project_id, "facts": [
        {"subject_id": nfc, "predicate": "préférence", "value": "thé"}]})
    assert written.status == 201
    listed = _call(invoke, "GET", "/v1/facts", api_key, query={
        "project_id": project_id, "subject_id": nfd,
        "predicate": unicodedata.normalize("NFD", "préférence")})
    assert [f["subject_id"] for f in listed.json["facts"]] == [nfc]
    erased = _call(invoke, "POST", "/v1/forget", api_key, body={
        "project_id": project_id, "subject_id": nfd, "mode": "delete"})
    assert erased.status == 200 and erased.json["counts"]["facts"] == 1
    after = _call(invoke, "GET", "/v1/facts", api_key, query={
        "project_id": project_id, "subject_id": nfc})
    assert after.json["facts"] == []


@pytest.mark.parametrize("predicate", ["ci\u200bty", "\u0441ity", "city\u202e"])
def test_a_look_alike_of_a_predicate_is_refused(
    invoke: Invoke, api_key: str, project_id: str, predicate: str
) -> None:
    answer = _call(invoke, "POST", "/v1/facts", api_key, body={"project_id": project_id, "facts": [
        {"subject_id": "alice", "predicate": predicate, "value": "Lyon"}]})
    assert _code(answer) == (422, "validation_error")
    assert "facts[0]: field 'predicate'" in answer.json["error"]["message"]


@pytest.mark.parametrize("when", [253402300799, 253402300799000, 1.7e9, "253402300799", True,
                                  "2026-12-01T09:30:00", "2026-12-01"])
def test_a_time_that_is_not_an_rfc_3339_string_is_refused(
    invoke: Invoke, api_key: str, project_id: str, when: object
) -> None:
    """A number is not read as seconds or milliseconds by its size (9999-12-31 in seconds
    was once stored as 1978), nor a time without its offset guessed: every time field."""
    bodies = [
        ("/v1/events", {"events": [{"subject_id": "alice", "kind": "note", "occurred_at": when}]},
         "events[0]: field 'occurred_at'"),
        ("/v1/events", {"subject_id": "alice", "messages": [
            {"role": "user", "content": "hi", "occurred_at": when}]},
         "messages[0]: field 'occurred_at'"),
        ("/v1/facts", {"facts": [{"subject_id": "alice", "predicate": "city", "value": "Lyon",
                                  "valid_from": when}]}, "facts[0]: field 'valid_from'"),
    ]
    for path, body, named in bodies:
        answer = _call(invoke, "POST", path, api_key, body={"project_id": project_id, **body})
        assert _code(answer) == (422, "validation_error"), (path, answer.json)
        assert named in answer.json["error"]["message"]
        assert "RFC 3339" in answer.json["error"]["message"]
    calls = _call(invoke, "GET", "/v1/calls", api_key, query={
        "project_id": project_id, "since": str(when)})
    assert _code(calls) == (422, "validation_error")


def test_message_ids_are_keyed_per_project(
    invoke: Invoke, api_key: str, project_id: str, owner_db: Database
) -> None:
    """The same message (subject, message_id; or subject, speaker, content, moment) has one
    id in its project, whatever the retry, and another in another project: an id tells
    nothing about the message to whoever lacks the project's key."""
    other = f"{project_id}-b"
    other_key = create_key(owner_db, org_id="org-test", project_id=other, label="tests",
                           create_project=True).key
    messages = [{"role": "user", "content": "hello", "message_id": "m-1"},
                {"role": "user", "content": "again", "occurred_at": "2026-12-01T09:30:00Z"}]

    def ids(key: str, project: str) -> list[str]:
        answer = _call(invoke, "POST", "/v1/events", key, body={
            "project_id": project, "subject_id": "alice", "messages": messages})
        assert answer.status == 201, answer.json
        return [e["id"] for e in answer.json["events"]]

    first = ids(api_key, project_id)
    assert ids(api_key, project_id) == first  # a retry: the same ids
    assert not set(ids(other_key, other)) & set(first)
