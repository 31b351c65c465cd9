"""The fact lifecycle (SPEC §11): which status may follow which, and the one statement that
moves facts along it.

Every transition adds 1 to ``version``. ``recorded_to`` (when the store stopped asserting the
fact) is set when a fact becomes ``superseded`` — the first time only — and cleared when it
becomes ``active`` again; other transitions leave it. ``deleted`` is reached by no transition:
deleting a fact erases it (``POST /v1/forget`` with ``mode: delete``), so no route can read its
value back. The status stays in the model for rows loaded as written (``haki load``).
"""

from uuid import UUID

import psycopg

from haki.errors import IllegalStatusTransition
from haki.models import FactStatus

TRANSITIONS: dict[FactStatus, frozenset[FactStatus]] = {
    "candidate": frozenset({"active", "superseded", "disputed", "disabled"}),
    "active": frozenset({"superseded", "disputed", "disabled"}),
    "superseded": frozenset({"disputed"}),
    "disputed": frozenset({"active", "superseded", "disabled"}),
    "disabled": frozenset({"active"}),
    "deleted": frozenset(),
}


def sources(target: FactStatus) -> list[str]:
    """The statuses a fact may leave for ``target``."""
    return sorted(status for status, targets in TRANSITIONS.items() if target in targets)


def check_transition(fact_id: UUID, current: FactStatus, target: FactStatus) -> None:
    if target == "deleted":
        raise IllegalStatusTransition(
            f"fact {fact_id} cannot become deleted through its status: deleting a fact erases "
            "it (POST /v1/forget with mode delete)")
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
        WHEN %(status)s::text = 'superseded' THEN coalesce(recorded_to, now())
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


#: A subject disabled as a whole (``POST /v1/forget``, ``disable``): nothing of it is served
#: while its row is in disabled_subjects — the candidate functions gate on it.
DISABLE_SUBJECT = """
INSERT INTO disabled_subjects (project_id, subject_id)
VALUES (%(project_id)s, %(subject_id)s)
ON CONFLICT DO NOTHING
"""
ENABLE_SUBJECT = """
DELETE FROM disabled_subjects WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
"""


def set_subject_disabled(
    conn: psycopg.Connection, project_id: str, subject_id: str, disabled: bool
) -> None:
    """Mark the subject disabled, or clear the mark (a fact of it brought back to active)."""
    conn.execute(DISABLE_SUBJECT if disabled else ENABLE_SUBJECT,
                 {"project_id": project_id, "subject_id": subject_id})
