"""Keyset pagination: an opaque cursor holds the sort key of the last row served.

The listings sort by ``(timestamp, tiebreak)``: the timestamp gives a meaningful order, a
unique column (the id, or for events their place in the written order) breaks ties, so a row
is never skipped nor served twice however rows are added between pages. The cursor is URL-safe
base64 of that pair; it reveals nothing the caller could not tell from the page it was served
with.
"""

import base64
import binascii
import json
from collections.abc import Mapping
from datetime import datetime
from typing import LiteralString, TypeVar
from uuid import UUID

from psycopg.rows import dict_row
from pydantic import BaseModel

from haki.db import Database
from haki.errors import ValidationFailed

_PREFIX = "k1."

View = TypeVar("View", bound=BaseModel)
#: What breaks ties between rows of one time: a row id, or a sequence number.
Tiebreak = UUID | int
_BIGINT = range(-(2**63), 2**63)


def encode_cursor(at: datetime, tiebreak: Tiebreak) -> str:
    last = tiebreak if isinstance(tiebreak, int) else str(tiebreak)
    raw = json.dumps([at.isoformat(), last], separators=(",", ":")).encode()
    return _PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, tiebreak: type[Tiebreak] = UUID
                  ) -> tuple[datetime | None, Tiebreak | None]:
    """The sort key after which the page starts; ``(None, None)`` for the first page.
    ``tiebreak``: the type of the listing's second sort column (a cursor of another listing
    is refused, never compared with the wrong column)."""
    if cursor is None:
        return None, None
    try:
        if not cursor.startswith(_PREFIX):
            raise ValueError(cursor)
        body = cursor[len(_PREFIX):]
        at, last = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        parsed = datetime.fromisoformat(at)
        if parsed.tzinfo is None:
            raise ValueError(at)
        if tiebreak is int:
            if type(last) is not int or last not in _BIGINT:
                raise ValueError(last)
            return parsed, last
        return parsed, UUID(last)
    except (ValueError, TypeError, AttributeError, binascii.Error) as exc:
        raise ValidationFailed("field 'cursor': not a cursor returned by this listing") from exc


def read_page(db: Database, project_id: str, query: LiteralString, params: Mapping[str, object], *,
              cursor: str | None, limit: int, view: type[View], sort_key: tuple[str, str],
              tiebreak: type[Tiebreak] = UUID) -> tuple[list[View], str | None]:
    """One page of ``query``'s rows, each validated as ``view`` (from the columns it has), and
    the cursor of the next page (``None`` on the last). ``query`` takes ``params``,
    ``project_id``, ``after_at``, ``after_id`` (the tiebreak, of type ``tiebreak``) and
    ``limit``, and sorts by the two columns named by ``sort_key``."""
    after_at, after_id = decode_cursor(cursor, tiebreak)
    with db.transaction(project_id) as conn:
        rows = conn.cursor(row_factory=dict_row).execute(query, {
            **params, "project_id": project_id, "after_at": after_at, "after_id": after_id,
            "limit": limit + 1}).fetchall()
    fields = view.model_fields
    page = [view.model_validate({k: v for k, v in row.items() if k in fields})
            for row in rows[:limit]]
    if len(rows) <= limit:
        return page, None
    last = rows[limit - 1]
    return page, encode_cursor(last[sort_key[0]], last[sort_key[1]])
