"""``POST /v1/forget``: stop serving, or erase, a subject's memory or one fact.

- ``disable`` moves the facts along the lifecycle to ``disabled`` (reversible: ``disabled →
  active``); for a subject, every fact that may become disabled does, the others (superseded,
  already disabled) keep their status, its open conflict sets (left without an active fact)
  are resolved, and the subject itself is marked disabled
  (``disabled_subjects``): nothing of it — facts, episodes, the turns around them — is
  served until it is enabled (or one of its facts is brought back to active), and each context
  call on it warns ``subject_disabled``.
- ``enable`` undoes ``disable``: for a subject, its mark goes — its episodes are served again,
  whether or not it holds any fact — and each of its ``disabled`` facts becomes active (a
  conflict set opens where one meets an active fact of another value, as the status route
  does); for a fact, it becomes active (``disabled → active``).
- ``delete`` is the right to erasure. Of a **subject**: every row of the subject goes — facts,
  events, conflict sets, context calls with their trace rows and feedback, stats rollups — in
  one transaction that holds the subject's exclusive lock (writers of the subject wait). Of a
  **fact**: the row goes, with the trace rows that name it; it is cut out of the stored packets
  that served it and out of conflict sets (a set left with fewer than two facts goes); a fact
  that superseded it loses the link (``ON DELETE SET NULL``); its id is cut out of the
  calls' feedback (``used``, ``missing``). Afterwards no packet, trace or feedback returned by
  the API holds the erased fact's id.

An erasure leaves a receipt (``erasure_receipts``): counts per table and the time, no
content — not even the subject or fact id.
"""

import logging
import uuid
from typing import Literal
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from haki.db import Database
from haki.errors import FactNotFound
from haki.memory.api import ForgetRequest, ForgetResponse, check_scope
from haki.memory.conflicts import resolve_subject_sets
from haki.memory.facts import SELECT_FACT, change_status
from haki.memory.lifecycle import set_subject_disabled, transition_subject
from haki.memory.store import (
    lock_scopes,
    lock_subject_exclusive,
    transaction_time,
    write_transaction,
)
from haki.models import TRACE_ARRAYS, TRACE_COLUMNS

log = logging.getLogger(__name__)

#: Counts of an erasure, in the receipt's column order.
RECEIPT_COUNTS = (
    "facts", "events", "conflict_sets", "conflict_sets_updated", "context_calls",
    "context_calls_redacted", "context_traces", "stats_rollups", "call_feedback",
)

#: Every row of one subject, in one statement. Indexes: facts_scope_idx, events_scope_idx,
#: conflict_sets_scope_idx, context_calls_scope_idx, then the calls' trace rows by the
#: context_traces primary key (project_id, trace_id, created_at), the stats_rollups
#: primary key (project_id, subject_id, bucket_start), the disabled_subjects primary key (its
#: mark, if any, goes uncounted). ``context_traces`` counts decisions (a
#: call's trace row holds all of them).
ERASE_SUBJECT = """
WITH facts_gone AS (
    DELETE FROM facts WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
    RETURNING 1
), events_gone AS (
    DELETE FROM events WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
    RETURNING 1
), sets_gone AS (
    DELETE FROM conflict_sets WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
    RETURNING 1
), calls_gone AS (
    DELETE FROM context_calls WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
    RETURNING trace_id, created_at
), traces_gone AS (
    DELETE FROM context_traces AS t USING calls_gone AS c
    WHERE t.trace_id = c.trace_id AND t.project_id = %(project_id)s
    RETURNING cardinality(t.ordinals) AS decisions
), rollups_gone AS (
    DELETE FROM stats_rollups WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
    RETURNING 1
), mark_gone AS (
    DELETE FROM disabled_subjects
    WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
)
SELECT (SELECT count(*) FROM facts_gone) AS facts,
       (SELECT count(*) FROM events_gone) AS events,
       (SELECT count(*) FROM sets_gone) AS conflict_sets,
       0 AS conflict_sets_updated,
       (SELECT count(*) FROM calls_gone) AS context_calls,
       0 AS context_calls_redacted,
       (SELECT coalesce(sum(decisions), 0) FROM traces_gone) AS context_traces,
       (SELECT count(*) FROM rollups_gone) AS stats_rollups
"""

#: Each array of a trace row with one fact's decisions left out (``d``: its elements, by
#: column name, and their position ``n``).
_KEPT_DECISIONS = ",\n               ".join(
    f"coalesce(array_agg(d.{column} ORDER BY d.n), '{{}}')" for column, _ in TRACE_ARRAYS)
_ROW_ARRAYS = ", ".join(f"t.{column}" for column, _ in TRACE_ARRAYS)

#: One fact and every mention of it, in one statement. The fact's mentions are all in its own
#: scope (the assembler and the write rules never cross it): the scope's calls
#: (context_calls_scope_idx) lead to their trace rows (context_traces primary key) and packets;
#: its conflict sets come from conflict_sets_scope_idx; the fact goes by primary key. A packet
#: keeps its other facts, in order; a set keeps its other facts, or goes when fewer than two
#: would be left. The two statements on conflict_sets touch disjoint rows.
ERASE_FACT = f"""
WITH calls AS (
    SELECT trace_id, created_at FROM context_calls
    WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
), mentions AS (
    SELECT t.trace_id, t.created_at,
           cardinality(array_positions(t.fact_ids, %(id)s::uuid)) AS decisions
    FROM context_traces AS t JOIN calls AS c ON t.trace_id = c.trace_id
    WHERE t.project_id = %(project_id)s AND %(id)s::uuid = ANY (t.fact_ids)
), traces_gone AS (
    UPDATE context_traces AS t
    SET ({TRACE_COLUMNS}) = (
        SELECT {_KEPT_DECISIONS}
        FROM unnest({_ROW_ARRAYS}) WITH ORDINALITY AS d({TRACE_COLUMNS}, n)
        WHERE d.fact_ids IS DISTINCT FROM %(id)s::uuid)
    FROM mentions AS m
    WHERE t.trace_id = m.trace_id AND t.created_at = m.created_at
      AND t.project_id = %(project_id)s
    RETURNING m.decisions
), redacted AS (
    UPDATE context_calls
    SET packet = jsonb_set(packet, '{{facts}}', (
        SELECT coalesce(jsonb_agg(served.fact ORDER BY served.n), '[]'::jsonb)
        FROM jsonb_array_elements(packet -> 'facts') WITH ORDINALITY AS served(fact, n)
        WHERE served.fact ->> 'id' <> %(id)s::text))
    WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
      AND packet -> 'facts' @> %(served)s
    RETURNING 1
), sets_updated AS (
    UPDATE conflict_sets SET fact_ids = array_remove(fact_ids, %(id)s)
    WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
      AND %(id)s = ANY (fact_ids) AND cardinality(fact_ids) > 2
    RETURNING 1
), sets_gone AS (
    DELETE FROM conflict_sets
    WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
      AND %(id)s = ANY (fact_ids) AND cardinality(fact_ids) <= 2
    RETURNING 1
), fact_gone AS (
    DELETE FROM facts WHERE project_id = %(project_id)s AND id = %(id)s
    RETURNING 1
)
SELECT (SELECT count(*) FROM fact_gone) AS facts,
       0 AS events,
       (SELECT count(*) FROM sets_gone) AS conflict_sets,
       (SELECT count(*) FROM sets_updated) AS conflict_sets_updated,
       0 AS context_calls,
       (SELECT count(*) FROM redacted) AS context_calls_redacted,
       (SELECT coalesce(sum(decisions), 0) FROM traces_gone) AS context_traces,
       0 AS stats_rollups
"""

#: A subject's disabled facts, oldest recorded first (facts_scope_idx).
#: The feedback of an erased subject's calls. A statement of its own, after the erasure's: it
#: sees feedback committed while the erasure waited for its locks (haki.calls.feedback).
ERASE_SUBJECT_FEEDBACK = """
DELETE FROM call_feedback WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
"""
#: An erased fact's id cut out of the feedback that names it (a statement of its own, as
#: above), dated now so that the aggregation re-folds those calls' hours.
REDACT_FACT_FEEDBACK = """
UPDATE call_feedback
SET used = array_remove(used, %(id)s), missing = array_remove(missing, %(id)s),
    updated_at = now()
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
  AND (%(id)s = ANY (used) OR %(id)s = ANY (missing))
"""

#: A subject's disabled facts, oldest recorded first (facts_scope_idx).
SELECT_DISABLED = """
SELECT id FROM facts
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND status = 'disabled'
ORDER BY recorded_from, id
"""

INSERT_RECEIPT = f"""
INSERT INTO erasure_receipts (id, project_id, target, {", ".join(RECEIPT_COUNTS)}, created_at)
VALUES (%(id)s, %(project_id)s, %(target)s, {", ".join(f"%({c})s" for c in RECEIPT_COUNTS)},
        %(created_at)s)
"""


def forget(db: Database, project_id: str, request: ForgetRequest) -> ForgetResponse:
    """``POST /v1/forget``. An unknown fact (or another project's) is :class:`FactNotFound`;
    a subject with nothing stored is forgotten with zero counts (a retried erasure succeeds)."""
    check_scope(project_id, request)
    target: Literal["subject", "fact"] = "subject" if request.subject_id is not None else "fact"
    with write_transaction(db, project_id) as conn:
        at = transaction_time(conn)
        if request.subject_id is not None:
            lock_subject_exclusive(conn, project_id, request.subject_id)
            if request.mode == "disable":
                counts = {"facts": len(transition_subject(
                    conn, project_id, request.subject_id, "disabled"))}
                resolve_subject_sets(conn, project_id, request.subject_id)
                set_subject_disabled(conn, project_id, request.subject_id, True)
            elif request.mode == "enable":
                set_subject_disabled(conn, project_id, request.subject_id, False)
                disabled = conn.execute(SELECT_DISABLED, {
                    "project_id": project_id, "subject_id": request.subject_id}).fetchall()
                for (fact_id,) in disabled:
                    change_status(conn, project_id, fact_id, "active")
                counts = {"facts": len(disabled)}
            else:
                scope: dict[str, object] = {"project_id": project_id,
                                            "subject_id": request.subject_id}
                counts = _erase(conn, ERASE_SUBJECT, scope)
                counts["call_feedback"] = conn.execute(ERASE_SUBJECT_FEEDBACK, scope).rowcount
        else:
            assert request.fact_id is not None
            if request.mode != "delete":
                change_status(conn, project_id, request.fact_id,
                              "disabled" if request.mode == "disable" else "active")
                counts = {"facts": 1}
            else:
                counts = _erase_fact(conn, project_id, request.fact_id)
        receipt_id = None
        if request.mode == "delete":
            receipt_id = uuid.uuid4()
            conn.execute(INSERT_RECEIPT, {"id": receipt_id, "project_id": project_id,
                                          "target": target, "created_at": at, **counts})
    log.info("forgot a %s (%s): %s", target, request.mode, counts)
    return ForgetResponse(receipt_id=receipt_id, target=target, mode=request.mode,
                          counts=counts, forgotten_at=at)


def _erase_fact(conn: psycopg.Connection, project_id: str, fact_id: UUID) -> dict[str, int]:
    found = conn.execute(SELECT_FACT, {"project_id": project_id, "id": fact_id}).fetchone()
    if found is None:
        raise FactNotFound("no fact with this id in this project")
    subject_id, predicate = found[1], found[2]
    lock_scopes(conn, project_id, {subject_id}, {(subject_id, predicate)})
    params = {"project_id": project_id, "subject_id": subject_id, "id": fact_id,
              "served": Jsonb([{"id": str(fact_id)}])}
    counts = _erase(conn, ERASE_FACT, params)
    if counts["facts"] == 0:  # erased by a concurrent request after it was read
        raise FactNotFound("no fact with this id in this project")
    counts["call_feedback"] = conn.execute(REDACT_FACT_FEEDBACK, params).rowcount
    return counts


def _erase(conn: psycopg.Connection, statement: str, params: dict[str, object]) -> dict[str, int]:
    row = conn.cursor(row_factory=dict_row).execute(statement, params).fetchone()
    assert row is not None
    return {name: int(row[name]) for name in RECEIPT_COUNTS if name in row}
