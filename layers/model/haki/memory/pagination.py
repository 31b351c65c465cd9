"""Keyset pagination: an opaque cursor holds the sort key of the last row served.

The listings sort by ``(timestamp, id)``: the timestamp gives a meaningful order, the id breaks
ties, so a row is never skipped nor served twice however rows are added between pages. The
cursor is URL-safe base64 of that pair; it reveals nothing the caller was not just served.
"""

import base64
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import LiteralString, TypeVar
from uuid import UUID

from psycopg.rows import dict_row
from pydantic import BaseModel, TypeAdapter

from haki.db import Database
from haki.errors import ValidationFailed
from haki.models import Timestamp

_PREFIX = "k1."
#: What a cursor holds: the (timestamp, id) of the last row served.
_SORT_KEY = TypeAdapter(tuple[Timestamp, UUID])

View = TypeVar("View", bound=BaseModel)


def _pack(key: list[str]) -> str:
    raw = json.dumps(key, separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unpack(cursor: str) -> list[object]:
    """The key a cursor holds, as a JSON list (``ValueError`` when it is none of ours)."""
    if not cursor.startswith(_PREFIX):
        raise ValueError(cursor)
    body = cursor[len(_PREFIX):]
    # binascii.Error, UnicodeDecodeError and JSON's errors are all ValueErrors.
    key = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    if not isinstance(key, list):
        raise ValueError(cursor)
    return key


_NOT_A_CURSOR = "field 'cursor': not a cursor returned by this listing"


def encode_cursor(at: datetime, row_id: UUID) -> str:
    return _pack([at.isoformat(), str(row_id)])


def decode_cursor(cursor: str | None) -> tuple[datetime | None, UUID | None]:
    """The sort key after which the page starts; ``(None, None)`` for the first page.

    A cursor is data from the client: anything but the base64 of a JSON pair of strings, an
    instant with its offset (within the accepted range) and a UUID, is a
    :class:`ValidationFailed` (422), whatever its types."""
    if cursor is None:
        return None, None
    try:
        pair = _unpack(cursor)
        if not all(isinstance(part, str) for part in pair):
            raise ValueError("not a pair of strings")
        return _SORT_KEY.validate_python(pair)
    except ValueError as exc:  # binascii.Error, UnicodeDecodeError, JSON and Pydantic's too
        raise ValidationFailed(_NOT_A_CURSOR) from exc


def encode_text_cursor(key: str) -> str:
    """The cursor of a listing sorted by one text column (the subjects, by id)."""
    return _pack([key])


def decode_text_cursor(cursor: str | None) -> str | None:
    """The text key after which the page starts; ``None`` for the first page. A key that is
    no text PostgreSQL can hold (a NUL, a lone surrogate) is no cursor of ours either."""
    if cursor is None:
        return None
    try:
        (key,) = _unpack(cursor)
        if not isinstance(key, str) or not key or "\x00" in key:
            raise ValueError(cursor)
        key.encode("utf-8")
    except ValueError as exc:  # also UnicodeEncodeError
        raise ValidationFailed(_NOT_A_CURSOR) from exc
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
