"""The decision trace: written with the packet in one statement, read back by inspect."""

import json
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from haki.db import Database
from haki.errors import TraceNotFound
from haki.models import ContextRequest, ContextResponse, InspectResponse, TraceDecision

#: The call row and every decision row in ONE statement: a data-modifying CTE inserts the call,
#: and the outer INSERT writes all decisions from one JSON array (``jsonb_to_recordset``), so a
#: packet is never stored without its trace and the write costs one round trip however many
#: candidates there were. JSON rather than one array per column: psycopg adapts Python lists
#: element by element, and twelve arrays of ~130 values cost more to send than one
#: ``json.dumps`` (measured 3.9 vs 2.4 ms per call).
INSERT_CALL_AND_TRACE = """
WITH call AS (
    INSERT INTO context_calls (
        trace_id, project_id, subject_id, query, purpose, budget_tokens, packet, token_count,
        status, empty_reason, facts_served, episodes_served, candidates,
        embed_ms, retrieval_ms, latency_ms)
    VALUES (
        %(trace_id)s, %(project_id)s, %(subject_id)s, %(query)s, %(purpose)s,
        %(budget_tokens)s, %(packet)s, %(token_count)s, %(status)s, %(empty_reason)s,
        %(facts_served)s, %(episodes_served)s, %(candidates)s,
        %(embed_ms)s, %(retrieval_ms)s, %(latency_ms)s)
    RETURNING trace_id, project_id, subject_id
)
INSERT INTO context_traces (
    trace_id, ordinal, project_id, subject_id, fact_id, event_id, action, reason_code,
    rank, score, similarity, text_rank, recency, tokens, unconfirmed,
    vector_rank, text_arm_rank, expanded_from)
SELECT call.trace_id, d.ordinal, call.project_id, call.subject_id, d.fact_id, d.event_id,
       d.action, d.reason_code, d.rank, d.score, d.similarity, d.text_rank, d.recency,
       d.tokens, d.unconfirmed, d.vector_rank, d.text_arm_rank, d.expanded_from
FROM call
CROSS JOIN jsonb_to_recordset(%(decisions)s) AS d(
    ordinal int, fact_id uuid, event_id uuid, action text, reason_code text, rank int,
    score real, similarity real, text_rank real, recency real, tokens int, unconfirmed bool,
    vector_rank int, text_arm_rank int, expanded_from uuid)
"""

SELECT_CALL = """
SELECT trace_id, project_id, subject_id, query, purpose, budget_tokens, packet, token_count,
       created_at
FROM context_calls
WHERE trace_id = %(trace_id)s AND project_id = %(project_id)s AND subject_id = %(subject_id)s
"""

SELECT_DECISIONS = """
SELECT ordinal, fact_id, event_id, action, reason_code, rank, score, similarity, text_rank,
       recency, tokens, unconfirmed, vector_rank, text_arm_rank, expanded_from
FROM context_traces
WHERE trace_id = %(trace_id)s AND project_id = %(project_id)s AND subject_id = %(subject_id)s
ORDER BY ordinal
"""


def write_trace(
    conn: psycopg.Connection, request: ContextRequest, response: ContextResponse,
    decisions: list[TraceDecision], *, timings_ms: dict[str, float],
) -> None:
    packet = response.packet
    decision_rows = [{name: getattr(d, name) for name in TraceDecision.__slots__}
                     for d in decisions]
    conn.execute(INSERT_CALL_AND_TRACE, {
        "trace_id": response.trace_id,
        "project_id": request.project_id,
        "subject_id": request.subject_id,
        "query": request.query,
        "purpose": request.purpose,
        "budget_tokens": request.budget_tokens,
        "packet": Jsonb(packet.model_dump(mode="json")),
        "token_count": response.token_count,
        "status": packet.status,
        "empty_reason": packet.empty_reason,
        "facts_served": len(packet.facts),
        "episodes_served": len(packet.episodes),
        "candidates": len(decisions),
        "embed_ms": timings_ms["embed"],
        "retrieval_ms": timings_ms["retrieval"],
        "latency_ms": timings_ms["total"],
        "decisions": Jsonb(decision_rows, dumps=_dumps),
    })


def _dumps(value: object) -> str:
    """JSON with UUIDs as strings (the decision rows' ids)."""
    return json.dumps(value, default=str)


def load_trace(
    db: Database, *, project_id: str, subject_id: str, trace_id: UUID
) -> InspectResponse:
    """The call and every decision of ``trace_id`` in this exact scope.

    An unknown id and an id of another scope give the same :class:`TraceNotFound`, so the
    answer never tells whether another tenant's trace exists.
    """
    params = {"trace_id": trace_id, "project_id": project_id, "subject_id": subject_id}
    with db.transaction(project_id, pipeline=True) as conn:
        call_cursor = conn.cursor(row_factory=dict_row).execute(SELECT_CALL, params)
        decision_cursor = conn.cursor(row_factory=dict_row).execute(SELECT_DECISIONS, params)
    call = call_cursor.fetchone()
    if call is None:
        raise TraceNotFound("no trace with this id in this scope")
    return InspectResponse(
        **call, decisions=[TraceDecision(**row) for row in decision_cursor.fetchall()])
