"""The benchmark server's restart check (benchmarks/server.py), on a real embedded server: a
restart-only setting written by ALTER SYSTEM is seen as pending at once, before the server has
handled the reload."""

import psycopg

from benchmarks.server import restart_pending


def test_a_restart_only_setting_is_pending_as_soon_as_it_is_written(
        pg_superuser_url: str) -> None:
    with psycopg.connect(pg_superuser_url, autocommit=True) as conn:
        current = conn.execute("SELECT current_setting('max_connections')").fetchone()[0]
        assert restart_pending(conn) is False
        try:
            conn.execute(f"ALTER SYSTEM SET max_connections = {int(current) + 1}")
            # No reload: the files alone say it; a reload would not apply it either.
            assert restart_pending(conn) is True
            conn.execute("SELECT pg_reload_conf()")
            assert restart_pending(conn) is True
            conn.execute("ALTER SYSTEM SET work_mem = '8MB'")  # reloadable: not a restart
            conn.execute("ALTER SYSTEM RESET max_connections")
            assert restart_pending(conn) is False
        finally:
            conn.execute("ALTER SYSTEM RESET max_connections")
            conn.execute("ALTER SYSTEM RESET work_mem")
            conn.execute("SELECT pg_reload_conf()")
