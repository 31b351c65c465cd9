"""The routes the console reads through: ``GET /v1/calls`` (search, filters, keyset paging),
``GET /v1/calls/{trace_id}``, ``GET /v1/stats/series`` and ``GET /v1/events``, through their
handlers, each confined to the key's project."""

from datetime import UTC, datetime, timedelta

from haki.db import Database
from haki.models import FactRecord
from haki_local.admin import create_key
from tests.handlers.conftest import Invoke

CALLS = "/v1/calls"
CALL = "/v1/calls/{trace_id}"
SERIES = "/v1/stats/series"
EVENTS = "/v1/events"


def _context(invoke: Invoke, key: str, project_id: str, subject_id: str, query: str,
             purpose: str = "support") -> str:
    answer = invoke("context", "POST", "/v1/context", key=key, body={
        "project_id": project_id, "subject_id": subject_id, "query": query, "purpose": purpose})
    assert answer.status == 200
    return str(answer.json["trace_id"])


def _calls(invoke: Invoke, key: str, project_id: str, **query: str) -> list[str]:
    answer = invoke("inspect", "GET", CALLS, key=key, query={"project_id": project_id, **query})
    assert answer.status == 200, answer.json
    return [call["trace_id"] for call in answer.json["calls"]]


def test_calls_are_listed_newest_first_searched_and_filtered(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    language = _context(invoke, api_key, project_id, "alice", "Which LANGUAGE does she speak?")
    city = _context(invoke, api_key, project_id, "alice", "Where does she live?", "billing")
    nobody = _context(invoke, api_key, project_id, "bob-the-builder", "What language?")
    assert _calls(invoke, api_key, project_id) == [nobody, city, language]
    assert _calls(invoke, api_key, project_id, q="language") == [nobody, language]
    assert _calls(invoke, api_key, project_id, q="BUILDER") == [nobody]
    assert _calls(invoke, api_key, project_id, subject_id="alice") == [city, language]
    assert _calls(invoke, api_key, project_id, purpose="billing") == [city]
    assert _calls(invoke, api_key, project_id, empty_reason="no_memory") == [nobody]
    assert _calls(invoke, api_key, project_id, empty_reason="served") == [city, language]
    assert _calls(invoke, api_key, project_id, status="degraded") == []
    assert _calls(invoke, api_key, project_id, q="language", subject_id="alice") == [language]
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert _calls(invoke, api_key, project_id, since=future) == []
    assert _calls(invoke, api_key, project_id, until=future) == [nobody, city, language]

    listed = invoke("inspect", "GET", CALLS, key=api_key,
                    query={"project_id": project_id, "subject_id": "bob-the-builder"})
    row = listed.json["calls"][0]
    assert row["query"] == "What language?" and row["facts_served"] == 0
    assert row["empty_reason"] == "no_memory" and row["warnings"] == []


def test_a_warning_filter_keeps_the_calls_whose_packet_carries_it(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    contradiction = invoke("ingest", "POST", "/v1/facts", key=api_key, body={
        "project_id": project_id, "facts": [{"subject_id": "alice",
                                             "predicate": "preferred_language",
                                             "value": "German"}]})
    assert contradiction.json["facts"][0]["outcome"] == "conflict"
    warned = _context(invoke, api_key, project_id, "alice", "Which language does she speak?")
    _context(invoke, api_key, project_id, "carol", "Which language does she speak?")
    assert _calls(invoke, api_key, project_id, warning="open_conflict") == [warned]


def test_paging_serves_every_call_once_in_order(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    made = [_context(invoke, api_key, project_id, "alice", f"question {i}") for i in range(5)]
    seen: list[str] = []
    cursor: str | None = None
    while True:
        query = {"project_id": project_id, "limit": "2", **({"cursor": cursor} if cursor else {})}
        page = invoke("inspect", "GET", CALLS, key=api_key, query=query)
        seen += [call["trace_id"] for call in page.json["calls"]]
        cursor = page.json["next_cursor"]
        if cursor is None:
            break
    assert seen == made[::-1]
    bad = invoke("inspect", "GET", CALLS, key=api_key,
                 query={"project_id": project_id, "cursor": "not-ours"})
    assert (bad.status, bad.json["error"]["code"]) == (422, "validation_error")


def test_listing_parameter_errors_are_422(invoke: Invoke, api_key: str, project_id: str) -> None:
    for query in ({"since": "2026-12-01T00:00:00"}, {"status": "fine"},
                  {"since": "2026-12-02T00:00:00Z", "until": "2026-12-01T00:00:00Z"},
                  {"limit": "201"}, {"q": "x" * 201}):
        answer = invoke("inspect", "GET", CALLS, key=api_key,
                        query={"project_id": project_id, **query})
        assert (answer.status, answer.json["error"]["code"]) == (422, "validation_error"), query
    empty = invoke("inspect", "GET", CALLS, key=api_key, query={"project_id": ""})
    assert (empty.status, empty.json["error"]["code"]) == (422, "missing_scope")


def test_call_detail_is_the_trace_with_its_texts_and_block(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    trace_id = _context(invoke, api_key, project_id, "alice", "Which language does she speak?")
    scope = {"project_id": project_id, "subject_id": "alice"}
    detail = invoke("inspect", "GET", CALL, key=api_key, path_params={"trace_id": trace_id},
                    query=scope)
    inspect = invoke("inspect", "GET", "/v1/inspect/{trace_id}", key=api_key,
                     path_params={"trace_id": trace_id}, query=scope)
    assert detail.status == 200 and detail.json["trace"] == inspect.json
    named = {d["fact_id"] or d["event_id"] for d in inspect.json["decisions"]}
    assert set(detail.json["texts"]) == named
    assert "preferred language: French" in detail.json["texts"].values()
    assert detail.json["rendered"].startswith("<haki_memory>")
    assert detail.json["ranking"]["rrf_k"] > 0
    other_subject = invoke("inspect", "GET", CALL, key=api_key,
                           path_params={"trace_id": trace_id},
                           query={"project_id": project_id, "subject_id": "bob"})
    assert (other_subject.status, other_subject.json["error"]["code"]) == (404, "trace_not_found")


def test_series_buckets_the_calls_of_the_window(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    for query in ("Which language?", "Where does she live?"):
        _context(invoke, api_key, project_id, "alice", query)
    _context(invoke, api_key, project_id, "nobody", "anything?")
    series = invoke("stats", "GET", SERIES, key=api_key,
                    query={"project_id": project_id, "granularity": "day", "days": "2"})
    assert series.status == 200
    [point] = series.json["points"]
    assert point["calls"] == 3 and point["calls_with_facts"] == 2
    assert abs(point["injection_rate"] - 2 / 3) < 1e-9
    assert point["latency_p95_ms"] >= point["latency_p50_ms"] > 0 and point["tokens_served"] > 0
    subject = invoke("stats", "GET", SERIES, key=api_key,
                     query={"project_id": project_id, "subject_id": "nobody"})
    assert [p["calls_with_facts"] for p in subject.json["points"]] == [0]
    assert sum(p["calls"] for p in subject.json["points"]) == 1
    too_long = invoke("stats", "GET", SERIES, key=api_key,
                      query={"project_id": project_id, "days": "91"})
    assert too_long.status == 422


def test_events_are_listed_newest_first(invoke: Invoke, api_key: str, project_id: str) -> None:
    written = invoke("ingest", "POST", "/v1/events", key=api_key, body={
        "project_id": project_id, "events": [
            {"subject_id": "alice", "kind": "message", "payload": {"text": f"turn {i}"},
             "occurred_at": f"2026-11-0{i + 1}T10:00:00Z"} for i in range(3)]})
    assert written.status == 201
    first = invoke("memory", "GET", EVENTS, key=api_key,
                   query={"project_id": project_id, "subject_id": "alice", "limit": "2"})
    assert [e["payload"]["text"] for e in first.json["events"]] == ["turn 2", "turn 1"]
    rest = invoke("memory", "GET", EVENTS, key=api_key, query={
        "project_id": project_id, "subject_id": "alice", "cursor": first.json["next_cursor"]})
    assert [e["payload"]["text"] for e in rest.json["events"]] == ["turn 0"]
    assert rest.json["next_cursor"] is None


def test_another_projects_key_sees_none_of_it_and_is_refused_this_project(
    invoke: Invoke, owner_db: Database, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    trace_id = _context(invoke, api_key, project_id, "alice", "Which language?")
    other_project = project_id + "-b"
    other_key = create_key(owner_db, org_id="o", project_id=other_project,
                           create_project=True).key
    own = {"project_id": other_project, "subject_id": "alice"}
    assert _calls(invoke, other_key, other_project) == []
    assert _calls(invoke, other_key, other_project, q="language") == []
    as_other = invoke("inspect", "GET", CALL, key=other_key, path_params={"trace_id": trace_id},
                      query=own)
    assert (as_other.status, as_other.json["error"]["code"]) == (404, "trace_not_found")
    series = invoke("stats", "GET", SERIES, key=other_key, query={"project_id": other_project})
    assert series.status == 200 and series.json["points"] == []
    events = invoke("memory", "GET", EVENTS, key=other_key, query=own)
    assert events.status == 200 and events.json["events"] == []

    theirs = {"project_id": project_id, "subject_id": "alice"}
    for function, resource, path in (("inspect", CALLS, None), ("inspect", CALL, trace_id),
                                     ("stats", SERIES, None), ("memory", EVENTS, None)):
        params = {"path_params": {"trace_id": path}} if path else {}
        refused = invoke(function, "GET", resource, key=other_key, query=theirs, **params)
        assert (refused.status, refused.json["error"]["code"]) == (403, "forbidden_scope")
        anonymous = invoke(function, "GET", resource, key=None, query=theirs, **params)
        assert (anonymous.status, anonymous.json["error"]["code"]) == (401, "unauthorized")
