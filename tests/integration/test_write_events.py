"""POST /v1/events (core): batches embedded and stored in one transaction, idempotent by client
id or idempotency key — also under concurrent replays — limits, and tenant isolation."""

import math
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb

from haki.db import Database, Role
from haki.db.connection import connect, set_scope
from haki.embedding import Embedder
from haki.errors import (
    ForbiddenScope,
    IdempotencyConflict,
    MissingScope,
    PayloadTooLarge,
    ValidationFailed,
)
from haki.memory.api import (
    MAX_BATCH,
    MAX_EVENT_PAYLOAD_BYTES,
    MAX_JSON_DEPTH,
    EventsRequest,
    EventsResponse,
)
from haki.memory.events import ingest_events
from haki.memory.store import lock_subject_exclusive
from haki.validation import parse
from tests.conftest import tenant_thread
from tests.integration.conftest import Writes, run_together, wait_until_blocked_by


def _nested(depth: int) -> dict[str, object]:
    """A payload with ``2 × depth`` levels of objects and arrays."""
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"a": [value]}
    return value


def test_batch_is_embedded_and_stored_in_request_order(writes: Writes) -> None:
    when = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
    answer = writes.events({"payload": {"text": "bonjour"}, "occurred_at": when.isoformat()},
                           {"kind": "ticket.opened", "payload": {"priority": 2}})
    assert [e.deduplicated for e in answer.events] == [False, False]
    first, second = (writes.row("events", e.id) for e in answer.events)
    assert first is not None and second is not None
    assert (first["kind"], first["payload"], first["occurred_at"]) == \
        ("conversation.message", {"text": "bonjour"}, when)
    assert second["kind"] == "ticket.opened" and second["idempotency_key"] is None
    assert second["occurred_at"] == second["recorded_at"]  # default: now()
    norm = writes.owner.execute("SELECT vector_norm(embedding) FROM events WHERE id = %s",
                                (first["id"],)).fetchone()
    assert norm is not None and math.isclose(norm[0], 1.0, abs_tol=1e-3)


@pytest.mark.parametrize("handle", ["idempotency_key", "id"])
def test_a_replay_returns_the_original_id_and_writes_nothing(writes: Writes, handle: str) -> None:
    value = "delivery-1" if handle == "idempotency_key" else str(uuid.uuid4())
    event = {handle: value, "payload": {"text": "le colis est arrivé"}}
    original = writes.events(event).events[0]
    before = writes.row("events", original.id)

    replay = writes.events(event, {"payload": {"text": "new one"}})
    assert replay.events[0].id == original.id and replay.events[0].deduplicated
    assert not replay.events[1].deduplicated
    assert writes.count("events") == 2
    assert writes.row("events", original.id) == before
    if handle == "id":
        assert original.id == uuid.UUID(value)


def test_a_replay_without_occurred_at_matches_the_stored_time(writes: Writes) -> None:
    when = datetime(2025, 1, 2, tzinfo=UTC).isoformat()
    first = writes.events({"idempotency_key": "k", "occurred_at": when}).events[0]
    again = writes.events({"idempotency_key": "k"}).events[0]
    assert again.id == first.id and again.deduplicated


@pytest.mark.parametrize("change", [
    {"payload": {"text": "something else"}},
    {"kind": "ticket.opened"},
    {"subject_id": "bob"},
    {"occurred_at": "2024-01-01T00:00:00+00:00"},
])
def test_a_key_reused_for_another_event_is_refused_and_the_batch_writes_nothing(
    writes: Writes, change: dict[str, object]
) -> None:
    base = {"idempotency_key": "k1", "payload": {"text": "hello"},
            "occurred_at": "2025-05-05T10:00:00+00:00"}
    writes.events(base)
    with pytest.raises(IdempotencyConflict, match=r"^events\[1\]: field 'idempotency_key'"):
        writes.events({"payload": {"text": "fresh"}}, {**base, **change})
    assert writes.count("events") == 1


def test_handles_repeated_within_a_batch_are_refused(writes: Writes) -> None:
    with pytest.raises(ValidationFailed, match=r"events\[2\]: field 'idempotency_key': "
                                               r"repeats events\[0\]"):
        writes.events({"idempotency_key": "a"}, {"idempotency_key": "b"},
                      {"idempotency_key": "a"})
    same = str(uuid.uuid4())
    with pytest.raises(ValidationFailed, match=r"events\[1\]: field 'id': repeats events\[0\]"):
        writes.events({"id": same}, {"id": same})
    assert writes.count("events") == 0


def test_id_and_idempotency_key_together_are_refused(writes: Writes) -> None:
    with pytest.raises(ValidationFailed, match=r"events\[0\]: .*either id or idempotency_key"):
        writes.events({"id": str(uuid.uuid4()), "idempotency_key": "k"})


def test_idempotency_keys_are_per_project(writes: Writes, app_db: Database, embedder: Embedder,
                                          owner_conn: psycopg.Connection) -> None:
    other = Writes(app_db, embedder, writes.project_id + "-other", owner_conn)
    mine = writes.events({"idempotency_key": "shared"}).events[0]
    theirs = other.events({"idempotency_key": "shared"}).events[0]
    assert mine.id != theirs.id and not theirs.deduplicated


def test_event_ids_are_per_project(
    writes: Writes, app_db: Database, embedder: Embedder, owner_conn: psycopg.Connection
) -> None:
    """Another project's event id neither blocks nor answers a write: each project stores its
    own event under the id, and a replay in each finds its own."""
    other = Writes(app_db, embedder, writes.project_id + "-other", owner_conn)
    taken = other.events({"payload": {"text": "theirs"}}).events[0].id
    mine = writes.events({"payload": {"text": "mine"}, "id": str(taken)}).events[0]
    assert (mine.id, mine.deduplicated) == (taken, False)
    assert writes.events({"payload": {"text": "mine"}, "id": str(taken)}).events[0].deduplicated
    payloads = {row[0]: row[1] for row in owner_conn.execute(
        "SELECT project_id, payload FROM events WHERE id = %s", (taken,)).fetchall()}
    assert payloads == {writes.project_id: {"text": "mine"},
                        other.project_id: {"text": "theirs"}}


def test_concurrent_replays_store_one_row(
    db_urls: dict[Role, str], writes: Writes, embedder: Embedder
) -> None:
    """Two deliveries of the same batch at once, on two connections: one row per key, both
    answers name it, and exactly one of them wrote it."""
    body = {"project_id": writes.project_id, "events": [
        {"subject_id": "alice", "kind": "msg", "idempotency_key": f"k{i}",
         "payload": {"text": f"message {i}"}} for i in range(3)]}
    request = parse(EventsRequest, body)
    first, second = run_together(db_urls[Role.APP], lambda db: ingest_events(
        db, embedder, writes.project_id, request))  # a thread that failed left no answer
    assert [e.id for e in first.events] == [e.id for e in second.events]
    for one, two in zip(first.events, second.events, strict=True):
        assert one.deduplicated != two.deduplicated
    assert writes.count("events") == 3


@pytest.mark.parametrize("outcome", ["COMMIT", "ROLLBACK"])
def test_a_replay_racing_an_uncommitted_original_waits_for_it(
    db_urls: dict[Role, str], writes: Writes, embedder: Embedder, outcome: str
) -> None:
    """The original is inserted but not committed when the replay arrives: the replay's
    look-up cannot see it, so only ``ON CONFLICT`` on the unique index stands between it and a
    second row. It waits; after COMMIT it is a replay, after ROLLBACK it is the original."""
    request = parse(EventsRequest, {"project_id": writes.project_id, "events": [
        {"subject_id": "alice", "kind": "msg", "idempotency_key": "race",
         "payload": {"text": "hi"}}]})
    first_id = uuid.uuid4()
    replayer = Database(db_urls[Role.APP])
    answers: list[EventsResponse] = []
    thread = tenant_thread(lambda: answers.append(
        ingest_events(replayer, embedder, writes.project_id, request)))
    try:
        with connect(db_urls[Role.APP]) as holder:
            holder.execute("BEGIN")
            set_scope(holder, writes.project_id)
            holder.execute(
                "INSERT INTO events (id, project_id, subject_id, kind, payload, "
                "idempotency_key, embedding) VALUES (%s, %s, 'alice', 'msg', %s, 'race', %s)",
                (first_id, writes.project_id, Jsonb({"text": "hi"}),
                 embedder.embed_passages(["hi"])[0]))
            thread.start()
            wait_until_blocked_by(holder, db_urls[Role.OWNER], thread,
                                  "the replay did not wait for the uncommitted original")
            holder.execute(outcome)
        thread.join(timeout=60)
    finally:
        replayer.close()
    (answer,) = answers
    event = answer.events[0]
    assert writes.count("events") == 1
    if outcome == "COMMIT":
        assert (event.id, event.deduplicated) == (first_id, True)
    else:
        assert event.id != first_id and not event.deduplicated


def test_limits(writes: Writes) -> None:
    with pytest.raises(ValidationFailed, match="field 'events': List should have at least 1"):
        writes.events()
    with pytest.raises(ValidationFailed, match=f"field 'events': List should have at most "
                                               f"{MAX_BATCH}"):
        writes.events(*({} for _ in range(MAX_BATCH + 1)))
    big = {"text": "x" * MAX_EVENT_PAYLOAD_BYTES}
    with pytest.raises(PayloadTooLarge, match=r"events\[1\]: field 'payload': \d+ bytes"):
        writes.events({}, {"payload": big})
    with pytest.raises(ValidationFailed, match=r"events\[0\]: field 'kind': String should have "
                                               r"at most 128"):
        writes.events({"kind": "k" * 129})
    assert writes.count("events") == 0


def test_a_full_batch_is_accepted(writes: Writes) -> None:
    answer = writes.events(*({"payload": {"text": f"m{i}"}} for i in range(MAX_BATCH)))
    assert len({e.id for e in answer.events}) == MAX_BATCH
    assert writes.count("events") == MAX_BATCH


@pytest.mark.parametrize(("event", "message"), [
    ({"payload": {"text": "a\x00b"}}, r"events\[0\]: field 'payload': .*NUL"),
    ({"payload": {"a\x00": 1}}, r"events\[0\]: field 'payload': .*NUL"),
    ({"payload": {"text": "\ud800"}}, r"events\[0\]: field 'payload': .*surrogate"),
    ({"payload": {"n": float("nan")}}, r"events\[0\]: field 'payload': .*finite"),
    ({"payload": _nested(MAX_JSON_DEPTH + 1)}, r"events\[0\]: field 'payload': .*nested"),
    ({"payload": []}, r"events\[0\]: field 'payload': Input should be a valid dictionary"),
    ({"occurred_at": "2025-01-01T00:00:00"}, r"events\[0\]: field 'occurred_at': .*time zone"),
    ({"subject_id": "a\nb"}, r"events\[0\]: field 'subject_id': .*control"),
    ({"kind": " "}, r"events\[0\]: field 'kind': .*blank"),
    ({"colour": "red"}, r"events\[0\]: field 'colour': Extra inputs are not permitted"),
    ({"id": "not-a-uuid"}, r"events\[0\]: field 'id'"),
])
def test_bad_records_name_their_index_and_field(
    writes: Writes, event: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationFailed, match=message):
        writes.events(event)


def test_nesting_up_to_the_limit_is_stored(writes: Writes) -> None:
    (written,) = writes.events({"payload": _nested(MAX_JSON_DEPTH // 2)}).events
    row = writes.row("events", written.id)
    assert row is not None and row["payload"] == _nested(MAX_JSON_DEPTH // 2)


@pytest.mark.parametrize("subject", [{"subject_id": ""}, {"subject_id": None}])
def test_an_event_without_its_subject_is_missing_its_scope(
    writes: Writes, subject: dict[str, object]
) -> None:
    body: dict[str, Any] = {
        "project_id": writes.project_id,
        "events": [{"subject_id": "alice", "kind": "k"}, {"kind": "k", **subject}]}
    if subject["subject_id"] is None:
        del body["events"][1]["subject_id"]
    with pytest.raises(MissingScope, match=r"^events\[1\]: field 'subject_id'"):
        parse(EventsRequest, body)
    with pytest.raises(MissingScope, match=r"^field 'project_id'"):
        parse(EventsRequest, {"project_id": "", "events": body["events"][:1]})


def test_the_key_decides_the_project(writes: Writes) -> None:
    with pytest.raises(ForbiddenScope):
        writes.events({}, project_id=writes.project_id + "-elsewhere")
    assert writes.count("events") == 0


def test_ingestion_waits_for_an_erasure_of_its_subject(
    db_urls: dict[Role, str], writes: Writes
) -> None:
    """An erasure in flight holds the subject's lock: the ingestion waits for it to finish
    rather than write beside it."""
    done = threading.Event()
    thread = tenant_thread(lambda: (writes.events({}), done.set()))
    with connect(db_urls[Role.APP]) as holder:
        holder.execute("BEGIN")
        lock_subject_exclusive(holder, writes.project_id, "alice")
        thread.start()
        wait_until_blocked_by(holder, db_urls[Role.OWNER], thread,
                              "the ingestion did not wait for the subject lock")
        holder.execute("COMMIT")
    thread.join(timeout=60)
    assert done.is_set() and writes.count("events") == 1


def test_read_your_writes(writes: Writes) -> None:
    written = writes.events({"payload": {"text": "Marie a demandé un remboursement"}})
    assembly = writes.ask("remboursement demandé par Marie")
    assert written.events[0].id in {e.event_id for e in assembly.response.packet.episodes}
