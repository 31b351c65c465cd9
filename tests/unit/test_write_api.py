"""The write API's pure parts: error messages naming the record, the keyset cursor, the byte
limits."""

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from haki.errors import MissingScope, ValidationFailed
from haki.memory.api import FactsRequest, payload_bytes
from haki.memory.pagination import decode_cursor, encode_cursor
from haki.validation import parse


def test_the_first_error_names_the_record_and_the_field() -> None:
    body = {"project_id": "p", "facts": [
        {"subject_id": "s", "predicate": "a", "value": 1},
        {"subject_id": "s", "predicate": "b", "value": 2, "source_event_ids": ["x"]}]}
    with pytest.raises(ValidationFailed) as raised:
        parse(FactsRequest, body)
    assert raised.value.message.startswith("facts[1]: field 'source_event_ids.0': ")
    # No project: the key's (a key is bound to one); an empty one is a missing scope.
    good = body["facts"][:1]
    assert parse(FactsRequest, {"facts": good}).project_id is None
    with pytest.raises(MissingScope, match=r"^field 'project_id'"):
        parse(FactsRequest, {"project_id": "", "facts": good})
    assert ValidationFailed.from_errors([{"loc": (), "msg": "bad"}], "line 3").message == \
        "line 3: field '(record)': bad"


@pytest.mark.parametrize("at", [
    datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
    datetime(1999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5))),
])
def test_a_cursor_round_trips(at: datetime) -> None:
    row_id = uuid.uuid4()
    cursor = encode_cursor(at, row_id)
    assert cursor.isascii() and "=" not in cursor and "/" not in cursor
    assert decode_cursor(cursor) == (at, row_id)
    assert decode_cursor(None) == (None, None)


@pytest.mark.parametrize("cursor", ["", "k1.", "k2.WyJ4Il0", "k1.e30", "k1.!!!", "k1.WzEsMl0"])
def test_a_foreign_cursor_is_a_validation_error(cursor: str) -> None:
    with pytest.raises(ValidationFailed, match="field 'cursor'"):
        decode_cursor(cursor)


def test_sizes_are_bytes_not_characters() -> None:
    assert payload_bytes({"t": "é"}) == len('{"t":"é"}'.encode())

