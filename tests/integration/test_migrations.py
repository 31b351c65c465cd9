"""The migration runner against a real PostgreSQL: from zero, idempotent, tamper-proof,
safe under concurrency."""

import shutil
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from haki.db import Role
from haki.db.migrate import apply_migrations, load_migrations, load_routines
from haki.errors import MigrationError
from tests.conftest import concurrently

TENANT_TABLES = [
    "facts", "events", "conflict_sets", "api_keys",
    "context_calls", "context_traces", "stats_rollups",
]


def test_apply_from_zero_then_noop(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path
) -> None:
    urls = fresh_database()
    first = apply_migrations(urls[Role.OWNER], migrations_dir)
    assert first == [m.name for m in load_migrations(migrations_dir)
                     + load_routines(migrations_dir)]
    assert apply_migrations(urls[Role.OWNER], migrations_dir) == []
    with psycopg.connect(urls[Role.OWNER]) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
        recorded = conn.execute("SELECT count(*) FROM schema_migrations").fetchone()
    assert set(TENANT_TABLES) <= tables
    assert recorded == (len(first),)


@pytest.fixture
def copied(migrations_dir: Path, tmp_path: Path) -> Path:
    """A copy of the migrations folder, for a test to change."""
    copy = tmp_path / "migrations"
    shutil.copytree(migrations_dir, copy)
    return copy


def test_edited_applied_migration_is_refused(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path, copied: Path
) -> None:
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER], copied)
    target = copied / "0001_schema.sql"
    target.write_text(target.read_text() + "\n-- edited after it ran\n")
    with pytest.raises(MigrationError, match="edited"):
        apply_migrations(urls[Role.OWNER], copied)


def test_a_database_ahead_of_the_code_is_a_rollback_with_nothing_to_apply(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path, tmp_path: Path
) -> None:
    """The previous release deployed again over a schema its successor migrated."""
    urls = fresh_database()
    newer = tmp_path / "newer"
    shutil.copytree(migrations_dir, newer)
    (newer / "0999_newer_release.sql").write_text("CREATE TABLE newer_release (id int);\n")
    apply_migrations(urls[Role.OWNER], newer)
    assert apply_migrations(urls[Role.OWNER], migrations_dir) == []
    with psycopg.connect(urls[Role.OWNER]) as conn:
        assert conn.execute("SELECT to_regclass('newer_release')").fetchone() == (
            "newer_release",)


def test_a_history_with_a_hole_is_refused(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path, tmp_path: Path
) -> None:
    urls = fresh_database()
    holed = tmp_path / "holed"
    shutil.copytree(migrations_dir, holed)
    (holed / "0002_a_change.sql").write_text("SELECT 1;\n")
    (holed / "0003_a_later_one.sql").write_text("SELECT 1;\n")
    apply_migrations(urls[Role.OWNER], holed)
    (holed / "0002_a_change.sql").unlink()
    with pytest.raises(MigrationError, match="missing on disk"):
        apply_migrations(urls[Role.OWNER], holed)
    # Ahead of the code, yet lacking one of its files: diverged.
    urls = fresh_database()
    diverged = tmp_path / "diverged"
    shutil.copytree(migrations_dir, diverged)
    (diverged / "0998_elsewhere.sql").write_text("SELECT 1;\n")
    (diverged / "0999_newer_release.sql").write_text("SELECT 1;\n")
    apply_migrations(urls[Role.OWNER], diverged)
    (diverged / "0998_elsewhere.sql").unlink()
    (diverged / "0999_newer_release.sql").unlink()
    (diverged / "0997_other_branch.sql").write_text("SELECT 1;\n")
    with pytest.raises(MigrationError, match="diverged"):
        apply_migrations(urls[Role.OWNER], diverged)


def test_failed_migration_rolls_back_whole_file(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path, copied: Path
) -> None:
    urls = fresh_database()
    (copied / "0999_broken.sql").write_text(
        "CREATE TABLE half_done (id int);\nSELECT no_such_function();\n")
    with pytest.raises(MigrationError, match=r"0999_broken\.sql"):
        apply_migrations(urls[Role.OWNER], copied)
    with psycopg.connect(urls[Role.OWNER]) as conn:
        assert conn.execute("SELECT to_regclass('half_done')").fetchone() == (None,)
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    assert "0999_broken.sql" not in names
    # The numbered files before it stay applied; the routines wait for a run that gets past it.
    assert names == [m.name for m in load_migrations(migrations_dir)]


def test_concurrent_runners_apply_each_file_once(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path
) -> None:
    urls = fresh_database()
    results = concurrently(lambda: apply_migrations(urls[Role.OWNER], migrations_dir), 3)
    all_names = [m.name for m in load_migrations(migrations_dir) + load_routines(migrations_dir)]
    assert sorted(results, key=len) == [[], [], all_names]


def test_file_names_are_checked(tmp_path: Path) -> None:
    (tmp_path / "1_bad.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match=r"0001_name\.sql"):
        load_migrations(tmp_path)


def test_a_changed_routine_is_applied_again_and_recorded(
    fresh_database: Callable[[], dict[Role, str]], migrations_dir: Path, copied: Path
) -> None:
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER], copied)
    routine = copied / "functions" / "haki_trace_actions.sql"
    routine.write_text(routine.read_text().replace("'blocked'", "'blocked', 'spare'"))
    assert apply_migrations(urls[Role.OWNER], copied) == ["functions/haki_trace_actions.sql"]
    with psycopg.connect(urls[Role.OWNER]) as conn:
        assert conn.execute("SELECT haki_trace_actions()").fetchone() == (
            ["included", "excluded", "blocked", "spare"],)
    assert apply_migrations(urls[Role.OWNER], copied) == []


def test_routines_apply_whatever_their_order_and_a_broken_one_applies_none(
    fresh_database: Callable[[], dict[Role, str]], copied: Path
) -> None:
    """A routine that calls one named after it waits for it; an error leaves every routine
    as it was."""
    urls = fresh_database()
    (copied / "functions" / "a_first.sql").write_text(
        "CREATE OR REPLACE FUNCTION a_first() RETURNS integer LANGUAGE sql STABLE\n"
        "AS $$ SELECT z_last() + 1 $$;\n")
    (copied / "functions" / "z_last.sql").write_text(
        "CREATE OR REPLACE FUNCTION z_last() RETURNS integer LANGUAGE sql IMMUTABLE\n"
        "AS $$ SELECT 41 $$;\n")
    apply_migrations(urls[Role.OWNER], copied)
    with psycopg.connect(urls[Role.OWNER]) as conn:
        assert conn.execute("SELECT a_first()").fetchone() == (42,)
    (copied / "functions" / "z_last.sql").write_text(
        "CREATE OR REPLACE FUNCTION z_last() RETURNS integer LANGUAGE sql IMMUTABLE\n"
        "AS $$ SELECT 1 / 0 + no_such_column $$;\n")
    with pytest.raises(MigrationError, match="routines"):
        apply_migrations(urls[Role.OWNER], copied)
    with psycopg.connect(urls[Role.OWNER]) as conn:
        assert conn.execute("SELECT a_first()").fetchone() == (42,)
