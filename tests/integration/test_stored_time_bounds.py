"""Rows holding an instant PostgreSQL keeps but a Python datetime cannot (before year 1 or after
9999 once in UTC, or ±infinity), written straight into the tables as the owner, the way a row
stored before the API bounded its times (``haki.models.Timestamp``) is: the subject's context
call and facts listing still answer, with such a time read as the nearest datetime Python
holds (``haki.db.connection.register_bounded_timestamps``)."""

from datetime import UTC, datetime

import psycopg
import pytest

from haki.assembler.trace import load_trace
from haki.db.connection import acting_for
from tests.integration.conftest import Writes

EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


@pytest.mark.parametrize(("stored", "read_as"), [
    ("0001-01-01T00:00:00+01:00", EARLIEST),   # year 0 in UTC
    ("0001-01-01T00:00:00Z BC", EARLIEST),
    ("-infinity", EARLIEST),
    ("9999-12-31T23:59:59-14:00", LATEST),     # year 10000 in UTC
    ("12000-06-01T00:00:00Z", LATEST),
    ("infinity", LATEST),
])
def test_a_subject_holding_an_unrepresentable_time_still_answers(
    writes: Writes, stored: str, read_as: datetime
) -> None:
    [event] = writes.events({"payload": {"text": "I moved to Lyon with my cat Moka"}}).events
    since = writes.fact("city", "Lyon")
    until = writes.fact("pet", "a cat named Moka")
    recorded = writes.fact("employer", "Boulangerie Dupont")
    for statement, row_id in [
        ("UPDATE events SET occurred_at = %s::timestamptz WHERE id = %s", event.id),
        ("UPDATE facts SET valid_from = %s::timestamptz, last_reinforced_at = %s::timestamptz "
         "WHERE id = %s", since.id),
        ("UPDATE facts SET recorded_from = %s::timestamptz WHERE id = %s", recorded.id),
    ]:
        times = (stored,) * (statement.count("%s") - 1)
        assert writes.owner.execute(statement, (*times, row_id)).rowcount == 1
    # A valid_to far ahead keeps the fact served; one far back ends it.
    writes.owner.execute("UPDATE facts SET valid_to = %s::timestamptz WHERE id = %s",
                         (stored, until.id))

    answer = writes.ask("where does alice live with her cat?").response
    served = {fact.id: fact for fact in answer.packet.facts}
    assert served[since.id].valid_from == read_as
    assert (until.id in served) == (read_as == LATEST)
    assert [e.occurred_at for e in answer.packet.episodes if e.event_id == event.id] == [read_as]
    assert answer.model_dump_json()
    with acting_for(writes.key_hash):
        trace = load_trace(writes.db, project_id=writes.project_id, subject_id="alice",
                           trace_id=answer.trace_id)
    assert trace.packet == answer.packet

    listed: dict[object, object] = {}
    cursor = None
    while True:
        page = writes.list_facts(limit=1, **({"cursor": cursor} if cursor else {}))
        listed |= {fact.id: fact for fact in page.facts}
        if not (cursor := page.next_cursor):
            break
    assert set(listed) == {since.id, until.id, recorded.id}
    by_id = {fact.id: fact for fact in writes.list_facts().facts}
    assert by_id[since.id].valid_from == by_id[since.id].last_reinforced_at == read_as
    assert by_id[until.id].valid_to == read_as
    assert by_id[recorded.id].recorded_from == read_as
    assert writes.list_facts().model_dump_json()


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_a_connection_reads_every_timestamptz(owner_conn: psycopg.Connection,
                                              binary: bool) -> None:
    """In either wire format, and in a session time zone that shifts a time held in UTC past
    9999: in range as given, clamped beyond."""
    owner_conn.execute("SET TIME ZONE 'Pacific/Kiritimati'")  # UTC+14
    row = owner_conn.cursor(binary=binary).execute(
        "SELECT '2025-03-01T12:00:00Z'::timestamptz, '0001-01-01T00:00:00+01:00'::timestamptz,"
        " '-infinity'::timestamptz, 'infinity'::timestamptz,"
        " '10000-01-01T00:00:00Z'::timestamptz, '9999-12-31T23:00:00Z'::timestamptz").fetchone()
    assert row is not None
    assert row[:5] == (datetime(2025, 3, 1, 12, tzinfo=UTC), EARLIEST, EARLIEST, LATEST, LATEST)
    # Within Python's range in UTC but not in the connection's zone: the exact instant in binary,
    # the latest datetime from the text (which only gives the shifted wall time).
    assert row[5] == (datetime(9999, 12, 31, 23, tzinfo=UTC) if binary else LATEST)
