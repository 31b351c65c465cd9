"""``GET /v1/inspect/{trace_id}`` and ``GET /v1/stats/overview`` through their handlers, and
the scheduled aggregation handler."""

import uuid
from collections.abc import Callable

import pytest

import functions.stats.app as stats_app
from haki.db import Database, Role
from haki.db.migrate import apply_migrations
from haki.models import FactRecord
from haki_local.admin import create_key
from tests.handlers.conftest import FakeLambdaContext, Invoke

INSPECT = "/v1/inspect/{trace_id}"
OVERVIEW = "/v1/stats/overview"


def _context(invoke: Invoke, key: str, project_id: str, subject_id: str = "alice") -> str:
    answer = invoke("context", "POST", "/v1/context", key=key, body={
        "project_id": project_id, "subject_id": subject_id, "query": "language?",
        "purpose": "t"})
    assert answer.status == 200
    return str(answer.json["trace_id"])


def test_inspect_of_another_subject_or_unknown_id_is_the_same_404(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    trace_id = _context(invoke, api_key, project_id)
    answers = [
        invoke("inspect", "GET", INSPECT, key=api_key, path_params={"trace_id": tid},
               query={"project_id": project_id, "subject_id": subject})
        for tid, subject in ((trace_id, "bob"), (str(uuid.uuid4()), "alice"))
    ]
    assert [a.status for a in answers] == [404, 404]
    assert answers[0].json == answers[1].json
    assert answers[0].json["error"]["code"] == "trace_not_found"


@pytest.mark.parametrize("trace_id", [
    "not-a-uuid",
    # UUIDv7 whose 48-bit time lies past year 9999 (the latest such id, then the first one).
    "ffffffff-ffff-7fff-bfff-ffffffffffff",
    f"{(253402300800000 << 80 | 0x7 << 76 | 0b10 << 62):032x}",
    # Dated in the last hour of 9999: the id's day plus its slack passes the last datetime.
    f"{((253402300800000 - 1) << 80 | 0x7 << 76 | 0b10 << 62):032x}",
])
def test_inspect_of_an_id_no_call_can_have_is_the_unknown_ids_404(
    invoke: Invoke, api_key: str, project_id: str, trace_id: str
) -> None:
    scope = {"project_id": project_id, "subject_id": "alice"}
    unknown = invoke("inspect", "GET", INSPECT, key=api_key,
                     path_params={"trace_id": str(uuid.uuid4())}, query=scope)
    answer = invoke("inspect", "GET", INSPECT, key=api_key, path_params={"trace_id": trace_id},
                    query=scope)
    assert answer.status == unknown.status == 404
    assert answer.json == unknown.json


def test_inspect_needs_neither_project_nor_subject_but_a_wrong_subject_is_404(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    trace_id = _context(invoke, api_key, project_id)
    for query in ({}, {"project_id": project_id}, {"subject_id": "alice"}):
        found = invoke("inspect", "GET", INSPECT, key=api_key,
                       path_params={"trace_id": trace_id}, query=query)
        assert found.status == 200 and found.json["subject_id"] == "alice", query
    detail = invoke("inspect", "GET", "/v1/calls/{trace_id}", key=api_key,
                    path_params={"trace_id": trace_id}, query={})
    assert detail.status == 200 and detail.json["texts"]
    wrong = invoke("inspect", "GET", INSPECT, key=api_key, path_params={"trace_id": trace_id},
                   query={"subject_id": "bob"})
    assert (wrong.status, wrong.json["error"]["code"]) == (404, "trace_not_found")


def test_inspect_of_another_projects_trace_is_404_even_with_that_projects_own_scope(
    invoke: Invoke, owner_db: Database, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    other_project = project_id + "-b"
    other_key = create_key(owner_db, org_id="o", project_id=other_project, create_project=True).key
    trace_id = _context(invoke, api_key, project_id)
    as_other = invoke("inspect", "GET", INSPECT, key=other_key, path_params={"trace_id": trace_id},
                      query={"project_id": other_project, "subject_id": "alice"})
    assert as_other.status == 404 and as_other.json["error"]["code"] == "trace_not_found"
    forbidden = invoke("inspect", "GET", INSPECT, key=other_key,
                       path_params={"trace_id": trace_id},
                       query={"project_id": project_id, "subject_id": "alice"})
    assert forbidden.status == 403 and forbidden.json["error"]["code"] == "forbidden_scope"


@pytest.mark.parametrize(("trace_id", "query", "status", "code"), [
    ("UUID", {"project_id": "", "subject_id": "alice"}, 422, "missing_scope"),
    ("UUID", {"project_id": "P", "subject_id": ""}, 422, "missing_scope"),
])
def test_inspect_parameter_errors(
    invoke: Invoke, api_key: str, project_id: str,
    trace_id: str, query: dict[str, str], status: int, code: str,
) -> None:
    params = {k: (project_id if v == "P" else v) for k, v in query.items()}
    path = str(uuid.uuid4()) if trace_id == "UUID" else trace_id
    answer = invoke("inspect", "GET", INSPECT, key=api_key, path_params={"trace_id": path},
                    query=params)
    assert (answer.status, answer.json["error"]["code"]) == (status, code)


def test_overview_counts_calls_and_memory_of_the_keys_project(
    invoke: Invoke, api_key: str, project_id: str, seeded: list[FactRecord]
) -> None:
    empty = invoke("stats", "GET", OVERVIEW, key=api_key, query={"project_id": project_id})
    assert empty.status == 200 and empty.json["recall_count"] == 0
    assert empty.json["recall_p50_ms"] is None and empty.json["injection_rate"] is None
    _context(invoke, api_key, project_id)
    after = invoke("stats", "GET", OVERVIEW, key=api_key,
                   query={"project_id": project_id, "subject_id": "alice"})
    assert after.json["recall_count"] == 1 and after.json["injection_rate"] == 1.0
    assert after.json["hit_rate"] == 1.0 and after.json["recall_p50_ms"] > 0
    assert after.json["active_facts"] == len(seeded)
    assert len(after.json["events_this_week"]) == 7


def test_overview_scope_errors(invoke: Invoke, api_key: str, project_id: str) -> None:
    unnamed = invoke("stats", "GET", OVERVIEW, key=api_key, query=None)  # the key's project
    named = invoke("stats", "GET", OVERVIEW, key=api_key, query={"project_id": project_id})
    assert unnamed.status == 200 and unnamed.json == named.json
    other = invoke("stats", "GET", OVERVIEW, key=api_key, query={"project_id": "someone-else"})
    assert (other.status, other.json["error"]["code"]) == (403, "forbidden_scope")
    anonymous = invoke("stats", "GET", OVERVIEW, key=None, query={"project_id": project_id})
    assert (anonymous.status, anonymous.json["error"]["code"]) == (401, "unauthorized")


def test_aggregate_handler_rolls_up_and_reports(
    fresh_database: Callable[[], dict[Role, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER])
    monkeypatch.setattr(stats_app, "stats_db", Database(urls[Role.STATS]))
    first = stats_app.aggregate_handler({"source": "aws.events"}, FakeLambdaContext())
    second = stats_app.aggregate_handler({"source": "aws.events"}, FakeLambdaContext())
    assert first["rollup_rows"] == 0 and first["calls"] == 0
    assert second["rolled_until"] == first["rolled_until"]
