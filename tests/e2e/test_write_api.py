"""The memory write API over real HTTP against ``haki serve`` (the session server, demo data):
every route, rule and error code; read-your-writes through ``POST /v1/context``; tenant
isolation of every write route; limits; a failing batch writes nothing; an erasure leaves no
row of the subject in any table; the banner's curls.

The tests write in a project of their own (its key made with ``haki keys create``), each in a
subject of its own, so the demo project the other e2e tests read stays as it was; the demo's
projects are the "other tenant" whose ids must stay out of reach.
"""

import json
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from haki.memory.api import MAX_BATCH, MAX_EMBED_TOKENS, MAX_EVENT_PAYLOAD_BYTES
from haki.memory.lifecycle import TRANSITIONS
from haki_aws.routes import BATCH_BODY_BYTES
from haki_local.demo import DEMO_PROJECT, DEMO_SUBJECT, demo_document
from tests.e2e.conftest import Client, Reply, Server, create_key, run_cli


@dataclass
class Tenant:
    """One project, its key, and the calls of the write API in it."""

    client: Client
    project: str
    key: str

    def post(self, path: str, body: Any) -> Reply:
        return self.client.request("POST", path, key=self.key, body=body)

    def get(self, path: str, **query: Any) -> Reply:
        qs = "&".join(f"{k}={v}" for k, v in {"project_id": self.project, **query}.items())
        return self.client.request("GET", f"{path}?{qs}", key=self.key)

    def events(self, subject: str, *events: dict[str, Any]) -> Reply:
        return self.post("/v1/events", {"project_id": self.project, "events": [
            {"subject_id": subject, "kind": "conversation.message", **e} for e in events]})

    def facts(self, subject: str, *facts: dict[str, Any]) -> Reply:
        return self.post("/v1/facts", {"project_id": self.project, "facts": [
            {"subject_id": subject, **f} for f in facts]})

    def fact(self, subject: str, predicate: str, value: Any, **fields: Any) -> dict[str, Any]:
        reply = self.facts(subject, {"predicate": predicate, "value": value, **fields})
        assert reply.status == 201, reply.json
        return reply.json["facts"][0]

    def status(self, fact_id: str, status: str) -> Reply:
        return self.post(f"/v1/facts/{fact_id}/status",
                         {"project_id": self.project, "status": status})

    def resolve(self, conflict_id: str, keep: str) -> Reply:
        return self.post(f"/v1/conflicts/{conflict_id}/resolve",
                         {"project_id": self.project, "keep_fact_id": keep})

    def forget(self, **body: Any) -> Reply:
        return self.post("/v1/forget", {"project_id": self.project, **body})

    def context(self, subject: str, query: str, budget: int = 900) -> dict[str, Any]:
        reply = self.post("/v1/context", {"project_id": self.project, "subject_id": subject,
                                          "query": query, "purpose": "e2e",
                                          "budget_tokens": budget})
        assert reply.status == 200, reply.json
        return reply.json

    def listed(self, subject: str, **query: Any) -> list[dict[str, Any]]:
        reply = self.get("/v1/facts", subject_id=subject, **query)
        assert reply.status == 200, reply.json
        return reply.json["facts"]


@pytest.fixture(scope="module")
def tenant(client: Client, data_dir: Path, server: Server) -> Tenant:
    project = f"e2e-writes-{uuid.uuid4().hex[:8]}"
    return Tenant(client, project, create_key(data_dir, "e2e", project, "--create-project")[0])


@pytest.fixture
def subject() -> str:
    return f"subject-{uuid.uuid4().hex[:10]}"


def _code(reply: Reply) -> tuple[int, str]:
    assert set(reply.json) == {"error"}, reply.json
    return reply.status, reply.json["error"]["code"]


def _rows(owner: psycopg.Connection, table: str, project: str, subject: str) -> int:
    row = owner.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE project_id = %s AND subject_id = %s").format(
            sql.Identifier(table)), (project, subject)).fetchone()
    assert row is not None
    return int(row[0])


def _served(packet: dict[str, Any]) -> dict[str, Any]:
    return {f["predicate"]: f["value"] for f in packet["facts"]}


# --------------------------------------------------------------------------- events


def test_events_are_stored_in_order_and_the_next_context_call_serves_them(
    tenant: Tenant, subject: str
) -> None:
    client_id = str(uuid.uuid4())
    reply = tenant.events(
        subject,
        {"payload": {"text": "Mon vol pour Lisbonne a été annulé, je dois rentrer mardi."},
         "occurred_at": "2026-11-20T10:00:00Z"},
        {"id": client_id, "kind": "ticket.opened", "payload": {"priority": "high"}})
    assert reply.status == 201
    first, second = reply.json["events"]
    assert second == {"id": client_id, "deduplicated": False} and not first["deduplicated"]
    answer = tenant.context(subject, "Pourquoi le vol pour Lisbonne est-il annulé ?")
    episodes = {e["event_id"]: e for e in answer["packet"]["episodes"]}
    assert first["id"] in episodes and "Lisbonne" in episodes[first["id"]]["excerpt"]
    assert episodes[first["id"]]["occurred_at"].startswith("2026-11-20T10:00:00")


@pytest.mark.parametrize("handle", ["idempotency_key", "id"])
def test_a_replay_answers_the_original_id_and_writes_nothing(
    tenant: Tenant, subject: str, owner: psycopg.Connection, handle: str
) -> None:
    value = f"delivery-{uuid.uuid4()}" if handle == "idempotency_key" else str(uuid.uuid4())
    event = {handle: value, "payload": {"text": "Colis livré au voisin."}}
    original = tenant.events(subject, event)
    assert original.status == 201
    replay = tenant.events(subject, event, {"payload": {"text": "autre chose"}})
    assert replay.status == 201
    assert replay.json["events"][0] == {"id": original.json["events"][0]["id"],
                                        "deduplicated": True}
    assert replay.json["events"][1]["deduplicated"] is False
    assert _rows(owner, "events", tenant.project, subject) == 2
    changed = tenant.events(subject, {**event, "payload": {"text": "Colis perdu."}})
    assert _code(changed) == (409, "idempotency_conflict")
    assert changed.json["error"]["message"].startswith(f"events[0]: field '{handle}'")
    assert _rows(owner, "events", tenant.project, subject) == 2


# --------------------------------------------------------------------------- facts


def test_the_rules_of_a_key_over_http_and_what_context_serves_after_each(
    tenant: Tenant, subject: str, owner: psycopg.Connection
) -> None:
    question = "Dans quelle ville habite ce client ?"
    source = tenant.events(subject, {"payload": {"text": "J'habite à Lyon."}}).json
    source_id = source["events"][0]["id"]
    created = tenant.fact(subject, "lives_in", "Lyon", source_event_ids=[source_id])
    assert (created["outcome"], created["status"], created["version"]) == ("created", "active", 1)
    assert _served(tenant.context(subject, question)["packet"])["lives_in"] == "Lyon"

    again = tenant.fact(subject, "lives_in", "Lyon")
    assert (again["outcome"], again["id"], again["version"]) == ("reinforced", created["id"], 2)
    stored = tenant.listed(subject, predicate="lives_in")
    assert len(stored) == 1 and stored[0]["last_reinforced_at"] is not None
    assert stored[0]["source_event_ids"] == [source_id]

    moved = tenant.fact(subject, "lives_in", "Nantes", supersedes_id=created["id"])
    assert (moved["outcome"], moved["supersedes_id"]) == ("superseded", created["id"])
    old = tenant.listed(subject, status="superseded")
    assert [f["id"] for f in old] == [created["id"]] and old[0]["recorded_to"] is not None
    assert old[0]["version"] == 3
    packet = tenant.context(subject, question)["packet"]
    assert _served(packet)["lives_in"] == "Nantes"
    assert created["id"] not in {f["id"] for f in packet["facts"]}

    stale = tenant.facts(subject, {"predicate": "lives_in", "value": "Brest",
                                   "supersedes_id": created["id"]})
    assert _code(stale) == (409, "stale_supersedes")
    unknown = tenant.facts(subject, {"predicate": "lives_in", "value": "Brest",
                                     "supersedes_id": str(uuid.uuid4())})
    assert _code(unknown) == (422, "unknown_reference")

    clash = tenant.fact(subject, "lives_in", "Paris")
    assert clash["outcome"] == "conflict" and clash["conflict_id"]
    packet = tenant.context(subject, question)["packet"]
    assert "lives_in" not in _served(packet)
    assert any(w.startswith("open_conflict") for w in packet["warnings"])
    blocked = tenant.facts(subject, {"predicate": "lives_in", "value": "Brest",
                                     "supersedes_id": moved["id"]})
    assert _code(blocked) == (409, "fact_in_open_conflict")
    assert clash["conflict_id"] in blocked.json["error"]["message"]

    candidate = tenant.fact(subject, "lives_in", "Marseille", status="candidate")
    assert (candidate["outcome"], candidate["status"]) == ("created", "candidate")
    sets = tenant.get("/v1/conflicts", subject_id=subject).json["conflicts"]
    assert len(sets) == 1 and candidate["id"] not in {f["id"] for f in sets[0]["facts"]}
    assert _rows(owner, "facts", tenant.project, subject) == 4


def test_the_listing_pages_by_keyset_and_filters(tenant: Tenant, subject: str) -> None:
    ids = [f["id"] for f in tenant.facts(subject, *(
        {"predicate": f"hobby_{i}", "value": f"hobby number {i}"} for i in range(5))).json["facts"]]
    tenant.fact(subject, "maybe", "unsure", status="candidate")
    pages, cursor = [], None
    while True:
        reply = tenant.get("/v1/facts", subject_id=subject, limit=2,
                           **({"cursor": cursor} if cursor else {}))
        assert reply.status == 200
        pages.append([f["id"] for f in reply.json["facts"]])
        cursor = reply.json["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [2, 2, 1]
    assert sorted(i for page in pages for i in page) == sorted(ids)  # once each, no candidate
    assert [f["predicate"] for f in tenant.listed(subject, status="candidate")] == ["maybe"]
    assert [f["id"] for f in tenant.listed(subject, predicate="hobby_3")] == [ids[3]]
    assert _code(tenant.get("/v1/facts", subject_id=subject, limit=201)) == (
        422, "validation_error")
    assert _code(tenant.get("/v1/facts", subject_id=subject, cursor="k1.bogus")) == (
        422, "validation_error")
    assert _code(tenant.get("/v1/facts")) == (422, "missing_scope")


def _reach(tenant: Tenant, fact_id: str, status: str) -> None:
    """Bring a candidate fact to ``status`` along legal edges."""
    path = {"candidate": [], "active": ["active"], "superseded": ["superseded"],
            "disputed": ["disputed"], "disabled": ["disabled"]}[status]
    for step in path:
        assert tenant.status(fact_id, step).status == 200


def test_every_pair_of_statuses_over_http(tenant: Tenant, subject: str) -> None:
    """30 facts, one per (from, to) from every status a route reaches (none reaches
    ``deleted``: deleting is erasing): the graph's edges succeed with version + 1, the others
    are 422 illegal_status_transition and change nothing."""
    pairs = [(a, b) for a in TRANSITIONS if a != "deleted" for b in TRANSITIONS]
    written = tenant.facts(subject, *(
        {"predicate": f"p_{a}_{b}", "value": f"{a} to {b}", "status": "candidate"}
        for a, b in pairs))
    assert written.status == 201
    for (current, target), fact in zip(pairs, written.json["facts"], strict=True):
        _reach(tenant, fact["id"], current)
        before = tenant.listed(subject, status=current, predicate=f"p_{current}_{target}")[0]
        reply = tenant.status(fact["id"], target)
        if target in TRANSITIONS[current]:
            assert reply.status == 200, (current, target, reply.json)
            after = reply.json["fact"]
            assert (after["status"], after["version"]) == (target, before["version"] + 1)
        else:
            assert _code(reply) == (422, "illegal_status_transition"), (current, target)
            assert tenant.listed(subject, status=current,
                                 predicate=f"p_{current}_{target}") == [before]


def test_status_routes_refuse_unknown_and_malformed_ids(tenant: Tenant) -> None:
    assert _code(tenant.status(str(uuid.uuid4()), "active")) == (404, "fact_not_found")
    assert _code(tenant.status("not-a-uuid", "active")) == (422, "validation_error")
    assert _code(tenant.status(str(uuid.uuid4()), "forgotten")) == (422, "validation_error")


def test_activating_a_fact_next_to_another_value_opens_a_conflict(
    tenant: Tenant, subject: str
) -> None:
    active = tenant.fact(subject, "employer", "Dupont")
    candidate = tenant.fact(subject, "employer", "Durand", status="candidate")
    reply = tenant.status(candidate["id"], "active")
    assert reply.status == 200 and reply.json["conflict_id"]
    (conflict,) = tenant.get("/v1/conflicts", subject_id=subject).json["conflicts"]
    assert {f["id"] for f in conflict["facts"]} == {active["id"], candidate["id"]}


# --------------------------------------------------------------------------- conflicts


def test_a_conflict_is_listed_resolved_once_and_context_serves_the_kept_fact(
    tenant: Tenant, subject: str
) -> None:
    first = tenant.fact(subject, "phone", "+33 6 11 11 11 11")
    second = tenant.fact(subject, "phone", "+33 6 22 22 22 22")
    conflict_id = second["conflict_id"]
    listed = tenant.get("/v1/conflicts", subject_id=subject)
    assert listed.status == 200 and listed.json["next_cursor"] is None
    (open_set,) = listed.json["conflicts"]
    assert open_set["id"] == conflict_id and open_set["status"] == "open"
    assert [f["id"] for f in open_set["facts"]] == [first["id"], second["id"]]

    outsider = tenant.fact(subject, "email", "x@example.com")["id"]
    assert _code(tenant.resolve(conflict_id, outsider)) == (422, "validation_error")
    assert _code(tenant.resolve(str(uuid.uuid4()), second["id"])) == (404, "conflict_not_found")
    resolved = tenant.resolve(conflict_id, second["id"])
    assert resolved.status == 200
    assert resolved.json["kept_fact_id"] == second["id"]
    assert resolved.json["superseded_fact_ids"] == [first["id"]]
    assert _code(tenant.resolve(conflict_id, second["id"])) == (409, "conflict_not_open")

    assert tenant.get("/v1/conflicts", subject_id=subject).json["conflicts"] == []
    (done,) = tenant.get("/v1/conflicts", subject_id=subject,
                         status="resolved").json["conflicts"]
    assert done["resolved_at"] is not None
    packet = tenant.context(subject, "Quel est son numéro de téléphone ?")["packet"]
    assert _served(packet)["phone"] == "+33 6 22 22 22 22"
    assert not any(w.startswith("open_conflict") for w in packet["warnings"])


# --------------------------------------------------------------------------- forget


def test_forgetting_a_fact_disable_is_reversible_delete_leaves_no_trace_of_it(
    tenant: Tenant, subject: str, owner: psycopg.Connection
) -> None:
    question = "Quelle est son allergie ?"
    fact = tenant.fact(subject, "allergy", "arachides")
    served = tenant.context(subject, question)
    assert fact["id"] in {f["id"] for f in served["packet"]["facts"]}

    disabled = tenant.forget(fact_id=fact["id"], mode="disable")
    assert disabled.status == 200 and disabled.json["receipt_id"] is None
    assert disabled.json["counts"] == {"facts": 1}
    assert "allergy" not in _served(tenant.context(subject, question)["packet"])
    assert tenant.status(fact["id"], "active").status == 200
    assert _served(tenant.context(subject, question)["packet"])["allergy"] == "arachides"

    erased = tenant.forget(fact_id=fact["id"], mode="delete")
    assert erased.status == 200 and erased.json["target"] == "fact"
    assert erased.json["counts"]["facts"] == 1
    assert erased.json["counts"]["context_calls_redacted"] >= 2
    inspected = tenant.get(f"/v1/inspect/{served['trace_id']}", subject_id=subject)
    assert inspected.status == 200
    assert fact["id"] not in json.dumps(inspected.json)
    assert fact["id"] not in json.dumps(tenant.context(subject, question))
    assert _code(tenant.forget(fact_id=fact["id"], mode="delete")) == (404, "fact_not_found")
    receipt = owner.execute("SELECT * FROM erasure_receipts WHERE id = %s",
                            (erased.json["receipt_id"],)).fetchone()
    assert receipt is not None and subject not in str(receipt) and fact["id"] not in str(receipt)


def _tables(owner: psycopg.Connection) -> list[str]:
    rows = owner.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return [row[0] for row in rows]


def _mentions(owner: psycopg.Connection, needle: str) -> list[str]:
    """The tables holding a row whose text (every column) contains ``needle``."""
    found = []
    for table in _tables(owner):
        row = owner.execute(sql.SQL("SELECT count(*) FROM {} AS t WHERE t::text LIKE %s").format(
            sql.Identifier(table)), (f"%{needle}%",)).fetchone()
        if row and row[0]:
            found.append(table)
    return found


def test_erasing_a_subject_leaves_no_row_of_it_in_any_table(
    tenant: Tenant, subject: str, owner: psycopg.Connection, data_dir: Path
) -> None:
    events = [e["id"] for e in tenant.events(
        subject, {"payload": {"text": "Je veux supprimer mon compte."}},
        {"idempotency_key": f"erase-{subject}", "payload": {"text": "Merci."}}).json["events"]]
    one = tenant.fact(subject, "plan", "Pro", source_event_ids=events[:1])
    two = tenant.fact(subject, "plan", "Team")
    traces = [tenant.context(subject, q)["trace_id"] for q in ("Quel plan ?", "Compte ?")]
    # A rollup of the subject's calls, as the schedule would write it once they are old.
    owner.execute("UPDATE context_calls SET created_at = created_at - interval '3 hours' "
                  "WHERE project_id = %s AND subject_id = %s", (tenant.project, subject))
    run_cli(data_dir, "stats", "aggregate", "--rerun-from", "2000-01-01")
    assert _rows(owner, "stats_rollups", tenant.project, subject) >= 1
    needles = [subject, *events, one["id"], two["id"], two["conflict_id"], *traces]
    assert set(_mentions(owner, subject)) >= {"facts", "events", "conflict_sets",
                                              "context_calls", "stats_rollups"}

    erased = tenant.forget(subject_id=subject, mode="delete")
    assert erased.status == 200 and erased.json["target"] == "subject"
    counts = erased.json["counts"]
    assert (counts["facts"], counts["events"], counts["conflict_sets"],
            counts["context_calls"]) == (2, 2, 1, 2)
    assert counts["context_traces"] >= 2 and counts["stats_rollups"] >= 1
    for needle in needles:
        assert _mentions(owner, needle) == [], needle
    assert owner.execute("SELECT count(*) FROM erasure_receipts WHERE id = %s",
                         (erased.json["receipt_id"],)).fetchone() == (1,)
    # Nothing is left to serve or to inspect, and a retried erasure succeeds with zeros.
    assert _code(tenant.get(f"/v1/inspect/{traces[0]}", subject_id=subject)) == (
        404, "trace_not_found")
    again = tenant.forget(subject_id=subject, mode="delete")
    assert again.status == 200 and set(again.json["counts"].values()) == {0}
    assert tenant.listed(subject) == []


def test_a_disabled_subject_serves_none_of_its_episodes(tenant: Tenant, subject: str) -> None:
    said = "My passport number is X123 and I live in Lyon"
    assert tenant.events(subject, {"payload": {"text": said}}).status == 201
    question = "What is my passport number?"
    assert "X123" in json.dumps(tenant.context(subject, question)["packet"])
    assert tenant.forget(subject_id=subject, mode="disable").status == 200
    packet = tenant.context(subject, question)["packet"]
    assert (packet["facts"], packet["episodes"], packet["status"]) == ([], [], "degraded")
    assert [w.split(":")[0] for w in packet["warnings"]] == ["subject_disabled"]
    assert "X123" not in json.dumps(packet)


def test_disabling_a_subject_stops_serving_it(tenant: Tenant, subject: str) -> None:
    tenant.facts(subject, {"predicate": "city", "value": "Lille"},
                 {"predicate": "pet", "value": "chat"})
    reply = tenant.forget(subject_id=subject, mode="disable")
    assert reply.status == 200 and reply.json["counts"] == {"facts": 2}
    assert tenant.context(subject, "Où habite-t-il ?")["packet"]["facts"] == []
    assert len(tenant.listed(subject, status="disabled")) == 2
    assert tenant.listed(subject, status="deleted") == []
    assert _code(tenant.forget(subject_id=subject, fact_id=str(uuid.uuid4()),
                               mode="delete")) == (422, "validation_error")


def test_enabling_a_subject_that_holds_only_events_serves_its_episodes_again(
        tenant: Tenant, subject: str) -> None:
    said = "My sister Inès lives in Grenoble"
    assert tenant.events(subject, {"payload": {"text": said}}).status == 201
    question = "Where does my sister live?"
    assert tenant.forget(subject_id=subject, mode="disable").json["counts"] == {"facts": 0}
    assert tenant.context(subject, question)["packet"]["episodes"] == []
    reply = tenant.forget(subject_id=subject, mode="enable")
    assert reply.status == 200, reply.json
    assert (reply.json["mode"], reply.json["counts"], reply.json["receipt_id"]) == (
        "enable", {"facts": 0}, None)
    packet = tenant.context(subject, question)["packet"]
    assert [e["excerpt"] for e in packet["episodes"]] == [said]
    assert (packet["status"], packet["warnings"]) == ("ok", [])


def test_enabling_a_subject_brings_back_the_facts_its_disable_stopped(
        tenant: Tenant, subject: str) -> None:
    tenant.facts(subject, {"predicate": "city", "value": "Lille"},
                 {"predicate": "pet", "value": "chat"})
    assert tenant.forget(subject_id=subject, mode="disable").json["counts"] == {"facts": 2}
    reply = tenant.forget(subject_id=subject, mode="enable")
    assert reply.status == 200 and reply.json["counts"] == {"facts": 2}
    assert {f["status"] for f in tenant.listed(subject)} == {"active"}
    served = tenant.context(subject, "Où habite-t-il ?")["packet"]
    assert "Lille" in json.dumps(served["facts"])


# --------------------------------------------------------------------------- limits


def test_limits_are_enforced_with_the_index_of_the_record_and_nothing_written(
    tenant: Tenant, subject: str, owner: psycopg.Connection
) -> None:
    def refused(reply: Reply, expected: tuple[int, str], prefix: str) -> None:
        assert _code(reply) == expected, reply.json
        assert reply.json["error"]["message"].startswith(prefix), reply.json

    ok = {"payload": {"text": "ok"}}
    refused(tenant.events(subject, *([ok] * (MAX_BATCH + 1))), (422, "validation_error"),
            "field 'events'")
    refused(tenant.post("/v1/events", {"project_id": tenant.project, "events": []}),
            (422, "validation_error"), "field 'events'")
    big = {"payload": {"text": "x" * MAX_EVENT_PAYLOAD_BYTES}}
    refused(tenant.events(subject, ok, big), (413, "payload_too_large"),
            "events[1]: field 'payload'")
    refused(tenant.events(subject, ok, {"kind": "k" * 129}), (422, "validation_error"),
            "events[1]: field 'kind'")
    refused(tenant.events(subject, ok, {"occurred_at": "yesterday"}), (422, "validation_error"),
            "events[1]: field 'occurred_at'")
    refused(tenant.facts(subject, {"predicate": "bio", "value": "x" * 2001}),
            (422, "validation_error"), "facts[0]: field 'value'")
    refused(tenant.facts(subject, {"predicate": "a", "value": 1},
                         {"predicate": "b", "value": 2, "confidence": 1.5}),
            (422, "validation_error"), "facts[1]: field 'confidence'")
    long_text = "Le remboursement de la facture de mai n'est toujours pas arrivé. " * 40
    first_past = MAX_EMBED_TOKENS // 512
    refused(tenant.events(subject, *({"payload": {"text": f"{i} {long_text}"}}
                                     for i in range(first_past + 1))),
            (413, "payload_too_large"), f"events[{first_past}]: ")
    body = json.dumps({"project_id": tenant.project, "events": [ok]}).encode()
    huge = tenant.client.request("POST", "/v1/events", key=tenant.key,
                                 raw=body + b" " * BATCH_BODY_BYTES)
    refused(huge, (413, "payload_too_large"), "the request body is")
    for table in ("events", "facts"):
        assert _rows(owner, table, tenant.project, subject) == 0, table


def test_a_failing_batch_writes_nothing(
    tenant: Tenant, subject: str, owner: psycopg.Connection
) -> None:
    (event_id,) = [e["id"] for e in tenant.events(
        subject, {"payload": {"text": "source"}}).json["events"]]
    reply = tenant.facts(subject, {"predicate": "a", "value": "first"},
                         {"predicate": "b", "value": "second", "source_event_ids": [event_id]},
                         {"predicate": "c", "value": "third",
                          "source_event_ids": [event_id, str(uuid.uuid4())]})
    assert _code(reply) == (422, "unknown_reference")
    assert reply.json["error"]["message"].startswith("facts[2]: field 'source_event_ids.1'")
    assert _rows(owner, "facts", tenant.project, subject) == 0
    key = f"k-{uuid.uuid4()}"
    first = tenant.events(subject, {"idempotency_key": key, "payload": {"text": "one"}})
    assert first.status == 201
    clash = tenant.events(subject, {"payload": {"text": "new"}},
                          {"idempotency_key": key, "payload": {"text": "two"}})
    assert _code(clash) == (409, "idempotency_conflict")
    assert clash.json["error"]["message"].startswith("events[1]: ")
    assert _rows(owner, "events", tenant.project, subject) == 2  # the source and "one"


# --------------------------------------------------------------------------- isolation


def test_no_write_route_reaches_another_tenants_memory(
    tenant: Tenant, subject: str, server: Server, owner: psycopg.Connection
) -> None:
    """With the tenant's key, the demo project's fact, conflict and event ids get exactly the
    answer an unknown id gets, its subjects are empty, and nothing of it changes."""
    doc = demo_document()
    demo_fact = next(f for f in doc.facts if f.project_id == DEMO_PROJECT
                     and f.subject_id == DEMO_SUBJECT)
    demo_event = next(e for e in doc.events if e.project_id == DEMO_PROJECT)
    demo_conflict = next(c for c in doc.conflicts if c.project_id == DEMO_PROJECT)

    def snapshot() -> list[Any]:
        return owner.execute(
            "SELECT (SELECT array_agg(row(id, status, version, value) ORDER BY id) FROM facts "
            "        WHERE project_id = %(p)s),"
            "       (SELECT array_agg(row(id, payload) ORDER BY id) FROM events "
            "        WHERE project_id = %(p)s),"
            "       (SELECT array_agg(row(id, status, fact_ids) ORDER BY id) FROM conflict_sets "
            "        WHERE project_id = %(p)s)", {"p": DEMO_PROJECT}).fetchall()

    before = snapshot()
    unknown = str(uuid.uuid4())

    def same_as_unknown(call: Any, their_id: str) -> None:
        theirs, random = call(their_id), call(unknown)
        assert _code(theirs) == _code(random)
        assert theirs.json["error"]["message"].replace(their_id, "ID") == \
            random.json["error"]["message"].replace(unknown, "ID")

    same_as_unknown(lambda i: tenant.facts(subject, {"predicate": "p", "value": "v",
                                                     "source_event_ids": [i]}), str(demo_event.id))
    same_as_unknown(lambda i: tenant.facts(subject, {"predicate": demo_fact.predicate,
                                                     "value": "v", "supersedes_id": i}),
                    str(demo_fact.id))
    same_as_unknown(lambda i: tenant.status(i, "disabled"), str(demo_fact.id))
    same_as_unknown(lambda i: tenant.resolve(i, str(demo_fact.id)), str(demo_conflict.id))
    same_as_unknown(lambda i: tenant.forget(fact_id=i, mode="delete"), str(demo_fact.id))
    same_as_unknown(lambda i: tenant.forget(fact_id=i, mode="disable"), str(demo_fact.id))
    # A client id another project uses is this project's own to take: stored here, as new.
    taken = tenant.events(subject, {"id": str(demo_event.id), "kind": demo_event.kind,
                                    "payload": {"text": "mine"}})
    assert taken.status == 201
    assert taken.json["events"] == [{"id": str(demo_event.id), "deduplicated": False}]
    # The demo's subject, named under the tenant's project: empty, and erasing it erases
    # nothing of the demo.
    assert tenant.listed(DEMO_SUBJECT) == []
    assert tenant.get("/v1/conflicts", subject_id=DEMO_SUBJECT).json["conflicts"] == []
    erased = tenant.forget(subject_id=DEMO_SUBJECT, mode="delete")
    assert erased.status == 200 and set(erased.json["counts"].values()) == {0}
    assert tenant.forget(subject_id=DEMO_SUBJECT, mode="disable").json["counts"] == {"facts": 0}
    # Every route naming the demo project with the tenant's key: 403.
    for path, body in [
        ("/v1/events", {"events": [{"subject_id": DEMO_SUBJECT, "kind": "k"}]}),
        ("/v1/facts", {"facts": [{"subject_id": DEMO_SUBJECT, "predicate": "p", "value": 1}]}),
        (f"/v1/facts/{demo_fact.id}/status", {"status": "disabled"}),
        (f"/v1/conflicts/{demo_conflict.id}/resolve", {"keep_fact_id": str(demo_fact.id)}),
        ("/v1/forget", {"subject_id": DEMO_SUBJECT, "mode": "delete"}),
    ]:
        reply = tenant.post(path, {"project_id": DEMO_PROJECT, **body})
        assert _code(reply) == (403, "forbidden_scope"), path
    for path in ("/v1/facts", "/v1/conflicts"):
        reply = tenant.client.request(
            "GET", f"{path}?project_id={DEMO_PROJECT}&subject_id={DEMO_SUBJECT}", key=tenant.key)
        assert _code(reply) == (403, "forbidden_scope"), path
    assert snapshot() == before
    # And the other way: the demo key cannot reach the tenant's fact.
    mine = tenant.fact(subject, "secret", "mine")
    demo = Tenant(tenant.client, DEMO_PROJECT, server.key)
    assert _code(demo.status(mine["id"], "disabled")) == (404, "fact_not_found")
    assert _code(demo.forget(fact_id=mine["id"], mode="delete")) == (404, "fact_not_found")
    assert tenant.listed(subject)[0]["status"] == "active"


# --------------------------------------------------------------------------- banner


def test_the_banners_curls_work_in_order(server: Server) -> None:
    """What ``make run`` prints, run as printed: every command answers JSON without an error;
    the event written is served by the context call after it; the fact is reinforced."""
    commands = [line for line in server.lines if line.startswith("curl -s ")]
    assert len(commands) >= 8 and any("/v1/events" in c for c in commands)
    answers = []
    for command in commands:
        done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                              timeout=60, check=True)
        answers.append((command, json.loads(done.stdout)))
        assert "error" not in answers[-1][1], (command, done.stdout)

    def answer(fragment: str) -> Any:
        return next(a for c, a in answers if fragment in c)

    (event,) = answer("/v1/events -H")["events"]
    after = answer("absente ?")
    assert event["id"] in {e["event_id"] for e in after["packet"]["episodes"]}
    assert answer("/v1/facts -H")["facts"][0]["outcome"] == "reinforced"
    assert answer("/v1/facts?")["facts"] and "conflicts" in answer("/v1/conflicts?")


def test_the_edge_answers_write_routes_like_the_read_routes(tenant: Tenant) -> None:
    """401 before anything, 415 for a body that is not JSON, 405 with both methods of a path
    two functions serve."""
    body = {"project_id": tenant.project, "events": [{"subject_id": "s", "kind": "k"}]}
    assert _code(tenant.client.request("POST", "/v1/events", body=body)) == (401, "unauthorized")
    assert _code(tenant.client.request("POST", "/v1/events", key="hk_" + "Z" * 43,
                                       body=body)) == (401, "unauthorized")
    form = tenant.client.request("POST", "/v1/facts", key=tenant.key, raw=b"a=b",
                                 content_type="application/x-www-form-urlencoded")
    assert _code(form) == (415, "validation_error")
    wrong = tenant.client.request("DELETE", "/v1/facts", key=tenant.key)
    assert _code(wrong) == (405, "method_not_allowed")
    assert wrong.headers["Allow"] == "POST, GET"
    assert tenant.client.request("GET", "/v1/forget", key=tenant.key).headers["Allow"] == "POST"
