"""What the trace console reads besides inspect: a project's latest calls, and the current
text of the facts and events a trace names."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from psycopg.rows import dict_row

from haki.db import Database
from haki.text import event_text, fact_text

#: The project's latest calls, newest first. Served by a backward scan of
#: context_calls_created_idx (0005) filtered on the project; a summary, without the packet.
SELECT_RECENT_CALLS = """
SELECT trace_id, subject_id, query, purpose, budget_tokens, token_count, status, empty_reason,
       facts_served, episodes_served, candidates, latency_ms, created_at
FROM context_calls
WHERE project_id = %(project_id)s
ORDER BY created_at DESC, trace_id
LIMIT %(limit)s
"""

#: The current text of the facts and events a trace names, by primary key within the scope.
SELECT_FACT_TEXTS = """
SELECT id, predicate, value FROM facts
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND id = ANY(%(ids)s)
"""
SELECT_EVENT_TEXTS = """
SELECT id, kind, payload FROM events
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND id = ANY(%(ids)s)
"""

#: The most calls one listing returns.
MAX_RECENT_CALLS = 200


@dataclass(frozen=True, slots=True)
class CallSummary:
    """One context call as the trace console lists it."""

    trace_id: UUID
    subject_id: str
    query: str
    purpose: str | None
    budget_tokens: int
    token_count: int
    status: str
    empty_reason: str | None
    facts_served: int
    episodes_served: int
    candidates: int
    latency_ms: float | None
    created_at: datetime


def recent_calls(db: Database, project_id: str, limit: int = 50) -> list[CallSummary]:
    """The latest ``limit`` (at most :data:`MAX_RECENT_CALLS`) context calls of the project,
    newest first, every subject."""
    limit = max(1, min(limit, MAX_RECENT_CALLS))
    with db.transaction(project_id) as conn:
        rows = conn.cursor(row_factory=dict_row).execute(
            SELECT_RECENT_CALLS, {"project_id": project_id, "limit": limit}).fetchall()
    return [CallSummary(**row) for row in rows]


def candidate_texts(
    db: Database, *, project_id: str, subject_id: str, fact_ids: Sequence[UUID],
    event_ids: Sequence[UUID],
) -> dict[UUID, str]:
    """The current text (as embedded and served) of the facts and events a trace names; an
    erased one is absent."""
    params = {"project_id": project_id, "subject_id": subject_id}
    with db.transaction(project_id) as conn, conn.pipeline():
        facts = conn.cursor(row_factory=dict_row).execute(
            SELECT_FACT_TEXTS, {**params, "ids": list(fact_ids)})
        events = conn.cursor(row_factory=dict_row).execute(
            SELECT_EVENT_TEXTS, {**params, "ids": list(event_ids)})
    texts = {row["id"]: fact_text(row["predicate"], row["value"]) for row in facts.fetchall()}
    texts.update({row["id"]: event_text(row["kind"], row["payload"])
                  for row in events.fetchall()})
    return texts
