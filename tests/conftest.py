"""Shared fixtures: one embedded PostgreSQL 16 + pgvector per test session; and each test's
tier, by what it costs to run (``TIERS``), for ``make test-unit``, ``make test-fast`` and so on.

The session migrates one fresh database; tests reach it through the runtime role
(``haki_app``), as production does, and isolate themselves from each other by working in a
project id of their own (row-level security and the exact-scope filters keep them apart).
Tests that need an empty database of their own (migrations) create one with
``fresh_database``.
"""

import contextvars
import itertools
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest
from psycopg import sql

from haki.db import Database, Role
from haki.db.connection import acting_for, connect
from haki.db.migrate import apply_migrations
from haki.embedding import Embedder, get_embedder
from haki.settings import Settings
from haki_local.admin import tenant_keys
from haki_local.embedded import embedded_role_url, start_embedded, stop_embedded

_db_names = itertools.count()
T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]

#: The tiers, cheapest first (their meanings: the markers of pyproject.toml). Each test carries
#: the one of the costliest real part it needs; ``slow`` comes on top of a tier.
TIERS = ("unit", "db", "model", "http", "browser", "infra")
#: The tier of the tests of a folder...
TIER_OF_FOLDER = {
    "tests/unit": "unit",
    "tests/integration": "db",
    "tests/handlers": "model",
    "tests/embedder": "model",
    "tests/e2e": "http",
    "tests/clients": "http",
    "tests/infra": "infra",
    "benchmarks/tests": "unit",
    "scripts/tests": "unit",
}
#: ...but for the files whose cost differs from their folder's.
TIER_OF_FILE = {
    "tests/integration/test_assembler_language.py": "model",
    "tests/integration/test_assembler_overlap.py": "model",
    "tests/integration/test_evaluation.py": "model",
    "tests/integration/test_faults.py": "model",
    "tests/integration/test_memory_writer.py": "model",
    "tests/integration/test_write_conflicts.py": "model",
    "tests/integration/test_write_events.py": "model",
    "tests/integration/test_write_facts.py": "model",
    "tests/integration/test_write_forget.py": "model",
    "tests/integration/test_write_lifecycle.py": "model",
    "tests/integration/test_write_schema.py": "model",
    "tests/handlers/test_heap_settled.py": "unit",
    "tests/clients/test_console.py": "browser",
    "tests/clients/test_python_models.py": "unit",
    "tests/infra/test_migrate_handler.py": "unit",
    "benchmarks/tests/test_bench_server_restart.py": "db",
    "benchmarks/tests/test_bench_ingest_smoke.py": "http",
    "benchmarks/tests/test_load_smoke.py": "http",
}
#: Fixtures that start a real part: a test that asks for one is at least of that tier.
_FIXTURE_TIERS = {"pg_superuser_url": "db", "embedder": "model", "e5": "model"}


def tier_of(path: Path) -> str:
    """The tier of the tests of ``path`` (a test file)."""
    relative = path.resolve().relative_to(ROOT).as_posix()
    if relative in TIER_OF_FILE:
        return TIER_OF_FILE[relative]
    folder = next((f for f in TIER_OF_FOLDER if relative.startswith(f + "/")), None)
    if folder is None:
        raise pytest.UsageError(f"{relative}: no tier; add its folder to TIER_OF_FOLDER "
                                "in tests/conftest.py")
    return TIER_OF_FOLDER[folder]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its tier; refuse a tier cheaper than a fixture the test uses."""
    wrong = set()
    for item in items:
        tier = tier_of(item.path)
        for fixture in set(_FIXTURE_TIERS) & set(getattr(item, "fixturenames", ())):
            if TIERS.index(_FIXTURE_TIERS[fixture]) > TIERS.index(tier):
                wrong.add(f"{item.path.relative_to(ROOT)}: tier {tier!r}, but a test uses the "
                          f"fixture {fixture!r} ({_FIXTURE_TIERS[fixture]!r})")
        item.add_marker(tier)
    if wrong:
        raise pytest.UsageError("\n".join(sorted(wrong)) + "\ngive these files their tier in "
                                "TIER_OF_FILE (tests/conftest.py)")


@pytest.fixture(scope="session")
def server_data_dir() -> Iterator[Callable[[str], Path]]:
    """Make data folders for embedded servers; stop their servers and delete them at the end.

    They live under ``build/`` rather than pytest's temp folder: the server runs as the
    unprivileged ``pgserver`` user, which cannot enter root's 0700 pytest folders.
    """
    build = Path(__file__).resolve().parents[1] / "build"
    build.mkdir(exist_ok=True)
    made: list[Path] = []

    def make(prefix: str) -> Path:
        made.append(Path(tempfile.mkdtemp(prefix=prefix, dir=build)))
        return made[-1]

    yield make
    for data_dir in made:
        stop_embedded(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_superuser_url(server_data_dir: Callable[[str], Path]) -> str:
    """The embedded server of this test session."""
    return start_embedded(server_data_dir("test-pg-"))


@pytest.fixture(scope="session")
def fresh_database(pg_superuser_url: str) -> Callable[[], dict[Role, str]]:
    """Create an empty database; return its URL for each role."""

    def create() -> dict[Role, str]:
        name = f"haki_t{next(_db_names)}_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(pg_superuser_url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return {role: embedded_role_url(pg_superuser_url, role, name) for role in Role}

    return create


@pytest.fixture(scope="session")
def db_urls(fresh_database: Callable[[], dict[Role, str]]) -> dict[Role, str]:
    """The test run's migrated database: URL per role."""
    urls = fresh_database()
    apply_migrations(urls[Role.OWNER])
    return urls


@pytest.fixture(scope="session")
def migrations_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "migrations"


@pytest.fixture
def open_database() -> Iterator[Callable[[str], Database]]:
    """Open ``Database`` handles by URL; every one is closed when the test ends."""
    opened: list[Database] = []

    def open_(url: str) -> Database:
        opened.append(Database(url))
        return opened[-1]

    yield open_
    for db in opened:
        db.close()


@pytest.fixture
def tenant_key(db_urls: dict[Role, str], project_id: str) -> Iterator[str]:
    """A live key of the test's project; the test acts for it (``acting_for``), as a request
    with that key would: the runtime role then sees this project and nothing else."""
    owner = Database(db_urls[Role.OWNER])
    try:
        key_hash = tenant_keys(owner, [project_id], org_id="org-test", label="tests")[project_id]
    finally:
        owner.close()
    with acting_for(key_hash):
        yield key_hash


@pytest.fixture
def app_db(db_urls: dict[Role, str], open_database: Callable[[str], Database],
           tenant_key: str) -> Database:
    """A runtime-role handle (row-level security applies), acting for the test's project."""
    return open_database(db_urls[Role.APP])


@pytest.fixture
def owner_conn(db_urls: dict[Role, str]) -> Iterator[psycopg.Connection]:
    """An owner connection, for seeding and checking rows across projects."""
    with connect(db_urls[Role.OWNER]) as conn:
        yield conn


@pytest.fixture
def project_id() -> str:
    """A project id of this test alone."""
    return f"proj-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real default embedder, built by ``make model`` (the test command builds it)."""
    return get_embedder(Settings())


@pytest.fixture
def settings() -> Settings:
    """Defaults: recall floor off, default volatility horizons."""
    return Settings()


def tenant_thread(target: Callable[[], object]) -> threading.Thread:
    """A thread that acts for the same key as the test (context variables, hence
    ``acting_for``, are not inherited by new threads)."""
    return threading.Thread(target=contextvars.copy_context().run, args=(target,))


@contextmanager
def acting_as_tenant(owner_url: str, project_id: str) -> Iterator[str]:
    """Act for a new key of ``project_id`` in the database of ``owner_url`` (tests with a
    database of their own); yields the key's hash."""
    owner = Database(owner_url)
    try:
        key_hash = tenant_keys(owner, [project_id], org_id="org-test", label="tests")[project_id]
    finally:
        owner.close()
    with acting_for(key_hash):
        yield key_hash


def eventually(condition: Callable[[], T], what: str, timeout_s: float = 60.0) -> T:
    """Poll ``condition`` until it gives a true value, and return that value; fail, naming
    ``what``, if it has not after ``timeout_s`` (a deadline for a stuck test, generous on a
    loaded machine: never a bound on how fast the product is)."""
    deadline = time.monotonic() + timeout_s
    while not (result := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {timeout_s:.0f} s")
        time.sleep(0.05)
    return result
