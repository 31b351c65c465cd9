"""Conflict sets: opening one when a fact contradicts the active fact, listing them, resolving
one (``POST /v1/conflicts/{id}/resolve``, ``haki resolve`` and resolved sets of ``haki load``
all go through :func:`resolve_conflict`).

A fact of an **open** set is never served (``/v1/context`` blocks it and warns); resolving the
set keeps one fact active and supersedes the others. An open set holds active facts only: a
fact that leaves ``active`` through its status leaves its open sets, and a set left with one
fact is resolved (it keeps both facts for the record; the one still active is served again).
"""

import uuid
from typing import Any
from uuid import UUID

import psycopg

from haki.db import Database
from haki.errors import (
    ConflictFactNotActive,
    ConflictNotFound,
    ConflictNotOpen,
    FactNotFound,
    ValidationFailed,
)
from haki.memory.api import (
    ConflictListRequest,
    ConflictPage,
    ConflictView,
    ResolveRequest,
    ResolveResponse,
    check_scope,
)
from haki.memory.lifecycle import transition
from haki.memory.pagination import read_page
from haki.memory.store import lock_scopes, transaction_time, write_transaction

#: Reason of the sets the write rules open.
CONTRADICTION_REASON = "different value written without supersedes_id"

#: Shared with ``haki load``, whose documents carry their own set ids (a reload writes nothing).
INSERT_CONFLICT = """
INSERT INTO conflict_sets (id, project_id, subject_id, fact_ids, reason)
VALUES (%(id)s, %(project_id)s, %(subject_id)s, %(fact_ids)s, %(reason)s)
ON CONFLICT (project_id, id) DO NOTHING
"""

#: The newest open set of the scope holding one of the given facts (conflict_sets_open_idx).
SELECT_OPEN_SET_OF = """
SELECT id, fact_ids FROM conflict_sets
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND status = 'open'
  AND fact_ids && %(fact_ids)s
ORDER BY created_at DESC, id
LIMIT 1
FOR UPDATE
"""

SET_FACT_IDS = "UPDATE conflict_sets SET fact_ids = %(fact_ids)s WHERE id = %(id)s"

#: One set by id (primary key), locked for its resolution.
SELECT_SET = """
SELECT id, subject_id, fact_ids, status FROM conflict_sets
WHERE project_id = %(project_id)s AND id = %(id)s
"""
SELECT_SET_FOR_UPDATE = SELECT_SET + "FOR UPDATE"

#: The members of a set with their keys (primary key).
SELECT_MEMBERS = """
SELECT id, subject_id, predicate, status FROM facts
WHERE project_id = %(project_id)s AND id = ANY (%(ids)s)
"""
SELECT_MEMBERS_FOR_UPDATE = SELECT_MEMBERS + "FOR UPDATE"

#: A fact that left ``active``, out of the scope's open sets (conflict_sets_open_idx): a set of
#: more than two facts drops it, a set of two is resolved as it stands.
LEAVE_OPEN_SETS = """
UPDATE conflict_sets
SET fact_ids = CASE WHEN cardinality(fact_ids) > 2 THEN array_remove(fact_ids, %(id)s)
                    ELSE fact_ids END,
    status = CASE WHEN cardinality(fact_ids) > 2 THEN status ELSE 'resolved' END,
    resolved_at = CASE WHEN cardinality(fact_ids) > 2 THEN resolved_at ELSE now() END
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND status = 'open'
  AND %(id)s = ANY (fact_ids)
"""

#: Every open set of a subject resolved, its facts kept for the record (the subject's facts all
#: left ``active``: disabled as a whole).
RESOLVE_SUBJECT_SETS = """
UPDATE conflict_sets SET status = 'resolved', resolved_at = now()
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s AND status = 'open'
"""

MARK_RESOLVED = """
UPDATE conflict_sets SET status = 'resolved', resolved_at = now()
WHERE project_id = %(project_id)s AND id = %(id)s
"""

#: ``GET /v1/conflicts``: one scope's sets of one status in (created_at, id) order after the
#: cursor (conflict_sets_scope_idx), each with its facts in the set's order (primary key
#: of facts).
LIST_CONFLICTS = """
SELECT c.id, c.subject_id, c.status, c.reason, c.created_at, c.resolved_at,
       coalesce((
           SELECT jsonb_agg(jsonb_build_object(
                      'id', f.id, 'predicate', f.predicate, 'value', f.value,
                      'status', f.status) ORDER BY m.n)
           FROM unnest(c.fact_ids) WITH ORDINALITY AS m(fact_id, n)
           JOIN facts AS f ON f.id = m.fact_id AND f.project_id = c.project_id
       ), '[]'::jsonb) AS facts
FROM conflict_sets AS c
WHERE c.project_id = %(project_id)s AND c.subject_id = %(subject_id)s
  AND c.status = %(status)s
  AND (%(after_at)s::timestamptz IS NULL OR (c.created_at, c.id) > (%(after_at)s, %(after_id)s))
ORDER BY c.created_at, c.id
LIMIT %(limit)s
"""


def open_conflict(
    conn: psycopg.Connection, project_id: str, subject_id: str, fact_ids: list[UUID]
) -> UUID:
    """The open set that holds ``fact_ids``: the scope's newest open set already holding one of
    them gains the others; without one, a new set. Returns its id."""
    params = {"project_id": project_id, "subject_id": subject_id, "fact_ids": fact_ids}
    row = conn.execute(SELECT_OPEN_SET_OF, params).fetchone()
    if row is not None:
        set_id: UUID = row[0]
        members: list[UUID] = row[1]
        merged = list(dict.fromkeys([*members, *fact_ids]))
        if merged != members:
            conn.execute(SET_FACT_IDS, {"id": set_id, "fact_ids": merged})
        return set_id
    set_id = uuid.uuid4()
    conn.execute(INSERT_CONFLICT, {**params, "id": set_id, "reason": CONTRADICTION_REASON})
    return set_id


def leave_open_sets(
    conn: psycopg.Connection, project_id: str, subject_id: str, fact_id: UUID
) -> None:
    """The fact has left ``active``: it leaves the scope's open sets (see the module)."""
    conn.execute(LEAVE_OPEN_SETS,
                 {"project_id": project_id, "subject_id": subject_id, "id": fact_id})


def resolve_subject_sets(conn: psycopg.Connection, project_id: str, subject_id: str) -> None:
    """Every fact of the subject has left ``active`` (it is disabled): each of its open sets,
    left with no active fact, is resolved (see the module)."""
    conn.execute(RESOLVE_SUBJECT_SETS, {"project_id": project_id, "subject_id": subject_id})


def resolve_conflict(
    conn: psycopg.Connection, project_id: str, conflict_id: UUID, keep_fact_id: UUID
) -> list[UUID]:
    """Resolve an open set in the caller's transaction: ``keep_fact_id``, an active fact of the
    set, stays active, the set's other facts become superseded where the lifecycle allows it
    (facts already superseded or disabled keep their status), the set is resolved.

    Returns ``[keep_fact_id, *ids superseded]``. Raises :class:`ConflictNotFound` (unknown here,
    or another project's), :class:`ConflictNotOpen`, :class:`ValidationFailed` when the fact to
    keep is not in the set, :class:`ConflictFactNotActive` when it is no longer active (a set
    stored before open sets were kept to active facts, or loaded so).
    """
    params: dict[str, Any] = {"project_id": project_id, "id": conflict_id}
    found = conn.execute(SELECT_SET, params).fetchone()
    if found is None:
        raise ConflictNotFound("no conflict set with this id in this project")
    members = conn.execute(SELECT_MEMBERS, {**params, "ids": found[2]}).fetchall()
    lock_scopes(conn, project_id, {m[1] for m in members}, {(m[1], m[2]) for m in members})

    locked = conn.execute(SELECT_SET_FOR_UPDATE, params).fetchone()
    if locked is None:
        raise ConflictNotFound("no conflict set with this id in this project")
    _, _, fact_ids, status = locked
    if status != "open":
        raise ConflictNotOpen(f"conflict set {conflict_id} is already resolved")
    if keep_fact_id not in fact_ids:
        raise ValidationFailed(
            f"field 'keep_fact_id': fact {keep_fact_id} is not one of the facts of conflict "
            f"set {conflict_id}")
    statuses = {row[0]: row[3] for row in conn.execute(
        SELECT_MEMBERS_FOR_UPDATE, {**params, "ids": fact_ids}).fetchall()}
    if keep_fact_id not in statuses:
        raise FactNotFound(f"fact {keep_fact_id} no longer exists")
    if statuses[keep_fact_id] != "active":
        raise ConflictFactNotActive(
            f"field 'keep_fact_id': fact {keep_fact_id} is {statuses[keep_fact_id]}, no longer "
            "an active fact of the set; keep one of its active facts")
    superseded = transition(
        conn, project_id, [i for i in fact_ids if i != keep_fact_id], "superseded")
    conn.execute(MARK_RESOLVED, params)
    return [keep_fact_id, *superseded]


def resolve(
    db: Database, project_id: str, conflict_id: UUID, request: ResolveRequest
) -> ResolveResponse:
    """``POST /v1/conflicts/{conflict_id}/resolve``, in one transaction."""
    check_scope(project_id, request)
    with write_transaction(db, project_id) as conn:
        kept, *superseded = resolve_conflict(conn, project_id, conflict_id, request.keep_fact_id)
        resolved_at = transaction_time(conn)
    return ResolveResponse(conflict_id=conflict_id, kept_fact_id=kept,
                           superseded_fact_ids=superseded, resolved_at=resolved_at)


def list_conflicts(db: Database, project_id: str, request: ConflictListRequest) -> ConflictPage:
    """``GET /v1/conflicts``: one page of a scope's sets, oldest first."""
    check_scope(project_id, request)
    conflicts, next_cursor = read_page(db, project_id, LIST_CONFLICTS, request,
                                       view=ConflictView, sort_key=("created_at", "id"))
    return ConflictPage(conflicts=conflicts, next_cursor=next_cursor)
