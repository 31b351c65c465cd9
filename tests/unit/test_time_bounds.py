"""Every timestamp an entry point accepts lies between 1970-01-01T00:00:00Z and
9999-12-31T23:59:59.999999Z once in UTC, whatever offset it is written in: the write requests,
and the memory documents of ``haki load`` (the MCP ``remember`` tool passes its time on to the
write route: tests/clients/test_mcp.py). A time refused is a
``validation_error`` naming its record and field; a time accepted is the instant given.

The oracle counts microseconds from the Unix epoch by integer arithmetic on the wall time and
the offset, so it holds where a datetime in UTC cannot (year 0, year 10000)."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from haki.errors import ValidationFailed
from haki.memory.api import EventsRequest, FactsRequest
from haki.validation import parse
from haki_local.documents import parse_document_text

_US = timedelta(microseconds=1)
_UNIX = datetime(1970, 1, 1)
_LAST = (datetime(9999, 12, 31, 23, 59, 59, 999999) - _UNIX) // _US

#: Wall times near both ends of the range and of what a datetime holds, and anywhere.
_walls = st.one_of(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1, 1, 2)),
    st.datetimes(min_value=datetime(1969, 12, 31), max_value=datetime(1970, 1, 2)),
    st.datetimes(min_value=datetime(9999, 12, 30), max_value=datetime.max),
    st.datetimes(),
)
#: Offsets in minutes, the widest ISO 8601 allows (±23:59) and the real extremes (±14:00).
_offsets = st.one_of(st.sampled_from([0, 60, -60, 14 * 60, -14 * 60, 12 * 60 + 45]),
                     st.integers(-(24 * 60 - 1), 24 * 60 - 1))


def _iso(wall: datetime, offset: int) -> str:
    if offset == 0:
        return wall.isoformat() + "Z"
    sign = "+" if offset > 0 else "-"
    hours, minutes = divmod(abs(offset), 60)
    return f"{wall.isoformat()}{sign}{hours:02d}:{minutes:02d}"


def _utc_micros(wall: datetime, offset: int) -> int:
    return (wall - _UNIX) // _US - offset * 60_000_000


def _accepted(wall: datetime, offset: int) -> bool:
    return 0 <= _utc_micros(wall, offset) <= _LAST


def _micros(value: datetime) -> int:
    return (value.astimezone(UTC) - _UNIX.replace(tzinfo=UTC)) // _US


@given(wall=_walls, offset=_offsets)
def test_events_accept_occurred_at_exactly_within_the_range(wall: datetime, offset: int) -> None:
    body = {"project_id": "p", "events": [
        {"subject_id": "s", "kind": "note"},
        {"subject_id": "s", "kind": "note", "occurred_at": _iso(wall, offset)}]}
    if _accepted(wall, offset):
        occurred_at = parse(EventsRequest, body).events[1].occurred_at
        assert occurred_at is not None and _micros(occurred_at) == _utc_micros(wall, offset)
    else:
        with pytest.raises(ValidationFailed, match=r"^events\[1\]: field 'occurred_at': "):
            parse(EventsRequest, body)


@given(wall=_walls, offset=_offsets, field=st.sampled_from(["valid_from", "valid_to"]))
def test_facts_accept_validity_times_exactly_within_the_range(
    wall: datetime, offset: int, field: str
) -> None:
    body = {"project_id": "p", "facts": [
        {"subject_id": "s", "predicate": "city", "value": "Lyon", field: _iso(wall, offset)}]}
    if _accepted(wall, offset):
        value = getattr(parse(FactsRequest, body).facts[0], field)
        assert _micros(value) == _utc_micros(wall, offset)
    else:
        with pytest.raises(ValidationFailed, match=rf"^facts\[0\]: field '{field}': "):
            parse(FactsRequest, body)


_DOCUMENT_FIELDS = [("event", "occurred_at"), ("fact", "valid_from"), ("fact", "valid_to"),
                    ("fact", "recorded_from"), ("fact", "last_reinforced_at")]


@given(wall=_walls, offset=_offsets, kind_field=st.sampled_from(_DOCUMENT_FIELDS),
       jsonl=st.booleans())
def test_memory_documents_accept_times_exactly_within_the_range(
    wall: datetime, offset: int, kind_field: tuple[str, str], jsonl: bool
) -> None:
    kind, field = kind_field
    record: dict[str, Any] = {"project_id": "p", "subject_id": "s", field: _iso(wall, offset)}
    record |= {"kind": "note"} if kind == "event" else {"predicate": "city", "value": "Lyon"}
    section = kind + "s"
    text = (json.dumps({"type": kind, **record}) if jsonl
            else json.dumps({section: [record]}))
    if _accepted(wall, offset):
        parsed = getattr(parse_document_text(text, jsonl=jsonl), section)[0]
        assert _micros(getattr(parsed, field)) == _utc_micros(wall, offset)
    else:
        where = "line 1" if jsonl else rf"{section}\[0\]"
        with pytest.raises(ValidationFailed, match=rf"^{where}: field '{field}': "):
            parse_document_text(text, jsonl=jsonl)
