"""Tenant isolation over HTTP: with two projects and two keys, nothing of project B is
reachable with A's key through any endpoint or parameter (body, query string, path): every
route of the route table refuses B's project, B's ids are unknown under A's project, and B's
memory is untouched by A's attempts."""

from pathlib import Path
from urllib.parse import quote

import pytest

from haki_aws.routes import ROUTES
from haki_local.demo import DEMO_PROJECT, demo_document
from tests.e2e.conftest import Client, Server, create_key

OTHER = "atelier-voyage"
OTHER_SUBJECT = "client-sophie"


@pytest.fixture(scope="module")
def other_key(data_dir: Path, server: Server) -> str:
    return create_key(data_dir, "atelier", OTHER, "--create-project")[0]


@pytest.fixture(scope="module")
def other_trace(client: Client, other_key: str) -> str:
    reply = client.request("POST", "/v1/context", key=other_key, body={
        "project_id": OTHER, "subject_id": OTHER_SUBJECT, "query": "allergies ?",
        "purpose": "booking"})
    assert reply.status == 200 and reply.json["packet"]["facts"]
    return str(reply.json["trace_id"])


def _other_ids() -> set[str]:
    doc = demo_document()
    return {str(r.id) for r in [*doc.facts, *doc.events] if r.project_id == OTHER}


def test_body_naming_b_is_forbidden(client: Client, server: Server) -> None:
    reply = client.request("POST", "/v1/context", key=server.key, body={
        "project_id": OTHER, "subject_id": OTHER_SUBJECT, "query": "allergies ?"})
    assert reply.status == 403 and reply.json["error"]["code"] == "forbidden_scope"
    assert OTHER not in reply.json["error"]["message"]


def test_bs_subject_under_as_project_finds_nothing_of_b(client: Client, server: Server) -> None:
    reply = client.request("POST", "/v1/context", key=server.key, body={
        "project_id": DEMO_PROJECT, "subject_id": OTHER_SUBJECT,
        "query": "arachides allergie Kyoto", "purpose": "probe"})
    assert reply.status == 200
    packet = reply.json["packet"]
    assert packet["facts"] == [] and packet["episodes"] == []
    assert packet["empty_reason"] == "no_memory"
    inspected = client.request(
        "GET", f"/v1/inspect/{reply.json['trace_id']}?project_id={DEMO_PROJECT}"
        f"&subject_id={OTHER_SUBJECT}", key=server.key)
    assert inspected.json["decisions"] == []


def test_bs_trace_is_not_reachable_with_as_key(
    client: Client, server: Server, other_trace: str, other_key: str
) -> None:
    for project in (DEMO_PROJECT, OTHER):
        reply = client.request(
            "GET", f"/v1/inspect/{other_trace}?project_id={project}&subject_id={OTHER_SUBJECT}",
            key=server.key)
        expected = (404, "trace_not_found") if project == DEMO_PROJECT else (403, "forbidden_scope")
        assert (reply.status, reply.json["error"]["code"]) == expected
    own = client.request(
        "GET", f"/v1/inspect/{other_trace}?project_id={OTHER}&subject_id={OTHER_SUBJECT}",
        key=other_key)
    assert own.status == 200  # it exists: A is refused, not missing data


@pytest.mark.parametrize("query", [
    f"project_id={OTHER}",
    f"project_id={DEMO_PROJECT}&project_id={OTHER}",
    f"project_id={quote(OTHER)}&subject_id={OTHER_SUBJECT}",
    f"project_id={OTHER}%00",
    f"project_id=%20{OTHER}",
])
def test_stats_of_b_are_forbidden_with_as_key(
    client: Client, server: Server, query: str
) -> None:
    reply = client.request("GET", f"/v1/stats/overview?{query}", key=server.key)
    assert reply.status in (403, 422)
    assert reply.json["error"]["code"] in ("forbidden_scope", "validation_error")


def test_as_stats_count_nothing_of_b(
    client: Client, server: Server, other_key: str, other_trace: str
) -> None:
    mine = client.request("GET", f"/v1/stats/overview?project_id={DEMO_PROJECT}",
                          key=server.key).json
    theirs = client.request("GET", f"/v1/stats/overview?project_id={OTHER}", key=other_key).json
    doc = demo_document()
    assert theirs["recall_count"] >= 1
    assert theirs["active_facts"] <= sum(f.project_id == OTHER for f in doc.facts)
    # A's count is exactly what A's own subjects hold (other tests of the session write to A).
    subjects, cursor = [], None
    while True:
        page = client.request("GET", f"/v1/subjects?project_id={DEMO_PROJECT}&limit=100"
                              + (f"&cursor={cursor}" if cursor else ""), key=server.key).json
        subjects += page["subjects"]
        if not (cursor := page["next_cursor"]):
            break
    assert mine["active_facts"] == sum(s["facts"] for s in subjects)
    assert not {s["subject_id"] for s in subjects} & {
        f.subject_id for f in doc.facts if f.project_id == OTHER} - {
        f.subject_id for f in doc.facts if f.project_id == DEMO_PROJECT}


def test_no_answer_to_a_carries_an_id_of_b(client: Client, server: Server) -> None:
    other_ids = _other_ids()
    for query in ("allergie arachides Kyoto hublot", "Anna Lisbon Porto", "budget voyage"):
        reply = client.request("POST", "/v1/context", key=server.key, body={
            "project_id": DEMO_PROJECT, "subject_id": "user-john", "query": query,
            "purpose": "probe"})
        assert reply.status == 200
        trace = client.request(
            "GET", f"/v1/inspect/{reply.json['trace_id']}?project_id={DEMO_PROJECT}"
            "&subject_id=user-john", key=server.key)
        seen = {d["fact_id"] or d["event_id"] for d in trace.json["decisions"]}
        assert not seen & other_ids


def test_the_consoles_reads_show_a_nothing_of_b(
    client: Client, server: Server, other_key: str, other_trace: str
) -> None:
    own = f"project_id={DEMO_PROJECT}"
    # A's own project, searched for B's subject and query text: only A's own calls (an earlier
    # test asked A's project about a subject of the same name), never B's.
    for query in (f"q={OTHER_SUBJECT}", "q=allergies", f"subject_id={OTHER_SUBJECT}"):
        reply = client.request("GET", f"/v1/calls?{own}&{query}", key=server.key)
        assert reply.status == 200, query
        assert other_trace not in {c["trace_id"] for c in reply.json["calls"]}, query
        assert "allergies ?" not in {c["query"] for c in reply.json["calls"]}, query
    listed = client.request("GET", f"/v1/calls?{own}&limit=200", key=server.key)
    assert other_trace not in {c["trace_id"] for c in listed.json["calls"]}
    detail = client.request(
        "GET", f"/v1/calls/{other_trace}?{own}&subject_id={OTHER_SUBJECT}", key=server.key)
    assert (detail.status, detail.json["error"]["code"]) == (404, "trace_not_found")
    events = client.request("GET", f"/v1/events?{own}&subject_id={OTHER_SUBJECT}",
                            key=server.key)
    assert events.status == 200
    assert not {e["id"] for e in events.json["events"]} & _other_ids()
    # B's project named with A's key: refused, whatever the route.
    theirs = f"project_id={OTHER}&subject_id={OTHER_SUBJECT}"
    for path in (f"/v1/calls?{theirs}", f"/v1/calls/{other_trace}?{theirs}",
                 f"/v1/stats/series?{theirs}", f"/v1/events?{theirs}"):
        reply = client.request("GET", path, key=server.key)
        assert (reply.status, reply.json["error"]["code"]) == (403, "forbidden_scope"), path


@pytest.fixture(scope="module")
def other_memory(client: Client, other_key: str) -> dict[str, str]:
    """Ids of B's memory, read with B's key: an active fact, an open conflict set and one of
    its facts, an event."""
    scope = f"project_id={OTHER}&subject_id={OTHER_SUBJECT}"
    facts = client.request("GET", f"/v1/facts?{scope}", key=other_key).json["facts"]
    conflicts = client.request("GET", f"/v1/conflicts?{scope}", key=other_key).json["conflicts"]
    events = client.request("GET", f"/v1/events?{scope}", key=other_key).json["events"]
    assert facts and conflicts and events
    return {"fact": facts[0]["id"], "conflict": conflicts[0]["id"],
            "conflict_fact": conflicts[0]["facts"][0]["id"], "event": events[0]["id"]}


def _probes(memory: dict[str, str], trace: str) -> dict[tuple[str, str], tuple[str, object]]:
    """For every route: a request that names B's project (path with B's ids, body)."""
    theirs = f"project_id={OTHER}&subject_id={OTHER_SUBJECT}"
    scope = {"project_id": OTHER}
    return {
        ("POST", "/v1/context"): ("/v1/context", {
            **scope, "subject_id": OTHER_SUBJECT, "query": "allergies ?"}),
        ("GET", "/v1/inspect/{trace_id}"): (f"/v1/inspect/{trace}?{theirs}", None),
        ("GET", "/v1/calls"): (f"/v1/calls?{theirs}", None),
        ("GET", "/v1/calls/{trace_id}"): (f"/v1/calls/{trace}?{theirs}", None),
        ("GET", "/v1/stats/overview"): (f"/v1/stats/overview?{theirs}", None),
        ("GET", "/v1/stats/series"): (f"/v1/stats/series?{theirs}", None),
        ("POST", "/v1/events"): ("/v1/events", {**scope, "events": [
            {"subject_id": OTHER_SUBJECT, "kind": "note", "payload": {"text": "planted"}}]}),
        ("POST", "/v1/facts"): ("/v1/facts", {**scope, "facts": [
            {"subject_id": OTHER_SUBJECT, "predicate": "allergy", "value": "none",
             "supersedes_id": memory["fact"]}]}),
        ("GET", "/v1/facts"): (f"/v1/facts?{theirs}", None),
        ("POST", "/v1/facts/{fact_id}/status"): (
            f"/v1/facts/{memory['fact']}/status", {**scope, "status": "disabled"}),
        ("GET", "/v1/conflicts"): (f"/v1/conflicts?{theirs}", None),
        ("GET", "/v1/events"): (f"/v1/events?{theirs}", None),
        ("POST", "/v1/conflicts/{conflict_id}/resolve"): (
            f"/v1/conflicts/{memory['conflict']}/resolve",
            {**scope, "keep_fact_id": memory["conflict_fact"]}),
        ("POST", "/v1/forget"): ("/v1/forget", {
            **scope, "subject_id": OTHER_SUBJECT, "mode": "delete"}),
        ("GET", "/v1/subjects"): (f"/v1/subjects?project_id={OTHER}", None),
        ("POST", "/v1/calls/{trace_id}/feedback"): (f"/v1/calls/{trace}/feedback", {
            **scope, "subject_id": OTHER_SUBJECT, "verdict": "wrong"}),
        ("GET", "/v1/eval-set"): (f"/v1/eval-set?project_id={OTHER}", None),
    }


def test_every_route_refuses_bs_project_with_as_key(
    client: Client, server: Server, other_memory: dict[str, str], other_trace: str
) -> None:
    probes = _probes(other_memory, other_trace)
    # A new keyed route needs its probe (the health checks name no project: they have none).
    assert set(probes) == {(r.method, r.path) for r in ROUTES if not r.public}
    for (method, _), (path, body) in probes.items():
        reply = client.request(method, path, key=server.key, body=body)
        assert (reply.status, reply.json["error"]["code"]) == (403, "forbidden_scope"), path
        assert OTHER not in reply.json["error"]["message"] and OTHER_SUBJECT not in str(
            reply.json)


def test_bs_ids_under_as_project_are_unknown_and_b_is_untouched(
    client: Client, server: Server, other_key: str, other_memory: dict[str, str]
) -> None:
    mine = {"project_id": DEMO_PROJECT}
    fact, conflict = other_memory["fact"], other_memory["conflict"]
    for path, body, expected in [
        (f"/v1/facts/{fact}/status", {**mine, "status": "disabled"}, (404, "fact_not_found")),
        (f"/v1/conflicts/{conflict}/resolve", {**mine, "keep_fact_id": fact},
         (404, "conflict_not_found")),
        ("/v1/forget", {**mine, "fact_id": fact, "mode": "delete"}, (404, "fact_not_found")),
        ("/v1/forget", {**mine, "fact_id": fact, "mode": "disable"}, (404, "fact_not_found")),
        ("/v1/facts", {**mine, "facts": [{"subject_id": OTHER_SUBJECT, "predicate": "p",
                                          "value": "v", "source_event_ids": [
                                              other_memory["event"]]}]},
         (422, "unknown_reference")),
        ("/v1/facts", {**mine, "facts": [{"subject_id": OTHER_SUBJECT, "predicate": "allergy",
                                          "value": "v", "supersedes_id": fact}]},
         (422, "unknown_reference")),
    ]:
        reply = client.request("POST", path, key=server.key, body=body)
        assert (reply.status, reply.json["error"]["code"]) == expected, (path, reply.json)
    own = f"project_id={DEMO_PROJECT}&subject_id={OTHER_SUBJECT}"
    for path, field in [(f"/v1/facts?{own}", "facts"), (f"/v1/conflicts?{own}", "conflicts")]:
        listed = client.request("GET", path, key=server.key).json[field]
        assert not {item["id"] for item in listed} & {fact, conflict}, path
    theirs = f"project_id={OTHER}&subject_id={OTHER_SUBJECT}"
    assert fact in {f["id"] for f in client.request(
        "GET", f"/v1/facts?{theirs}", key=other_key).json["facts"]}
    assert conflict in {c["id"] for c in client.request(
        "GET", f"/v1/conflicts?{theirs}", key=other_key).json["conflicts"]}


def test_feedback_and_the_eval_set_reach_nothing_of_b(
    client: Client, server: Server, other_key: str, other_trace: str
) -> None:
    """The feedback route and the eval-set export, with A's key: B's call is not found (the
    same 404 as an unknown one) under A's project and refused under B's; B's ids named in A's
    own feedback are unknown; A's eval set holds nothing of B's, B's is refused."""
    b_facts = [str(r.id) for r in demo_document().facts if r.project_id == OTHER]
    for project in (DEMO_PROJECT, OTHER):
        reply = client.request("POST", f"/v1/calls/{other_trace}/feedback", key=server.key,
                               body={"project_id": project, "subject_id": OTHER_SUBJECT,
                                     "used": b_facts[:1], "verdict": "wrong"})
        expected = (404, "trace_not_found") if project == DEMO_PROJECT else (403, "forbidden_scope")
        assert (reply.status, reply.json["error"]["code"]) == expected
    # B's call holds no feedback from A's attempts.
    theirs = client.request(
        "GET", f"/v1/inspect/{other_trace}?project_id={OTHER}&subject_id={OTHER_SUBJECT}",
        key=other_key)
    assert theirs.status == 200 and theirs.json["feedback"] == []

    # A's own call, its feedback naming B's facts: unknown ids, named back, nothing stored.
    mine = client.request("POST", "/v1/context", key=server.key, body={
        "project_id": DEMO_PROJECT, "subject_id": OTHER_SUBJECT, "query": "allergies ?",
        "purpose": "probe"})
    refused = client.request("POST", f"/v1/calls/{mine.json['trace_id']}/feedback",
                             key=server.key, body={"project_id": DEMO_PROJECT,
                                                   "subject_id": OTHER_SUBJECT,
                                                   "missing": b_facts[:2]})
    assert (refused.status, refused.json["error"]["code"]) == (422, "invalid_feedback_ids")
    assert all(i in refused.json["error"]["message"] for i in b_facts[:2])
    # B gives feedback on its own call; A's export holds none of B's calls, memory or ids.
    given = client.request("POST", f"/v1/calls/{other_trace}/feedback", key=other_key, body={
        "project_id": OTHER, "subject_id": OTHER_SUBJECT, "verdict": "helpful"})
    assert given.status == 200
    exported = client.request("GET", f"/v1/eval-set?project_id={DEMO_PROJECT}", key=server.key)
    assert exported.status == 200
    text = str(exported.json)
    assert OTHER not in text and not any(i in text for i in _other_ids())
    assert all(q["project_id"] == DEMO_PROJECT for q in exported.json["queries"])
    for query in (f"project_id={OTHER}", f"project_id={DEMO_PROJECT}&project_id={OTHER}"):
        reply = client.request("GET", f"/v1/eval-set?{query}", key=server.key)
        assert (reply.status, reply.json["error"]["code"]) in (
            (403, "forbidden_scope"), (422, "validation_error")), query
    own = client.request("GET", f"/v1/eval-set?project_id={OTHER}", key=other_key)
    assert [q["subject_id"] for q in own.json["queries"]] == [OTHER_SUBJECT]
