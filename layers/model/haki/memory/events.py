"""Events (episodes): ``POST /v1/events``, and the statements ``haki load`` shares with it.

Ingestion is idempotent per event: a client ``id`` or ``idempotency_key`` already stored in the
project makes the event a replay, answered with the original id and ``deduplicated: true``,
writing nothing. A batch of ``messages`` is stored as events of kind ``conversation.message``,
each with the event id its :class:`MessageIn` names or derives (:func:`message_event_id`), so a
retried message is a replay like any other. Replays are found before embedding (a retried
batch costs no model time), and the write itself is ``INSERT ... ON CONFLICT DO NOTHING``, so
two concurrent deliveries of one event store it once whatever their timing; a batch inserts
its events in one deterministic order (by idempotency key or id), so concurrent batches of the
same events in any order never deadlock.
"""

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from haki.db import Database
from haki.embedding import Embedder
from haki.errors import (
    IdempotencyConflict,
    MissingScope,
    PayloadTooLarge,
    Unauthorized,
    ValidationFailed,
)
from haki.memory.api import (
    MAX_EVENT_PAYLOAD_BYTES,
    MESSAGE_KIND,
    EventIn,
    EventsRequest,
    EventsResponse,
    EventWritten,
    MessageIn,
    check_scope,
    payload_bytes,
)
from haki.memory.quota import StorageQuota, check_storage_quota
from haki.memory.store import (
    check_embedding_budget,
    embed_texts,
    lock_scopes,
    write_transaction,
)
from haki.text import event_text

log = logging.getLogger(__name__)

_INSERT_EVENT = """
INSERT INTO events (
    id, project_id, subject_id, thread_id, kind, payload, occurred_at, idempotency_key,
    embedding, seq)
VALUES (%(id)s, %(project_id)s, %(subject_id)s, %(thread_id)s, %(kind)s, %(payload)s,
        coalesce(%(occurred_at)s, now()), %(idempotency_key)s, %(embedding)s,
        coalesce(%(seq)s, nextval(pg_get_serial_sequence('events', 'seq'))))
"""

#: The places of a batch's events in the order said (``events.seq``), drawn in the order
#: listed before the rows are inserted in lock order.
DRAW_SEQ = """
SELECT nextval(pg_get_serial_sequence('events', 'seq')) FROM generate_series(1, %(count)s)
"""

#: ``haki load``: an id already stored in the same scope is updated with the document's values
#: (event ids are unique per project: the primary key is (project_id, id)).
UPSERT_EVENT = _INSERT_EVENT + """
ON CONFLICT (project_id, id) DO UPDATE SET
    thread_id = EXCLUDED.thread_id, kind = EXCLUDED.kind, payload = EXCLUDED.payload,
    occurred_at = EXCLUDED.occurred_at, embedding = EXCLUDED.embedding
WHERE events.project_id = EXCLUDED.project_id AND events.subject_id = EXCLUDED.subject_id
"""

#: ``POST /v1/events``: arbitrated by the primary key (project_id, id) and
#: events_idempotency_key_idx, both within the project (another project's ids and keys
#: never collide with this one's); a row taken by a concurrent transaction waits for it, then
#: is skipped (no RETURNING row).
INSERT_EVENT_ONCE = _INSERT_EVENT + "ON CONFLICT DO NOTHING RETURNING id"

#: The project's events a batch names by id (primary key) or key (events_idempotency_key_idx).
SELECT_STORED = """
SELECT id, idempotency_key, subject_id, thread_id, kind, payload, occurred_at
FROM events
WHERE project_id = %(project_id)s
  AND (id = ANY (%(ids)s) OR idempotency_key = ANY (%(keys)s))
"""

#: How a request names an event for idempotency: ("id", uuid) or ("key", text); None: neither.
Handle = tuple[str, UUID | str]


def event_row(
    *, id: UUID, project_id: str, subject_id: str, thread_id: str | None, kind: str,
    payload: dict[str, Any], occurred_at: datetime | None, idempotency_key: str | None,
    embedding: np.ndarray, seq: int | None = None,
) -> dict[str, object]:
    """Parameters of :data:`UPSERT_EVENT` / :data:`INSERT_EVENT_ONCE` (``seq`` None: the
    next of the sequence)."""
    return {"id": id, "project_id": project_id, "subject_id": subject_id,
            "thread_id": thread_id, "kind": kind, "payload": Jsonb(payload),
            "occurred_at": occurred_at, "idempotency_key": idempotency_key,
            "embedding": embedding, "seq": seq}


#: The project's key of the event ids derived from messages (``haki_message_id_key``): random per
#: project, readable by the runtime role for the project of the key it acts for only.
SELECT_MESSAGE_ID_KEY = "SELECT haki_message_id_key()"


def message_id_key(conn: psycopg.Connection) -> UUID:
    """The key of the project the transaction acts for."""
    row = conn.execute(SELECT_MESSAGE_ID_KEY).fetchone()
    if row is None or row[0] is None:
        raise Unauthorized("a valid API key is required: Authorization: Bearer hk_...")
    key: UUID = row[0]
    return key


def message_event_id(key: UUID, subject_id: str, message: MessageIn) -> UUID:
    """The event id of a message: its ``id``; else derived from the subject and the client's
    ``message_id``; else from the subject, the speaker, the content and the moment (in UTC,
    so that one instant written with two offsets is one message). Derived ids are keyed by the
    project's ``key`` (uuid5 with the key as namespace: a hash of key and name): the same
    message has another id in another project, and without the key nobody can test a guessed
    subject and message against an id. A retry derives the id its first delivery did."""
    if message.id is not None:
        return message.id
    if message.message_id is not None:
        parts = ["message_id", subject_id, message.message_id]
    else:
        assert message.occurred_at is not None  # MessageIn requires one of the three
        parts = ["content", subject_id, message.role, message.name or "", message.content,
                 message.occurred_at.astimezone(UTC).isoformat()]
    return uuid.uuid5(key, json.dumps(parts, ensure_ascii=False))


@dataclass(frozen=True)
class Batch:
    """The records of a request as events: ``label`` names them in errors (``events`` or
    ``messages``), ``handles`` the field that makes each one idempotent."""

    label: str
    events: list[EventIn]
    handles: list[str]

    @classmethod
    def of(cls, request: EventsRequest, key: UUID | None) -> "Batch":
        """``key``: the project's key of message-derived ids (needed for messages only)."""
        if request.events is not None:
            return cls("events", request.events, [
                "id" if e.id is not None else "idempotency_key" for e in request.events])
        messages = request.messages or []
        subject_id = request.subject_id
        if subject_id is None:
            raise MissingScope("field 'subject_id' is required with messages (every call "
                               "names its scope, 1 to 128 characters)")
        assert key is not None
        return cls("messages", [
            EventIn(subject_id=subject_id, thread_id=request.thread_id, kind=MESSAGE_KIND,
                    occurred_at=m.occurred_at, payload=m.payload(),
                    id=message_event_id(key, subject_id, m))
            for m in messages
        ], ["id" if m.id is not None else "message_id" if m.message_id is not None
            else "occurred_at" for m in messages])


def _handle(event: EventIn) -> Handle | None:
    if event.id is not None:
        return ("id", event.id)
    if event.idempotency_key is not None:
        return ("key", event.idempotency_key)
    return None


def _insert_order(event: EventIn, event_id: UUID) -> tuple[str, str]:
    """Where an event goes in the batch's INSERT: every batch inserts in this one order, by
    the unique key its row can collide on (its idempotency key, else its id), so two batches
    holding the same events in different orders never wait for each other in a cycle (each
    waits at most for a row the other inserted first, at a smaller key)."""
    if event.idempotency_key is not None:
        return ("key", event.idempotency_key)
    return ("id", str(event_id))


def _check_batch(batch: Batch) -> None:
    """Limits in bytes (413) and handles repeated within the batch (422), first offender."""
    first_of: dict[Handle, int] = {}
    for index, event in enumerate(batch.events):
        size = payload_bytes(event.payload)
        if size > MAX_EVENT_PAYLOAD_BYTES:
            field = "payload" if batch.label == "events" else "content"
            raise PayloadTooLarge(
                f"{batch.label}[{index}]: field '{field}': {size} bytes as JSON; the limit is "
                f"{MAX_EVENT_PAYLOAD_BYTES}")
        handle = _handle(event)
        if handle is None:
            continue
        if handle in first_of:
            raise ValidationFailed(
                f"{batch.label}[{index}]: field '{batch.handles[index]}': repeats "
                f"{batch.label}[{first_of[handle]}]")
        first_of[handle] = index


def _stored(
    conn: psycopg.Connection, project_id: str, handles: list[Handle]
) -> dict[Handle, dict[str, Any]]:
    """The project's stored events among ``handles``, by handle."""
    rows = conn.cursor(row_factory=dict_row).execute(SELECT_STORED, {
        "project_id": project_id,
        "ids": [value for kind, value in handles if kind == "id"],
        "keys": [value for kind, value in handles if kind == "key"],
    }).fetchall()
    found: dict[Handle, dict[str, Any]] = {}
    for row in rows:
        found[("id", row["id"])] = row
        if row["idempotency_key"] is not None:
            found[("key", row["idempotency_key"])] = row
    return found


def _same_event(event: EventIn, stored: dict[str, Any]) -> bool:
    """Whether a replay describes the stored event (``occurred_at`` only when it gives one)."""
    return (stored["subject_id"] == event.subject_id and stored["kind"] == event.kind
            and stored["thread_id"] == event.thread_id
            and stored["payload"] == event.payload
            and (event.occurred_at is None or stored["occurred_at"] == event.occurred_at))


def ingest_events(
    db: Database, embedder: Embedder, project_id: str, request: EventsRequest,
    quota: StorageQuota | None = None,
) -> EventsResponse:
    """``POST /v1/events``: store a batch in one transaction, idempotently.

    Raises :class:`PayloadTooLarge` / :class:`ValidationFailed` for a bad record,
    :class:`IdempotencyConflict` when a handle was used for a different event (or is taken
    outside this project: the same answer) and :class:`StorageQuotaExceeded` past the
    project's ``quota`` (default: the settings'); then nothing is written.
    """
    check_scope(project_id, request)
    with db.transaction(project_id) as conn:
        batch = Batch.of(request, message_id_key(conn) if request.messages is not None else None)
        _check_batch(batch)
        handles = [h for h in map(_handle, batch.events) if h is not None]
        known = _stored(conn, project_id, handles) if handles else {}
    events = batch.events
    texts = [event_text(e.kind, e.payload) for e in events]
    check_embedding_budget(embedder, texts, batch.label)

    fresh = [(index, event) for index, event in enumerate(events)
             if _handle(event) not in known]
    vectors = embed_texts(embedder, [texts[index] for index, _ in fresh])
    ids = {index: event.id or uuid.uuid4() for index, event in fresh}

    inserted: set[UUID] = set()
    with write_transaction(db, project_id) as conn:
        lock_scopes(conn, project_id, {e.subject_id for e in events})
        if fresh:
            drawn = sorted(n for (n,) in conn.execute(DRAW_SEQ, {"count": len(fresh)}))
            seqs = {index: n for (index, _), n in zip(fresh, drawn, strict=True)}
            rows = sorted(zip(fresh, vectors, strict=True),
                          key=lambda row: _insert_order(row[0][1], ids[row[0][0]]))
            cursor = conn.cursor()
            cursor.executemany(INSERT_EVENT_ONCE, [
                event_row(id=ids[index], project_id=project_id, subject_id=e.subject_id,
                          thread_id=e.thread_id, kind=e.kind, payload=e.payload,
                          occurred_at=e.occurred_at, idempotency_key=e.idempotency_key,
                          embedding=vector, seq=seqs[index])
                for (index, e), vector in rows
            ], returning=True)
            for _ in cursor.results():
                inserted.update(row[0] for row in cursor.fetchall())
        replays = [h for index, e in enumerate(events)
                   if (h := _handle(e)) is not None and ids.get(index) not in inserted]
        stored = _stored(conn, project_id, replays) if replays else {}
        written = [_outcome(batch, index, ids.get(index), inserted, stored)
                   for index in range(len(events))]
        check_storage_quota(conn, project_id, quota, events_added=len(inserted))
    log.info("events ingested: %d new, %d deduplicated",
             len(inserted), sum(w.deduplicated for w in written))
    return EventsResponse(events=written)


def _outcome(
    batch: Batch, index: int, new_id: UUID | None, inserted: set[UUID],
    stored: dict[Handle, dict[str, Any]],
) -> EventWritten:
    if new_id is not None and new_id in inserted:
        return EventWritten(id=new_id, deduplicated=False)
    event = batch.events[index]
    handle = _handle(event)
    original = stored.get(handle) if handle is not None else None
    if original is None or not _same_event(event, original):
        raise IdempotencyConflict(
            f"{batch.label}[{index}]: field '{batch.handles[index]}': already used for a "
            "different event; a replay must repeat the original event")
    return EventWritten(id=original["id"], deduplicated=True)
