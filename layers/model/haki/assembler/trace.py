"""The decision trace: written with the packet in one statement, read back by inspect."""

import os
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from haki.db import Database
from haki.errors import TraceNotFound
from haki.models import (
    TRACE_ARRAYS,
    TRACE_COLUMNS,
    CallFeedback,
    ContextPacket,
    ContextRequest,
    ContextResponse,
    InspectResponse,
    TraceDecision,
)

#: The call row and its trace row in ONE statement: a data-modifying CTE inserts the call, and
#: the outer INSERT writes the call's decisions as one compact row of parallel arrays, each
#: column one array parameter in PostgreSQL's binary format (``%(...)b``: the server reads it
#: without parsing text, and psycopg packs it in a third of the time of the text form), cast
#: to the column's type (actions and reasons are stored as
#: their position in ``haki_trace_actions()`` / ``haki_trace_reasons()``, the one place the
#: codes are mapped). A packet is never stored without its trace, and the write is one
#: statement however many candidates there were. The trace row takes the call's
#: ``created_at`` (RETURNING), so both land in the same day partition.
INSERT_CALL_AND_TRACE = f"""
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
    RETURNING trace_id, project_id, created_at
)
INSERT INTO context_traces (trace_id, created_at, project_id, {TRACE_COLUMNS})
SELECT call.trace_id, call.created_at, call.project_id,
       %(ordinals)b::integer[], %(fact_ids)b::uuid[], %(event_ids)b::uuid[],
       ARRAY(SELECT array_position(haki_trace_actions(), code)::smallint
             FROM unnest(%(actions)b::text[]) WITH ORDINALITY AS u(code, n) ORDER BY n),
       ARRAY(SELECT array_position(haki_trace_reasons(), code)::smallint
             FROM unnest(%(reasons)b::text[]) WITH ORDINALITY AS u(code, n) ORDER BY n),
       %(ranks)b::integer[], %(scores)b::real[], %(similarities)b::real[],
       %(text_ranks)b::real[], %(tokens)b::integer[],
       %(unconfirmed)b::boolean[], %(vector_ranks)b::integer[], %(text_arm_ranks)b::integer[],
       %(expanded_from)b::uuid[]
FROM call
"""

#: How far from the time encoded in a UUIDv7 trace id its call's ``created_at`` may lie: the
#: id is minted just before the call's transaction opens (``now()``), on another clock.
TRACE_TIME_SLACK = timedelta(hours=1)

#: Inspect by id (the primary key): the time bound prunes to the partitions of the id's day;
#: the subject, when the caller names one, must be the call's.
SELECT_CALL = """
SELECT trace_id, project_id, subject_id, query, purpose, budget_tokens, packet, token_count,
       created_at
FROM context_calls
WHERE trace_id = %(trace_id)s AND project_id = %(project_id)s
  AND (%(subject_id)s::text IS NULL OR subject_id = %(subject_id)s)
  AND created_at >= %(from)s AND created_at < %(until)s
"""

#: One row per decision, through the decoding view (context_trace_decisions), by the decision
#: fields' names.
SELECT_DECISIONS = f"""
SELECT {", ".join(field for _, field in TRACE_ARRAYS)}
FROM context_trace_decisions
WHERE trace_id = %(trace_id)s AND project_id = %(project_id)s
  AND created_at >= %(from)s AND created_at < %(until)s
ORDER BY ordinal
"""

#: The call's feedback, one row per source (call_feedback primary key, pruned like the call).
SELECT_FEEDBACK = """
SELECT source, used, missing, verdict, note, updated_at
FROM call_feedback
WHERE project_id = %(project_id)s AND trace_id = %(trace_id)s AND subject_id = %(subject_id)s
  AND call_created_at >= %(from)s AND call_created_at < %(until)s
ORDER BY source
"""


def new_trace_id(at: datetime | None = None) -> UUID:
    """A UUIDv7 (RFC 9562): 48 bits of Unix time in ms (now, or ``at``), version, 74 random
    bits. Time-ordered (the primary key's B-tree appends) and it tells inspect which day
    partition to read."""
    ms = time.time_ns() // 1_000_000 if at is None else int(at.timestamp() * 1000)
    rand = int.from_bytes(os.urandom(10), "big")
    value = ((ms & (1 << 48) - 1) << 80 | 0x7 << 76 | (rand >> 62 & 0xFFF) << 64
             | 0b10 << 62 | rand & (1 << 62) - 1)
    return UUID(int=value)


#: Every partition: the bounds of an id minted before UUIDv7 trace ids.
UNBOUNDED = (datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC))


def parse_trace_id(text: str) -> UUID:
    """The trace id a client gave; text that is no UUID cannot name a trace of this service,
    so it gets the same :class:`TraceNotFound` as an unknown id."""
    try:
        return UUID(text)
    except ValueError:
        raise TraceNotFound("no trace with this id in this scope") from None


def trace_time_bounds(trace_id: UUID) -> tuple[datetime, datetime]:
    """The ``created_at`` range a call of this id can lie in: +- the slack around the time of
    a UUIDv7; unbounded for an id of another version (minted by an older version).

    A UUIDv7 dated where no call can be (its 48-bit time reaches year 10889; a datetime and
    the service's clock stop at 9999) is no trace of this service: :class:`TraceNotFound`.
    """
    if trace_id.version != 7:
        return UNBOUNDED
    try:
        at = datetime.fromtimestamp((trace_id.int >> 80) / 1000, tz=UTC)
        return at - TRACE_TIME_SLACK, at + TRACE_TIME_SLACK
    except (ValueError, OverflowError):
        raise TraceNotFound("no trace with this id in this scope") from None


def write_trace(
    conn: psycopg.Connection, request: ContextRequest, response: ContextResponse,
    decisions: list[TraceDecision], *, timings_ms: dict[str, float],
) -> None:
    packet = response.packet
    conn.execute(INSERT_CALL_AND_TRACE, {
        "trace_id": response.trace_id,
        "project_id": request.project,
        "subject_id": request.subject_id,
        "query": request.query,
        "purpose": request.purpose,
        "budget_tokens": request.budget_tokens,
        "packet": Jsonb(packet, dumps=_packet_json),
        "token_count": response.token_count,
        "status": packet.status,
        "empty_reason": packet.empty_reason,
        "facts_served": len(packet.facts),
        "episodes_served": len(packet.episodes),
        "candidates": len(decisions),
        "embed_ms": timings_ms["embed"],
        "retrieval_ms": timings_ms["retrieval"],
        "latency_ms": timings_ms["total"],
        **trace_arrays(decisions),
    })


def _packet_json(packet: ContextPacket) -> str:
    """The packet as JSON, by pydantic's serialiser (the same document as ``json.dumps`` of
    ``model_dump(mode="json")``, in a third of the time)."""
    return packet.model_dump_json()


_FIELDS = attrgetter(*(field for _, field in TRACE_ARRAYS))


def trace_arrays(decisions: Sequence[TraceDecision]) -> dict[str, list[object]]:
    """The trace row's array columns, one list per column, in decision order."""
    columns = list(zip(*map(_FIELDS, decisions), strict=True)) or [()] * len(TRACE_ARRAYS)
    return {column: list(values)
            for (column, _), values in zip(TRACE_ARRAYS, columns, strict=True)}


def load_trace(
    db: Database, *, project_id: str, subject_id: str | None, trace_id: UUID,
    reader: Database | None = None,
) -> InspectResponse:
    """The call and every decision of ``trace_id`` in this exact scope (the project's, and
    the subject's when ``subject_id`` is given: trace ids are unique, so it may be left out).

    An unknown id and an id of another scope give the same :class:`TraceNotFound`, so the
    answer never tells whether another tenant's trace exists. With a ``reader`` (a read
    replica) the trace is read there first; a replica lags the writer, so a trace it does not
    hold (yet) is looked up on the writer ``db`` before answering not found.
    """
    if reader is not None:
        try:
            return _load_trace(reader, project_id=project_id, subject_id=subject_id,
                               trace_id=trace_id)
        except TraceNotFound:
            pass
    return _load_trace(db, project_id=project_id, subject_id=subject_id, trace_id=trace_id)


def _load_trace(
    db: Database, *, project_id: str, subject_id: str | None, trace_id: UUID
) -> InspectResponse:
    # The id's own day first (one or two partitions); a row whose time was changed after the
    # fact (a clock far off, a backfill, a test ageing its calls) is still found by one more
    # look across every partition before the answer is "not found".
    for lo, hi in (trace_time_bounds(trace_id), UNBOUNDED):
        params = {"trace_id": trace_id, "project_id": project_id, "subject_id": subject_id,
                  "from": lo, "until": hi}
        with db.transaction(project_id, pipeline=True) as conn:
            call_cursor = conn.cursor(row_factory=dict_row).execute(SELECT_CALL, params)
            decision_cursor = conn.cursor(row_factory=dict_row).execute(
                SELECT_DECISIONS, params)
            feedback_cursor = conn.cursor(row_factory=dict_row).execute(
                SELECT_FEEDBACK, params)
        call = call_cursor.fetchone()
        if call is not None:
            return InspectResponse(
                **call, decisions=[TraceDecision(**row) for row in decision_cursor.fetchall()],
                feedback=[CallFeedback(**row) for row in feedback_cursor.fetchall()])
        if (lo, hi) == UNBOUNDED:
            break
    raise TraceNotFound("no trace with this id in this scope")
