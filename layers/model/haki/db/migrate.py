"""Forward-only SQL migrations: numbered files applied in order, each in its own transaction.

Applied files are recorded with their sha256 in ``schema_migrations``. The runner refuses to
run when an applied file was edited or removed (the database would no longer match the code),
except that a database ahead of the code (migrations newer than every file, applied by a newer
release) is accepted with nothing to apply: the previous release deployed again, a rollback,
finds the schema it must be compatible with (docs/operations.md, "Rollback"). It serialises
concurrent runners with a session-level advisory lock, so running it twice or
from two deploys at once is safe: the second waits, then finds nothing to do.

Migrations run as the owner (a member of ``haki_admin``), never as the runtime role.
"""

import hashlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import psycopg

from haki.errors import MigrationError
from haki.settings import SOURCE_ROOT

log = logging.getLogger(__name__)

#: Arbitrary constant naming the lock all runners take (pg_advisory_lock(bigint)).
ADVISORY_LOCK_KEY = 0x4841_4B49_4D49_47  # "HAKIMIG"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")

#: Where the layer build copies the SQL files, and where a checkout keeps them.
PACKAGED_DIR = Path(__file__).with_name("migrations_sql")
SOURCE_DIR = SOURCE_ROOT / "migrations"


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def default_migrations_dir() -> Path:
    """The packaged copy in a Lambda layer, else the checkout's ``migrations/``."""
    return PACKAGED_DIR if PACKAGED_DIR.is_dir() else SOURCE_DIR


def load_migrations(directory: Path) -> list[Migration]:
    """Every ``NNNN_name.sql`` file of ``directory``, in order; numbers must be unique."""
    files = sorted(p for p in directory.glob("*.sql"))
    bad = [p.name for p in files if not _NAME.match(p.name)]
    if bad:
        raise MigrationError(f"migration file names must look like 0001_name.sql: {bad}")
    numbers = [p.name[:4] for p in files]
    if len(set(numbers)) != len(numbers):
        raise MigrationError(f"two migrations share a number in {directory}")
    return [Migration(p.name, p.read_text(encoding="utf-8")) for p in files]


def apply_migrations(conninfo: str, migrations_dir: Path | None = None) -> list[str]:
    """Apply every pending migration; return the names applied (empty when up to date)."""
    migrations = load_migrations(migrations_dir or default_migrations_dir())
    applied_now: list[str] = []
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
            for migration in migrations:
                if migration.name in recorded:
                    continue
                try:
                    with conn.transaction():
                        conn.execute(migration.sql)
                        conn.execute(
                            "INSERT INTO schema_migrations (name, checksum) VALUES (%s, %s)",
                            (migration.name, migration.checksum),
                        )
                except psycopg.Error as exc:
                    raise MigrationError(
                        f"migration {migration.name} failed and was rolled back: "
                        f"{exc.diag.message_primary or exc}"
                    ) from exc
                log.info("applied migration %s", migration.name)
                applied_now.append(migration.name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (ADVISORY_LOCK_KEY,))
    return applied_now


def _check_history(recorded: dict[str, str], migrations: list[Migration]) -> None:
    on_disk = {m.name: m for m in migrations}
    missing = sorted(set(recorded) - set(on_disk))
    newest = max(on_disk, default="")
    if any(name < newest for name in missing):
        raise MigrationError(f"applied migrations are missing on disk: {missing}")
    if missing:
        # A newer release migrated this database and this (older) code runs against it: a
        # rollback. Its migrations are all applied; nothing may run after the newer ones.
        pending = sorted(set(on_disk) - set(recorded))
        if pending:
            raise MigrationError(f"the database is ahead of this code ({missing} applied) but "
                                 f"lacks {pending}: its history has diverged")
        log.warning("the database is ahead of this code: %s applied by a newer release; "
                    "nothing to apply", missing)
    edited = sorted(n for n, checksum in recorded.items()
                    if n in on_disk and on_disk[n].checksum != checksum)
    if edited:
        raise MigrationError(
            f"applied migrations were edited since they ran: {edited}; "
            "migrations are forward-only, add a new file instead"
        )
