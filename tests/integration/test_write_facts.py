"""POST /v1/facts and GET /v1/facts (core): the rules per (subject, predicate), references in
scope, all-or-nothing batches, concurrency on one key, limits, keyset pagination."""

import uuid

import psycopg
import pytest

from haki.db import Database, Role
from haki.embedding import Embedder
from haki.errors import (
    FactInOpenConflict,
    ForbiddenScope,
    StaleSupersedes,
    UnknownReference,
    ValidationFailed,
)
from haki.memory.api import MAX_BATCH, MAX_FACT_VALUE_CHARS, MAX_PAGE, FactsRequest
from haki.memory.facts import write_facts
from haki.validation import parse
from tests.conftest import tenant_thread
from tests.integration.conftest import (
    Writes,
    run_together,
    uncommitted_fact,
    unit_vector,
    wait_until_blocked_by,
)


def _statuses(writes: Writes) -> dict[uuid.UUID, str]:
    return dict(writes.owner.execute(
        "SELECT id, status FROM facts WHERE project_id = %s", (writes.project_id,)).fetchall())


def _open_sets(writes: Writes) -> list[list[uuid.UUID]]:
    return [row[0] for row in writes.owner.execute(
        "SELECT fact_ids FROM conflict_sets WHERE project_id = %s AND status = 'open' "
        "ORDER BY created_at", (writes.project_id,)).fetchall()]


def test_a_new_fact_is_created_active_and_embedded(writes: Writes) -> None:
    written = writes.fact("preferred_language", "fr", confidence=0.9, volatility="slow",
                          valid_from="2025-01-01T00:00:00Z")
    assert (written.outcome, written.status, written.version) == ("created", "active", 1)
    row = writes.row("facts", written.id)
    assert row is not None
    assert (row["predicate"], row["value"], row["volatility"], row["version"]) == \
        ("preferred_language", "fr", "slow", 1)
    assert row["confidence"] == pytest.approx(0.9)
    assert row["last_reinforced_at"] is None and row["recorded_to"] is None


def test_the_same_value_reinforces_the_active_fact(writes: Writes) -> None:
    e1, e2 = (e.id for e in writes.events({"payload": {"text": "a"}},
                                          {"payload": {"text": "b"}}).events)
    first = writes.fact("address", {"city": "Lyon", "zip": "69001"},
                        source_event_ids=[str(e1)])
    # The same JSON value, keys in another order.
    again = writes.fact("address", {"zip": "69001", "city": "Lyon"},
                        source_event_ids=[str(e2), str(e1)])
    assert (again.id, again.outcome, again.version) == (first.id, "reinforced", 2)
    row = writes.row("facts", first.id)
    assert row is not None
    assert row["version"] == 2 and row["last_reinforced_at"] is not None
    assert row["source_event_ids"] == [e1, e2]
    assert writes.count("facts") == 1


def test_supersedes_id_replaces_the_active_fact(writes: Writes) -> None:
    old = writes.fact("city", "Lyon")
    new = writes.fact("city", "Nantes", supersedes_id=str(old.id))
    assert (new.outcome, new.status, new.supersedes_id) == ("superseded", "active", old.id)
    before = writes.row("facts", old.id)
    after = writes.row("facts", new.id)
    assert before is not None and after is not None
    assert (before["status"], before["version"]) == ("superseded", 2)
    assert before["recorded_to"] is not None
    assert (after["status"], after["supersedes_id"], after["value"]) == \
        ("active", old.id, "Nantes")
    assert _open_sets(writes) == []


def test_superseding_with_the_same_value_reinforces(writes: Writes) -> None:
    old = writes.fact("city", "Lyon")
    again = writes.fact("city", "Lyon", supersedes_id=str(old.id))
    assert (again.id, again.outcome) == (old.id, "reinforced")
    assert writes.count("facts") == 1


def test_a_different_value_opens_a_conflict_and_context_blocks_both(writes: Writes) -> None:
    lyon = writes.fact("city", "Marie lives in Lyon")
    nantes = writes.fact("city", "Marie lives in Nantes")
    assert (nantes.outcome, nantes.status) == ("conflict", "active")
    assert _statuses(writes) == {lyon.id: "active", nantes.id: "active"}
    assert _open_sets(writes) == [[lyon.id, nantes.id]]
    packet = writes.ask("where does Marie live?").response.packet
    assert packet.facts == []
    assert any(w.startswith("open_conflict: 2") for w in packet.warnings)

    brest = writes.fact("city", "Marie lives in Brest")
    assert (brest.outcome, brest.conflict_id) == ("conflict", nantes.conflict_id)
    assert _open_sets(writes) == [[lyon.id, nantes.id, brest.id]]
    # A value equal to one of the contradicting facts reinforces it; the set stays open.
    assert writes.fact("city", "Marie lives in Nantes").outcome == "reinforced"
    assert len(_open_sets(writes)) == 1


def test_a_candidate_contradicts_nothing(writes: Writes) -> None:
    active = writes.fact("city", "Lyon")
    candidate = writes.fact("city", "Nantes", status="candidate")
    assert (candidate.outcome, candidate.status) == ("created", "candidate")
    assert _statuses(writes) == {active.id: "active", candidate.id: "candidate"}
    assert _open_sets(writes) == []
    # A candidate of the active value is evidence for it.
    assert writes.fact("city", "Lyon", status="candidate").outcome == "reinforced"


def test_other_subjects_and_predicates_are_other_keys(writes: Writes) -> None:
    writes.fact("city", "Lyon")
    assert writes.fact("city", "Nantes", subject_id="bob").outcome == "created"
    assert writes.fact("home_city", "Nantes").outcome == "created"
    assert _open_sets(writes) == []


def test_a_batch_applies_the_rules_in_order(writes: Writes) -> None:
    answer = writes.facts({"predicate": "city", "value": "Lyon"},
                          {"predicate": "city", "value": "Lyon"},
                          {"predicate": "city", "value": "Nantes"})
    assert [f.outcome for f in answer.facts] == ["created", "reinforced", "conflict"]
    assert answer.facts[1].id == answer.facts[0].id and answer.facts[1].version == 2


def test_supersedes_id_must_be_the_active_fact_of_the_key(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    old = writes.fact("city", "Lyon")
    new = writes.fact("city", "Nantes", supersedes_id=str(old.id))
    other_predicate = writes.fact("job", "nurse")
    other_project = Writes(app_db, embedder, writes.project_id + "-b", owner_conn)
    foreign = other_project.fact("city", "Paris")

    with pytest.raises(StaleSupersedes, match=r"facts\[0\]: field 'supersedes_id'"):
        writes.fact("city", "Brest", supersedes_id=str(old.id))  # already superseded
    with pytest.raises(StaleSupersedes):
        writes.fact("city", "Brest", supersedes_id=str(other_predicate.id))
    with pytest.raises(StaleSupersedes):
        writes.fact("city", "Brest", subject_id="bob", supersedes_id=str(new.id))
    unknown = uuid.uuid4()
    with pytest.raises(UnknownReference) as not_there:
        writes.fact("city", "Brest", supersedes_id=str(unknown))
    with pytest.raises(UnknownReference) as not_ours:
        writes.fact("city", "Brest", supersedes_id=str(foreign.id))
    # Another project's fact reads exactly like an unknown one.
    assert not_ours.value.message.replace(str(foreign.id), "?") == \
        not_there.value.message.replace(str(unknown), "?")
    assert writes.count("facts") == 3
    assert other_project.row("facts", foreign.id)["status"] == "active"


def test_a_fact_of_an_open_conflict_cannot_be_superseded(writes: Writes) -> None:
    lyon = writes.fact("city", "Lyon")
    nantes = writes.fact("city", "Nantes")
    with pytest.raises(FactInOpenConflict, match=str(nantes.conflict_id)):
        writes.fact("city", "Brest", supersedes_id=str(lyon.id))
    assert _statuses(writes) == {lyon.id: "active", nantes.id: "active"}


def test_source_events_must_be_of_the_same_scope(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    mine = writes.events({"payload": {"text": "mine"}}).events[0].id
    bobs = writes.events({"subject_id": "bob"}).events[0].id
    theirs = Writes(app_db, embedder, writes.project_id + "-b", owner_conn).events(
        {}).events[0].id
    ok = writes.fact("lang", "fr", source_event_ids=[str(mine)])
    assert writes.row("facts", ok.id)["source_event_ids"] == [mine]
    for wrong in (bobs, theirs, uuid.uuid4()):
        with pytest.raises(UnknownReference,
                           match=rf"facts\[1\]: field 'source_event_ids.1': no event {wrong}"):
            writes.facts({"predicate": "a", "value": 1},
                         {"predicate": "b", "value": 2,
                          "source_event_ids": [str(mine), str(wrong)]})
    assert writes.count("facts") == 1


def test_a_failing_batch_writes_nothing(writes: Writes) -> None:
    kept = writes.fact("city", "Lyon")
    with pytest.raises(UnknownReference, match=r"^facts\[2\]"):
        writes.facts({"predicate": "city", "value": "Lyon"},        # would reinforce
                     {"predicate": "job", "value": "nurse"},         # would create
                     {"predicate": "pet", "value": "cat", "supersedes_id": str(uuid.uuid4())})
    row = writes.row("facts", kept.id)
    assert row is not None and row["version"] == 1 and row["last_reinforced_at"] is None
    assert writes.count("facts") == 1


def test_concurrent_writers_of_one_key_create_one_active_fact(
    db_urls: dict[Role, str], writes: Writes, embedder: Embedder
) -> None:
    request = parse(FactsRequest, {"project_id": writes.project_id, "facts": [
        {"subject_id": "alice", "predicate": "city", "value": "Lyon"}]})
    outcomes = run_together(db_urls[Role.APP], lambda db: write_facts(
        db, embedder, writes.project_id, request).facts[0].outcome)
    assert sorted(outcomes) == ["created", "reinforced"]
    assert writes.count("facts") == 1


def test_a_writer_waits_for_the_key_and_sees_the_fact_written_meanwhile(
    db_urls: dict[Role, str], writes: Writes
) -> None:
    """Another transaction holds the key and has stored, not yet committed, the active fact:
    the writer waits for it, then finds it and reinforces it instead of creating a second."""
    answers: list[str] = []
    thread = tenant_thread(lambda: answers.append(writes.fact("city", "Lyon").outcome))
    with uncommitted_fact(db_urls[Role.APP], writes.project_id, unit_vector(1)) as holder:
        thread.start()
        wait_until_blocked_by(holder, db_urls[Role.OWNER], thread,
                              "the writer did not wait for the key")
    thread.join(timeout=60)
    assert answers == ["reinforced"]
    assert writes.count("facts") == 1


@pytest.mark.parametrize(("fact", "message"), [
    ({"value": None}, r"facts\[0\]: field 'value': .*needs a value"),
    ({"value": "  "}, r"facts\[0\]: field 'value': .*needs a value"),
    ({"value": "x" * (MAX_FACT_VALUE_CHARS + 1)}, r"facts\[0\]: field 'value': .*longer"),
    ({"value": {"a": float("inf")}}, r"facts\[0\]: field 'value': .*finite"),
    ({"value": "a\x00"}, r"facts\[0\]: field 'value': .*NUL"),
    ({"predicate": ""}, r"facts\[0\]: field 'predicate'"),
    ({"predicate": "a\tb"}, r"facts\[0\]: field 'predicate': .*control"),
    ({"confidence": 1.5}, r"facts\[0\]: field 'confidence'"),
    ({"confidence": float("nan")}, r"facts\[0\]: field 'confidence'"),
    ({"volatility": "sometimes"}, r"facts\[0\]: field 'volatility'"),
    ({"status": "disputed"}, r"facts\[0\]: field 'status'"),
    ({"valid_from": "2025-02-01T00:00:00Z", "valid_to": "2025-01-01T00:00:00Z"},
     r"facts\[0\]: .*valid_to must be later"),
    ({"valid_from": "2025-02-01T00:00:00"}, r"facts\[0\]: field 'valid_from': .*time zone"),
    ({"status": "candidate", "supersedes_id": str(uuid.UUID(int=1))},
     r"facts\[0\]: .*must be active"),
    ({"source_event_ids": ["nope"]}, r"facts\[0\]: field 'source_event_ids.0'"),
    ({"qualifiers": {}}, r"facts\[0\]: field 'qualifiers': Extra inputs"),
])
def test_bad_records_name_their_index_and_field(
    writes: Writes, fact: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        writes.facts({"predicate": "city", "value": "Lyon", **fact})
    assert writes.count("facts") == 0


def test_batch_size_and_scope(writes: Writes) -> None:
    with pytest.raises(ValidationFailed, match=f"at most {MAX_BATCH}"):
        writes.facts(*({"predicate": f"p{i}", "value": i} for i in range(MAX_BATCH + 1)))
    request = parse(FactsRequest, {"project_id": "someone-else", "facts": [
        {"subject_id": "alice", "predicate": "p", "value": 1}]})
    with pytest.raises(ForbiddenScope):
        write_facts(writes.db, writes.embedder, writes.project_id, request)
    assert writes.count("facts") == 0


def test_read_your_writes(writes: Writes) -> None:
    written = writes.fact("invoice_language", "Les factures de Marie sont en allemand")
    packet = writes.ask("dans quelle langue sont les factures ?").response.packet
    assert written.id in {f.id for f in packet.facts}


# --------------------------------------------------------------------------- GET /v1/facts


def test_listing_pages_through_every_fact_once_in_order(writes: Writes) -> None:
    ids = [f.id for f in writes.facts(*({"predicate": f"p{i}", "value": i}
                                        for i in range(5))).facts]
    seen, cursor, pages = [], None, 0
    while True:
        page = writes.list_facts(limit=2, **({"cursor": cursor} if cursor else {}))
        seen += [f.id for f in page.facts]
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert pages == 3
    # One transaction wrote them (same recorded_from): the id breaks the tie.
    assert seen == sorted(ids)
    # A fact added after the first page is served on a later one, not skipped.
    first = writes.list_facts(limit=2)
    late = writes.fact("late", "yes").id
    rest = writes.list_facts(limit=MAX_PAGE, cursor=first.next_cursor)
    assert late in {f.id for f in rest.facts}


def test_listing_filters(writes: Writes) -> None:
    lyon = writes.fact("city", "Lyon")
    nantes = writes.fact("city", "Nantes", supersedes_id=str(lyon.id))
    job = writes.fact("job", "nurse")
    candidate = writes.fact("pet", "cat", status="candidate")
    writes.fact("city", "Paris", subject_id="bob")
    assert [f.id for f in writes.list_facts().facts] == [nantes.id, job.id]  # active only
    assert [f.id for f in writes.list_facts(predicate="city").facts] == [nantes.id]
    assert [f.id for f in writes.list_facts(status="superseded").facts] == [lyon.id]
    assert [f.id for f in writes.list_facts(status="candidate").facts] == [candidate.id]
    assert len(writes.list_facts(limit="1").facts) == 1  # as a query string gives it
    view = writes.list_facts(predicate="city", status="superseded").facts[0]
    assert (view.value, view.version, view.subject_id) == ("Lyon", 2, "alice")


def test_listing_is_confined_to_the_project(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    Writes(app_db, embedder, writes.project_id + "-b", owner_conn).fact("city", "Paris")
    assert writes.list_facts().facts == []


@pytest.mark.parametrize(("query", "message"), [
    ({"limit": MAX_PAGE + 1}, "field 'limit'"),
    ({"limit": 0}, "field 'limit'"),
    ({"limit": "many"}, "field 'limit'"),
    ({"cursor": "garbage"}, "field 'cursor': not a cursor"),
    ({"cursor": "k1.bm90IGpzb24"}, "field 'cursor': not a cursor"),
    ({"cursor": "k1.WyIyMDI1LTAxLTAxVDAwOjAwOjAwIiwiYSJd"}, "field 'cursor': not a cursor"),
    ({"status": "gone"}, "field 'status'"),
])
def test_listing_refuses_bad_queries(
    writes: Writes, query: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        writes.list_facts(**query)
