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


def _pack(key: list[str]) -> str:
    raw = json.dumps(key, separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unpack(cursor: str) -> list[object]:
    """The key a cursor holds, as a JSON list (``ValueError`` when it is none of ours)."""
    if not cursor.startswith(_PREFIX):
        raise ValueError(cursor)
    body = cursor[len(_PREFIX):]
    try:
        key = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(cursor) from exc
    if not isinstance(key, list):
        raise ValueError(cursor)
    return key


_NOT_A_CURSOR = "field 'cursor': not a cursor returned by this listing"


def encode_cursor(at: datetime, row_id: UUID) -> str:
    return _pack([at.isoformat(), str(row_id)])


def decode_cursor(cursor: str | None) -> tuple[datetime | None, UUID | None]:
    """The sort key after which the page starts; ``(None, None)`` for the first page."""
    if cursor is None:
        return None, None
    try:
        at, row_id = _unpack(cursor)
        if not isinstance(at, str) or not isinstance(row_id, str):
            raise ValueError(cursor)
        parsed = datetime.fromisoformat(at)
        if parsed.tzinfo is None:
            raise ValueError(at)
        return parsed, UUID(row_id)
    except (ValueError, TypeError) as exc:
        raise ValidationFailed(_NOT_A_CURSOR) from exc


def encode_text_cursor(key: str) -> str:
    """The cursor of a listing sorted by one text column (the subjects, by id)."""
    return _pack([key])


def decode_text_cursor(cursor: str | None) -> str | None:
    """The text key after which the page starts; ``None`` for the first page."""
    if cursor is None:
        return None
    try:
        (key,) = _unpack(cursor)
    except ValueError as exc:
        raise ValidationFailed(_NOT_A_CURSOR) from exc
    if not isinstance(key, str) or not key:
        raise ValidationFailed(_NOT_A_CURSOR)
    return key


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
