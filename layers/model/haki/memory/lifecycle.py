"""The fact lifecycle (SPEC §11): which status may follow which, and the one statement that
moves facts along it.

Every transition adds 1 to ``version``. ``recorded_to`` (when the store stopped asserting the
fact) is set when a fact becomes ``superseded`` or ``deleted`` — the first time only — and
cleared when it becomes ``active`` again; other transitions leave it. ``deleted`` is a
tombstone: the row stays, is never served and can never change again (erasing the row is
``POST /v1/forget`` with ``mode: delete``).
"""

from uuid import UUID

import psycopg

from haki.errors import IllegalStatusTransition
from haki.models import FactStatus

TRANSITIONS: dict[FactStatus, frozenset[FactStatus]] = {
    "candidate": frozenset({"active", "superseded", "disputed", "disabled", "deleted"}),
    "active": frozenset({"superseded", "disputed", "disabled", "deleted"}),
    "superseded": frozenset({"disputed", "deleted"}),
    "disputed": frozenset({"active", "superseded", "disabled", "deleted"}),
    "disabled": frozenset({"active", "deleted"}),
    "deleted": frozenset(),
}


def sources(target: FactStatus) -> list[str]:
    """The statuses a fact may leave for ``target``."""
    return sorted(status for status, targets in TRANSITIONS.items() if target in targets)


def check_transition(fact_id: UUID, current: FactStatus, target: FactStatus) -> None:
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "none: it is terminal"
        raise IllegalStatusTransition(
            f"fact {fact_id} is {current}; it cannot become {target} "
            f"(from {current}: {allowed})")


_SET_STATUS = """
UPDATE facts
SET status = %(status)s,
    version = version + 1,
    recorded_to = CASE
        WHEN %(status)s::text IN ('superseded', 'deleted') THEN coalesce(recorded_to, now())
        WHEN %(status)s::text = 'active' THEN NULL
        ELSE recorded_to END
WHERE project_id = %(project_id)s AND status = ANY (%(sources)s) AND {which}
RETURNING id
"""
#: Facts by id (primary key).
TRANSITION_FACTS = _SET_STATUS.format(which="id = ANY (%(ids)s)")
#: Every fact of a subject (facts_scope_idx: project, subject, status).
TRANSITION_SUBJECT = _SET_STATUS.format(which="subject_id = %(subject_id)s")


def transition(
    conn: psycopg.Connection, project_id: str, fact_ids: list[UUID], target: FactStatus
) -> list[UUID]:
    """Move the facts whose status allows it to ``target``; return the ids moved. Callers that
    must refuse an illegal move call :func:`check_transition` first."""
    rows = conn.execute(TRANSITION_FACTS, {
        "status": target, "project_id": project_id, "sources": sources(target),
        "ids": fact_ids}).fetchall()
    return [row[0] for row in rows]


def transition_subject(
    conn: psycopg.Connection, project_id: str, subject_id: str, target: FactStatus
) -> list[UUID]:
    """Move every fact of the subject whose status allows it to ``target``."""
    rows = conn.execute(TRANSITION_SUBJECT, {
        "status": target, "project_id": project_id, "sources": sources(target),
        "subject_id": subject_id}).fetchall()
    return [row[0] for row in rows]
