"""Migrations 0009/0010: the runtime role's privileges are exactly what the write routes need,
the receipts table is tenant-isolated, the constraints hold, and the write statements reach
the indexes their comments name — as the runtime role, under row-level security."""

import uuid

import psycopg
import pytest

from haki.db import Database, Role
from haki.db.connection import connect
from haki.memory.conflicts import LIST_CONFLICTS
from haki.memory.events import SELECT_STORED
from haki.memory.facts import LIST_FACTS
from haki.memory.forget import ERASE_FACT, ERASE_SUBJECT
from tests.integration.conftest import Writes, unit_vector

#: Table privileges of haki_app: reading and writing memory, and what forget needs.
RUNTIME_PRIVILEGES = {
    "facts": {"SELECT", "INSERT", "UPDATE", "DELETE"},
    "events": {"SELECT", "INSERT", "DELETE"},
    "conflict_sets": {"SELECT", "INSERT", "UPDATE", "DELETE"},
    "context_calls": {"SELECT", "INSERT", "DELETE"},
    "context_traces": {"SELECT", "INSERT", "DELETE"},
    "stats_rollups": {"SELECT", "DELETE"},
    "stats_watermark": {"SELECT"},
    "erasure_receipts": {"INSERT"},
    "api_keys": set(),
    "schema_migrations": set(),
}


def test_runtime_privileges_are_exactly_the_routes_needs(owner_conn: psycopg.Connection) -> None:
    granted = {table: {p for (p,) in owner_conn.execute(
        "SELECT p FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p "
        "WHERE has_table_privilege('haki_app', %s, p)", (table,)).fetchall()}
        for table in RUNTIME_PRIVILEGES}
    assert granted == RUNTIME_PRIVILEGES
    columns = dict(owner_conn.execute(
        "SELECT column_name, has_column_privilege('haki_app', 'context_calls', column_name, "
        "'UPDATE') FROM information_schema.columns WHERE table_name = 'context_calls'").fetchall())
    assert {c for c, can in columns.items() if can} == {"packet"}


def test_a_past_call_cannot_be_rewritten_beyond_its_packet(
    app_db: Database, writes: Writes
) -> None:
    writes.fact("city", "Lyon")
    trace_id = writes.ask("city").response.trace_id
    with pytest.raises(psycopg.errors.InsufficientPrivilege), \
            app_db.transaction(writes.project_id) as conn:
        conn.execute("UPDATE context_calls SET query = 'x' WHERE trace_id = %s", (trace_id,))


def test_receipts_are_write_only_and_tenant_isolated(
    app_db: Database, owner_conn: psycopg.Connection, project_id: str
) -> None:
    assert owner_conn.execute(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class "
        "WHERE relname = 'erasure_receipts'").fetchone() == (True, True)
    columns = ", ".join(["id", "project_id", "target", "facts", "events", "conflict_sets",
                         "conflict_sets_updated", "context_calls", "context_calls_redacted",
                         "context_traces", "stats_rollups", "created_at"])
    insert = (f"INSERT INTO erasure_receipts ({columns}) "
              "VALUES (%s, %s, 'subject', 0, 0, 0, 0, 0, 0, 0, 0, now())")
    with pytest.raises(psycopg.errors.InsufficientPrivilege), \
            app_db.transaction(project_id) as conn:
        conn.execute(insert, (uuid.uuid4(), project_id + "-other"))
    with pytest.raises(psycopg.errors.InsufficientPrivilege), \
            app_db.transaction(project_id) as conn:
        conn.execute("SELECT * FROM erasure_receipts")
    with app_db.transaction(project_id) as conn:
        conn.execute(insert, (uuid.uuid4(), project_id))
    with pytest.raises(psycopg.errors.CheckViolation):
        owner_conn.execute(insert.replace("'subject'", "'everything'"),
                           (uuid.uuid4(), project_id))


def test_deletes_are_confined_to_the_transactions_project(
    app_db: Database, writes: Writes, owner_conn: psycopg.Connection
) -> None:
    other = writes.project_id + "-other"
    owner_conn.execute(
        "INSERT INTO facts (project_id, subject_id, predicate, value, embedding) "
        "VALUES (%s, 'alice', 'p', '1', %s)", (other, unit_vector(3)))
    with app_db.transaction(writes.project_id) as conn:
        for table in ("facts", "events", "conflict_sets", "context_calls", "context_traces",
                      "stats_rollups"):
            assert conn.execute(f"DELETE FROM {table} WHERE project_id = %s",
                                (other,)).rowcount == 0
    assert owner_conn.execute("SELECT count(*) FROM facts WHERE project_id = %s",
                              (other,)).fetchone() == (1,)


def test_idempotency_keys_are_unique_per_project_and_bounded(
    owner_conn: psycopg.Connection, project_id: str
) -> None:
    insert = ("INSERT INTO events (project_id, subject_id, kind, idempotency_key, embedding) "
              "VALUES (%s, 'alice', 'k', %s, %s)")
    owner_conn.execute(insert, (project_id, "key", unit_vector(1)))
    owner_conn.execute(insert, (project_id + "-b", "key", unit_vector(1)))
    owner_conn.execute(insert, (project_id, None, unit_vector(1)))
    owner_conn.execute(insert, (project_id, None, unit_vector(1)))
    with pytest.raises(psycopg.errors.UniqueViolation):
        owner_conn.execute(insert, (project_id, "key", unit_vector(1)))
    for bad in ("", "k" * 129):
        with pytest.raises(psycopg.errors.CheckViolation):
            owner_conn.execute(insert, (project_id, bad, unit_vector(1)))


@pytest.fixture(scope="module")
def big_project(db_urls: dict[Role, str]) -> str:
    """A project with 2,000 events (with keys) and 2,000 facts over 20 subjects, analyzed: the
    planner's choices on a handful of rows say nothing about a tenant's."""
    project_id = f"proj-big-{uuid.uuid4().hex[:8]}"
    vector = unit_vector(5)
    with connect(db_urls[Role.OWNER]) as conn:
        with conn.transaction():
            with conn.cursor().copy(
                "COPY events (project_id, subject_id, kind, idempotency_key, embedding) "
                "FROM STDIN") as copy:
                for i in range(2000):
                    copy.write_row((project_id, f"s{i % 20}", "k", f"key{i}", vector))
            with conn.cursor().copy(
                "COPY facts (project_id, subject_id, predicate, value, embedding) "
                "FROM STDIN") as copy:
                for i in range(2000):
                    copy.write_row((project_id, f"s{i % 20}", f"p{i}", f'"v{i}"', vector))
        conn.execute("ANALYZE events")
        conn.execute("ANALYZE facts")
    return project_id


@pytest.mark.parametrize(("statement", "params", "indexes"), [
    (SELECT_STORED, {"ids": [uuid.uuid4()], "keys": ["k"]},
     {"events_pkey", "events_idempotency_key_idx"}),
    (LIST_FACTS, {"subject_id": "s1", "status": "active", "predicate": None,
                  "after_at": None, "after_id": None, "limit": 51}, {"facts_scope_idx"}),
    (LIST_CONFLICTS, {"subject_id": "alice", "status": "resolved", "after_at": None,
                      "after_id": None, "limit": 51}, {"conflict_sets_scope_idx"}),
    (ERASE_SUBJECT, {"subject_id": "s1"},
     {"facts_scope_idx", "events_scope_idx", "conflict_sets_scope_idx",
      "context_calls_scope_idx", "context_traces_pkey", "stats_rollups_pkey"}),
    (ERASE_FACT, {"subject_id": "s1", "id": uuid.uuid4(), "served": "[]"},
     {"context_calls_scope_idx", "context_traces_pkey", "conflict_sets_scope_idx",
      "facts_pkey"}),
], ids=["stored-events", "list-facts", "list-conflicts", "erase-subject", "erase-fact"])
def test_statements_reach_their_indexes_as_the_runtime_role(
    db_urls: dict[Role, str], big_project: str, statement: str, params: dict[str, object],
    indexes: set[str],
) -> None:
    """EXPLAIN as haki_app (row-level security applies; only leakproof operators may become
    index conditions), sequential scans disabled so the plan shows what the indexes can do."""
    with connect(db_urls[Role.APP]) as conn, conn.transaction():
        conn.execute("SELECT set_config('haki.project_id', %s, true)", (big_project,))
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = "\n".join(row[0] for row in conn.execute(
            f"EXPLAIN {statement}", {"project_id": big_project, **params}))
    with connect(db_urls[Role.OWNER]) as owner:
        # A day partition's index stands for its partitioned parent index.
        for child, parent in owner.execute(
                "SELECT c.relname, p.relname FROM pg_inherits AS i "
                "JOIN pg_class AS c ON c.oid = i.inhrelid "
                "JOIN pg_class AS p ON p.oid = i.inhparent "
                "WHERE c.relkind = 'i' ORDER BY length(c.relname) DESC"):
            plan = plan.replace(f" {child} ", f" {parent} ")
    missing = {index for index in indexes if index not in plan}
    assert not missing, plan
