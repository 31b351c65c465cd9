"""Keyset pagination: an opaque cursor holds the sort key of the last row served.

The listings sort by ``(timestamp, id)``: the timestamp gives a meaningful order, the id breaks
ties, so a row is never skipped nor served twice however rows are added between pages. The
cursor is URL-safe base64 of that pair; it reveals nothing the caller was not just served.
"""

import base64
import binascii
import json
from datetime import datetime
from uuid import UUID

from haki.errors import ValidationFailed

_PREFIX = "k1."


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
