"""SQL migrations: numbered files applied once, in order, then the routines' files applied
whenever they change.

``migrations/NNNN_name.sql`` hold tables, indexes, grants and data: forward-only, each in its
own transaction, recorded with its sha256 in ``schema_migrations``; the runner refuses to run
when an applied one was edited or removed (the database would no longer match the code),
except that a database ahead of the code (numbered files newer than every file here, applied
by a newer release) is accepted with none to apply: the previous release deployed again, a
rollback, finds the schema it must be compatible with (docs/operations.md, "Rollback").
``migrations/functions/<name>.sql`` each hold one function — its one source — with the
policies, triggers or view that exist to call it, written to be re-run (``CREATE OR
REPLACE``). They are applied after the numbered files, all in one transaction, whenever a
file's checksum differs from the one recorded (the repeatable migrations of Flyway): a
changed routine is a changed file, never a migration that edits a routine's text; a rollback
puts the previous release's routines back. A file that refers to another routine not created
yet is retried once the others have run, so their order needs no upkeep. Concurrent runners
are serialised with a session-level advisory lock: running it twice, or from two deploys at
once, is safe.

Migrations run as the owner (a member of ``haki_admin``), never as the runtime role.
"""

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import errors

from haki.errors import MigrationError
from haki.settings import get_settings

log = logging.getLogger(__name__)

#: Arbitrary constant naming the lock all runners take (pg_advisory_lock(bigint)).
ADVISORY_LOCK_KEY = 0x4841_4B49_4D49_47  # "HAKIMIG"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
#: The folder of the routines' files, inside the migrations folder.
ROUTINES = "functions"
#: What a routine's file raises while a routine or view it refers to does not exist yet.
_NOT_YET = (errors.UndefinedFunction, errors.UndefinedTable, errors.UndefinedObject)

#: Where the layer's and the wheel's builds copy the SQL files.
PACKAGED_DIR = Path(__file__).with_name("migrations_sql")


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def default_migrations_dir() -> Path:
    """``HAKI_MIGRATIONS_DIR`` (a source checkout's folder), else the packaged copy."""
    return get_settings().migrations_dir or PACKAGED_DIR


def load_migrations(directory: Path) -> list[Migration]:
    """Every ``NNNN_name.sql`` file of ``directory``, in order; numbers must be unique."""
    if not directory.is_dir():
        raise MigrationError(f"no migrations folder at {directory} (HAKI_MIGRATIONS_DIR)")
    files = sorted(p for p in directory.glob("*.sql"))
    bad = [p.name for p in files if not _NAME.match(p.name)]
    if bad:
        raise MigrationError(f"migration file names must look like 0001_name.sql: {bad}")
    numbers = [p.name[:4] for p in files]
    if len(set(numbers)) != len(numbers):
        raise MigrationError(f"two migrations share a number in {directory}")
    return [Migration(p.name, p.read_text(encoding="utf-8")) for p in files]


def load_routines(directory: Path) -> list[Migration]:
    """Every file of ``directory/functions``, by name (``functions/<file>``)."""
    return [Migration(f"{ROUTINES}/{p.name}", p.read_text(encoding="utf-8"))
            for p in sorted((directory / ROUTINES).glob("*.sql"))]


def apply_migrations(conninfo: str, migrations_dir: Path | None = None) -> list[str]:
    """Apply every pending numbered migration, then every new or changed routine's file;
    return the names applied (empty when up to date)."""
    directory = migrations_dir or default_migrations_dir()
    migrations, routines = load_migrations(directory), load_routines(directory)
    with psycopg.connect(conninfo, autocommit=True, prepare_threshold=None) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (ADVISORY_LOCK_KEY,))
        try:
            conn.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    name       text PRIMARY KEY,
                    checksum   text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """
            )
            recorded: dict[str, str] = dict(
                conn.execute("SELECT name, checksum FROM schema_migrations").fetchall())
            _check_history(recorded, migrations)
            pending = [m for m in migrations if m.name not in recorded]
            for migration in pending:
                _apply_numbered(conn, migration)
            changed = [r for r in routines if recorded.get(r.name) != r.checksum]
            if changed:
                _apply_routines(conn, changed)
            return [m.name for m in pending + changed]
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_KEY,))


def _apply_numbered(conn: psycopg.Connection, migration: Migration) -> None:
    try:
        with conn.transaction():
            conn.execute(migration.sql)
            _record(conn, migration)
    except psycopg.Error as exc:
        raise MigrationError(f"migration {migration.name} failed and was rolled back: "
                             f"{exc.diag.message_primary or exc}") from exc
    log.info("applied migration %s", migration.name)


def _apply_routines(conn: psycopg.Connection, routines: list[Migration]) -> None:
    """Apply ``routines`` in one transaction: in name order, a file that refers to something
    not created yet put back (its savepoint rolled back) and retried after the others, until
    a round applies none."""
    pending = list(routines)
    try:
        with conn.transaction():
            while pending:
                waiting: list[tuple[Migration, psycopg.Error]] = []
                for routine in pending:
                    try:
                        with conn.transaction():
                            conn.execute(routine.sql)
                            _record(conn, routine)
                    except _NOT_YET as exc:
                        waiting.append((routine, exc))
                if len(waiting) == len(pending):
                    raise waiting[0][1]
                pending = [routine for routine, _ in waiting]
    except psycopg.Error as exc:
        raise MigrationError(f"the routines' files failed and were rolled back: "
                             f"{exc.diag.message_primary or exc}") from exc
    for routine in routines:
        log.info("applied %s", routine.name)


def _record(conn: psycopg.Connection, migration: Migration) -> None:
    conn.execute(
        "INSERT INTO schema_migrations (name, checksum) VALUES (%s, %s) "
        "ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()",
        (migration.name, migration.checksum))


def _check_history(recorded: dict[str, str], migrations: list[Migration]) -> None:
    on_disk = {m.name: m for m in migrations}
    numbered = {name: checksum for name, checksum in recorded.items()
                if not name.startswith(f"{ROUTINES}/")}
    missing = sorted(set(numbered) - set(on_disk))
    newest = max(on_disk, default="")
    if any(name < newest for name in missing):
        raise MigrationError(f"applied migrations are missing on disk: {missing}")
    if missing:
        # A newer release migrated this database and this (older) code runs against it: a
        # rollback. Its migrations are all applied; nothing may run after the newer ones.
        pending = sorted(set(on_disk) - set(numbered))
        if pending:
            raise MigrationError(f"the database is ahead of this code ({missing} applied) but "
                                 f"lacks {pending}: its history has diverged")
        log.warning("the database is ahead of this code: %s applied by a newer release; "
                    "nothing to apply", missing)
    edited = sorted(n for n, checksum in numbered.items()
                    if n in on_disk and on_disk[n].checksum != checksum)
    if edited:
        raise MigrationError(
            f"applied migrations were edited since they ran: {edited}; "
            "migrations are forward-only, add a new file instead"
        )
