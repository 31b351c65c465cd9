"""``GET /v1/events``: a subject's episodes (its stored events), newest first, keyset-paged.
The console shows them beside the subject's facts and conflicts."""

from datetime import datetime
from typing import Any
from uuid import UUID

from haki.db import Database
from haki.memory.api import DEFAULT_PAGE, Cursor, PageLimit, ScopeId, _Body, _Scoped, check_scope
from haki.memory.pagination import read_page


class EventListRequest(_Scoped):
    subject_id: ScopeId
    cursor: Cursor | None = None
    limit: PageLimit = DEFAULT_PAGE


class EventView(_Body):
    id: UUID
    kind: str
    payload: dict[str, Any]
    occurred_at: datetime
    recorded_at: datetime


class EventPage(_Body):
    events: list[EventView]
    #: Pass as ``cursor`` for the next (older) page; ``None`` on the last one.
    next_cursor: str | None


#: One scope's events by time (events_scope_idx), newest first after the cursor.
LIST_EVENTS = """
SELECT id, kind, payload, occurred_at, recorded_at
FROM events
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
  AND (%(after_at)s::timestamptz IS NULL OR (occurred_at, id) < (%(after_at)s, %(after_id)s))
ORDER BY occurred_at DESC, id DESC
LIMIT %(limit)s
"""


def list_events(db: Database, project_id: str, request: EventListRequest) -> EventPage:
    """One page of a subject's events, newest first."""
    check_scope(project_id, request)
    events, next_cursor = read_page(
        db, project_id, LIST_EVENTS, {"subject_id": request.subject_id},
        cursor=request.cursor, limit=request.limit, view=EventView,
        sort_key=lambda event: (event.occurred_at, event.id))
    return EventPage(events=events, next_cursor=next_cursor)
