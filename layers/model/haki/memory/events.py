"""Events (episodes): ``POST /v1/events``, and the statements ``haki load`` shares with it.

Ingestion is idempotent per event: a client ``id`` or ``idempotency_key`` already stored in the
project makes the event a replay, answered with the original id and ``deduplicated: true``,
writing nothing. Replays are found before embedding (a retried batch costs no model time), and
the write itself is ``INSERT ... ON CONFLICT DO NOTHING``, so two concurrent deliveries of one
event store it once whatever their timing.
"""

import logging
import uuid
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from haki.db import Database
from haki.embedding import Embedder
from haki.errors import IdempotencyConflict, PayloadTooLarge, ValidationFailed
from haki.memory.api import (
    MAX_EVENT_PAYLOAD_BYTES,
    EventIn,
    EventsRequest,
    EventsResponse,
    EventWritten,
    check_scope,
    payload_bytes,
)
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
    id, project_id, subject_id, kind, payload, occurred_at, idempotency_key, embedding)
VALUES (%(id)s, %(project_id)s, %(subject_id)s, %(kind)s, %(payload)s,
        coalesce(%(occurred_at)s, now()), %(idempotency_key)s, %(embedding)s)
"""

#: ``haki load``: an id already stored in the same scope is updated with the document's values
#: (event ids are unique per project: the primary key is (project_id, id), 0017).
UPSERT_EVENT = _INSERT_EVENT + """
ON CONFLICT (project_id, id) DO UPDATE SET
    kind = EXCLUDED.kind, payload = EXCLUDED.payload, occurred_at = EXCLUDED.occurred_at,
    embedding = EXCLUDED.embedding
WHERE events.project_id = EXCLUDED.project_id AND events.subject_id = EXCLUDED.subject_id
"""

#: ``POST /v1/events``: arbitrated by the primary key (project_id, id) and
#: events_idempotency_key_idx (0009), both within the project (another project's ids and keys
#: never collide with this one's); a row taken by a concurrent transaction waits for it, then
#: is skipped (no RETURNING row).
INSERT_EVENT_ONCE = _INSERT_EVENT + "ON CONFLICT DO NOTHING RETURNING id"

#: The project's events a batch names by id (primary key) or key (events_idempotency_key_idx).
SELECT_STORED = """
SELECT id, idempotency_key, subject_id, kind, payload, occurred_at
FROM events
WHERE project_id = %(project_id)s
  AND (id = ANY (%(ids)s) OR idempotency_key = ANY (%(keys)s))
"""

#: How a request names an event for idempotency: ("id", uuid) or ("key", text); None: neither.
Handle = tuple[str, UUID | str]


def event_row(
    *, id: UUID, project_id: str, subject_id: str, kind: str, payload: dict[str, Any],
    occurred_at: datetime | None, idempotency_key: str | None, embedding: np.ndarray,
) -> dict[str, object]:
    """Parameters of :data:`UPSERT_EVENT` / :data:`INSERT_EVENT_ONCE`."""
    return {"id": id, "project_id": project_id, "subject_id": subject_id, "kind": kind,
            "payload": Jsonb(payload), "occurred_at": occurred_at,
            "idempotency_key": idempotency_key, "embedding": embedding}


def _handle(event: EventIn) -> Handle | None:
    if event.id is not None:
        return ("id", event.id)
    if event.idempotency_key is not None:
        return ("key", event.idempotency_key)
    return None


def _check_batch(request: EventsRequest) -> None:
    """Limits in bytes (413) and handles repeated within the batch (422), first offender."""
    first_of: dict[Handle, int] = {}
    for index, event in enumerate(request.events):
        size = payload_bytes(event.payload)
        if size > MAX_EVENT_PAYLOAD_BYTES:
            raise PayloadTooLarge(
                f"events[{index}]: field 'payload': {size} bytes as JSON; the limit is "
                f"{MAX_EVENT_PAYLOAD_BYTES}")
        handle = _handle(event)
        if handle is None:
            continue
        if handle in first_of:
            field = "id" if handle[0] == "id" else "idempotency_key"
            raise ValidationFailed(
                f"events[{index}]: field '{field}': repeats events[{first_of[handle]}]")
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
            and stored["payload"] == event.payload
            and (event.occurred_at is None or stored["occurred_at"] == event.occurred_at))


def ingest_events(
    db: Database, embedder: Embedder, project_id: str, request: EventsRequest
) -> EventsResponse:
    """``POST /v1/events``: store a batch in one transaction, idempotently.

    Raises :class:`PayloadTooLarge` / :class:`ValidationFailed` for a bad record and
    :class:`IdempotencyConflict` when a handle was used for a different event (or is taken
    outside this project: the same answer); then nothing is written.
    """
    check_scope(project_id, request)
    _check_batch(request)
    texts = [event_text(e.kind, e.payload) for e in request.events]
    check_embedding_budget(embedder, texts, "events")
    handles = [h for h in map(_handle, request.events) if h is not None]
    with db.transaction(project_id) as conn:
        known = _stored(conn, project_id, handles) if handles else {}

    fresh = [(index, event) for index, event in enumerate(request.events)
             if _handle(event) not in known]
    vectors = embed_texts(embedder, [texts[index] for index, _ in fresh])
    ids = {index: event.id or uuid.uuid4() for index, event in fresh}

    inserted: set[UUID] = set()
    with write_transaction(db, project_id) as conn:
        lock_scopes(conn, project_id, {e.subject_id for e in request.events})
        if fresh:
            cursor = conn.cursor()
            cursor.executemany(INSERT_EVENT_ONCE, [
                event_row(id=ids[index], project_id=project_id, subject_id=e.subject_id,
                          kind=e.kind, payload=e.payload, occurred_at=e.occurred_at,
                          idempotency_key=e.idempotency_key, embedding=vector)
                for (index, e), vector in zip(fresh, vectors, strict=True)
            ], returning=True)
            for _ in cursor.results():
                inserted.update(row[0] for row in cursor.fetchall())
        replays = [h for index, e in enumerate(request.events)
                   if (h := _handle(e)) is not None and ids.get(index) not in inserted]
        stored = _stored(conn, project_id, replays) if replays else {}
        written = [_outcome(index, event, ids.get(index), inserted, stored)
                   for index, event in enumerate(request.events)]
    log.info("events ingested: %d new, %d deduplicated",
             len(inserted), sum(w.deduplicated for w in written))
    return EventsResponse(events=written)


def _outcome(
    index: int, event: EventIn, new_id: UUID | None, inserted: set[UUID],
    stored: dict[Handle, dict[str, Any]],
) -> EventWritten:
    if new_id is not None and new_id in inserted:
        return EventWritten(id=new_id, deduplicated=False)
    handle = _handle(event)
    original = stored.get(handle) if handle is not None else None
    if original is None or not _same_event(event, original):
        field = "id" if event.id is not None else "idempotency_key"
        raise IdempotencyConflict(
            f"events[{index}]: field '{field}': already used for a different event; "
            "a replay must repeat the original event")
    return EventWritten(id=original["id"], deduplicated=True)
