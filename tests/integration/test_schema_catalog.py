"""The migrated schema, read from the catalog: every routine's running body is written in its
own file, tenant data is keyed by project, and every tenant table is walled by its policy."""

import json
from pathlib import Path

import psycopg
import pytest

from tests.integration.conftest import unit_vector

#: Tables of the control plane: a distributed engine keeps them whole on every node
#: (reference tables); their rows are reached by key hash or by the owner, never by tenant.
CONTROL_PLANE = {"projects", "api_keys"}
#: Unique indexes that may lead with another column, and why.
OTHER_LEADING_UNIQUE = {
    # Authentication finds a key by its hash before any project is known.
    "api_keys_key_hash_key",
}
#: Tenant tables the runtime role never reads directly (only the owner's functions do).
OWNER_ONLY = {"text_scope_stats", "text_term_stats"} | CONTROL_PLANE


def _tenant_tables(conn: psycopg.Connection) -> list[str]:
    """Tables of the public schema with a project_id column, partitions left out."""
    return [row[0] for row in conn.execute(
        """
        SELECT c.relname
        FROM pg_class AS c
        JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attname = 'project_id'
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
          AND NOT c.relispartition
        ORDER BY 1
        """)]


def test_every_routine_runs_the_body_written_in_its_own_file(
    owner_conn: psycopg.Connection, migrations_dir: Path
) -> None:
    routines = owner_conn.execute(
        """
        SELECT p.proname, p.prosrc
        FROM pg_proc AS p
        WHERE p.pronamespace = 'public'::regnamespace AND p.prokind = 'f'
          AND NOT EXISTS (SELECT 1 FROM pg_depend AS d
                          WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                            AND d.deptype = 'e')
        """).fetchall()
    assert len(routines) >= 15
    files = migrations_dir / "functions"
    for name, body in routines:
        # A body written as text (AS $$ … $$), which this check can read; an SQL-standard
        # body (RETURN …, BEGIN ATOMIC) keeps no text in pg_proc.prosrc.
        assert body.strip(), f"{name} has an SQL-standard body: write it AS $$ … $$"
        source = files / f"{name}.sql"
        assert source.is_file(), f"{name} has no file of its own in migrations/functions/"
        assert body.strip() in source.read_text(encoding="utf-8"), (
            f"the running body of {name} is not the one written in {source.name}")


def test_no_numbered_migration_writes_a_routine(migrations_dir: Path) -> None:
    for path in sorted(migrations_dir.glob("*.sql")):
        text = path.read_text(encoding="utf-8").upper()
        assert "CREATE FUNCTION" not in text and "CREATE OR REPLACE FUNCTION" not in text, (
            f"{path.name} defines a routine: routines belong in migrations/functions/")
        assert "PG_GET_FUNCTIONDEF" not in text, f"{path.name} rewrites a routine's text"


def test_sql_lines_stay_within_100_characters(migrations_dir: Path) -> None:
    for path in sorted(migrations_dir.rglob("*.sql")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert len(line) <= 100, f"{path.relative_to(migrations_dir)}:{number} is long"


def test_project_id_leads_every_key_of_tenant_data(owner_conn: psycopg.Connection) -> None:
    tables = _tenant_tables(owner_conn)
    assert {"facts", "events", "conflict_sets", "context_calls", "context_traces"} <= set(tables)
    unique = owner_conn.execute(
        """
        SELECT t.relname, i.relname, a.attname
        FROM pg_index AS x
        JOIN pg_class AS t ON t.oid = x.indrelid
        JOIN pg_class AS i ON i.oid = x.indexrelid
        JOIN pg_attribute AS a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
        WHERE x.indisunique AND t.relname = ANY (%s)
        """, (tables,)).fetchall()
    assert unique
    for table, index, first in unique:
        if index not in OTHER_LEADING_UNIQUE:
            assert first == "project_id", f"{index} of {table} leads with {first}"


def test_foreign_keys_between_tenant_tables_name_the_project(
    owner_conn: psycopg.Connection
) -> None:
    tables = _tenant_tables(owner_conn)
    keys = owner_conn.execute(
        """
        SELECT c.conname,
               ARRAY(SELECT a.attname FROM unnest(c.conkey) AS k(n)
                     JOIN pg_attribute AS a ON a.attrelid = c.conrelid AND a.attnum = k.n)
        FROM pg_constraint AS c
        WHERE c.contype = 'f' AND c.conrelid::regclass::text = ANY (%s)
          AND c.confrelid::regclass::text = ANY (%s)
        """, (tables, tables)).fetchall()
    assert keys  # facts_supersedes_id_fkey, api_keys_project_org_fk
    for name, columns in keys:
        assert "project_id" in columns, f"{name} does not name the project"


def test_every_tenant_table_is_walled_by_its_policy(owner_conn: psycopg.Connection) -> None:
    for table in _tenant_tables(owner_conn):
        forced = owner_conn.execute(
            "SELECT relrowsecurity AND relforcerowsecurity FROM pg_class WHERE oid = %s::regclass",
            (table,)).fetchone()
        assert forced == (True,), f"{table} has no forced row-level security"
        policies = {row[0] for row in owner_conn.execute(
            "SELECT policyname FROM pg_policies WHERE schemaname = 'public' AND tablename = %s",
            (table,))}
        if table not in OWNER_ONLY:
            assert "tenant_isolation" in policies, f"{table} has no tenant_isolation policy"


@pytest.mark.parametrize("out_of_range",
                         ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-14:00", "infinity"])
def test_no_time_outside_the_api_range_can_be_stored(
    owner_conn: psycopg.Connection, project_id: str, out_of_range: str
) -> None:
    """Not even by the owner: a stored time always reads back as a Python datetime."""
    for statement in (
        "INSERT INTO events (project_id, subject_id, kind, occurred_at, embedding) "
        "VALUES (%s, 's', 'note', %s::timestamptz, %s)",
        "INSERT INTO facts (project_id, subject_id, predicate, value, valid_from, embedding) "
        f"VALUES (%s, 's', 'city', '{json.dumps('Lyon')}', %s::timestamptz, %s)",
    ):
        with pytest.raises(psycopg.errors.CheckViolation), owner_conn.transaction():
            owner_conn.execute(statement, (project_id, out_of_range, unit_vector(1)))
