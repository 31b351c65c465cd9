"""Each role's effective privileges on every table, view and column of the schema, from the
catalog, are exactly the table of docs/security.md ("Roles and privileges"): the doc and the
database cannot drift, and a privilege granted without being written down fails here."""

import re
from pathlib import Path

import psycopg

from haki.roles import Role

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
ROLES = ("haki_app", "haki_stats")
TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
COLUMN_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "REFERENCES")

#: (role, table, privilege, column or None for the whole table)
Grant = tuple[str, str, str, str | None]


def documented() -> set[Grant]:
    """The rows of the doc's privilege table: ``PRIV`` or ``PRIV (col, col)``, comma-separated."""
    section = DOC.read_text(encoding="utf-8").split("## Roles and privileges", 1)[1]
    section = section.split("\n## ", 1)[0]
    grants: set[Grant] = set()
    rows = [line for line in section.splitlines() if line.startswith("| haki_")]
    assert rows, "no privilege table in docs/security.md"
    for line in rows:
        role, table, privileges = (cell.strip() for cell in line.strip("|").split("|"))
        for privilege, columns in re.findall(r"([A-Z]+)(?:\s*\(([^)]*)\))?", privileges):
            if columns:
                grants |= {(role, table, privilege, c.strip()) for c in columns.split(",")}
            else:
                grants.add((role, table, privilege, None))
    return grants


def effective(conn: psycopg.Connection) -> set[Grant]:
    """What the catalog lets each role do: table privileges, then column privileges the role
    holds without holding them on the whole table."""
    relations = [row[0] for row in conn.execute(
        "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')")]
    grants: set[Grant] = set()
    for role in ROLES:
        for table in relations:
            whole = {p for p in TABLE_PRIVILEGES if conn.execute(
                "SELECT has_table_privilege(%s, %s, %s)",
                (role, f"public.{table}", p)).fetchone() == (True,)}
            grants |= {(role, table, p, None) for p in whole}
            rows = conn.execute(
                "SELECT a.attname, p.privilege FROM pg_attribute AS a,"
                " unnest(%s::text[]) AS p(privilege)"
                " WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped"
                " AND has_column_privilege(%s, a.attrelid, a.attnum, p.privilege)",
                (list(set(COLUMN_PRIVILEGES) - whole), f"public.{table}", role)).fetchall()
            grants |= {(role, table, privilege, column) for column, privilege in rows}
    return grants


def test_every_roles_privileges_are_the_documented_ones(db_urls: dict[Role, str]) -> None:
    with psycopg.connect(db_urls[Role.OWNER]) as conn:
        actual = effective(conn)
    expected = documented()
    assert sorted(actual - expected, key=str) == [], "granted but not in docs/security.md"
    assert sorted(expected - actual, key=str) == [], "in docs/security.md but not granted"


def test_the_stats_role_reads_no_stored_query_or_packet(db_urls: dict[Role, str]) -> None:
    with psycopg.connect(db_urls[Role.OWNER]) as conn:
        for column in ("query", "packet", "purpose"):
            assert conn.execute(
                "SELECT has_column_privilege('haki_stats', 'context_calls', %s, 'SELECT')",
                (column,)).fetchone() == (False,), column
        assert conn.execute("SELECT has_table_privilege('haki_app', 'events', 'UPDATE')"
                            ).fetchone() == (False,)
