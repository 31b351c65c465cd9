"""The planner's statistics hold samples of stored values (pg_statistic's most common values
and histograms), erased ones included until the next ANALYZE: only the owner reads them. The
runtime roles see no statistics of a tenant table (row-level security hides them in pg_stats),
so no tenant can read another's values, or its own erased ones, through them."""

import psycopg

from haki.db import Role
from haki.db.connection import connect
from tests.integration.conftest import Seeder, unit_vector

TENANT_TABLES = ("facts", "events", "conflict_sets", "context_calls", "disabled_subjects")


def test_the_runtime_roles_read_no_statistics_of_tenant_tables(
    seed: Seeder, owner_conn: psycopg.Connection, db_urls: dict[Role, str]
) -> None:
    for index in range(20):
        seed.fact("secret_code", f"sample-{index % 3}", unit_vector(index))
    owner_conn.execute("ANALYZE facts")
    query = "SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename = ANY (%s)"
    owned = owner_conn.execute(query, (list(TENANT_TABLES),)).fetchone()
    assert owned is not None and owned[0] > 0  # they exist, with samples
    for role in (Role.APP, Role.STATS):
        with connect(db_urls[role]) as conn:
            assert conn.execute(query, (list(TENANT_TABLES),)).fetchone() == (0,), role
            denied = conn.execute("SELECT has_table_privilege('pg_statistic', 'SELECT')")
            assert denied.fetchone() == (False,), role
