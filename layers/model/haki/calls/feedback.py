"""``POST /v1/calls/{trace_id}/feedback``: which served items the answer used and which memory
the call should have served, stored per (call, source); a repeat replaces.

Checks, in the call's exact scope (the key's project and the subject named): the call exists
(else the same 404 as inspect), every ``used`` id was served by it (a fact or an episode of its
packet), every ``missing`` id is a fact or an event of its subject that the call did not
serve; otherwise 422 ``invalid_feedback_ids`` naming them. An id of another subject or project
reads as unknown.

Concurrency with the erasure (``haki.memory.forget``): the write holds the subject's shared
lock, so a subject's erasure waits for it (and a later write finds the call gone), and it locks
the facts it names (``FOR KEY SHARE``) before reading the packet, so a fact's erasure either
comes first (the fact is then unknown, and no longer in the packet) or waits for the write and
then cuts the id out of the stored feedback.
"""

from datetime import datetime
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from haki.assembler.trace import UNBOUNDED, trace_time_bounds
from haki.calls.models import FeedbackRequest
from haki.db import Database
from haki.errors import InvalidFeedbackIds, TraceNotFound
from haki.memory.api import check_scope
from haki.memory.store import lock_scopes, write_transaction
from haki.models import CallFeedback

#: The facts of the subject among the ids, locked against their erasure until the commit.
LOCK_FACTS = """
SELECT id FROM facts
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND id = ANY(%(ids)s)
FOR KEY SHARE
"""
#: The events of the subject among the ids (an event goes only with its subject, whose lock
#: the write holds).
SELECT_EVENTS = """
SELECT id FROM events
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND id = ANY(%(ids)s)
"""
#: The call in its exact scope, within the time bounds of its id (one or two day partitions),
#: and the ids its packet served.
SELECT_CALL = """
SELECT created_at,
       ARRAY(SELECT (f ->> 'id')::uuid FROM jsonb_array_elements(packet -> 'facts') AS f)
       || ARRAY(SELECT (e ->> 'event_id')::uuid
                FROM jsonb_array_elements(packet -> 'episodes') AS e) AS served
FROM context_calls
WHERE trace_id = %(trace_id)s AND project_id = %(project_id)s AND subject_id = %(subject_id)s
  AND created_at >= %(from)s AND created_at < %(until)s
"""
UPSERT_FEEDBACK = """
INSERT INTO call_feedback (project_id, trace_id, call_created_at, source, subject_id, used,
                           missing, verdict, note, updated_at)
VALUES (%(project_id)s, %(trace_id)s, %(call_created_at)s, %(source)s, %(subject_id)s,
        %(used)s, %(missing)s, %(verdict)s, %(note)s, now())
ON CONFLICT (project_id, trace_id, call_created_at, source) DO UPDATE SET
    used = excluded.used, missing = excluded.missing, verdict = excluded.verdict,
    note = excluded.note, updated_at = excluded.updated_at
RETURNING source, used, missing, verdict, note, updated_at
"""


def give_feedback(db: Database, project_id: str, trace_id: UUID,
                  request: FeedbackRequest) -> CallFeedback:
    """Store (or replace) the feedback of ``request.source`` on the call ``trace_id``."""
    check_scope(project_id, request)
    params = {"project_id": project_id, "subject_id": request.subject_id,
              "trace_id": trace_id, "ids": [*request.used, *request.missing]}
    with write_transaction(db, project_id) as conn:
        lock_scopes(conn, project_id, {request.subject_id})
        known = {row[0] for row in conn.execute(LOCK_FACTS, params).fetchall()}
        known.update(row[0] for row in conn.execute(SELECT_EVENTS, params).fetchall())
        created_at, served = _call(conn, params, trace_id)
        _check_ids(request, served=set(served), known=known)
        row = conn.cursor(row_factory=dict_row).execute(UPSERT_FEEDBACK, {
            **params, "call_created_at": created_at, "source": request.source,
            "used": request.used, "missing": request.missing, "verdict": request.verdict,
            "note": request.note}).fetchone()
    assert row is not None
    return CallFeedback(**row)


def _call(conn: psycopg.Connection, params: dict[str, object],
          trace_id: UUID) -> tuple[datetime, list[UUID]]:
    """The call's ``created_at`` and served ids; :class:`TraceNotFound` when it is not in
    this scope. The id's own day first, then every partition (as inspect reads it)."""
    for lo, hi in (trace_time_bounds(trace_id), UNBOUNDED):
        row = conn.execute(SELECT_CALL, {**params, "from": lo, "until": hi}).fetchone()
        if row is not None:
            return row[0], list(row[1])
        if (lo, hi) == UNBOUNDED:
            break
    raise TraceNotFound("no trace with this id in this scope")


def _check_ids(request: FeedbackRequest, *, served: set[UUID], known: set[UUID]) -> None:
    problems = []
    not_served = [str(i) for i in request.used if i not in served]
    if not_served:
        problems.append(f"used: not served by this call: {', '.join(not_served)}")
    unknown = [str(i) for i in request.missing if i not in known]
    if unknown:
        problems.append(f"missing: no fact or event of the call's subject: {', '.join(unknown)}")
    was_served = [str(i) for i in request.missing if i in served]
    if was_served:
        problems.append(f"missing: served by this call: {', '.join(was_served)}")
    if problems:
        raise InvalidFeedbackIds("; ".join(problems))
