"""``GET /v1/subjects``: the subjects of a project that hold memory (facts or events), by id,
keyset-paged, each with its counts and its last activity. The console lists them; an admin
finds whom a project remembers.

A subject is not a row of its own: it exists while a fact or an event names it, so a subject
erased by ``POST /v1/forget`` leaves the listing, and a disabled one stays in it, marked.
"""

from datetime import datetime

from psycopg.rows import dict_row

from haki.db import Database
from haki.memory.api import _Body, _Paged, check_scope
from haki.memory.pagination import decode_text_cursor, encode_text_cursor


class SubjectListRequest(_Paged):
    """A page of the project's subjects (no filter)."""


class SubjectView(_Body):
    subject_id: str
    #: Active facts (what a context call can serve).
    facts: int
    #: Stored events (the subject's episodes).
    events: int
    #: Open conflict sets (their facts are held back until resolved).
    open_conflicts: int
    #: The latest of the newest event's ``occurred_at`` and the newest fact's
    #: ``recorded_from`` or ``last_reinforced_at``.
    last_activity_at: datetime
    #: ``POST /v1/forget`` ``disable`` holds the subject back: nothing of it is served.
    disabled: bool


class SubjectPage(_Body):
    subjects: list[SubjectView]
    #: Pass as ``cursor`` for the next page; ``None`` on the last one.
    next_cursor: str | None


#: The plan, per page of n subjects, never a scan of the project:
#: 1. ``ids`` walks the distinct subject ids after the cursor as a loose index scan: each step
#:    is two ``min(subject_id) ... WHERE subject_id > previous`` probes, one into
#:    ``facts_scope_idx (project_id, subject_id, status)``, one into ``events_scope_idx
#:    (project_id, subject_id, occurred_at, seq)`` (each an index-only scan stopping at its first
#:    entry), and the outer LIMIT stops the recursion after n + 1 ids (one more tells whether
#:    a next page exists). PostgreSQL has no skip scan for DISTINCT, so a plain
#:    ``SELECT DISTINCT subject_id`` would read every row of the project.
#: 2. Per listed subject, its counts read only that subject's entries: the events' count and
#:    newest ``occurred_at`` from ``events_scope_idx`` alone (index-only); the facts' from
#:    ``facts_scope_idx`` with their rows (``last_reinforced_at`` is in no index); open sets
#:    from ``conflict_sets_open_idx``; the disabled mark is a primary-key probe.
#: So a page costs O(n · log N) for the ids plus the listed subjects' own rows, whatever the
#: size of the project. Every statement names the key's project (row-level security adds it
#: again).
LIST_SUBJECTS = """
WITH RECURSIVE ids(subject_id) AS (
    SELECT least(
        (SELECT min(subject_id) FROM facts
         WHERE project_id = %(project_id)s AND subject_id > %(after)s),
        (SELECT min(subject_id) FROM events
         WHERE project_id = %(project_id)s AND subject_id > %(after)s))
  UNION ALL
    SELECT least(
        (SELECT min(f.subject_id) FROM facts f
         WHERE f.project_id = %(project_id)s AND f.subject_id > ids.subject_id),
        (SELECT min(e.subject_id) FROM events e
         WHERE e.project_id = %(project_id)s AND e.subject_id > ids.subject_id))
    FROM ids WHERE ids.subject_id IS NOT NULL
), page AS (
    SELECT subject_id FROM ids WHERE subject_id IS NOT NULL LIMIT %(limit)s
)
SELECT page.subject_id,
       fact.active AS facts,
       event.total AS events,
       (SELECT count(*) FROM conflict_sets c
        WHERE c.project_id = %(project_id)s AND c.subject_id = page.subject_id
          AND c.status = 'open') AS open_conflicts,
       greatest(fact.latest, event.latest) AS last_activity_at,
       EXISTS (SELECT 1 FROM disabled_subjects d
               WHERE d.project_id = %(project_id)s AND d.subject_id = page.subject_id)
           AS disabled
FROM page
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE f.status = 'active') AS active,
           max(greatest(f.recorded_from, f.last_reinforced_at)) AS latest
    FROM facts f WHERE f.project_id = %(project_id)s AND f.subject_id = page.subject_id
) fact
CROSS JOIN LATERAL (
    SELECT count(*) AS total, max(e.occurred_at) AS latest
    FROM events e WHERE e.project_id = %(project_id)s AND e.subject_id = page.subject_id
) event
ORDER BY page.subject_id
"""


def list_subjects(db: Database, project_id: str, request: SubjectListRequest) -> SubjectPage:
    """One page of the project's subjects, by id."""
    check_scope(project_id, request)
    after = decode_text_cursor(request.cursor)
    with db.transaction(project_id) as conn:
        rows = conn.cursor(row_factory=dict_row).execute(LIST_SUBJECTS, {
            "project_id": project_id, "after": after or "", "limit": request.limit + 1,
        }).fetchall()
    page = [SubjectView.model_validate(row) for row in rows[:request.limit]]
    more = len(rows) > request.limit
    return SubjectPage(subjects=page,
                       next_cursor=encode_text_cursor(page[-1].subject_id) if more else None)
