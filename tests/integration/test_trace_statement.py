"""A packet is stored with its trace in ONE statement: proven by statement-level triggers that
log, per INSERT statement, the table, the rows it wrote, its transaction and start time."""

from collections.abc import Callable

import psycopg
import pytest

from haki.db import Database, Role
from haki.db.connection import connect
from haki.db.migrate import apply_migrations
from tests.conftest import acting_as_tenant
from tests.integration.conftest import NOW, Asker, Seeder, blend, unit_vector

STATEMENT_LOG = """
CREATE TABLE statement_log (
    table_name text, rows_written int, txid bigint, started timestamptz);
GRANT INSERT ON statement_log TO haki_app;
CREATE FUNCTION log_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO statement_log
    SELECT TG_TABLE_NAME, count(*), txid_current(), statement_timestamp() FROM new_rows;
    RETURN NULL;
END $$;
CREATE TRIGGER calls_statements AFTER INSERT ON context_calls
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION log_statement();
CREATE TRIGGER traces_statements AFTER INSERT ON context_traces
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION log_statement();
"""


@pytest.fixture
def logged_db(fresh_database: Callable[[], dict[Role, str]]) -> dict[Role, str]:
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER])
    with psycopg.connect(urls[Role.OWNER], autocommit=True) as conn:
        conn.execute(STATEMENT_LOG)
    return urls


def test_call_and_trace_are_one_statement(logged_db: dict[Role, str]) -> None:
    q = unit_vector(1)
    with connect(logged_db[Role.OWNER]) as owner:
        seeder = Seeder(owner, "p1")
        for i in range(20):
            seeder.fact("note", f"fact number {i}", blend(q, unit_vector(100 + i), 0.3),
                        recorded_from=NOW)
        for i in range(3):
            seeder.event("conversation.message", {"text": f"event {i}"}, unit_vector(200 + i))
        db = Database(logged_db[Role.APP])
        with acting_as_tenant(logged_db[Role.OWNER], "p1"):
            result = Asker(db, "p1")("fact", q, budget=40)
        db.close()
        log = owner.execute(
            "SELECT table_name, rows_written, txid, started FROM statement_log").fetchall()
        decisions = owner.execute(
            "SELECT cardinality(ordinals) FROM context_traces").fetchall()
    assert result.candidates == 23
    # One call row, one trace row holding the 23 decisions (the compact trace).
    assert sorted((t, n) for t, n, _, _ in log) == [("context_calls", 1), ("context_traces", 1)]
    assert decisions == [(23,)]
    (_, _, tx1, started1), (_, _, tx2, started2) = log
    assert tx1 == tx2 and started1 == started2, "same transaction, same statement"
