"""Stores facts, events and conflict sets, with embeddings computed in batches.

A document is written in ONE transaction: embeddings are computed first (outside any
transaction), then every row goes in, and either all of it is visible or none. Row-level
security holds throughout: the transaction's scope is switched to each project before its rows
are written, so the writer works under the runtime role as well as the owner's.
"""

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TypeVar
from uuid import UUID

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from haki.db import Database
from haki.db.connection import set_scope
from haki.embedding import Embedder
from haki.errors import ValidationFailed
from haki.models import ConflictRecord, EventRecord, FactRecord, MemoryDocument
from haki.text import event_text, fact_text

log = logging.getLogger(__name__)

#: Passages embedded per batch (the embedder pads a batch to its longest text).
EMBED_BATCH = 32

R = TypeVar("R", FactRecord, EventRecord)

#: Called with the number of records just embedded or written (drives a progress bar).
Progress = Callable[[int], None]

UPSERT_FACT = """
INSERT INTO facts (
    id, project_id, subject_id, predicate, value, qualifiers, status, confidence, volatility,
    valid_from, valid_to, recorded_from, last_reinforced_at, supersedes_id, source_event_ids,
    version, embedding)
VALUES (
    %(id)s, %(project_id)s, %(subject_id)s, %(predicate)s, %(value)s, %(qualifiers)s,
    %(status)s, %(confidence)s, %(volatility)s, %(valid_from)s, %(valid_to)s,
    coalesce(%(recorded_from)s, now()), %(last_reinforced_at)s, %(supersedes_id)s,
    %(source_event_ids)s, %(version)s, %(embedding)s)
ON CONFLICT (id) DO UPDATE SET
    predicate = EXCLUDED.predicate, value = EXCLUDED.value, qualifiers = EXCLUDED.qualifiers,
    status = EXCLUDED.status, confidence = EXCLUDED.confidence,
    volatility = EXCLUDED.volatility, valid_from = EXCLUDED.valid_from,
    valid_to = EXCLUDED.valid_to, last_reinforced_at = EXCLUDED.last_reinforced_at,
    supersedes_id = EXCLUDED.supersedes_id, source_event_ids = EXCLUDED.source_event_ids,
    version = EXCLUDED.version, embedding = EXCLUDED.embedding
WHERE facts.project_id = EXCLUDED.project_id AND facts.subject_id = EXCLUDED.subject_id
"""

UPSERT_EVENT = """
INSERT INTO events (id, project_id, subject_id, kind, payload, occurred_at, embedding)
VALUES (%(id)s, %(project_id)s, %(subject_id)s, %(kind)s, %(payload)s,
        coalesce(%(occurred_at)s, now()), %(embedding)s)
ON CONFLICT (id) DO UPDATE SET
    kind = EXCLUDED.kind, payload = EXCLUDED.payload, occurred_at = EXCLUDED.occurred_at,
    embedding = EXCLUDED.embedding
WHERE events.project_id = EXCLUDED.project_id AND events.subject_id = EXCLUDED.subject_id
"""

INSERT_CONFLICT = """
INSERT INTO conflict_sets (id, project_id, subject_id, fact_ids, reason)
VALUES (%(id)s, %(project_id)s, %(subject_id)s, %(fact_ids)s, %(reason)s)
ON CONFLICT (id) DO NOTHING
"""

#: Resolving keeps one fact active and supersedes the others of the set, in one statement.
RESOLVE_CONFLICT = """
WITH resolved AS (
    UPDATE conflict_sets
    SET status = 'resolved', resolved_at = now()
    WHERE id = %(id)s AND project_id = %(project_id)s AND status = 'open'
      AND %(keep)s = ANY (fact_ids)
    RETURNING fact_ids, project_id, subject_id
)
UPDATE facts AS f
SET status = CASE WHEN f.id = %(keep)s THEN 'active' ELSE 'superseded' END,
    recorded_to = CASE WHEN f.id = %(keep)s THEN f.recorded_to ELSE now() END
FROM resolved
WHERE f.id = ANY (resolved.fact_ids)
  AND f.project_id = resolved.project_id AND f.subject_id = resolved.subject_id
RETURNING f.id
"""


@dataclass(frozen=True)
class LoadSummary:
    facts: int
    events: int
    conflicts_opened: int
    conflicts_resolved: int


class MemoryWriter:
    """Writes memory documents through ``db`` (runtime or owner role)."""

    def __init__(self, db: Database, embedder: Embedder) -> None:
        self._db = db
        self._embedder = embedder

    def write(self, document: MemoryDocument, progress: Progress | None = None) -> LoadSummary:
        """Store a whole document atomically; ids are generated where absent."""
        tick = progress or (lambda _n: None)
        facts = [f if f.id else f.model_copy(update={"id": uuid.uuid4()})
                 for f in document.facts]
        events = [e if e.id else e.model_copy(update={"id": uuid.uuid4()})
                  for e in document.events]
        conflicts = [c if c.id else c.model_copy(update={"id": uuid.uuid4()})
                     for c in document.conflicts]
        _check_conflicts(conflicts)
        fact_vectors = self._embed([fact_text(f.predicate, f.value) for f in facts], tick)
        event_vectors = self._embed([event_text(e.kind, e.payload) for e in events], tick)

        resolved = 0
        with self._db.transaction() as conn:
            for project, rows in _by_project(events, event_vectors):
                set_scope(conn, project)
                conn.cursor().executemany(UPSERT_EVENT, [
                    {**e.model_dump(), "payload": Jsonb(e.payload), "embedding": v}
                    for e, v in rows])
                tick(len(rows))
            for project, rows in _by_project(facts, fact_vectors):
                set_scope(conn, project)
                conn.cursor().executemany(UPSERT_FACT, [_fact_params(f, v) for f, v in rows])
                tick(len(rows))
            for conflict in conflicts:
                set_scope(conn, conflict.project_id)
                conn.execute(INSERT_CONFLICT, {
                    "id": conflict.id, "project_id": conflict.project_id,
                    "subject_id": conflict.subject_id, "fact_ids": conflict.fact_ids,
                    "reason": conflict.reason})
                if conflict.status == "resolved":
                    assert conflict.id is not None and conflict.keep_fact_id is not None
                    resolve_conflict(conn, conflict.project_id, conflict.id,
                                     conflict.keep_fact_id)
                    resolved += 1
                tick(1)
        summary = LoadSummary(len(facts), len(events), len(conflicts) - resolved, resolved)
        log.info("stored %s", summary)
        return summary

    def _embed(self, texts: Sequence[str], tick: Progress) -> np.ndarray:
        batches = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start:start + EMBED_BATCH]
            batches.append(self._embedder.embed_passages(batch))
            tick(len(batch))
        if not batches:
            return np.empty((0, self._embedder.dim), dtype=np.float32)
        return np.concatenate(batches)


def resolve_conflict(
    conn: psycopg.Connection, project_id: str, conflict_id: UUID, keep_fact_id: UUID
) -> list[UUID]:
    """Resolve an open conflict set: ``keep_fact_id`` stays active, the others are superseded.

    Returns the ids of the facts updated; raises when the set is not open in this project or
    does not contain ``keep_fact_id``.
    """
    rows = conn.execute(RESOLVE_CONFLICT, {
        "id": conflict_id, "project_id": project_id, "keep": keep_fact_id}).fetchall()
    if not rows:
        raise ValidationFailed(
            f"conflict {conflict_id}: not an open conflict set of this project containing "
            f"fact {keep_fact_id}")
    return [row[0] for row in rows]


def _check_conflicts(conflicts: list[ConflictRecord]) -> None:
    for index, conflict in enumerate(conflicts):
        if conflict.status == "resolved" and conflict.keep_fact_id not in conflict.fact_ids:
            raise ValidationFailed(
                f"conflicts[{index}]: field 'keep_fact_id': a resolved conflict must name the "
                "fact it keeps, one of its fact_ids")


def _by_project(
    records: Sequence[R], vectors: np.ndarray
) -> list[tuple[str, list[tuple[R, np.ndarray]]]]:
    """Records with their vectors, grouped by project (one scope switch per project)."""
    pairs = sorted(zip(records, vectors, strict=True), key=lambda pair: pair[0].project_id)
    return [(project, list(group))
            for project, group in groupby(pairs, key=lambda pair: pair[0].project_id)]


def _fact_params(fact: FactRecord, vector: np.ndarray) -> dict[str, object]:
    return {
        **fact.model_dump(),
        "value": Jsonb(fact.value),
        "qualifiers": Jsonb(fact.qualifiers),
        "embedding": vector,
    }
