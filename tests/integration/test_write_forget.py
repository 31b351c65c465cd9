"""POST /v1/forget (core): disabling and erasing a subject or one fact. An erased subject leaves
no row in any table, an erased fact's id is found nowhere in the project afterwards (packets
and traces included), and the receipt holds no content."""

import uuid
from typing import Any

import psycopg
import pytest

from haki.assembler.trace import load_trace
from haki.db import Database, Role
from haki.embedding import Embedder
from haki.errors import (
    FactNotFound,
    ForbiddenScope,
    IllegalStatusTransition,
    MissingScope,
    ValidationFailed,
)
from haki.memory.api import ForgetRequest
from haki.memory.forget import RECEIPT_COUNTS, forget
from haki.validation import parse
from tests.conftest import tenant_thread
from tests.integration.conftest import (
    Writes,
    uncommitted_fact,
    unit_vector,
    wait_until_blocked_by,
)


def _tables_with(owner: psycopg.Connection, column: str) -> list[str]:
    return [row[0] for row in owner.execute(
        "SELECT table_name FROM information_schema.columns "
        "WHERE table_schema = 'public' AND column_name = %s ORDER BY 1", (column,)).fetchall()]


def _subject_rows(owner: psycopg.Connection, project_id: str, subject_id: str) -> dict[str, int]:
    """Rows of the subject in every table that has a subject_id column (whatever tables a
    later migration adds), and the decisions of its calls' traces (a trace row holds all the
    decisions of one call and no subject_id)."""
    rows = {table: _count(owner, f"SELECT count(*) FROM {table} "
                                 "WHERE project_id = %s AND subject_id = %s",
                          (project_id, subject_id))
            for table in _tables_with(owner, "subject_id")}
    rows["context_traces"] = _count(
        owner, "SELECT count(*) FROM context_trace_decisions AS d JOIN context_calls AS c "
        "ON c.trace_id = d.trace_id AND c.created_at = d.created_at "
        "WHERE c.project_id = %s AND c.subject_id = %s", (project_id, subject_id))
    return rows


def _count(owner: psycopg.Connection, query: str, params: tuple[object, ...]) -> int:
    row = owner.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def _mentions(owner: psycopg.Connection, project_id: str, needle: str) -> dict[str, int]:
    """Rows of the project, in every table, whose text (every column) contains ``needle``."""
    counts = {}
    for table in _tables_with(owner, "project_id"):
        row = owner.execute(
            f"SELECT count(*) FROM {table} AS t WHERE t.project_id = %s "
            "AND strpos(t::text, %s) > 0", (project_id, needle)).fetchone()
        assert row is not None
        counts[table] = row[0]
    return {table: n for table, n in counts.items() if n}


def _seed_rollup(owner: psycopg.Connection, project_id: str, subject_id: str) -> None:
    owner.execute(
        "INSERT INTO stats_rollups (project_id, subject_id, bucket_start, calls, "
        "calls_with_facts, tokens_served, latency_hist) VALUES (%s, %s, now(), 1, 1, 10, %s)",
        (project_id, subject_id, [1, 0, 0]))


def _memory_of(writes: Writes, subject_id: str) -> None:
    """Events, facts (sourced, superseded, in conflict), two context calls and a rollup."""
    events = [e.id for e in writes.events(
        {"subject_id": subject_id, "payload": {"text": "J'ai déménagé à Nantes"}},
        {"subject_id": subject_id, "payload": {"text": "Mes factures en allemand svp"}}).events]
    lyon = writes.fact("city", "Lyon", subject_id=subject_id)
    writes.facts(
        {"subject_id": subject_id, "predicate": "city", "value": "Nantes",
         "supersedes_id": str(lyon.id), "source_event_ids": [str(events[0])]},
        {"subject_id": subject_id, "predicate": "invoice_language", "value": "allemand",
         "source_event_ids": [str(events[1])]},
        {"subject_id": subject_id, "predicate": "phone", "value": "+33 6 12 34 56 78"},
        {"subject_id": subject_id, "predicate": "phone", "value": "+33 6 98 76 54 32"})
    writes.ask("où habite-t-elle et quelle langue pour les factures ?", subject_id=subject_id)
    writes.ask("numéro de téléphone", subject_id=subject_id)
    _seed_rollup(writes.owner, writes.project_id, subject_id)


def test_erasing_a_subject_leaves_no_row_of_it_anywhere(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    other_project = Writes(app_db, embedder, writes.project_id + "-b", owner_conn)
    for who in (writes, other_project):
        _memory_of(who, "alice")
    _memory_of(writes, "bob")
    before = _subject_rows(owner_conn, writes.project_id, "alice")
    assert {"facts", "events", "conflict_sets", "context_calls", "context_traces",
            "stats_rollups"} <= {t for t, n in before.items() if n}
    bob_before = _subject_rows(owner_conn, writes.project_id, "bob")

    answer = writes.forget(subject_id="alice", mode="delete")
    assert (answer.target, answer.mode) == ("subject", "delete")
    assert answer.counts == {
        "facts": before["facts"], "events": before["events"],
        "conflict_sets": before["conflict_sets"], "conflict_sets_updated": 0,
        "context_calls": before["context_calls"], "context_calls_redacted": 0,
        "context_traces": before["context_traces"], "stats_rollups": before["stats_rollups"],
        "call_feedback": 0}
    assert set(_subject_rows(owner_conn, writes.project_id, "alice").values()) == {0}
    assert _mentions(owner_conn, writes.project_id, "alice") == {}
    # Nobody else lost anything: bob in the project, alice in the other project.
    assert _subject_rows(owner_conn, writes.project_id, "bob") == bob_before
    assert _subject_rows(owner_conn, other_project.project_id, "alice") == before

    assert answer.receipt_id is not None
    receipt = writes.row("erasure_receipts", answer.receipt_id)
    assert receipt is not None
    assert {c: receipt[c] for c in RECEIPT_COUNTS} == answer.counts
    assert (receipt["target"], receipt["created_at"]) == ("subject", answer.forgotten_at)

    again = writes.forget(subject_id="alice", mode="delete")
    assert set(again.counts.values()) == {0} and again.receipt_id != answer.receipt_id
    assert writes.ask("où habite-t-elle ?").response.packet.facts == []


def test_disabling_a_subject_stops_serving_its_facts(writes: Writes) -> None:
    old = writes.fact("city", "Lyon")
    new = writes.fact("city", "Nantes", supersedes_id=str(old.id))
    candidate = writes.fact("job", "nurse", status="candidate")
    bob = writes.fact("city", "Paris", subject_id="bob")
    answer = writes.forget(subject_id="alice", mode="disable")
    assert (answer.receipt_id, answer.counts) == (None, {"facts": 2})
    statuses = {i: writes.row("facts", i)["status"]
                for i in (old.id, new.id, candidate.id, bob.id)}
    assert statuses == {old.id: "superseded", new.id: "disabled", candidate.id: "disabled",
                        bob.id: "active"}
    assert writes.ask("where does she live?").response.packet.facts == []
    assert writes.count("erasure_receipts") == 0
    # Reversible: disabled → active.
    assert writes.status(new.id, "active").fact.status == "active"


def test_disabling_a_subject_resolves_its_open_conflict_sets(writes: Writes) -> None:
    """An open set holds active facts only: the subject's facts leave theirs when disabled,
    the set is resolved (keeping its facts for the record); enabling the subject brings the
    contradiction back as an open set."""
    lyon = writes.fact("city", "Lyon")
    nantes = writes.fact("city", "Nantes")
    assert nantes.outcome == "conflict"
    bob = [writes.fact("city", "Paris", subject_id="bob"),
           writes.fact("city", "Rome", subject_id="bob")]
    writes.forget(subject_id="alice", mode="disable")
    assert writes.conflicts().conflicts == []
    resolved = writes.conflicts(status="resolved").conflicts
    assert [{f.id for f in c.facts} for c in resolved] == [{lyon.id, nantes.id}]
    assert [c.id for c in writes.conflicts(subject_id="bob").conflicts] == [bob[1].conflict_id]
    writes.forget(subject_id="alice", mode="enable")
    reopened = writes.conflicts().conflicts
    assert [{f.id for f in c.facts} for c in reopened] == [{lyon.id, nantes.id}]


def test_a_disabled_subject_serves_nothing_of_itself_until_reenabled(writes: Writes) -> None:
    question = "what is her passport number and where does she live?"
    writes.events(
        {"payload": {"text": "My passport number is X123 and I live in Lyon"}},
        {"payload": {"text": "Please send the passport renewal form"}},
        {"subject_id": "bob", "payload": {"text": "My passport number is B456"}})
    city = writes.fact("city", "Lyon")
    served = writes.ask(question).response.packet
    assert served.episodes and served.facts  # the case disabling must empty
    writes.forget(subject_id="alice", mode="disable")

    packet = writes.ask(question).response.packet
    assert (packet.facts, packet.episodes) == ([], [])
    assert packet.status == "degraded"
    assert [w.split(":")[0] for w in packet.warnings] == ["subject_disabled"]
    assert "X123" not in packet.model_dump_json()
    # Another subject is served as before; events written while disabled are not served.
    assert writes.ask("passport number", subject_id="bob").response.packet.episodes
    writes.events({"payload": {"text": "My new passport number is X999"}})
    assert writes.ask(question).response.packet.episodes == []

    # A fact brought back re-enables the subject: its memory is served again.
    writes.status(city.id, "active")
    back = writes.ask(question).response.packet
    assert back.episodes and [f.id for f in back.facts] == [city.id]
    assert not any(w.startswith("subject_disabled") for w in back.warnings)


def test_erasing_a_disabled_subject_erases_its_mark(writes: Writes) -> None:
    writes.events({"payload": {"text": "I live in Lyon"}})
    writes.forget(subject_id="alice", mode="disable")
    assert writes.count("disabled_subjects", subject_id="alice") == 1
    writes.forget(subject_id="alice", mode="delete")
    assert writes.count("disabled_subjects", subject_id="alice") == 0
    writes.events({"payload": {"text": "I live in Lyon"}})
    assert writes.ask("where does she live?").response.packet.episodes


def test_erasing_a_fact_removes_it_from_packets_traces_and_sets(writes: Writes) -> None:
    language = writes.fact("invoice_language", "Les factures de Marie sont en allemand")
    phone = writes.fact("phone", "Le téléphone de Marie est le 06 12 34 56 78")
    calls = [writes.ask(q).response.trace_id for q in (
        "langue des factures de Marie et son téléphone", "factures de Marie")]
    served = {t: [f.id for f in load_trace(writes.db, project_id=writes.project_id,
                                           subject_id="alice", trace_id=t).packet.facts]
              for t in calls}
    assert all(language.id in ids for ids in served.values())
    three = [writes.fact("city", c).id for c in ("Lyon", "Nantes", "Brest")]
    two = [writes.fact("pet", p).id for p in ("cat", "dog")]
    old = writes.fact("car", "Clio")
    newer = writes.fact("car", "Zoé", supersedes_id=str(old.id))
    traced = writes.count("context_trace_decisions", fact_id=language.id)
    assert traced >= 2

    counts = {
        target: writes.forget(fact_id=str(target), mode="delete").counts
        for target in (language.id, three[0], two[0], old.id)}
    assert counts[language.id] == {
        "facts": 1, "events": 0, "conflict_sets": 0, "conflict_sets_updated": 0,
        "context_calls": 0, "context_calls_redacted": 2, "context_traces": traced,
        "stats_rollups": 0, "call_feedback": 0}
    assert (counts[three[0]]["conflict_sets_updated"], counts[three[0]]["conflict_sets"]) == (1, 0)
    assert (counts[two[0]]["conflict_sets_updated"], counts[two[0]]["conflict_sets"]) == (0, 1)

    for erased in (language.id, three[0], two[0], old.id):
        assert _mentions(writes.owner, writes.project_id, str(erased)) == {}
    for trace_id in calls:
        trace = load_trace(writes.db, project_id=writes.project_id, subject_id="alice",
                           trace_id=trace_id)
        assert [f.id for f in trace.packet.facts] == \
            [i for i in served[trace_id] if i != language.id]
        assert language.id not in {d.fact_id for d in trace.decisions}
    assert phone.id in {f.id for f in load_trace(
        writes.db, project_id=writes.project_id, subject_id="alice",
        trace_id=calls[0]).packet.facts}
    (remaining,) = writes.conflicts().conflicts
    assert [f.id for f in remaining.facts] == three[1:]
    newer_row = writes.row("facts", newer.id)
    assert newer_row is not None and newer_row["supersedes_id"] is None
    assert writes.count("erasure_receipts") == 4
    assert language.id not in {f.id for f in writes.ask("factures").response.packet.facts}


def test_forgetting_an_unknown_or_foreign_fact(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    foreign = Writes(app_db, embedder, writes.project_id + "-b", owner_conn).fact("city", "Paris")
    answers = []
    for mode in ("delete", "disable"):
        for target in (foreign.id, uuid.uuid4()):
            with pytest.raises(FactNotFound) as raised:
                writes.forget(fact_id=str(target), mode=mode)
            answers.append(raised.value.message)
    assert len(set(answers)) == 1
    row = writes.row("facts", foreign.id)
    assert row is not None and row["status"] == "active"
    assert writes.count("erasure_receipts") == 0


def test_disabling_a_fact_follows_the_lifecycle(writes: Writes) -> None:
    old = writes.fact("city", "Lyon")
    new = writes.fact("city", "Nantes", supersedes_id=str(old.id))
    answer = writes.forget(fact_id=str(new.id), mode="disable")
    assert (answer.target, answer.counts, answer.receipt_id) == ("fact", {"facts": 1}, None)
    assert writes.row("facts", new.id)["status"] == "disabled"
    with pytest.raises(IllegalStatusTransition):
        writes.forget(fact_id=str(old.id), mode="disable")


@pytest.mark.parametrize(("body", "message"), [
    ({"subject_id": "alice", "fact_id": str(uuid.uuid4()), "mode": "delete"}, "exactly one"),
    ({"mode": "delete"}, "exactly one"),
    ({"subject_id": "alice"}, "field 'mode'"),
    ({"subject_id": "alice", "mode": "purge"}, "field 'mode'"),
])
def test_bad_requests(writes: Writes, body: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationFailed, match=message):
        writes.forget(**body)


def test_an_empty_subject_is_a_missing_scope(writes: Writes) -> None:
    with pytest.raises(MissingScope, match="field 'subject_id'"):
        writes.forget(subject_id="", mode="delete")


def test_the_key_decides_the_project(writes: Writes) -> None:
    writes.fact("city", "Lyon")
    request = parse(ForgetRequest, {"project_id": "elsewhere", "subject_id": "alice",
                                            "mode": "delete"})
    with pytest.raises(ForbiddenScope):
        forget(writes.db, writes.project_id, request)
    assert writes.count("facts") == 1


def test_an_erasure_waits_for_a_write_in_flight_and_erases_it_too(
    db_urls: dict[Role, str], writes: Writes
) -> None:
    answers: list[dict[str, int]] = []
    thread = tenant_thread(lambda: answers.append(
        writes.forget(subject_id="alice", mode="delete").counts))
    with uncommitted_fact(db_urls[Role.APP], writes.project_id, unit_vector(2)) as writer:
        thread.start()
        wait_until_blocked_by(writer, db_urls[Role.OWNER], thread,
                              "the erasure did not wait for the write in flight")
    thread.join(timeout=60)
    assert answers[0]["facts"] == 1
    assert writes.count("facts") == 0
