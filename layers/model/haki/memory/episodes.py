"""``GET /v1/events``: a subject's episodes (its stored events), newest first, keyset-paged;
optionally those of one thread. Events of one time are in the order they were written (the
messages of one batch in the order listed), so a conversation reads back as it was said. The
console shows them beside the subject's facts and conflicts."""

from datetime import datetime
from typing import Any
from uuid import UUID

from haki.db import Database
from haki.memory.api import ScopeId, _Body, _Paged, check_scope
from haki.memory.pagination import read_page


class EventListRequest(_Paged):
    subject_id: ScopeId
    #: Only the events of this thread.
    thread_id: ScopeId | None = None


class EventView(_Body):
    id: UUID
    thread_id: str | None = None
    kind: str
    payload: dict[str, Any]
    occurred_at: datetime
    recorded_at: datetime


class EventPage(_Body):
    events: list[EventView]
    #: Pass as ``cursor`` for the next (older) page; ``None`` on the last one.
    next_cursor: str | None


#: One scope's events in the order said (events_scope_idx: time, then the written order),
#: newest first after the cursor.
LIST_EVENTS = """
SELECT id, thread_id, kind, payload, occurred_at, recorded_at, seq
FROM events
WHERE project_id = %(project_id)s AND subject_id = %(subject_id)s
  AND (%(thread_id)s::text IS NULL OR thread_id = %(thread_id)s)
  AND (%(after_at)s::timestamptz IS NULL OR (occurred_at, seq) < (%(after_at)s, %(after_id)s))
ORDER BY occurred_at DESC, seq DESC
LIMIT %(limit)s
"""


def list_events(db: Database, project_id: str, request: EventListRequest) -> EventPage:
    """One page of a subject's events (of one thread, when asked), newest first."""
    check_scope(project_id, request)
    events, next_cursor = read_page(db, project_id, LIST_EVENTS, request, view=EventView,
                                    sort_key=("occurred_at", "seq"), tiebreak=int)
    return EventPage(events=events, next_cursor=next_cursor)
