"""Row-level security: the runtime role sees and writes only the project of its transaction,
and nothing at all without one (fail closed)."""

import json

import psycopg
import pytest

from haki.db import Database, Role
from tests.integration.conftest import uniform_vector


@pytest.fixture
def two_projects(owner_conn: psycopg.Connection, project_id: str) -> tuple[str, str]:
    other = project_id + "-b"
    for project in (project_id, other):
        owner_conn.execute(
            "INSERT INTO facts (project_id, subject_id, predicate, value, embedding) "
            "VALUES (%s, 's', 'p', %s, %s)", (project, json.dumps(project), uniform_vector()))
    return project_id, other


def test_select_without_where_sees_only_own_project(
    app_db: Database, two_projects: tuple[str, str]
) -> None:
    a, _ = two_projects
    with app_db.transaction(a) as conn:
        projects = {r[0] for r in conn.execute("SELECT project_id FROM facts")}
    assert projects == {a}


def test_insert_for_other_project_rejected(
    app_db: Database, two_projects: tuple[str, str]
) -> None:
    a, b = two_projects
    with pytest.raises(psycopg.errors.InsufficientPrivilege), app_db.transaction(a) as conn:
        conn.execute(
            "INSERT INTO facts (project_id, subject_id, predicate, value, embedding) "
            "VALUES (%s, 's', 'p', '1', %s)", (b, uniform_vector()))


def test_no_setting_sees_nothing(app_db: Database, two_projects: tuple[str, str]) -> None:
    with app_db.transaction() as conn:
        assert conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)


def test_setting_does_not_leak_to_next_transaction(
    app_db: Database, two_projects: tuple[str, str]
) -> None:
    """After a scoped transaction the key's setting reads back as '' on the same connection,
    not NULL: the policies must still fail closed."""
    a, _ = two_projects
    with app_db.transaction(a) as conn:
        assert conn.execute("SELECT count(*) FROM facts").fetchone() == (1,)
    conn = app_db.connection()
    assert conn.execute("SELECT current_setting('haki.key_hash', true)").fetchone() == ("",)
    assert conn.execute("SELECT count(*) FROM facts").fetchone() == (0,)


def test_runtime_role_is_not_privileged(db_urls: dict[Role, str]) -> None:
    with psycopg.connect(db_urls[Role.OWNER]) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = 'haki_app'").fetchone()
        owners = {r[0] for r in conn.execute(
            "SELECT tableowner FROM pg_tables WHERE schemaname = 'public'")}
    assert row == (False, False)
    assert "haki_app" not in owners


def test_runtime_role_cannot_read_api_keys(app_db: Database, project_id: str) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege), \
            app_db.transaction(project_id) as conn:
        conn.execute("SELECT * FROM api_keys")


def test_stats_role_reads_calls_across_projects_and_no_memory_at_all(
    db_urls: dict[Role, str], two_projects: tuple[str, str], owner_conn: psycopg.Connection
) -> None:
    """The aggregation reads every project's context calls (what it rolls up) and nothing of
    the tenants' memory (``haki_tenant``)."""
    for project in two_projects:
        owner_conn.execute(
            "INSERT INTO context_calls (trace_id, project_id, subject_id, query, budget_tokens, "
            "packet, token_count, status, facts_served, episodes_served, candidates, embed_ms, "
            "retrieval_ms, latency_ms) VALUES (gen_random_uuid(), %s, 's', 'q', 900, '{}', 1, "
            "'ok', 1, 0, 1, 1, 1, 1)", (project,))
    stats = Database(db_urls[Role.STATS])
    try:
        with stats.transaction() as conn:
            seen = {r[0] for r in conn.execute("SELECT project_id FROM context_calls")}
        assert set(two_projects) <= seen
        for statement in ("SELECT count(*) FROM facts", "UPDATE facts SET status = 'disabled'"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege), \
                    stats.transaction() as conn:
                conn.execute(statement)
    finally:
        stats.close()
