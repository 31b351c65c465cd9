"""The tenant boundary follows the API key (``haki_tenant``), not a setting the runtime role
may write: set by hand, ``haki.project_id`` (or a made-up key hash, or a revoked key's) shows
nothing; the roles hold only what their jobs need."""

import json
import uuid

import psycopg
import pytest

from haki.db import Database, Role
from haki.db.connection import acting_for, connect
from haki.errors import ForbiddenScope, Unauthorized
from haki.keys import hash_key
from haki_local.admin import revoke_key, tenant_keys
from tests.integration.conftest import uniform_vector

ROLES_WITHOUT_POWERS = ("haki_app", "haki_stats")


@pytest.fixture
def victim(owner_conn: psycopg.Connection) -> str:
    """Another tenant's project with a fact the attacker's searches would match."""
    project = f"victim-{uuid.uuid4().hex[:8]}"
    owner_conn.execute(
        "INSERT INTO facts (project_id, subject_id, predicate, value, embedding) "
        "VALUES (%s, 's', 'secret', %s, %s)",
        (project, json.dumps("launch codes"), uniform_vector()))
    return project


def _raw_app(db_urls: dict[Role, str]) -> psycopg.Connection:
    return connect(db_urls[Role.APP])


def _visible(conn: psycopg.Connection, *settings: tuple[str, str]) -> tuple[int, int]:
    """(facts visible, text-arm hits for 'launch') in one transaction with ``settings``."""
    with conn.transaction():
        for name, value in settings:
            conn.execute("SELECT set_config(%s, %s, true)", (name, value))
        facts = conn.execute("SELECT count(*) FROM facts").fetchone()
        hits = conn.execute(
            "SELECT count(*) FROM haki_idf_search('s', '{launch}', true, 100, 100, NULL)"
        ).fetchone()
    assert facts is not None and hits is not None
    return facts[0], hits[0]


def test_setting_the_project_by_hand_shows_nothing(
    db_urls: dict[Role, str], victim: str
) -> None:
    with _raw_app(db_urls) as conn:
        assert _visible(conn, ("haki.project_id", victim)) == (0, 0)
        assert _visible(conn, ("haki.key_hash", hash_key("hk_" + "x" * 43))) == (0, 0)
        assert _visible(conn) == (0, 0)


def test_the_victims_own_key_shows_its_rows_and_a_revoked_one_nothing(
    db_urls: dict[Role, str], victim: str, owner_conn: psycopg.Connection
) -> None:
    owner = Database(db_urls[Role.OWNER])
    try:
        key_hash = tenant_keys(owner, [victim], org_id="victim-org", label="t")[victim]
        with _raw_app(db_urls) as conn:
            assert _visible(conn, ("haki.key_hash", key_hash)) == (1, 1)
            key_id = owner_conn.execute(
                "SELECT id FROM api_keys WHERE key_hash = %s", (key_hash,)).fetchone()
            assert key_id is not None
            revoke_key(owner, key_id[0])
            assert _visible(conn, ("haki.key_hash", key_hash)) == (0, 0)
    finally:
        owner.close()


def test_a_bound_key_cannot_reach_another_project_through_the_handle(
    app_db: Database, project_id: str, victim: str
) -> None:
    with pytest.raises(ForbiddenScope), app_db.transaction(victim):
        pass
    with app_db.transaction(project_id) as conn:  # the handle is fine afterwards
        assert conn.execute("SELECT count(*) FROM facts WHERE project_id = %s",
                            (victim,)).fetchone() == (0,)


def test_a_revoked_key_is_unauthorized_in_the_transaction_itself(
    db_urls: dict[Role, str], project_id: str, owner_conn: psycopg.Connection
) -> None:
    owner, app = Database(db_urls[Role.OWNER]), Database(db_urls[Role.APP])
    try:
        key_hash = tenant_keys(owner, [project_id], org_id="org-test", label="t")[project_id]
        (key_id,) = owner_conn.execute(
            "SELECT id FROM api_keys WHERE key_hash = %s", (key_hash,)).fetchone() or (None,)
        revoke_key(owner, key_id)
        with acting_for(key_hash), pytest.raises(Unauthorized), app.transaction(project_id):
            pass
    finally:
        owner.close()
        app.close()


def test_roles_hold_no_power_beyond_their_jobs(owner_conn: psycopg.Connection) -> None:
    rows = owner_conn.execute(
        "SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls "
        "FROM pg_roles WHERE rolname = ANY (%s)", (list(ROLES_WITHOUT_POWERS),)).fetchall()
    assert {r[0] for r in rows} == set(ROLES_WITHOUT_POWERS)
    assert all(not any(r[1:]) for r in rows), rows
    admin = owner_conn.execute(
        "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'haki_admin'").fetchone()
    assert admin == (False,)
    privileges = owner_conn.execute("""
        SELECT has_table_privilege('haki_stats', 'facts', 'SELECT'),
               has_table_privilege('haki_stats', 'events', 'SELECT'),
               has_table_privilege('haki_stats', 'conflict_sets', 'SELECT'),
               has_function_privilege('haki_stats', 'haki_authenticate(text)', 'EXECUTE'),
               has_any_column_privilege('haki_stats', 'context_calls', 'SELECT'),
               has_column_privilege('haki_stats', 'context_calls', 'query', 'SELECT'),
               has_schema_privilege('haki_app', 'public', 'CREATE'),
               has_schema_privilege('haki_stats', 'public', 'CREATE'),
               has_table_privilege('haki_app', 'projects', 'SELECT'),
               has_table_privilege('haki_app', 'api_keys', 'SELECT')
    """).fetchone()
    assert privileges == (False, False, False, False, True, False, False, False, False, False)


def test_every_security_definer_function_pins_its_search_path(
    owner_conn: psycopg.Connection,
) -> None:
    rows = owner_conn.execute("""
        SELECT p.oid::regprocedure::text, p.proconfig
        FROM pg_proc AS p
        WHERE p.prosecdef AND p.pronamespace = 'public'::regnamespace
    """).fetchall()
    assert {"haki_tenant()", "haki_authenticate(text)"} <= {name for name, _ in rows}
    for name, config in rows:
        assert config and "search_path=pg_catalog, public, pg_temp" in config, name


def test_no_function_reads_a_project_the_runtime_role_could_set(
    owner_conn: psycopg.Connection,
) -> None:
    sources = owner_conn.execute(
        "SELECT proname FROM pg_proc WHERE pronamespace = 'public'::regnamespace "
        "AND prosrc LIKE '%haki.project_id%'").fetchall()
    assert sources == []
    uses = owner_conn.execute(
        "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace "
        "AND prosecdef AND prosrc LIKE '%haki_tenant()%'").fetchone()
    assert uses is not None and uses[0] >= 1  # haki_idf_search, at least
