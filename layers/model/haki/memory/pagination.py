"""Keyset pagination: an opaque cursor holds the sort key of the last row served.

The listings sort by ``(timestamp, tiebreak)``: the timestamp gives a meaningful order, a
unique column (the id, or for events their place in the written order) breaks ties, so a row
is never skipped nor served twice however rows are added between pages. The cursor is URL-safe
base64 of that pair; it reveals nothing the caller could not tell from the page it was served
with.
"""

import base64
import json
from datetime import datetime
from typing import LiteralString, TypeVar
from uuid import UUID

from psycopg.rows import dict_row
from pydantic import BaseModel, TypeAdapter

from haki.db import Database
from haki.errors import ValidationFailed
from haki.memory.api import _Paged
from haki.models import Timestamp

_PREFIX = "k1."
#: What breaks ties between rows of one time: a row id, or a sequence number.
Tiebreak = UUID | int
#: What a cursor holds: the (timestamp, tiebreak) of the last row served.
_ID_KEY = TypeAdapter(tuple[Timestamp, UUID])
_SEQ_KEY = TypeAdapter(tuple[Timestamp, int])
_BIGINT = range(-(2**63), 2**63)

View = TypeVar("View", bound=BaseModel)


def _pack(key: list[str | int]) -> str:
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


def encode_cursor(at: datetime, tiebreak: Tiebreak) -> str:
    return _pack([at.isoformat(), tiebreak if isinstance(tiebreak, int) else str(tiebreak)])


def decode_cursor(cursor: str | None, tiebreak: type[Tiebreak] = UUID
                  ) -> tuple[datetime | None, Tiebreak | None]:
    """The sort key after which the page starts; ``(None, None)`` for the first page.

    A cursor is data from the client: anything but the base64 of a JSON pair of an instant
    with its offset (within the accepted range) and the listing's ``tiebreak`` (a UUID as a
    string, or an integer of PostgreSQL's bigint range) is a :class:`ValidationFailed` (422),
    whatever its types; a cursor of another listing is never compared with the wrong
    column."""
    if cursor is None:
        return None, None
    try:
        pair = _unpack(cursor)
        last = pair[-1] if pair else None
        wanted = type(last) is int and last in _BIGINT if tiebreak is int \
            else isinstance(last, str)
        if len(pair) != 2 or not isinstance(pair[0], str) or not wanted:
            raise ValueError("not a cursor of this listing")
        if tiebreak is int:
            return _SEQ_KEY.validate_python(pair)
        return _ID_KEY.validate_python(pair)
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


def read_page(db: Database, project_id: str, query: LiteralString, request: _Paged, *,
              view: type[View], sort_key: tuple[str, str],
              tiebreak: type[Tiebreak] = UUID) -> tuple[list[View], str | None]:
    """The page ``request`` asks for of ``query``'s rows, each validated as ``view`` (from the
    columns it has), and the cursor of the next page (``None`` on the last). ``query`` takes
    the request's filters (:meth:`~haki.memory.api._Paged.filters`), ``project_id``,
    ``after_at``, ``after_id`` (the tiebreak, of type ``tiebreak``) and ``limit``, and sorts by
    the two columns named by ``sort_key``."""
    after_at, after_id = decode_cursor(request.cursor, tiebreak)
    limit = request.limit
    with db.transaction(project_id) as conn:
        rows = conn.cursor(row_factory=dict_row).execute(query, {
            **request.filters(), "project_id": project_id, "after_at": after_at,
            "after_id": after_id, "limit": limit + 1}).fetchall()
    fields = view.model_fields
    page = [view.model_validate({k: v for k, v in row.items() if k in fields})
            for row in rows[:limit]]
    if len(rows) <= limit:
        return page, None
    last = rows[limit - 1]
    return page, encode_cursor(last[sort_key[0]], last[sort_key[1]])
