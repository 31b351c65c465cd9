"""Keyset pagination: an opaque cursor holds the sort key of the last row served.

The listings sort by ``(timestamp, id)``: the timestamp gives a meaningful order, the id breaks
ties, so a row is never skipped nor served twice however rows are added between pages. The
cursor is URL-safe base64 of that pair; it reveals nothing the caller was not just served.
"""

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import LiteralString, TypeVar
from uuid import UUID

from psycopg.rows import dict_row
from pydantic import BaseModel

from haki.db import Database
from haki.errors import ValidationFailed

_PREFIX = "k1."

View = TypeVar("View", bound=BaseModel)


def encode_cursor(at: datetime, row_id: UUID) -> str:
    raw = json.dumps([at.isoformat(), str(row_id)], separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> tuple[datetime | None, UUID | None]:
    """The sort key after which the page starts; ``(None, None)`` for the first page."""
    if cursor is None:
        return None, None
    try:
        if not cursor.startswith(_PREFIX):
            raise ValueError(cursor)
        body = cursor[len(_PREFIX):]
        at, row_id = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        parsed = datetime.fromisoformat(at)
        if parsed.tzinfo is None:
            raise ValueError(at)
        return parsed, UUID(row_id)
    except (ValueError, TypeError, binascii.Error) as exc:
        raise ValidationFailed("field 'cursor': not a cursor returned by this listing") from exc


def read_page(db: Database, project_id: str, query: LiteralString, params: Mapping[str, object], *,
              cursor: str | None, limit: int, view: type[View],
              sort_key: Callable[[View], tuple[datetime, UUID]]) -> tuple[list[View], str | None]:
    """One page of ``query``'s rows, each validated as ``view``, and the cursor of the next
    page (``None`` on the last). ``query`` takes ``params``, ``project_id``, ``after_at``,
    ``after_id`` and ``limit``, and sorts by the key that ``sort_key`` reads from a row."""
    after_at, after_id = decode_cursor(cursor)
    with db.transaction(project_id) as conn:
        rows = conn.cursor(row_factory=dict_row).execute(query, {
            **params, "project_id": project_id, "after_at": after_at, "after_id": after_id,
            "limit": limit + 1}).fetchall()
    page = [view.model_validate(row) for row in rows[:limit]]
    return page, encode_cursor(*sort_key(page[-1])) if len(rows) > limit else None
